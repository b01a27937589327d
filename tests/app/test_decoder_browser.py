"""Issue 18 in Chromium at 1280 x 720: the Learn page's Stop interrupts a run the way a teacher presses it,
and the key/value heads' selectbox keeps a grouped g (with its label) across changes of h, as the browser
sends a selectbox's label back. One server and one browser for the module."""

from __future__ import annotations

import re
import time

import pytest

from tests.app.test_browser import settle  # it skips this module too when there is no browser
from tests.browser_env import IDLE, projector_page

pytestmark = pytest.mark.browser  # tests/conftest.py: make test-fast leaves these out

LOADED = 60_000  # ms: generous, the machine is shared
KV = "input[aria-label='key/value heads g']"


def choose(page, where: str, label: str, option: str) -> None:
    """Open a selectbox by its label (a react-aria combobox opens on ArrowDown) and click an option."""
    box = page.locator(f"{where} [data-testid='stSelectbox']").filter(has_text=label)
    box.locator("input").click()
    box.locator("input").press("ArrowDown")
    page.locator("[role='option']:visible").filter(has_text=option).first.click()


def set_number(page, label: str, value: int) -> None:
    """Type a number and wait for the run it starts to end: a box typed into while the last run still
    redraws the sidebar can lose what was typed (CI saw h's 4 vanish behind d_model's run)."""
    box = page.locator(f"input[aria-label='{label}']")
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(300)  # the debounce of Streamlit's own e2e tests
    page.wait_for_selector(IDLE, timeout=LOADED)


def test_stop_ends_a_training_run_within_a_second_and_keeps_what_was_done(live):
    url, browser = live
    page = projector_page(browser, f"{url}/learn")
    settle(page, "[data-testid='stFormSubmitButton']")
    choose(page, "[data-testid='stMain']", "training steps", "2000")
    page.locator("[data-testid='stFormSubmitButton'] button").click()
    page.wait_for_function("() => /Step [1-9][0-9]{2} of 2000/.test(document.body.innerText)", timeout=LOADED)
    pressed = time.perf_counter()
    page.locator(".st-key-learn_stop button").click()
    page.wait_for_function("() => /Stopped at step \\d+ of 2000/.test(document.body.innerText)",
                           timeout=LOADED)
    seconds = time.perf_counter() - pressed
    step = int(re.search(r"Stopped at step (\d+) of 2000", page.inner_text("body")).group(1))
    assert 100 <= step < 2000 and seconds < 5, (step, seconds)  # 0.6 s measured on a quiet machine
    assert page.locator("[data-testid='stException']").count() == 0
    page.wait_for_selector(".st-key-learn_training .js-plotly-plot", timeout=LOADED)  # the steps done
    page.context.close()


def test_a_grouped_g_survives_changes_of_h_with_its_label_and_a_standard_g_follows_h(live):
    url, browser = live
    page = projector_page(browser, url)
    settle(page, ".js-plotly-plot")
    kv = page.locator(KV)
    set_number(page, "d_model", 8)
    set_number(page, "heads h", 4)
    page.wait_for_function("() => document.body.innerText.includes('d_k = d_v = d_model / h = 2')",
                           timeout=LOADED)
    choose(page, "[data-testid='stSidebar']", "key/value heads", "2 (grouped-query)")
    sharing = "() => document.body.innerText.includes('{h} query heads share 2 key/value heads')"
    page.wait_for_function(sharing.replace("{h}", "4"), timeout=LOADED)
    set_number(page, "heads h", 8)
    page.wait_for_function(sharing.replace("{h}", "8"), timeout=LOADED)
    assert kv.input_value() == "2 (grouped-query)"
    set_number(page, "heads h", 3)  # 2 does not divide 3: back to one key/value head per query head
    page.wait_for_function("(s) => document.querySelector(s).value.startsWith('3 (standard')", arg=KV,
                           timeout=LOADED)
    assert "share" not in " ".join(page.locator("[data-testid='stCaptionContainer']").all_inner_texts())
    assert page.locator("[data-testid='stException']").count() == 0
    page.context.close()
