"""What a screen reader gets from a chart, in real Chromium: the summary as the chart's accessible
name in the ARIA tree, and the numbers as a real <table> once "Numbers as a table" is opened.

Skips when Chromium or Playwright is missing, unless REQUIRE_BROWSER=1 (CI), where that fails.
"""

from __future__ import annotations

import pytest

from app import chart_text, figures
from mha_core import all_scenarios
from tests.browser_env import ARTIFACTS, IDLE, require_browser

WEIGHTS = ".st-key-chart_weights [data-testid='stPlotlyChart']"
NUMBERS = ".st-key-chart_weights_numbers"
TIMEOUT = 90_000  # ms: the machine may be loaded

require_browser()

DEFAULT = all_scenarios()["the_cat_sat_two_heads"]  # the workbench's first page


@pytest.fixture(scope="module")
def page(live):
    """One workbench page at 1280 x 720 for the module, on its one server and Chromium."""
    url, browser = live
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.goto(url)
    settle(tab)
    yield tab
    context.close()


def settle(tab) -> None:
    tab.wait_for_selector(f"{WEIGHTS} .js-plotly-plot", timeout=TIMEOUT)
    tab.wait_for_timeout(300)  # the debounce of Streamlit's own e2e tests
    tab.wait_for_selector(IDLE, timeout=TIMEOUT)


def head_summary(head: int) -> str:
    """Head ``head``'s sentence of the weights chart, from the preset's own numbers."""
    weights, tokens = DEFAULT.run().weights, DEFAULT.tokens
    return chart_text.weights_sentence(weights[head], tokens, tokens)


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
            assert cells == [figures.hover_number(w, near_one=True) for w in weights[head, i].tolist()]
    first_row = tables.first.get_by_role("row").nth(1)
    assert first_row.get_by_role("rowheader").inner_text() == tokens[0]
    assert head_summary(0) in box.inner_text()  # the summary is written out above the numbers
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "chart-text-open-1280.png"))
