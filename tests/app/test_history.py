"""Issue 16, finding 2: opening an example over unsaved edits says so and offers Undo; each change of
setup is one entry of the tab's history (Back in a real browser: tests/app/test_browser.py)."""

from __future__ import annotations

import numpy as np

from tests.apptest_util import (
    chart_specs,
    edit_cell,
    fresh_app,
    goto,
    heatmap_values,
    pick_example,
    texts,
    unescaped,
)


def edited_cat_sat():
    at = fresh_app()
    pick_example(at, "the_cat_sat_two_heads")
    edit_cell(at, "x", 0, 0, "7.5")
    assert not at.exception and x_shown(at)[0, 0] == 7.5
    return at


def x_shown(at) -> np.ndarray:
    """X as the workbench draws it (edits included)."""
    return heatmap_values(chart_specs(at)["chart_x"])[0]


def undo_notice(at) -> list[str]:
    return [unescaped(t) for t in texts(at.markdown) if "over your edited setup" in t]


def test_picking_an_example_over_edits_says_so_and_undo_brings_the_edits_back():
    at = edited_cat_sat()
    before = x_shown(at).copy()
    pick_example(at, "cat_chases_mouse")
    assert not at.exception and x_shown(at)[0, 0] != 7.5
    (notice,) = undo_notice(at)
    assert "cat chases mouse" in notice.lower() and "(edited)" in notice
    at.button(key="undo_opening").click().run()
    assert not at.exception
    np.testing.assert_array_equal(x_shown(at), before)
    assert at.selectbox(key="example_picker").value.endswith("(edited)")
    assert not undo_notice(at)  # once undone, nothing more to undo


def test_open_in_the_workbench_and_reset_offer_undo_too_but_an_unedited_page_asks_nothing():
    at = edited_cat_sat()
    at.button(key="reset").click().run()
    assert x_shown(at)[0, 0] != 7.5 and undo_notice(at)
    at.button(key="undo_opening").click().run()
    assert x_shown(at)[0, 0] == 7.5
    goto(at, "examples")
    at.button(key="open_ex_d_one_huge_score").click().run()
    assert not at.exception and undo_notice(at)
    fresh = fresh_app()
    pick_example(fresh, "cat_chases_mouse")
    assert not undo_notice(fresh)  # nothing was edited: nothing to bring back


def test_editing_the_opened_example_drops_the_undo():
    """Undo would replace the new edits with the old ones: once the opened example is edited, the
    offer goes (Back still walks to the old edits)."""
    at = edited_cat_sat()
    pick_example(at, "cat_chases_mouse")
    assert undo_notice(at)
    edit_cell(at, "x", 0, 0, "2.5")
    assert not undo_notice(at) and not at.exception


def test_an_address_from_before_the_rename_opens_its_example_under_todays_name():
    """One word for one thing (issue 17): links that said ?preset= (every link shared before) open
    the same example, and the address bar then says ?example=; given both, today's name wins."""
    from course.examples import all_examples
    from tests.apptest_util import address, open_address

    old = open_address({"preset": "cat_chases_mouse"})
    assert not old.exception and not old.warning
    assert old.selectbox(key="example_picker").value == all_examples()["cat_chases_mouse"].title
    assert address(old).get("example") == "cat_chases_mouse" and "preset" not in address(old)
    both = open_address({"preset": "cat_chases_mouse", "example": "ex_a_single_head"})
    assert both.selectbox(key="example_picker").value == all_examples()["ex_a_single_head"].title
