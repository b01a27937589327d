"""The marks `make test-fast` selects by are held to what a test starts (tests/conftest.py): a test
that starts a Streamlit server or launches Chromium without its mark fails, so the fast loop never
quietly grows a browser or a server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
CONFTEST = Path(__file__).with_name("conftest.py")


@pytest.mark.server
def test_a_server_started_without_its_mark_fails_the_test(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(CONFTEST.parents[1]))  # the probe's own run imports tests.*
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_probe="""
        import pytest
        from tests.live_server import streamlit_server

        def test_unmarked():
            with streamlit_server():
                pass

        @pytest.mark.server
        def test_marked():
            with streamlit_server():
                pass

        def test_nothing_started():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*test_unmarked started server but is not marked server / browser*"])


def test_files_that_drive_chromium_are_handed_out_first_and_keep_their_order(pytester, monkeypatch):
    """tests/conftest.py orders the files by their heaviest mark (browser, server, slow, none), so the
    workers start on the long files; a file's tests keep their order (several files rely on it)."""
    monkeypatch.setenv("PYTHONPATH", str(CONFTEST.parents[1]))
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(
        test_a_plain="def test_one(): pass\ndef test_two(): pass",
        test_b_slow="import pytest\n@pytest.mark.slow\ndef test_slow(): pass",
        test_c_browser="import pytest\ndef test_first(): pass\n@pytest.mark.browser\ndef test_second(): pass",
        test_d_server="import pytest\n@pytest.mark.server\ndef test_server(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    collected = [line for line in result.stdout.lines if "::" in line]
    assert collected == ["test_c_browser.py::test_first", "test_c_browser.py::test_second",
                         "test_d_server.py::test_server", "test_b_slow.py::test_slow",
                         "test_a_plain.py::test_one", "test_a_plain.py::test_two"]
