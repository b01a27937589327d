"""The skip links in the reader's language, in Chromium (issue 40, finding 6): the page's script drew
them in English whatever the language; now it draws the words its language script gives it."""

from __future__ import annotations

import pytest

from app.style import SKIP_WORDS
from course.i18n import translator
from tests.browser_env import LOADED, require_browser, settle

require_browser()

pytestmark = pytest.mark.browser

LINKS = "() => Array.from(document.querySelectorAll('#mha-skip a'), a => a.textContent)"
STEPS = """() => Array.from(document.querySelectorAll("[data-testid='stMain'] h3[id]"),
                            h => h.textContent.trim())
    .filter(text => /^\\d+\\.\\s/.test(text))"""


def test_the_skip_links_say_what_the_pages_language_gives_them(live):
    url, browser = live
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{url}/?lang=de")
    settle(page, ".js-plotly-plot", timeout=LOADED, attached=True)
    page.wait_for_function("() => document.documentElement.lang === 'de'", timeout=LOADED)
    german = {name: translator("de")(message) for name, message in SKIP_WORDS.items()}
    assert page.evaluate("() => window.mhaSkipWords") == german
    page.wait_for_function("() => document.querySelectorAll('#mha-skip a').length > 6", timeout=LOADED)
    steps = page.evaluate(STEPS)
    assert page.evaluate(LINKS) == [german["step"].replace("{step}", step) for step in steps] + [
        german["toolbars_in"]]
    # Another language's words (as its script sends them when the reader picks it) redraw the links.
    marked = {name: f"«{message}»" for name, message in SKIP_WORDS.items()}
    page.evaluate("(words) => { window.mhaSkipWords = words; window.mhaSkipUpdate(); }", marked)
    assert page.evaluate(LINKS) == [f"«Skip to step {step}»" for step in steps] + [
        "«Chart toolbars in the Tab order»"]
    named = page.evaluate("() => document.getElementById('mha-skip').getAttribute('aria-label')")
    assert named == "«Skip links»"
    page.context.close()
