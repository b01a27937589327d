"""A click counts once, even when the page's timer ticks as it is clicked (app/adapter/streamlit_door.py).

Streamlit's page sends a click on the next turn of its event loop; a ``run_every`` tick already
queued goes first and carries the click's trigger, then the click's own rerun follows. Without the
fix each ran the button's ``on_click``: here the first click of each button counted twice, in
every run. A real server, Chromium, and a timer of 0.1 s (the follower's poll ticks every 2 s).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_env import CHROMIUM, FLAGS, require_browser
from tests.live_server import streamlit_server

require_browser()
from playwright.sync_api import sync_playwright  # noqa: E402 (after the skip)

pytestmark = pytest.mark.browser  # tests/conftest.py: make test-fast leaves these out

APP = Path(__file__).with_name("taps_app.py")
CLICKS = 20
# The page's main thread busy for 0.15 s (a phone drawing its charts): the timer falls due and its
# tick waits in the queue; the click, handled first (input goes before timers), queues its flush
# behind that tick, which then carries the click's trigger.
A_LONG_TASK = """() => setTimeout(() => {
  const end = performance.now() + 150;
  while (performance.now() < end) {}
}, 0)"""


@pytest.fixture(scope="module")
def page():
    with streamlit_server(entry=APP) as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                   has_touch=True).new_page()
        page.goto(url)
        page.wait_for_selector(".st-key-next button", timeout=60_000)
        yield page
        browser.close()


def shown_count(page, key: str) -> int:
    return int(page.locator(f".st-key-{key} button").inner_text().split()[-1])


@pytest.mark.parametrize("key", ["chip", "next"])
def test_each_click_counts_once_beside_a_ticking_timer(page, key):
    """A button inside a fragment (a chip) and one outside every fragment (Next): each of CLICKS
    clicks, after a long task that queues a tick, counts exactly once."""
    start = shown_count(page, key)
    for click in range(1, CLICKS + 1):
        box = page.locator(f".st-key-{key} button").bounding_box()
        page.evaluate(A_LONG_TASK)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function("([key, n]) => +document.querySelector(`.st-key-${key} button`)?.innerText"
                               ".split(' ').pop() >= n", arg=[key, start + click], timeout=10_000)
        page.wait_for_timeout(300)  # a second count of the same click arrives within a few ticks
        assert shown_count(page, key) - start == click, f"click {click} counted twice"
