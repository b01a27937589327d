"""The app started the standard way (issue 28, 5): on a copy of the repository with no compiled
catalogue, `streamlit run app/streamlit_app.py` from its root, with no PYTHONPATH and no make, serves
every page, in every language the course is written in."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course.i18n import LANGUAGES, translator
from tests.live_server import ROOT, _wait_healthy, free_port
from tests.st_protocol import Session

pytestmark = pytest.mark.server  # tests/conftest.py: make test-fast leaves these out

# What a fresh clone does not have: the venv, npm's packages, compiled catalogues, caches, the suite's output.
NOT_IN_A_CLONE = shutil.ignore_patterns(".git", ".venv", "node_modules", "artifacts", "*.mo", "__pycache__",
                                        ".pytest_cache", ".hypothesis", ".ruff_cache")
PAGES = ("workbench", "present", "labs", "quiz", "model", "class", "examples", "learn")
NAVIGATION_TITLES = {"workbench": "Workbench", "present": "Present", "labs": "Labs", "quiz": "Quiz",
                     "model": "Real model", "class": "Class", "examples": "Worked examples", "learn": "Learn"}


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory):
    """The copy's server, started by the `streamlit` command itself (python -m would put the working
    directory on the path, which `streamlit run` does not)."""
    clone = tmp_path_factory.mktemp("clone") / "repo"
    shutil.copytree(ROOT, clone, ignore=NOT_IN_A_CLONE)
    assert not list(clone.glob("course/locale/*/LC_MESSAGES/*.mo"))
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME")}
    env["MHA_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    port = free_port()
    command = [str(Path(sys.executable).parent / "streamlit"), "run", "app/streamlit_app.py",
               "--server.headless=true", "--server.address=127.0.0.1", f"--server.port={port}",
               "--browser.gatherUsageStats=false", "--server.fileWatcherType=none"]
    log = open(clone / "server.log", "w")
    process = subprocess.Popen(command, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, 60)
        yield url, clone
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


async def opened(url: str, page: str, language: str) -> Session:
    tab = Session(url)
    tab.page_name = page
    try:
        run = await tab.open(f"lang={language}")
        assert run.status == "ok" and not run.errors, (page, language, run.status, run.errors)
    finally:
        await tab.close()
    return tab


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_in_every_language(plain_server, language):
    url, clone = plain_server
    _ = translator(language)
    for page in PAGES:
        tab = asyncio.run(opened(url, page, language))
        assert tab.page_path == ("" if page == "workbench" else page)  # the default page's address is /
        assert set(tab.pages.values()) == {_(title) for title in NAVIGATION_TITLES.values()}
    if language != "en":
        assert _("Workbench") != "Workbench"  # the titles above were translated, from the .po alone
    log = (clone / "server.log").read_text()
    assert "Traceback" not in log and "ModuleNotFoundError" not in log, log[-2000:]
