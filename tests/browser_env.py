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
LOADED = 60_000  # ms a page may take on a loaded machine before a test gives up
PROJECTOR = {"width": 1280, "height": 720}
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


# --- what the browser tests share ------------------------------------------------------------------


def projector_page(browser, url: str):
    """A new 1280 x 720 context opened at url."""
    page = browser.new_context(viewport=PROJECTOR).new_page()
    page.goto(url)
    return page


def room_code(page, timeout: float = LOADED) -> str:
    """The room's code as the teacher's sidebar says it ("Room ABCD · you lead it")."""
    pattern = "/Room ([A-Z0-9]{4}) · you lead it/"
    page.wait_for_function(f"() => {pattern}.test(document.body.innerText)", timeout=timeout)
    return page.evaluate(f"() => document.body.innerText.match({pattern})[1]")


def type_tokens(page, text: str, timeout: float = LOADED) -> None:
    """Type a sentence into the sidebar's tokens box, press Enter and wait for the run to end."""
    box = page.locator("input[aria-label*='Tokens (queries)' i]")
    box.fill(text)
    box.press("Enter")
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout)


def no_exception_on(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0


def no_error_on(page) -> None:
    """No exception box and no error box (st.error) on the page."""
    no_exception_on(page)
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
