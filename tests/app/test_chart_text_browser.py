"""What a screen reader gets from a chart, in real Chromium: the summary as the chart's accessible
name in the ARIA tree, and the numbers as a real <table> once "Numbers as a table" is opened.

Skips when Chromium or Playwright is missing, unless REQUIRE_BROWSER=1 (CI), where that fails.
"""

from __future__ import annotations

import pytest

from app.charts import grid_text, number_text
from course.examples import all_examples
from tests.a11y import assert_no_violations
from tests.browser_env import ARTIFACTS, IDLE, require_browser, settle, type_tokens

pytestmark = pytest.mark.browser  # tests/conftest.py: make test-fast leaves these out

WEIGHTS = ".st-key-chart_weights [data-testid='stPlotlyChart']"
NUMBERS = ".st-key-chart_weights_numbers"
TIMEOUT = 90_000  # ms: the machine may be loaded

require_browser()

DEFAULT = all_examples()["the_cat_sat_two_heads"]  # the workbench's first page


@pytest.fixture(scope="module")
def page(live):
    """One workbench page at 1280 x 720 for the module, on its one server and Chromium."""
    url, browser = live
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.goto(url)
    settle(tab, f"{WEIGHTS} .js-plotly-plot", timeout=TIMEOUT)
    yield tab
    context.close()


def head_summary(head: int) -> str:
    """Head ``head``'s sentence of the weights chart, from the example's own numbers."""
    weights, tokens = DEFAULT.run().weights, DEFAULT.tokens
    return grid_text.weights_sentence(weights[head], tokens, tokens)


def test_a_heads_summary_is_the_charts_name_in_the_aria_tree(page):
    chart = page.locator(WEIGHTS)
    tree = chart.aria_snapshot(timeout=TIMEOUT)
    assert tree.lstrip("- '").startswith("figure"), tree[:200]  # YAML quotes a name with quotes in it
    name = chart.get_attribute("aria-label")
    for head in range(DEFAULT.sizes.n_heads):
        assert head_summary(head) in name, (head, name)
    assert "attends most to" in tree
    # What a screen reader is given: a figure whose accessible name is that summary, found by role.
    assert page.get_by_role("figure", name=name, exact=True).count() == 1
    page.screenshot(path=str(ARTIFACTS / "chart-text-closed-1280.png"))


def test_opening_the_table_shows_every_weight_in_a_table(page):
    box = page.locator(NUMBERS)
    assert box.locator("table").count() == 0  # built only when opened
    box.locator("summary").click()
    table = box.locator("table").first
    table.wait_for(timeout=TIMEOUT)
    page.wait_for_selector(IDLE, timeout=TIMEOUT)
    tables = box.get_by_role("table")
    assert tables.count() == DEFAULT.sizes.n_heads
    weights, tokens = DEFAULT.run().weights, DEFAULT.tokens
    for head in range(DEFAULT.sizes.n_heads):
        rows = tables.nth(head).locator("tbody tr")
        assert rows.count() == len(tokens)
        for i, token in enumerate(tokens):
            assert rows.nth(i).locator("th").inner_text() == token
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells == [number_text.hover_number(w, near_one=True) for w in weights[head, i].tolist()]
    first_row = tables.first.get_by_role("row").nth(1)
    assert first_row.get_by_role("rowheader").inner_text() == tokens[0]
    assert head_summary(0) in box.inner_text()  # the summary is written out above the numbers
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "chart-text-open-1280.png"))


def test_the_arrow_keys_walk_the_table_and_each_cell_says_its_row_column_and_value(page):
    """Issue 16: cells reachable with the arrow keys, the value announced (the cell's accessible name)."""
    box = page.locator(NUMBERS)
    if box.locator("table").count() == 0:
        box.locator("summary").click()
        box.locator("table").first.wait_for(timeout=TIMEOUT)
    page.wait_for_selector(f"{NUMBERS} table[data-mha-keys]", timeout=TIMEOUT)
    weights, tokens = DEFAULT.run().weights, DEFAULT.tokens

    def name_of(query: int, key: int) -> str:
        value = number_text.hover_number(weights[0, query, key], near_one=True)
        return f"{tokens[query]} → {tokens[key]}: {value}"

    def focused() -> str:
        return page.evaluate("document.activeElement.getAttribute('aria-label') || ''")

    box.locator("summary").focus()
    page.keyboard.press("Tab")  # the first head's table: one Tab stop, its first cell
    assert focused() == name_of(0, 0)
    page.keyboard.press("ArrowRight")
    assert focused() == name_of(0, 1)
    page.keyboard.press("ArrowDown")
    assert focused() == name_of(1, 1)
    page.keyboard.press("End")
    assert focused() == name_of(1, len(tokens) - 1)
    page.keyboard.press("ArrowRight")  # the edge holds
    assert focused() == name_of(1, len(tokens) - 1)
    page.keyboard.press("Home")
    page.keyboard.press("ArrowUp")
    assert focused() == name_of(0, 0)
    cell = page.get_by_role("cell", name=name_of(0, 0), exact=True)
    assert cell.count() == 1  # what a screen reader finds by role and name
    assert_no_violations(page, "the workbench with a table of numbers walked by keyboard")
    # React keeps the table's cells and changes their text: the names follow a new sentence.
    type_tokens(page, "a dog ran")
    first_cell = f"{NUMBERS} table tbody td"
    page.wait_for_function("([cell, name]) => document.querySelector(cell).ariaLabel === name",
                           arg=[first_cell, name_of(0, 0).replace(f"{tokens[0]} → {tokens[0]}", "a → a")],
                           timeout=TIMEOUT)


def test_enter_on_a_table_cell_opens_the_drill_down_there_and_gives_it_the_focus(live):
    """Issue 16: a heatmap cell that can be opened is opened from the keyboard: Enter on head 2's
    cell 'sat → cat' in the weights' table opens the drill-down on head 2, query 'sat', key 'cat',
    and the focus lands on it, named by the cell it came from."""
    url, browser = live
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.goto(url)
    settle(tab, f"{WEIGHTS} .js-plotly-plot", timeout=TIMEOUT)
    box = tab.locator(NUMBERS)
    box.locator("summary").click()
    tab.wait_for_selector(f"{NUMBERS} table[data-mha-keys]", timeout=TIMEOUT)
    box.locator("summary").focus()
    tab.keyboard.press("Tab")  # head 1's table
    tab.keyboard.press("Tab")  # head 2's table: one Tab stop each
    for key in ("ArrowDown", "ArrowDown", "ArrowRight"):  # row 'sat', column 'cat'
        tab.keyboard.press(key)
    opened = tab.evaluate("document.activeElement.getAttribute('aria-label')")
    assert opened.startswith("sat → cat: 0.66"), opened
    tab.keyboard.press("Enter")
    tab.wait_for_function("() => document.activeElement.classList.contains('st-key-drill_down')",
                          timeout=TIMEOUT)
    label = tab.evaluate("document.activeElement.getAttribute('aria-label')")
    assert label == f"Drill-down of head 2: {opened}"
    pickers = [tab.locator(f".st-key-pick_drill_{name} input").input_value()
               for name in ("head", "query", "key")]
    assert ["head 2" in pickers[0], "sat" in pickers[1], "cat" in pickers[2]] == [True, True, True], pickers
    weight = number_text.hover_number(DEFAULT.run().weights[1, 2, 1], near_one=True)
    assert weight in tab.locator(".st-key-drill_down .katex").last.inner_text()
    assert_no_violations(tab, "the drill-down opened from a table cell")
    context.close()
