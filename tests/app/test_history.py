"""Issue 16, finding 2: opening an example over unsaved edits says so and offers Undo; each change of
setup is one entry of the tab's history (Back in a real browser: tests/app/test_browser.py); the
address bar reopens exactly the page it names, and a link that cannot be read says why (issue 7)."""

from __future__ import annotations

import numpy as np
import pytest

from course.examples import all_examples
from mha_core.codec import setup_from_link
from tests.apptest_util import (
    address,
    chart_specs,
    edit_cell,
    fresh_app,
    goto,
    heatmap_values,
    open_address,
    pick,
    pick_example,
    picker_label,
    texts,
    unescaped,
)

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()


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
    old = open_address({"preset": "cat_chases_mouse"})
    assert not old.exception and not old.warning
    assert old.selectbox(key="example_picker").value == EXAMPLES["cat_chases_mouse"].title
    assert address(old).get("example") == "cat_chases_mouse" and "preset" not in address(old)
    both = open_address({"preset": "cat_chases_mouse", "example": "ex_a_single_head"})
    assert both.selectbox(key="example_picker").value == EXAMPLES["ex_a_single_head"].title


def test_a_link_with_its_own_tokens_is_your_setup():
    fresh = open_address({"example": "ex_a_single_head", "tokens": "a b c"})
    assert not fresh.exception
    assert fresh.selectbox(key="example_picker").value == "your setup"


@pytest.mark.parametrize("action", ["example", "edit", "head", "scaling", "mask", "tokens", "bias"])
def test_the_address_bar_reopens_exactly_the_same_page(at, action):
    """Pick example A, reload: the old page went back to the link's example."""
    if action == "example":
        pick_example(at, "ex_a_single_head")
    elif action == "edit":
        edit_cell(at, "x", row=1, col=1, value="-1.25")
    elif action == "head":
        pick(at, "shown_head", "head 2")
    elif action == "scaling":
        at.selectbox(key="scale_kind").set_value("multiply").run()
        at.number_input(key="scale_multiplier").set_value(0.3).run()
    elif action == "mask":
        at.selectbox(key="mask_kind").set_value("causal").run()
    elif action == "tokens":
        at.text_input(key="tokens_text").set_value("the cat sat down").run()
    else:
        at.checkbox(key="use_bias").check().run()
        edit_cell(at, "b_o", row=0, col=1, value="0.5")
    assert not at.exception
    fresh = open_address(address(at))
    assert not fresh.exception and not fresh.warning, texts(fresh.warning)
    assert chart_specs(fresh) == chart_specs(at)
    assert picker_label(fresh) == picker_label(at)
    assert fresh.session_state["selections"] == at.session_state["selections"]


@pytest.mark.parametrize("state", ["1.AAAA", "2.whatever", "1." + "A" * 50, "1.eJzLSM3JyQcABiwCFQ"])
def test_a_tampered_or_foreign_state_link_opens_the_default_with_a_message(state):
    fresh = open_address({"s": state})
    assert not fresh.exception
    assert fresh.session_state["origin"] == "the_cat_sat_two_heads"
    assert any("state" in w for w in texts(fresh.warning)), texts(fresh.warning)


def test_two_hundred_unknown_link_parameters_give_one_summary_that_clears():
    fresh = open_address({f"p{i}": "1" for i in range(200)})
    warnings = texts(fresh.warning)
    assert len(warnings) == 1 and "200 parameters" in warnings[0]
    fresh.number_input(key="n_heads").set_value(1).run()
    assert not fresh.warning


def test_the_link_state_of_an_edited_example_names_the_example(at):
    pick_example(at, "ex_d_one_huge_score")
    edit_cell(at, "x_kv", row=2, col=0, value="10")
    state = address(at)["s"]
    setup = setup_from_link(state, EXAMPLES)
    assert setup.origin == "ex_d_one_huge_score" and setup.x_kv[2, 0] == 10


def test_a_link_to_a_drill_down_cell_opens_the_drill_down_on_it():
    fresh = open_address({"example": "the_cat_sat_two_heads", "drill": "2.3.1"})
    assert not fresh.exception and fresh.toggle(key="drill_open").value
    assert fresh.selectbox(key="pick_drill_head").value == "head 2"
    assert fresh.selectbox(key="pick_drill_query").value == "3 · sat"
    assert any(r"q_{3} \cdot k_{1}" in line for line in texts(fresh.latex))
    fresh.toggle(key="drill_open").set_value(False).run()
    assert "drill" not in address(fresh)  # a closed drill-down is not in the address
