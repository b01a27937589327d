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
