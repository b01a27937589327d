"""An edit keeps the grid the reader edits where they see it (issue 40, 8), in Chromium at 1280 x 720.

The first edit of an example grows its card above the steps (it says its words describe the example as
given, and offers Reset): the X grid slid 82 px down, its rows below the fold, while the reader typed.
"""

from __future__ import annotations

import pytest

from tests.browser_env import require_browser, settle

require_browser()
pytestmark = pytest.mark.browser

GRID = "[data-testid='stDataFrame']"
ROW_PX, COLUMN_PX = 35, 45  # the editor's row height and a narrow column's width
MAIN_TOP = "() => document.querySelector(\"[data-testid='stMain']\").scrollTop"


def grid_top(page) -> float:
    return page.locator(GRID).first.bounding_box()["y"]


def edit_first_cell_of_row(page, row: int, text: str) -> None:
    """Click X's row ``row`` (from 0), column d1, type text and press Enter."""
    box = page.locator(GRID).first.bounding_box()
    page.mouse.click(box["x"] + box["width"] - COLUMN_PX * 2 + COLUMN_PX / 2,
                     box["y"] + ROW_PX * (row + 1) + ROW_PX / 2)
    page.wait_for_timeout(300)  # the grid selects the cell first; typing then opens its editor
    page.keyboard.type(text)
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")


@pytest.mark.parametrize("scrolled", [True, False], ids=["grid-scrolled-into-view", "page-at-its-top"])
def test_the_first_edit_of_an_example_leaves_the_grid_where_the_reader_sees_it(live, scrolled):
    url, browser = live
    page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(f"{url}/")
    settle(page, GRID)
    if scrolled:
        page.locator(GRID).first.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
    assert (page.evaluate(MAIN_TOP) > 0) == scrolled
    before = grid_top(page)
    assert before + 2 * ROW_PX < 720  # the row edited is in view
    edit_first_cell_of_row(page, 1 if scrolled else 0, "3")
    page.wait_for_selector("text=describe the example as the chapter gives it")  # the card grew above
    settle(page)
    assert abs(grid_top(page) - before) <= 2, (before, grid_top(page))
    page.context.close()
