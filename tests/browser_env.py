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


# Nothing on the page is stale (faded while a run redraws it) and plotly has drawn every chart it holds.
DRAWN = """() => !document.querySelector("[data-stale='true']") &&
    Array.from(document.querySelectorAll('.js-plotly-plot')).every(p => p._fullLayout)"""


def settle(page, selector: str | None = None, *, timeout: float = LOADED, attached: bool = False,
           runs: int = 1) -> None:
    """Until the page has drawn and is idle: ``selector`` on it (visible, or only ``attached``), then
    ``runs`` times a debounce of 400 ms and the script idle (a phone's first run reports its width and
    reruns: 2), then nothing stale and every chart drawn. The one wait of every browser test (issue
    40, 9: it was copied six times, with debounces of 300 or 400 ms and some without the last check;
    this keeps the strictest of each)."""
    if selector:
        page.wait_for_selector(selector, timeout=timeout, state="attached" if attached else "visible")
    for _ in range(runs):
        page.wait_for_timeout(400)  # Streamlit's own e2e tests wait 300 ms
        page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_function(DRAWN, timeout=timeout)


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


# --- the presenter ----------------------------------------------------------------------------------

# Whether the presenter's heading (its first h3) starts with a text: screen_heading's.
SCREEN_SHOWN = "(start) => (document.querySelector('h3') || {}).innerText?.startsWith(start)"


def screen_heading(position: int) -> str:
    """How the heading of the presenter's screen at ``position`` (in course.steps.SCREENS) starts:
    '4 / 9 · '. Counted from the registry when called: a test may have added a step."""
    from course import steps

    return f"{position + 1} / {len(steps.SCREENS)} · "


def screen_shown(page, position: int, timeout: float = LOADED) -> None:
    """Until the page's presenter heading is the screen at ``position``'s."""
    page.wait_for_function(SCREEN_SHOWN, arg=screen_heading(position), timeout=timeout)


def press_next(page) -> None:
    page.locator(".st-key-present_next button").click()


def presenter_screens(page, *, until: str | None = None, press=press_next, timeout: float = LOADED):
    """The presenter's screens in turn, from the first (``page`` opened on it): yields each screen's
    position once its heading shows and the page has settled, then moves on (``press``: Next) up to
    the last screen, or to the screen named ``until``. The one walk of the browser tests (issue 40, 9)."""
    from course import steps

    last = len(steps.SCREENS) - 1 if until is None else steps.screen_position(until)
    for position in range(last + 1):
        screen_shown(page, position, timeout)
        settle(page, timeout=timeout)
        yield position
        if position < last:
            press(page)


def present_screen(page, name: str, timeout: float = LOADED) -> int:
    """From the presenter's first screen, Next up to the screen named ``name``; its position."""
    return list(presenter_screens(page, until=name, timeout=timeout))[-1]
