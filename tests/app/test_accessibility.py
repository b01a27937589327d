"""Accessibility measured by a real engine: axe-core (tests/a11y.py) in Chromium against a real server,
on every page of the navigation, an example, a long sequence, a room as teacher and as student and the
forecast question on a student's screen; plus what axe does not check: chart text contrast, skip
links, toolbars out of the Tab order, a visible focus ring, reduced motion and 200% zoom.

The window is 1280 wide and made as tall as the page before axe runs: axe leaves what lies outside
the viewport undecided, so a 720-px window would check only the top of each page.
Skips when Chromium, Playwright or node_modules/axe-core is missing, unless REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

import functools
import re

import pytest

from course.steps import number_of
from tests.a11y import AXE, assert_no_violations
from tests.browser_env import ARTIFACTS, present_screen, require_browser, room_code, screen_shown
from tests.browser_env import settle as settle_page
from tests.wcag import contrast_on_white

LOADED = 90_000  # ms: how long a page may take on a loaded machine before the test gives up
WIDTH, HEIGHT = 1280, 720
TALLEST = 16_000  # px: the window grows to the page's height, at most this
PAGES = ["workbench", "present", "labs", "learn", "quiz", "model", "class", "examples"]  # the navigation

require_browser(("axe-core", AXE))

pytestmark = pytest.mark.browser


def new_page(browser, **options):
    options.setdefault("viewport", {"width": WIDTH, "height": HEIGHT})
    return browser.new_context(**options).new_page()


DRAWN = "[data-testid='stMain'] h1, [data-testid='stMain'] h3, .js-plotly-plot"  # some page has drawn
settle = functools.partial(settle_page, timeout=LOADED, attached=True)  # tests.browser_env's, attached


def as_tall_as_the_page(page) -> None:
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": max(HEIGHT, min(height, TALLEST))})
    page.wait_for_timeout(500)
    settle(page, "[data-testid='stMain']")


CHART_TEXT = """() => {
    // Every text plotly draws outside the cells (ticks, axis and panel titles, colour bars, legends),
    // with its fill colour; cell numbers are plotly's own black or white against each cell.
    const seen = '.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .gtitle, .annotation-text, '
        + '.cbaxis text, .cbtitle text, .legendtext';
    return Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(plot =>
        Array.from(plot.querySelectorAll(seen)).filter(t => t.textContent.trim() && t.getBBox().width > 0)
            .map(t => [t.textContent.trim().slice(0, 30), getComputedStyle(t).fill]));
}"""


CELL_TEXT = """() => Array.from(document.querySelectorAll('.js-plotly-plot .heatmap-label text'), t => {
    const s = getComputedStyle(t);
    return [t.textContent, s.fill, s.stroke, s.paintOrder, parseFloat(s.strokeWidth)];
})"""


def cell_text_stands_out(fill: str, stroke: str, paint_order: str, stroke_width: float) -> bool:
    """Plotly writes a cell's number in #444 or white by the cell's brightness (2.6:1 at worst): black
    numbers (tests/app/test_colour_vision.py: 4.5:1 or more wherever plotly writes dark), or white ones in a
    black halo drawn under them."""
    black, white = "rgb(0, 0, 0)", "rgb(255, 255, 255)"
    return fill == black or (fill == white and stroke == black and paint_order.startswith("stroke")
                             and stroke_width >= 1.5)


def assert_chart_text_readable(page, where: str) -> None:
    faint = [(text, fill, round(contrast_on_white(fill), 2)) for text, fill in page.evaluate(CHART_TEXT)
             if contrast_on_white(fill) < 4.5]
    assert not faint, f"chart text under 4.5:1 on white on {where}: {faint[:8]} ({len(faint)} in all)"
    cells = page.evaluate(CELL_TEXT)
    unclear = [cell for cell in cells if not cell_text_stands_out(*cell[1:])]
    assert not unclear, f"cell numbers neither black nor in a halo on {where}: {unclear[:5]} ({len(unclear)})"


def assert_accessible(page, where: str) -> None:
    """axe's WCAG 2.2 A/AA rules and the charts' text contrast, over the whole page."""
    as_tall_as_the_page(page)
    page.screenshot(path=str(ARTIFACTS / f"a11y-{re.sub(r'[^a-z0-9]+', '-', where.lower())}.png"))
    assert_no_violations(page, where)
    assert_chart_text_readable(page, where)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})


@pytest.mark.parametrize("name", PAGES)
def test_every_page_of_the_navigation_has_no_violation(live, name):
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/{'' if name == 'workbench' else name}")
    settle(page, DRAWN)
    if name in ("workbench", "labs", "model"):
        page.wait_for_selector(".js-plotly-plot", timeout=LOADED)
        settle(page, DRAWN)
    assert_accessible(page, name)
    page.context.close()


@pytest.mark.parametrize(("path", "language"), [
    ("/?example=ex_g_coreference", "en"),
    ("/?example=decoder_gqa", "en"),  # issue 18: grouped key/value heads, a causal decoder
    ("/?lang=de", "de"),  # issue 17: German, the longest language
    ("/present?lang=zh_CN", "zh-CN"),
])
def test_an_example_or_a_language_has_no_violation_and_the_page_says_its_language(live, path, language):
    """An example, and translated pages (issue 17): axe passes as on the English page, and the page's
    lang is the reader's (WCAG 3.1.1: a screen reader pronounces German as German)."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}{path}")
    settle(page, ".js-plotly-plot")
    page.wait_for_function("(code) => document.documentElement.lang === code", arg=language, timeout=LOADED)
    assert_accessible(page, f"{path} ({language})")
    page.context.close()


def test_a_long_sequence_has_no_violation(live):
    """80 tokens: grids are pictures with a window of numbers (tests/app/test_long.py)."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/")
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    box = page.locator("input[aria-label*='Tokens (queries)' i]")
    box.fill(" ".join(f"w{i}" for i in range(80)))
    box.press("Enter")
    page.wait_for_function("() => document.body.innerText.includes('80 × 80 (queries × keys)')",
                           timeout=LOADED)
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    assert_accessible(page, "a long sequence")
    page.context.close()


CHIP_BUTTONS = "[class*='st-key-chip_add_'] button"


def test_a_room_as_teacher_and_student_and_the_forecast_question(live):
    """The Class page starts a room; a second browser joins by its link; the teacher presents the softmax
    screen and asks the room to draw a forecast: teacher, student and the student's question, each checked."""
    url, browser = live
    teacher = new_page(browser)
    teacher.goto(f"{url}/class")
    settle(teacher, ".st-key-live_start")
    teacher.locator(".st-key-live_start button").click()
    code = room_code(teacher)
    settle(teacher, "[data-testid='stMain'] h1")
    assert_accessible(teacher, "a room, the teacher's Class page")
    student = new_page(browser)
    student.goto(f"{url}/?room={code}")
    student.wait_for_function("(c) => document.body.innerText.includes('Room ' + c)", arg=code,
                              timeout=LOADED)
    settle(student, DRAWN)
    assert_accessible(student, "a room, the student's page")
    teacher.locator("[data-testid='stSidebarNav'] a:has-text('Present')").click()
    settle(teacher, ".st-key-present_next")
    softmax = present_screen(teacher, "softmax", timeout=LOADED)
    screen_shown(student, softmax, timeout=LOADED)
    teacher.locator(".st-key-present_draw button").click()
    student.wait_for_selector(CHIP_BUTTONS, timeout=LOADED)
    settle(student, CHIP_BUTTONS)
    assert_accessible(student, "the forecast question on a student's screen")
    settle(teacher, ".st-key-present_next")
    assert_accessible(teacher, "the teacher presenting a forecast question")
    student.context.close()
    teacher.context.close()


# --- Beyond axe: the keyboard ---------------------------------------------------------------------

FOCUSED = """() => {
    const e = document.activeElement;
    const step = Array.from(document.querySelectorAll("[data-testid='stMain'] h3"))
        .filter(h => h.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
    return {text: (e.getAttribute('aria-label') || e.innerText || '').trim().slice(0, 60), tag: e.tagName,
            toolbar: !!e.closest("[data-testid='stElementToolbar'], .modebar"),
            step: step ? step.innerText.trim() : ''};
}"""
HEADS = number_of("heads_compared")  # the workbench's step of the heads side by side, as it is numbered
TOOLBAR_STOPS = """() => Array.from(document.querySelectorAll(
    "[data-testid='stMain'] [data-testid='stElementToolbar'] button, [data-testid='stMain'] .modebar-btn"))
    .filter(b => b.tabIndex >= 0).length"""


def test_skip_links_reach_every_step_and_toolbars_wait_until_asked_for(live):
    """The first Tab stops are one skip link per step; Enter on the heads step's (heads_compared),
    then Tab, is inside it. No chart or grid toolbar button is a Tab stop (today 8 per chart, 6 per
    grid: about 116 presses from the top to that step) until the last skip link asks for them."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/")
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    seen = []
    for _ in range(12):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(FOCUSED)["text"])
        if seen[-1].startswith(f"Skip to step {HEADS}"):
            break
    assert seen[-1].startswith(f"Skip to step {HEADS}. "), seen
    assert [s.split(".")[0] for s in seen[:HEADS]] == [f"Skip to step {i}" for i in range(1, HEADS + 1)]
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED)["step"].startswith(f"{HEADS}. "), page.evaluate(FOCUSED)
    assert page.evaluate(TOOLBAR_STOPS) == 0
    asked = page.get_by_role("link", name="Chart toolbars in the Tab order")
    asked.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => ({TOOLBAR_STOPS})() > 0", timeout=10_000)
    assert page.evaluate(FOCUSED)["toolbar"]  # the first toolbar button has the focus
    page.locator(".st-key-chart_x .modebar-btn").first.focus()  # plotly's toolbar shows on hover only...
    page.wait_for_function("""() => getComputedStyle(  // ...and when one of its buttons has the focus
        document.querySelector('.st-key-chart_x .modebar')).opacity === '1'""", timeout=10_000)
    page.context.close()


def test_a_keyboard_walk_through_the_workbench_meets_no_toolbar(live):
    """Tab from the top of the main area to the heads step (heads_compared): no stop is a toolbar
    button, and it takes fewer than 70 presses (116 before)."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/")
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    page.locator("[data-testid='stMain']").focus()
    walked = []
    while len(walked) < 120:
        page.keyboard.press("Tab")
        walked.append(page.evaluate(FOCUSED))
        if walked[-1]["step"].startswith(f"{HEADS}. "):
            break
    assert walked[-1]["step"].startswith(f"{HEADS}. "), walked[-5:]
    assert not [f for f in walked if f["toolbar"]]
    assert len(walked) < 70, len(walked)
    (ARTIFACTS / "a11y-tabs-to-step-6.txt").write_text(f"{len(walked)}\n")
    page.context.close()


FOCUS_RING = """() => { const s = getComputedStyle(document.activeElement);
    return {style: s.outlineStyle, width: parseFloat(s.outlineWidth), colour: s.outlineColor}; }"""


def test_the_focus_ring_is_visible_on_navigation_links_buttons_and_fields(live):
    """A 2 px or thicker solid outline at 3:1 or more against white on every kind of control."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/")
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    for selector in ("[data-testid='stSidebarNav'] a", "[data-testid='stMain'] button", "summary",
                     "input[aria-label*='Tokens (queries)' i]"):
        page.locator(selector).first.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # focus by keyboard, so :focus-visible applies
        ring = page.evaluate(FOCUS_RING)
        assert ring["style"] == "solid" and ring["width"] >= 2, (selector, ring)
        assert contrast_on_white(ring["colour"]) >= 3, (selector, ring)
    page.context.close()


MOVING = """() => Array.from(document.querySelectorAll('*')).filter(e => {
    const s = getComputedStyle(e);
    const ms = (v) => Math.max(...v.split(',').map(t => parseFloat(t) * (t.includes('ms') ? 1 : 1000)));
    return ms(s.transitionDuration) > 1 || (s.animationName !== 'none' && ms(s.animationDuration) > 1);
}).map(e => e.tagName + '.' + (e.getAttribute('data-testid') || e.className.baseVal || e.className))
  .slice(0, 8)"""


def test_reduced_motion_stops_transitions_and_animations(live):
    url, browser = live
    moving = {}
    for motion in ("no-preference", "reduce"):
        page = new_page(browser, reduced_motion=motion)
        page.goto(f"{url}/")
        settle(page, ".st-key-chart_weights .js-plotly-plot")
        moving[motion] = page.evaluate(MOVING)
        page.context.close()
    assert moving["no-preference"]  # Streamlit animates buttons and fields: the check can fail
    assert moving["reduce"] == [], moving["reduce"]


def test_the_workbench_at_200_percent_zoom_shows_its_first_chart_without_sideways_scrolling(live):
    """A browser zoomed to 200% on a 1280 x 720 screen lays the page out 640 CSS px wide at twice the
    pixels per px."""
    url, browser = live
    page = new_page(browser, viewport={"width": WIDTH // 2, "height": HEIGHT // 2}, device_scale_factor=2)
    page.goto(f"{url}/")
    settle(page, ".st-key-chart_x .js-plotly-plot")
    chart = page.locator(".st-key-chart_x .js-plotly-plot")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box and box["width"] > 100 and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH // 2 + 1, box
    sideways = page.evaluate("""() => {
        const main = document.querySelector("[data-testid='stMain']");
        return [main.scrollWidth - main.clientWidth,
                document.scrollingElement.scrollWidth - document.documentElement.clientWidth];
    }""")
    page.screenshot(path=str(ARTIFACTS / "a11y-zoom-200.png"))
    assert max(sideways) <= 1, sideways
    page.context.close()


def test_the_states_a_page_reaches_only_by_a_click_have_no_violation(live):
    """The Labs' second and third tabs, Compare with A pinned, the drill-down opened by its link, the
    Quiz after a Check and a refused setting: each is its own set of elements that the pages' first
    draw does not have."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/labs")
    settle(page, ".js-plotly-plot")
    for tab in ("Scaling lab", "Size and cost"):
        page.locator(f"[data-testid='stTab']:has-text('{tab}')").click()
        page.wait_for_timeout(300)
        settle(page, "[data-testid='stTab'][aria-selected='true']")
        assert_accessible(page, f"labs {tab}")
    page.locator(".st-key-lab_size_7b button").click()  # issue 18: the KV cache table and the cost chart
    page.wait_for_function("() => document.body.innerText.includes('128 MiB')", timeout=LOADED)
    settle(page, "[data-testid='stTab'][aria-selected='true']")
    assert_accessible(page, "labs 7B-class KV cache")
    page.goto(f"{url}/?example=ex_f_unscaled")
    settle(page, ".st-key-compare_partner")
    page.locator(".st-key-compare_partner button").click()
    page.wait_for_selector(".st-key-compare_unpin", timeout=LOADED)
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    assert_accessible(page, "compare pinned")
    page.goto(f"{url}/?example=the_cat_sat_two_heads&drill=2.3.1")
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    assert_accessible(page, "drill-down open")
    page.goto(f"{url}/quiz")
    form = "[data-testid='stMain'] [data-testid='stForm']"
    settle(page, form)
    choices = page.locator(f"{form} [data-testid='stRadio'] [role='radiogroup'] label:visible")  # first tab
    if choices.count():
        choices.first.click()
    else:
        page.locator(f"{form} input:visible").first.fill("0.5")
    page.locator("[class*='st-key-quiz_check_'] button:visible").first.click()
    page.wait_for_function("() => /Score this session: [01] right of 1 asked/.test(document.body.innerText)",
                           timeout=LOADED)
    settle(page, DRAWN)
    assert_accessible(page, "quiz answered")
    page.goto(f"{url}/")  # issue 29: a refused setting draws its reason, its fixes and step 1
    settle(page, ".st-key-chart_weights .js-plotly-plot")
    heads = page.get_by_label("heads h")
    heads.fill("4")
    heads.press("Enter")
    page.wait_for_selector(".st-key-refused_setting [data-testid='stButton']", timeout=LOADED)
    settle(page, ".st-key-chart_x .js-plotly-plot")
    assert_accessible(page, "a refused setting")
    page.context.close()


def test_the_learn_page_after_training_has_no_violation(live):
    """Issue 18: the Learn page once trained (its curves, the roles table, each layer's heads)."""
    url, browser = live
    page = new_page(browser)
    page.goto(f"{url}/learn")
    settle(page, "[data-testid='stFormSubmitButton']")
    page.locator("[data-testid='stFormSubmitButton'] button").click()
    page.wait_for_selector(".st-key-learn_layer_1 .js-plotly-plot", timeout=LOADED * 2)
    settle(page, ".st-key-learn_training .js-plotly-plot")
    assert_accessible(page, "learn trained")
    page.context.close()


def test_the_printed_worksheet_has_no_violation(live):
    """The Quiz's worksheet is a page of its own (course.worksheet): its tables, answer key and
    headings, as a browser opens the downloaded file."""
    from course.examples import all_examples
    from course.worksheet import worksheet_html

    _, browser = live
    setup = all_examples()["the_cat_sat_two_heads"]
    page = new_page(browser)
    page.set_content(worksheet_html(setup, setup.run(), title="Multi-head attention by hand", seed=0))
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.set_viewport_size({"width": WIDTH, "height": max(HEIGHT, min(height, TALLEST))})  # all of it in view
    assert_no_violations(page, "the worksheet")
    page.context.close()
