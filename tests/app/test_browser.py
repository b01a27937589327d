"""A real browser (Debian's Chromium through Playwright) against a real Streamlit server.

Skips when Chromium or Playwright is missing, unless REQUIRE_BROWSER=1 (CI), where that fails.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from course.steps import SCREENS
from tests.browser_env import (  # noqa: F401 (bench/ and other tests import some from here)
    ARTIFACTS,
    CHROMIUM,
    FLAGS,
    IDLE,
    no_error_on,
    present_screen,
    presenter_screens,
    require_browser,
    room_code,
    screen_shown,
    settle,
    type_tokens,
)
from tests.ws_log import MessageLog

require_browser()
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402 (after the skip)

pytestmark = pytest.mark.browser  # tests/conftest.py: make test-fast leaves these out

WEIGHTS = ".st-key-chart_weights .js-plotly-plot"
READ_WEIGHTS = f"""() => {{
    const el = document.querySelector("{WEIGHTS}");
    return el ? Array.from(el.data, t => t.z._inputArray || t.z) : null;
}}"""


def open_page(browser, url: str, viewport=(1400, 5000)):
    """A fresh browser context (no cookies, no session) on url, once the page has drawn."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.goto(url)
    settle(page, WEIGHTS)
    return page


def choose(page, label, tries: int = 3) -> None:
    """Click a radio's label until its input is checked: a click that lands while the expander
    above it is still opening, or while a run redraws the sidebar, can miss (CI saw it once)."""
    for _ in range(tries):
        label.click()
        try:
            label.locator("input").wait_for(state="attached", timeout=2_000)
            page.wait_for_function("(el) => el.checked", arg=label.locator("input").element_handle(),
                                   timeout=5_000)
            return
        except PlaywrightTimeout:
            page.wait_for_selector(IDLE, timeout=20_000)
    raise AssertionError(f"the radio {label} was never checked after {tries} clicks")


def picker(page) -> str:
    """What the example picker shows."""
    return page.locator(".st-key-example_picker input").input_value()


@pytest.fixture(scope="module")
def browser_page(live):
    url, browser = live
    page = open_page(browser, url)
    yield page
    page.context.close()


COLUMN_PX, ROW_PX = 75, 35  # a "small" text column; rows and the header


def click_cell(page, editor_index: int, row: int, col_from_right: int) -> None:
    """Click a data-editor cell, counting columns from the grid's right edge."""
    box = page.locator("[data-testid='stDataFrame']").nth(editor_index).bounding_box()
    page.mouse.click(box["x"] + box["width"] - COLUMN_PX * col_from_right + COLUMN_PX / 2,
                     box["y"] + ROW_PX * (row + 1) + ROW_PX / 2)


def type_into_sat_d1(page, text: str) -> float:
    """Type into X's 'sat' row, column d1, and press Enter; returns the moment Enter went."""
    click_cell(page, editor_index=0, row=2, col_from_right=2)
    page.wait_for_timeout(300)  # the grid selects the cell first; typing then opens its editor
    page.keyboard.type(text)
    page.wait_for_timeout(300)
    started = time.perf_counter()
    page.keyboard.press("Enter")
    return started


def wait_for_sat_weight_to_move(page, old: float) -> None:
    """Until head A's weight of 'sat' on 'the' (the default example) is no longer old."""
    page.wait_for_function(
        f"(old) => {{ const z = ({READ_WEIGHTS})(); return z && Math.abs(z[0][2][0] - old) > 1e-6; }}",
        arg=old, timeout=10_000)


def test_editing_an_embedding_cell_updates_the_heatmap(browser_page):
    page = browser_page
    before = page.evaluate(READ_WEIGHTS)
    assert before is not None and abs(before[0][2][0] - 0.6652) < 1e-3  # chapter 002: 'sat' row, head A
    started = type_into_sat_d1(page, "3")
    wait_for_sat_weight_to_move(page, before[0][2][0])
    seconds = time.perf_counter() - started
    page.wait_for_selector(IDLE)
    after = page.evaluate(READ_WEIGHTS)
    page.screenshot(path=str(ARTIFACTS / "browser-after-edit.png"))
    # 'sat' = (3, 1): head A scores it 9 against 'the''s 6, so 'sat' now attends mostly to itself.
    assert max(range(3), key=lambda j: after[0][2][j]) == 2
    assert all(abs(sum(row) - 1) < 1e-6 for head in after for row in head)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    (ARTIFACTS / "browser-edit-seconds.txt").write_text(f"{seconds:.3f}\n")


def test_an_edit_survives_a_visit_to_another_page(browser_page):
    """Streamlit drops the state of widgets a run does not draw; the edit must not go with it."""
    page = browser_page
    edited = page.evaluate(READ_WEIGHTS)
    assert max(range(3), key=lambda j: edited[0][2][j]) == 2  # the previous test's edit is live
    page.get_by_role("link", name="Worked examples").click()
    page.wait_for_selector("text=Open in the workbench", timeout=20_000)
    page.wait_for_selector(IDLE)
    page.get_by_role("link", name="Workbench").click()
    page.wait_for_selector(WEIGHTS, timeout=20_000)
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(500)
    back = page.evaluate(READ_WEIGHTS)
    assert all(abs(a - b) < 1e-9 for a, b in zip(back[0][2], edited[0][2], strict=True))
    page.screenshot(path=str(ARTIFACTS / "browser-after-navigation.png"))


def open_save_load(page) -> None:
    """Open "Save or load this setup" unless it is open (a second click would close it): its contents
    are drawn only while it is open (app/setup_ui.py), after the rerun the click starts."""
    uploader = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    if uploader.count() == 0:
        page.get_by_text("Save or load this setup").click()
    uploader.wait_for(state="attached", timeout=20_000)
    page.wait_for_selector(IDLE, timeout=20_000)


def upload(page, name: str, text: str) -> None:
    open_save_load(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": name, "mimeType": "application/json", "buffer": text.encode()}])
    page.wait_for_timeout(500)
    page.wait_for_selector(IDLE, timeout=20_000)


def test_loading_a_saved_setup_and_refusing_a_bad_one(browser_page):
    import json

    from course.examples import all_examples
    from mha_core.codec import setup_to_json
    page = browser_page
    before = page.evaluate(READ_WEIGHTS)
    example_a = setup_to_json(all_examples()["ex_a_single_head"])
    bad = {**json.loads(example_a), "tokens": ["w"] * 30}
    upload(page, "bad.json", json.dumps(bad))
    assert page.get_by_text("Could not load bad.json").count() == 1
    assert page.evaluate(READ_WEIGHTS) == before  # nothing on the page changed
    upload(page, "a.json", example_a)
    page.wait_for_function(f"() => {{ const z = ({READ_WEIGHTS})(); return z && z.length === 1; }}",
                           timeout=10_000)
    weights = page.evaluate(READ_WEIGHTS)
    assert abs(weights[0][0][0] - 0.6698) < 5e-5  # chapter 001, example A
    assert page.locator("[data-testid='stException']").count() == 0


@pytest.mark.parametrize("sentence", ["a dog ran", "a b c"])
def test_own_sentence_then_any_click_keeps_every_step(live, sentence):
    """Findings 1 and 8: Chromium sends the query selectbox's old label back once the tokens change;
    the old page then replaced steps 6 to 8 by an error box (and, for a sentence of the same
    length, failed every rerun for the rest of the session)."""
    url, browser = live
    page = open_page(browser, url)
    type_tokens(page, sentence)
    page.locator("button:has-text('head 2')").first.click()
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=20_000)
    for _ in range(2):  # "then any interaction", twice
        page.locator("button:has-text('head 1')").first.click()
        page.wait_for_timeout(300)
        page.wait_for_selector(IDLE, timeout=20_000)
    no_error_on(page)
    for key in ("chart_bars", "chart_concat", "chart_output"):
        assert page.locator(f".st-key-{key} .js-plotly-plot").count() == 1, key
    assert sentence.split()[-1] in page.locator(".st-key-chart_weights").inner_text()
    page.context.close()


def chart_data(page) -> dict:
    return page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll("[class*='st-key-chart_'] .js-plotly-plot"),
        el => [el.closest("[class*='st-key-chart_']").className.match(/st-key-(chart_\\w+)/)[1],
               JSON.stringify(el.data.map(t => [t.z && (t.z._inputArray || t.z), t.y]))]))""")


def test_the_address_bar_reopens_an_edit_in_a_fresh_browser(live):
    url, browser = live
    page = open_page(browser, url)
    click_cell(page, editor_index=0, row=1, col_from_right=1)  # X: row 'cat', column d2
    page.wait_for_timeout(300)
    page.keyboard.type("-1.5", delay=100)  # the grid's text editor opens on the first key
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.search.includes('s=1.')", timeout=20_000)
    page.wait_for_selector(IDLE, timeout=20_000)
    address = page.url
    mine = chart_data(page)
    other = open_page(browser, address)
    other.wait_for_timeout(500)
    assert chart_data(other) == mine
    assert picker(other) == picker(page) == "The cat sat: two heads that disagree (edited)"
    page.context.close()
    other.context.close()


@pytest.mark.parametrize("example", ["ex_h_cross_attention", "ex_i_parameter_count"])
def test_the_512_wide_examples_paint_every_chart_quickly(live, example):
    """Finding 2: examples H and I froze Chromium for 68 to 118 s and drew blank panels."""
    url, browser = live
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    started = time.perf_counter()
    page.goto(f"{url}/?example={example}")
    page.wait_for_selector(WEIGHTS, timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_function("""() => {
        const plots = document.querySelectorAll("[class*='st-key-chart_'] .js-plotly-plot");
        return plots.length >= 8 && Array.from(plots).every(p => p._fullLayout && p.querySelector(
            ".heatmaplayer image, .heatmaplayer .hm, .barlayer .point, .plot .trace"));
    }""", timeout=60_000)
    seconds = time.perf_counter() - started
    blank = page.evaluate("""() => Array.from(
        document.querySelectorAll(".js-plotly-plot .heatmaplayer image"))
        .filter(img => !(img.getAttribute("href") || "").startsWith("data:image")).length""")
    no_error_on(page)
    page.screenshot(path=str(ARTIFACTS / f"browser-{example}.png"), full_page=True)
    (ARTIFACTS / f"browser-{example}-seconds.txt").write_text(f"{seconds:.3f}\n")
    assert blank == 0
    context.close()


def test_open_in_the_workbench_lands_at_the_top(live):
    url, browser = live
    page = open_page(browser, url, viewport=(1280, 720))
    page.get_by_role("link", name="Worked examples").click()
    page.wait_for_selector("text=Open in the workbench", timeout=20_000)
    page.wait_for_selector(IDLE)
    buttons = page.get_by_role("button", name="Open in the workbench")
    buttons.nth(4).scroll_into_view_if_needed()  # example B, well down the page
    buttons.nth(4).click()
    settle(page, WEIGHTS)
    top = """() => { const m = document.querySelector("[data-testid='stMain']");
                     return (m ? m.scrollTop : 0) + window.scrollY; }"""
    try:  # the page scrolls itself up while it is drawn (without the fix it stays where B was)
        page.wait_for_function(f"() => ({top})() < 50", timeout=5_000)
    except PlaywrightTimeout:
        raise AssertionError(f"the workbench opened {page.evaluate(top)} px down the page") from None
    assert picker(page).startswith("B: two heads")
    page.context.close()


def download(page, button: str, folder) -> Path:
    """Click a download button of "Save or load this setup" and keep the file the browser gets."""
    open_save_load(page)
    with page.expect_download(timeout=20_000) as started:
        page.get_by_role("button", name=button).click()
    path = folder / started.value.suggested_filename
    started.value.save_as(path)
    return path


def test_the_downloaded_script_prints_the_weights_the_page_draws(live, tmp_path):
    """Export as code (issue 8), through the browser's own download."""
    import ast
    import subprocess
    import sys

    url, browser = live
    page = open_page(browser, url)
    path = download(page, "Download as Python (NumPy only)", tmp_path)
    done = subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = dict(line.split(" = ", 1) for line in done.stdout.splitlines())
    drawn = page.evaluate(READ_WEIGHTS)  # per head, rows of {index: weight}
    ours = ast.literal_eval(printed["weights"])
    for head_drawn, head_ours in zip(drawn, ours, strict=True):
        for row_drawn, row_ours in zip(head_drawn, head_ours, strict=True):
            values = list(row_drawn.values()) if isinstance(row_drawn, dict) else row_drawn
            assert all(abs(a - b) < 1e-6 for a, b in zip(values, row_ours, strict=True))
    page.context.close()


def test_the_downloaded_numbers_hold_the_weights_the_page_draws(live, tmp_path):
    import csv
    import io
    import zipfile

    url, browser = live
    page = open_page(browser, url)
    path = download(page, "Download all numbers (CSV files, ZIP)", tmp_path)
    rows = list(csv.reader(io.StringIO(zipfile.ZipFile(path).read("4_weights_head1.csv").decode())))
    assert rows[0][1:] == ["1 the", "2 cat", "3 sat"]
    drawn = page.evaluate(READ_WEIGHTS)[0]  # head 1, rows of {index: weight}
    for row_drawn, row in zip(drawn, rows[1:], strict=True):
        values = list(row_drawn.values()) if isinstance(row_drawn, dict) else row_drawn
        assert all(abs(a - float(b)) < 1e-6 for a, b in zip(values, row[1:], strict=True))
    page.context.close()


# --- Presenter mode and chart images (issue 8) ------------------------------------------------------

SMALLEST_TEXT = """() => {
    // The smallest font of any number drawn on a chart's cells, and of the page's own text.
    const sizes = (nodes) => Array.from(nodes).filter(n => n.getBoundingClientRect().width > 0
        && /\\d/.test(n.textContent)).map(n => parseFloat(getComputedStyle(n).fontSize));
    const drawn = ".js-plotly-plot .heatmap-label text, .js-plotly-plot .textpoint text";
    const cells = sizes(document.querySelectorAll(drawn));
    return {cells: cells.length ? Math.min(...cells) : null, count: cells.length};
}"""
OVERFLOW = """() => {
    // What the room sees crossing the viewport's left or right edge: charts, text, buttons, formulas;
    // and whether the page scrolls sideways at all.
    const width = document.documentElement.clientWidth;
    const main = document.querySelector("[data-testid='stMain']");
    const seen = "svg.main-svg, button, p, h3, li, .katex-display, table, [data-testid='stAlert']";
    const out = Array.from(main.querySelectorAll(seen)).filter(el => {
        const box = el.getBoundingClientRect();
        return box.width > 0 && box.height > 0 && (box.right > width + 1 || box.left < -1);
    }).slice(0, 5).map(el => {
        const box = el.getBoundingClientRect();
        return `${el.tagName}.${el.className.baseVal ?? el.className} ${box.left}..${box.right}`;
    });
    if (main.scrollWidth > main.clientWidth + 1) out.push(`scrolls sideways: ${main.scrollWidth}`);
    return out;
}"""


def test_the_presenter_walks_all_steps_readably_at_projector_size(live):
    """1280 x 720, the keyboard's arrows: every screen's cell numbers are at least 20 px and
    nothing crosses the viewport's edge; the forecast's Reveal shows the result."""
    url, browser = live
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(f"{url}/present?example=the_cat_sat_two_heads")
    settle(page, ".st-key-present_next")
    seen = []

    def arrow_right(page) -> None:
        page.mouse.click(5, 300)  # focus the page, not a field
        page.keyboard.press("ArrowRight")

    for position in presenter_screens(page, press=arrow_right, timeout=20_000):
        screen = position + 1
        reveal = page.locator(".st-key-present_reveal button")
        if reveal.count():
            reveal.click()
            page.wait_for_timeout(300)
            page.wait_for_selector(IDLE, timeout=20_000)
        page.wait_for_timeout(500)  # charts finish drawing
        text = page.evaluate(SMALLEST_TEXT)
        if text["count"]:
            assert text["cells"] >= 20, (screen, text)
            seen.append(screen)
        page.screenshot(path=str(ARTIFACTS / f"present-{screen}.png"))
        assert page.evaluate(OVERFLOW) == [], screen
        no_error_on(page)
    assert len(seen) >= 6  # the screens with numbered grids were measured, not skipped
    assert f"step={SCREENS[-1].key}" in page.url  # the address names the screen
    page.keyboard.press("ArrowLeft")
    screen_shown(page, len(SCREENS) - 2, timeout=20_000)
    context.close()


@pytest.mark.parametrize("image_format", ["png", "svg"])
def test_every_chart_downloads_as_an_image_offline(live, tmp_path, image_format):
    """Plotly's own modebar camera, with no network: a PNG or an SVG as the sidebar chooses."""
    url, browser = live
    page = open_page(browser, url)
    if image_format == "svg":
        open_save_load(page)
        choose(page, page.locator("label:has-text('SVG')"))
        page.wait_for_function("""() => {  // the rerun has redrawn the chart with the new option
            const gd = document.querySelector('.st-key-chart_weights .js-plotly-plot');
            return gd && gd._context && gd._context.toImageButtonOptions.format === 'svg'; }""",
                               timeout=20_000)
        page.wait_for_selector(IDLE, timeout=20_000)
    chart = page.locator(".st-key-chart_weights .js-plotly-plot")
    chart.hover()
    with page.expect_download(timeout=20_000) as started:
        chart.locator(".modebar-btn[data-title^='Download plot']").click()
    path = tmp_path / started.value.suggested_filename
    started.value.save_as(path)
    assert path.name == f"weights.{image_format}"
    head = path.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if image_format == "png" else b"<svg" in head
    page.context.close()


def test_the_model_page_shows_twelve_heads_of_a_typed_sentence(live):
    """Issue 9: the real model in a real browser: type a sentence, see every head of a layer."""
    url, browser = live
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/model")
    settle(page, ".st-key-model_overview .js-plotly-plot")
    box = page.locator("textarea[aria-label*='Text' i]")
    box.fill("my dog chased the ball because it was bored")
    box.press("Control+Enter")  # a text area submits with Ctrl+Enter (or on blur)
    page.wait_for_function("() => document.body.innerText.includes('[CLS] my dog chased')", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    page.get_by_role("tab", name="One layer's heads").click()
    settle(page, ".st-key-model_weights .js-plotly-plot")  # the tab's content runs once it is opened
    weights = page.evaluate("""() => {
        const el = document.querySelector('.st-key-model_weights .js-plotly-plot');
        const rows = (t) => (t.z._inputArray || t.z).length;
        return el ? el.data.filter(t => t.type === 'heatmap').map(rows) : null;
    }""")
    assert weights == [11] * 12  # 12 heads of 11 word pieces: [CLS], 9 words, [SEP]
    titles = page.evaluate("""() => Array.from(document.querySelectorAll(
        '.st-key-model_weights .annotation-text'), el => el.textContent)""")
    assert [t.split(":")[0] for t in titles if t.startswith("head ")] == [f"head {i}" for i in range(1, 13)]
    no_error_on(page)
    page.screenshot(path=str(ARTIFACTS / "model-layer.png"), full_page=True)
    context.close()


def test_a_student_browser_follows_the_teacher_within_three_seconds(live, tmp_path):
    """Issue 10: two browsers on one server; the teacher starts a room, the student opens its link;
    the teacher's edited cell and next step reach the student's charts by themselves."""
    url, browser = live
    teacher = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    teacher.goto(f"{url}/class")
    settle(teacher, ".st-key-live_start")
    teacher.locator(".st-key-live_start button").click()
    code = room_code(teacher)  # the door keeps the code out of the teacher's address (issue 15)
    assert code and len(code) == 4
    teacher.locator("[data-testid='stSidebarNav'] a:has-text('Workbench')").click()  # same session
    settle(teacher, WEIGHTS)
    student = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    student.goto(f"{url}/?room={code}")
    student.wait_for_function("(c) => document.body.innerText.includes('Room ' + c)", arg=code,
                              timeout=30_000)
    settle(student, WEIGHTS)
    before = student.evaluate(READ_WEIGHTS)
    assert before == teacher.evaluate(READ_WEIGHTS)
    assert student.locator("[data-testid='stDataFrame']").count() == 0  # read-only tables while following
    assert student.locator(".st-key-tokens_text").count() == 0
    started = type_into_sat_d1(teacher, "3")
    wait_for_sat_weight_to_move(student, before[0][2][0])
    edit_seconds = time.perf_counter() - started
    settle(student, WEIGHTS)
    assert student.evaluate(READ_WEIGHTS) == teacher.evaluate(READ_WEIGHTS)
    assert student.locator("table td:text-is('3')").count() >= 1  # the typed cell, in a drawn table
    no_error_on(student)
    student.screenshot(path=str(ARTIFACTS / "live-student-workbench.png"))
    teacher.locator("[data-testid='stSidebarNav'] a:has-text('Present')").click()
    settle(teacher, ".st-key-present_next")
    started = time.perf_counter()
    teacher.locator(".st-key-present_next button").click()
    screen_shown(student, 1, timeout=10_000)
    step_seconds = time.perf_counter() - started
    assert edit_seconds < 3 and step_seconds < 3, (edit_seconds, step_seconds)
    no_error_on(student)
    student.screenshot(path=str(ARTIFACTS / "live-student.png"))
    (ARTIFACTS / "live-follow-seconds.txt").write_text(f"edit {edit_seconds:.3f}\nstep {step_seconds:.3f}\n")
    student.context.close()
    teacher.context.close()


MARKUP_TOKENS = "![i](http://127.0.0.1:9/p.png) **BOLD** <b>"  # an image, bold and HTML as tokens (finding 2)
WITHIN = 3_000  # ms: what the teacher does reaches every screen within this
LOADED = 20_000  # ms: how long a step may take before the test gives up (the times are checked at the end)
CHIP_BUTTONS = "[class*='st-key-chip_add_'] button"
TAKE_PILLS = "[class*='st-key-chip_take_'] button"  # one pill per key: take a chip back


def visible_text(page, text: str) -> None:
    page.wait_for_function("(t) => document.body.innerText.includes(t)", arg=text, timeout=LOADED)


WATCH_FOR = """(selector) => {
  window.mhaShownAt = null;
  const stamp = () => {
    if (document.querySelector(selector)) { window.mhaShownAt = Date.now(); return true; }
  };
  if (stamp()) return;
  const watch = new MutationObserver(() => { if (stamp()) watch.disconnect(); });
  watch.observe(document.body, {childList: true, subtree: true});
}"""


def seconds_until_shown(pages, act, selector: str) -> float:
    """Seconds from the act (a click) until the last of the pages has the selector in its document,
    each page stamping the moment itself (Date.now(), the machine's clock, as time.time() is).
    Playwright's waits visit the pages one after another, each a round trip to a busy browser: under
    load they added up to a second that no student saw (a reveal drawn at 1.1 s measured 1.9 s)."""
    for page in pages:
        page.evaluate(WATCH_FOR, selector)
    acted = time.time()
    act()
    for index, page in enumerate(pages):
        try:
            page.wait_for_function("() => window.mhaShownAt !== null", timeout=LOADED)
        except PlaywrightTimeout:
            for other, shot in enumerate(pages):
                shot.screenshot(path=str(ARTIFACTS / f"not-shown-{other}.png"))
                (ARTIFACTS / f"not-shown-{other}.html").write_text(shot.content())
            sidebar = page.locator("[data-testid='stSidebar']").inner_text()[:300]
            raise AssertionError(f"page {index} never showed {selector} (screenshots: "
                                 f"artifacts/not-shown-*.png); its sidebar: {sidebar!r}") from None
    return max(page.evaluate("() => window.mhaShownAt") for page in pages) / 1000 - acted


def wait_for_chips(page, key: int, chips: int, name: str, log: MessageLog) -> None:
    """Wait until the key's button shows this many chips; if it never does, keep the page's
    screenshot, HTML and websocket messages (kept()) and say what the buttons show."""
    try:
        page.wait_for_function(
            "([s, k, n]) => (document.querySelectorAll(s)[k]?.innerText ?? '').split('●').length - 1 === n",
            arg=[CHIP_BUTTONS, key, chips], timeout=LOADED)
    except PlaywrightTimeout:
        shown = page.evaluate("(s) => Array.from(document.querySelectorAll(s), b => b.innerText)",
                              CHIP_BUTTONS)
        raise AssertionError(f"{name}'s key {key} never showed {chips} chips; its buttons: {shown}; "
                             f"{kept(page, log, f'chips-{name}')}") from None


def kept(page, log: MessageLog, name: str) -> str:
    """A page that did not show its part: its screenshot, HTML and websocket messages kept as
    artifacts/NAME.png, .html and -messages.txt; returns its last messages for the failure's text."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    (ARTIFACTS / f"{name}.html").write_text(page.content())
    log.write(ARTIFACTS / f"{name}-messages.txt")
    return f"its last messages:\n{log.tail()}"


def test_a_class_draws_a_forecast_on_laptops_and_a_phone(live):
    """Issue 15: the teacher presents, asks the room to draw one head's row, three students draw it
    (one on a 390 x 844 touch phone), the teacher closes and reveals; every screen shows its part
    within 3 s. The keys are tokens with an image, bold and HTML: no screen fetches the image or
    draws the markup."""
    url, browser = live
    fetched = []
    teacher_context = browser.new_context(viewport={"width": 1280, "height": 720})
    teacher_context.on("request", lambda r: fetched.append(r.url))
    teacher = teacher_context.new_page()
    teacher.goto(f"{url}/class")
    settle(teacher, ".st-key-live_start")
    teacher.locator(".st-key-live_start button").click()
    teacher.wait_for_function("() => document.body.innerText.includes('following right now')", timeout=20_000)
    code = room_code(teacher)
    teacher.locator("[data-testid='stSidebarNav'] a:has-text('Workbench')").click()
    settle(teacher, WEIGHTS)
    type_tokens(teacher, MARKUP_TOKENS)
    settle(teacher, WEIGHTS)
    teacher.locator("[data-testid='stSidebarNav'] a:has-text('Present')").click()
    settle(teacher, ".st-key-present_next")
    softmax = present_screen(teacher, "softmax", timeout=20_000)
    students, logs = [], []
    for viewport, phone in (((1280, 720), False), ((1280, 720), False), ((390, 844), True)):
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, is_mobile=phone,
                                      has_touch=phone)
        context.on("request", lambda r: fetched.append(r.url))
        student = context.new_page()
        logs.append(MessageLog(student))
        student.goto(f"{url}/?room={code}")
        try:
            screen_shown(student, softmax, timeout=30_000)
        except PlaywrightTimeout:
            student.screenshot(path=str(ARTIFACTS / "forecast-join-failed.png"))
            raise
        students.append(student)
    seconds = {"asked": seconds_until_shown(students, teacher.locator(".st-key-present_draw button").click,
                                            CHIP_BUTTONS)}
    visible_text(teacher, "0 of 3 answered")
    for number, student in enumerate(students):
        buttons = student.locator(CHIP_BUTTONS)
        assert buttons.count() == 3
        assert "**BOLD**" in buttons.nth(1).inner_text() and "<b>" in buttons.nth(2).inner_text()  # literal
        for key in ([0] * 4 + [1] * 6, [2] * 10, [1, 1, 2])[number]:
            chips = buttons.nth(key).inner_text().count("●")
            (buttons.nth(key).tap() if number == 2 else buttons.nth(key).click())
            wait_for_chips(student, key, chips + 1, f"student-{number}", logs[number])
        if number == 2:  # a thumb takes a chip back: key 1's pill under "Take a chip back from"
            pill = student.locator(TAKE_PILLS).nth(1)
            assert "**BOLD**" in pill.inner_text()  # literal
            pill.tap()
            wait_for_chips(student, 1, 1, f"student-{number}", logs[number])
            student.screenshot(path=str(ARTIFACTS / "forecast-phone-drawing.png"), full_page=True)
        student.wait_for_selector(IDLE, timeout=LOADED)  # the last tap's run has drawn (see below)
        logs[number].mark("click Send")
        student.locator("[class*='st-key-forecast_send_'] button").click()
        logs[number].mark("clicked Send")
        try:
            visible_text(student, "Your answer is in")
        except PlaywrightTimeout:
            raise AssertionError(f"student {number}'s Send was never taken; "
                                 f"{kept(student, logs[number], f'send-{number}')}") from None
    started = time.perf_counter()
    visible_text(teacher, "3 of 3 answered")
    seconds["counted"] = time.perf_counter() - started
    teacher.locator(".st-key-room_close button").click()
    started = time.perf_counter()
    teacher.wait_for_selector(".st-key-room_forecast_chart .js-plotly-plot", timeout=LOADED)
    seconds["closed"] = time.perf_counter() - started
    teacher.wait_for_timeout(500)  # the heatmaps finish drawing
    teacher.screenshot(path=str(ARTIFACTS / "forecast-teacher-closed.png"))
    reveal = teacher.locator(".st-key-present_reveal button").click
    seconds["revealed"] = seconds_until_shown(students, reveal, ".st-key-own_forecast .js-plotly-plot")
    teacher.locator(".st-key-present_room_view button:has-text(\"The room's answers\")").click()
    visible_text(teacher, "total variation distance")  # the real row and the distance: after Reveal only
    mean = teacher.evaluate("""() => {
        const el = document.querySelector('.st-key-room_forecast_chart .js-plotly-plot');
        return Array.from(el.data, t => Array.from(t.z._inputArray || t.z, r => Array.from(r)));
    }""")
    expected = [(0.4 + 0 + 0) / 3, (0.6 + 0 + 1 / 2) / 3, (0 + 1 + 1 / 2) / 3]  # the phone took one back
    assert [round(w, 3) for w in mean[0][0]] == [round(w, 3) for w in expected]
    students[2].wait_for_timeout(500)
    students[2].locator(".st-key-own_forecast").scroll_into_view_if_needed()
    students[2].screenshot(path=str(ARTIFACTS / "forecast-phone-revealed.png"))
    students[0].screenshot(path=str(ARTIFACTS / "forecast-student-revealed.png"))
    teacher.locator(".st-key-present_room_view button:has-text('The result')").click()  # the screen's own
    teacher.wait_for_selector(".st-key-present_weights .js-plotly-plot", timeout=LOADED)
    for page in (teacher, *students):
        no_error_on(page)
        assert page.locator("img[src*='127.0.0.1:9']").count() == 0
        assert page.locator("[data-testid='stMain'] strong:text-is('BOLD')").count() == 0
    assert not [u for u in fetched if "127.0.0.1:9/" in u]
    (ARTIFACTS / "forecast-seconds.txt").write_text("".join(f"{k} {v:.3f}\n" for k, v in seconds.items()))
    for number, log in enumerate(logs):
        log.write(ARTIFACTS / f"forecast-student-{number}-messages.txt")
    for page in (teacher, *students):
        page.context.close()
    late = {step: round(v, 2) for step, v in seconds.items() if v >= WITHIN / 1000}
    load = os.getloadavg()[0]
    if late and load > 2 * (os.cpu_count() or 1):  # four browsers and a server on an overloaded machine
        pytest.xfail(f"slower than {WITHIN / 1000} s at load {load:.1f} on {os.cpu_count()} cores: {late}")
    assert not late, seconds


def test_the_downloaded_page_opens_offline_with_every_chart_and_its_text(live, tmp_path):
    """Issue 16, "Take the whole lesson home": the sidebar's "Download this page" gives one HTML file
    that a browser with no network opens with every step's charts drawn, the formulas, and each
    chart's summary and table; axe finds nothing on it."""
    from tests.a11y import assert_no_violations

    url, browser = live
    page = open_page(browser, f"{url}/?example=ex_d_one_huge_score")
    path = download(page, "Download this page (HTML, opens offline)", tmp_path)
    page.context.close()
    assert path.stat().st_size < 5_000_000
    context = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
    fetched = []
    context.on("request", lambda r: fetched.append(r.url))
    errors = []
    home = context.new_page()
    home.on("pageerror", lambda e: errors.append(str(e)))
    home.goto(path.as_uri())
    home.wait_for_function("() => document.body.dataset.chartsDrawn", timeout=60_000)
    drawn = int(home.evaluate("() => document.body.dataset.chartsDrawn"))
    assert drawn == home.locator(".chart.js-plotly-plot").count() >= 9 and not errors
    assert [u for u in fetched if not u.startswith("file:")] == []
    assert home.locator("math").count() == 8 and home.title().startswith("D: one huge score")
    first = home.locator("figure").first
    summary = first.get_attribute("aria-labelledby")
    assert home.locator(f"#{summary}").inner_text().startswith("X [")  # the figure's name: its summary
    first.locator("summary").click()
    assert first.locator("table td").count() > 0
    home.screenshot(path=str(ARTIFACTS / "downloaded-page.png"))
    assert_no_violations(home, "the downloaded page")
    context.close()


def walk_history(page, press, shown: str, presses: int = 2) -> None:
    """Back (or Forward) until the picker shows ``shown``, at most ``presses`` times."""
    for _ in range(presses):
        press()
        page.wait_for_timeout(500)
        page.wait_for_selector(IDLE, timeout=LOADED)
        settle(page, ".st-key-example_picker input")
        if shown in picker(page):
            return
    raise AssertionError(f"{presses} presses showed {picker(page)!r}, not {shown!r}")


def test_back_after_open_in_the_workbench_brings_the_edited_setup_back(live):
    """Issue 16, finding 2: the teacher's own sentence, then "Open in the workbench" on an example;
    Back shows the teacher's sentence again, Forward the example; the example opened over the edits
    said so, with Undo."""
    url, browser = live
    page = open_page(browser, f"{url}/?example=the_cat_sat_two_heads", viewport=(1280, 720))
    type_tokens(page, "my own words")
    settle(page, WEIGHTS)
    assert picker(page).endswith("(edited)")
    page.locator("[data-testid='stSidebarNav'] a:has-text('Worked examples')").click()
    settle(page, ".st-key-open_ex_d_one_huge_score")
    page.locator(".st-key-open_ex_d_one_huge_score button").click()
    settle(page, WEIGHTS)
    assert picker(page).startswith("D: one huge score")
    visible_text(page, "over your edited setup")
    # Streamlit records the new address and the new page as one or two entries, in either order
    # (known, docs/accessibility.md): the edits are at most two presses back.
    walk_history(page, page.go_back, "(edited)")
    assert page.locator("input[aria-label*='Tokens (queries)' i]").input_value() == "my own words"
    walk_history(page, page.go_forward, "D: one huge score")
    no_error_on(page)
    page.context.close()
