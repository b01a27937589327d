"""What every browser test module shares: Debian's Chromium and its flags, the rule that skips a
module when Chromium or Playwright is missing (and fails it under REQUIRE_BROWSER=1, as CI sets),
and one real server with one browser for a module (the ``live`` fixture in tests/conftest.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from tests.live_server import ROOT, streamlit_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("REQUIRE_BROWSER") == "1"
ARTIFACTS = ROOT / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
PHONE_AGENT = ("Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
               "Chrome/156.0.0.0 Mobile Safari/537.36")  # what a phone's Chrome says it is
HOW = "apt-get install chromium; make venv installs Playwright and axe-core"


def require_browser(*files: tuple[str, Path]) -> None:
    """At a module's import: skip it when Chromium, Playwright or one of the named files is missing;
    under REQUIRE_BROWSER=1 that is an error instead."""
    missing = [name for name, path in (("Chromium", Path(CHROMIUM)), *files) if not path.exists()]
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("Playwright")
    if not missing:
        return
    if REQUIRED:
        raise RuntimeError(f"REQUIRE_BROWSER=1 but {' and '.join(missing)} missing ({HOW})")
    pytest.skip(f"{' and '.join(missing)} missing ({HOW}); CI sets REQUIRE_BROWSER=1",
                allow_module_level=True)


@contextlib.contextmanager
def server_and_browser():
    """One real server and one Chromium (a fresh temporary profile): (url, browser)."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with streamlit_server() as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield url, browser
        browser.close()
