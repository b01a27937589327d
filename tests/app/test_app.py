"""AppTest: every page and example runs, edits reach the charts, bad input gets its message."""

import json

import numpy as np
import pytest

from course.examples import DEFAULT_EXAMPLE, all_examples
from mha_core import LIMITS
from tests.apptest_util import (
    ENTRY,
    EXAMPLE_TITLES,
    chart_specs,
    edit_cell,
    edit_cells,
    goto,
    heatmap_values,
    key_of,
    pick,
    pick_example,
    shown,
    texts,
    work,
)

EXAMPLES = all_examples()
STEP_CHARTS = {"chart_x", "chart_scores", "chart_scaled", "chart_weights", "chart_heads", "chart_bars",
               "chart_concat", "chart_contributions", "chart_output"}


def weights_drawn(at) -> np.ndarray:  # [h, n_q, n_k] as carried by the weights heatmap
    values = heatmap_values(chart_specs(at)["chart_weights"])
    return np.stack(values)


def test_default_page_is_the_two_disagreeing_heads(at):
    assert not at.exception
    assert at.session_state["origin"] == DEFAULT_EXAMPLE
    assert at.selectbox(key="example_picker").value == EXAMPLES[DEFAULT_EXAMPLE].title
    np.testing.assert_allclose(weights_drawn(at), EXAMPLES[DEFAULT_EXAMPLE].run().weights, atol=1e-6)
    assert STEP_CHARTS <= set(chart_specs(at))
    assert any("0.813" in text for text in texts(at.markdown))
    assert any("72 FLOPs; one head of width 2 would cost 72" in c for c in texts(at.caption))
    assert sum("$$" in text for text in texts(at.markdown)) >= 8  # every step's formula


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_runs_and_draws_its_weights(at, key):
    pick_example(at, key)
    assert not at.exception, key
    assert not at.error, texts(at.error)
    specs = chart_specs(at)
    assert STEP_CHARTS - ({"chart_disagreement"} if EXAMPLES[key].n_heads == 1 else set()) <= set(specs)
    drawn = np.stack(heatmap_values(specs["chart_weights"]))
    result = EXAMPLES[key].run()
    shown = result.weights if result.mask is None else np.where(result.mask, result.weights, np.nan)  # blank
    np.testing.assert_allclose(drawn, shown, atol=1e-6)


@pytest.mark.parametrize("example", ["random", "blank"])
def test_generated_examples_run(at, example):
    pick_example(at, example)
    assert not at.exception
    assert not at.error, texts(at.error)
    assert work(at, "w_q").shape == (2, 8, 4)
    assert (np.abs(work(at, "w_q")).sum() == 0) == (example == "blank")


def test_the_random_example_has_heads_with_opinions(at):
    """A random setup worth discussing: not every row near uniform."""
    from mha_core import normalised_entropy
    pick_example(at, "random")
    assert normalised_entropy(weights_drawn(at)).min() < 0.6


def test_worked_examples_page_runs(at):
    goto(at, "examples")
    assert not at.exception
    assert len(at.button) >= len(EXAMPLES)


def test_editing_an_embedding_cell_changes_the_weights(at):
    before = weights_drawn(at)
    edit_cell(at, "x", row=2, col=0, value="3")  # 'sat' = (3, 1): head A now scores it above 'the'
    assert not at.exception
    after = weights_drawn(at)
    assert not np.allclose(before, after)
    assert np.argmax(after[0, 2]) == 2 and np.argmax(before[0, 2]) == 0  # head A: 'sat' now wins
    np.testing.assert_allclose(after.sum(-1), 1.0, atol=1e-6)


def test_editing_a_projection_of_one_head_changes_only_that_head(at):
    before = weights_drawn(at)
    pick(at, "shown_head", "head 2")  # step 2 shows head 2's matrices
    edit_cell(at, "w_q", row=1, col=0, value="2", head=1)
    after = weights_drawn(at)
    np.testing.assert_allclose(after[0], before[0])
    assert not np.allclose(after[1], before[1])
    qkv = heatmap_values(chart_specs(at)["chart_qkv"])  # head 2's Q: 'cat' = (0, 2) now scores 2*2
    assert qkv[0][1, 0] == 4.0


def test_kept_edits_survive_when_their_editor_is_not_drawn(at):
    """The browser's path: an editor's on_change keeps its edits; Streamlit then drops the widget
    state of an editor that a run does not draw (another head, another page)."""
    pick(at, "shown_head", "head 2")
    key = key_of(at, "w_q", head=1)
    at.session_state["kept_edits"][key] = ("w_q", {1: {"c0": "2"}})  # what keep_edits() stores
    pick(at, "shown_head", "head 1")  # head 2's editor is not drawn now
    goto(at, "examples")
    goto(at, "workbench")
    assert work(at, "w_q")[1, 1, 0] == 2.0  # folded into the base
    assert not at.session_state["kept_edits"]


@pytest.mark.parametrize("bad, words", [
    (None, "is empty"), ("", "is empty"), ("inf", "'inf' is not a number"),
    ("1e308", "1e308 is outside the range this page accepts"),  # was an overflow far from the cell
    ("1,5,0", "'1,5,0' is not a number"),  # the number column read "1,5" as 15 (now 1.5: issue 40, 5)
    ("0x10", "'0x10' is not a number"),  # the number column read this as 10
    ("1e-400", "it would become 0"),  # read as -1400 by the number column, then silently as 0.0
    ("abc", "'abc' is not a number"), (float("nan"), "'nan' is not a number"), (True, "'True' is not"),
])
def test_a_bad_cell_gets_a_message_naming_it_and_nothing_else_is_lost(at, bad, words):
    w_q_before = work(at, "w_q").copy()
    edit_cell(at, "x", row=1, col=1, value=bad)
    assert not at.exception
    messages = [m for m in texts(at.error) if "row 2 · cat, column d2" in m.replace("\\", "")]
    assert len(messages) == 1 and words in messages[0].replace("\\", ""), texts(at.error)
    np.testing.assert_array_equal(work(at, "w_q"), w_q_before)
    assert "chart_weights" not in chart_specs(at)
    assert any("Waiting for valid input" in text for text in texts(at.info))
    edit_cell(at, "x", row=1, col=1, value="2")  # fixing it brings the steps back
    assert "chart_weights" in chart_specs(at) and not at.error


@pytest.mark.parametrize("typed, value", [("1e-3", 0.001), ("−2", -2.0), (" 2.50 ", 2.5), ("+.5", 0.5),
                                          (3, 3.0), ("1000000", 1e6), ("1,5", 1.5), ("−0,25", -0.25)])
def test_typed_numbers_are_read_exactly(at, typed, value):
    edit_cell(at, "x", row=0, col=1, value=typed)
    assert not at.error, texts(at.error)
    r = EXAMPLES[DEFAULT_EXAMPLE]
    x = r.x.copy()
    x[0, 1] = value
    import dataclasses
    np.testing.assert_allclose(weights_drawn(at), dataclasses.replace(r, x=x).run().weights, atol=1e-6)


@pytest.mark.parametrize("edited_rows", [
    {9: {"c0": "1"}},  # row 9 of a 3-row grid
    {0: {"c-1": "1"}}, {0: {"c7": "1"}}, {0: {"name": "1"}},  # columns the grid does not have
    {"x": {"c0": "1"}}, {0: "not a dict"},
])
def test_edits_a_grid_could_not_send_are_refused_on_the_server(at, edited_rows):
    """A websocket client can send any edit; none raises, each gets a message."""
    before = weights_drawn(at)
    edit_cells(at, "x", edited_rows)
    assert not at.exception
    assert any("named a cell this grid does not have" in m for m in texts(at.error)), texts(at.error)
    edit_cells(at, "x", {})
    np.testing.assert_allclose(weights_drawn(at), before)


def test_no_tokens_gets_a_message(at):
    at.text_input(key="tokens_text").set_value("   ").run()
    assert not at.exception
    assert any("at least one token" in m for m in texts(at.error))


def test_too_many_tokens_gets_a_message(at):
    at.text_input(key="tokens_text").set_value(" ".join(["w"] * (LIMITS.tokens + 1))).run()
    assert not at.exception
    assert any("over the limit" in m for m in texts(at.error))


@pytest.mark.parametrize("tokens, words", [
    ("the " + "x" * 83_000, "characters"),  # finding 9 (AppTest, like the browser, cuts at max_chars)
    ("the " + "x" * 41, "token 2 has 41 characters"),
    ("ca\u200bt sat", "U+200B"), ("\ufeffcat sat", "U+FEFF"), ("the \u202ecat", "U+202E"),
])
def test_overlong_or_invisible_tokens_are_refused_next_to_the_box(at, tokens, words):
    at.text_input(key="tokens_text").set_value(tokens).run()
    assert not at.exception
    assert any(words in m.replace("\\", "") for m in texts(at.error)), texts(at.error)
    assert not chart_specs(at)  # nothing computed for it


def test_heads_not_dividing_d_model_says_how_to_fix_it(at):
    at.number_input(key="d_model").set_value(5).run()
    assert not at.exception
    message = " ".join(shown(at.error))
    assert "h = 2 does not divide d_model = 5" in message and "Choose h among 1, 5" in message
    at.number_input(key="d_model").set_value(4).run()  # the matrices come back, resized
    assert not at.error and work(at, "w_q").shape == (2, 4, 2)


def test_changing_a_size_keeps_the_entries_that_fit(at):
    pick_example(at, "cat_chases_mouse")
    x_before = work(at, "x").copy()  # [3, 4]
    at.text_input(key="tokens_text").set_value("cat chases mouse today").run()
    x_after = work(at, "x")
    assert x_after.shape == (4, 4)
    np.testing.assert_array_equal(x_after[:3], x_before)


def test_an_edit_survives_a_resize(at):
    edit_cell(at, "x", row=0, col=1, value="7.5")
    at.text_input(key="tokens_text").set_value("the cat sat down").run()
    assert work(at, "x")[0, 1] == 7.5


def test_a_mask_row_that_blocks_everything_is_explained(at):
    at.selectbox(key="mask_kind").set_value("custom").run()
    edit_cells(at, "mask", {0: {"c0": False, "c1": False, "c2": False}})
    assert not at.exception
    assert any("blocks every key" in w for w in texts(at.warning))
    assert np.isnan(weights_drawn(at)[:, 0, :]).all()  # masked: blank, as among the scores
    check = " ".join(texts(at.success))
    assert "every row that may attend to a key sums to 1" in check and "1 fully masked row" in check
    mask_editor = next(e for e in at.dataframe if e.proto.id.endswith(key_of(at, "mask")))
    labels = [column["label"] for name, column in json.loads(mask_editor.proto.columns).items()
              if name.startswith("c")]
    assert labels == ["1 · the", "2 · cat", "3 · sat"]  # the mask's columns are the keys


def test_causal_mask_blanks_the_future(at):
    at.selectbox(key="mask_kind").set_value("causal").run()
    scaled = np.stack(heatmap_values(chart_specs(at)["chart_scaled"]))
    assert np.isnan(scaled[:, 0, 1:]).all() and not np.isnan(scaled[:, 2]).any()


def test_scaling_none_sqrt_of_and_multiply(at):
    pick_example(at, "ex_f_scaled")
    np.testing.assert_allclose(weights_drawn(at)[0, 0, 0], 0.9820, atol=5e-5)
    assert at.number_input(key="scale_sqrt_of").value == 64  # the text's d_k, not "temperature 8"
    assert any(r"\sqrt{64}" in text for text in texts(at.markdown))
    at.selectbox(key="scale_kind").set_value("none").run()
    assert weights_drawn(at)[0, 0, 0] > 0.9999999
    assert not any(r"\sqrt" in text and "softmax" in text for text in texts(at.markdown))
    at.selectbox(key="scale_kind").set_value("multiply").run()
    at.number_input(key="scale_multiplier").set_value(0.3).run()
    assert at.session_state["work"] and not at.exception
    np.testing.assert_allclose(weights_drawn(at)[0, 0, 0], 1 / (1 + np.exp(-0.3 * 32)), rtol=1e-6)


def test_cross_attention_draws_a_non_square_grid(at):
    pick_example(at, "ex_h_cross_attention")
    assert weights_drawn(at).shape == (8, 3, 5)
    pick_example(at, DEFAULT_EXAMPLE)
    at.radio(key="mode").set_value("cross-attention").run()
    at.text_input(key="kv_tokens_text").set_value("a b c d").run()
    assert not at.exception and weights_drawn(at).shape == (2, 3, 4)


def test_tokens_are_literal_everywhere(at):
    tokens = "<b>x</b> $x$ **x**"
    at.text_input(key="tokens_text").set_value(tokens).run()
    assert not at.exception
    ticks = chart_specs(at)["chart_weights"]["layout"]["yaxis"]["ticktext"]
    assert ticks == ["&lt;b&gt;x&lt;/b&gt;", "&#36;x&#36;", "**x**"]
    for element in [*at.markdown, *at.error, *at.warning, *at.info, *at.success]:
        assert "<b>x</b>" not in element.value and "$x$" not in element.value


def test_biases_appear_and_change_the_output(at):
    at.checkbox(key="use_bias").check().run()
    assert not at.exception
    before = heatmap_values(chart_specs(at)["chart_output"])[1]
    edit_cell(at, "b_o", row=0, col=0, value="1.5")
    after = heatmap_values(chart_specs(at)["chart_output"])[1]
    np.testing.assert_allclose(after[:, 0] - before[:, 0], 1.5, atol=1e-6)


def test_fill_helper_replaces_one_matrix_only(at):
    x_before = work(at, "x").copy()
    assert "fill_target" not in [w.key for w in at.sidebar.selectbox]  # closed: nothing inside runs
    at.session_state["fill_open"] = True  # the expander opened (its on_change reruns)
    at.run()
    at.selectbox(key="fill_target").set_value("w_o").run()
    at.radio(key="fill_kind").set_value("zeros").run()
    at.button(key="fill_go").click().run()
    assert not at.exception
    assert np.all(work(at, "w_o") == 0)
    np.testing.assert_array_equal(work(at, "x"), x_before)


def test_drill_down_writes_the_live_numbers(at):
    at.toggle(key="drill_open").set_value(True).run()
    latex = " ".join(texts(at.latex))
    assert r"q_{3} \cdot k_{1}" not in latex  # default cell is (1, 1)
    pick(at, "drill_query", "3 · sat")
    pick(at, "drill_key", "1 · the")
    latex = " ".join(texts(at.latex))
    assert r"q_{3} \cdot k_{1} = (1)(2) = 2" in latex
    assert "0.6652" in latex


def test_tokens_in_messages_are_escaped_not_rendered(at):
    at.text_input(key="tokens_text").set_value("**x** $y$ <i>z</i>").run()
    edit_cell(at, "x", row=0, col=0, value=None)
    message = " ".join(texts(at.error))
    assert r"1 · \*\*x\*\*" in message  # shown as **x**, not as bold x
    at.selectbox(key="mask_kind").set_value("custom").run()
    at.session_state[key_of(at, "mask")] = {
        "edited_rows": {1: {"c0": False, "c1": False, "c2": False}}, "added_rows": [], "deleted_rows": []}
    edit_cell(at, "x", row=0, col=0, value="1")
    warning = " ".join(texts(at.warning))
    assert r"2 · \$y\$" in warning


def test_a_link_opens_an_example_and_refuses_huge_sizes():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.query_params["example"] = "ex_a_single_head"
    at.query_params["d_model"] = "100000000"
    at.run()
    assert not at.exception
    assert at.session_state["origin"] == "ex_a_single_head"
    np.testing.assert_allclose(weights_drawn(at), EXAMPLES["ex_a_single_head"].run().weights, atol=1e-6)
    warnings = texts(at.warning)
    assert any("d\\_model" in w and f"1 to {LIMITS.d_model}" in w for w in warnings), warnings


def open_save_load(at) -> None:
    """Open the sidebar's "Save or load this setup" (its contents run only while it is open)."""
    at.session_state["save_load_open"] = True
    at.run()


def test_the_exam_size_examples_cannot_be_saved_but_say_why(at):
    open_save_load(at)
    pick_example(at, "ex_i_parameter_count")
    assert not at.exception
    assert any("too many to save" in c for c in texts(at.caption))


def test_saving_with_an_empty_cell_says_why_instead_of_writing_a_bad_file(at):
    open_save_load(at)
    edit_cell(at, "x", row=0, col=0, value="")
    assert any("Cannot save now" in c for c in texts(at.caption))


@pytest.mark.slow
def test_every_page_opens_after_any_example(at):
    for key in EXAMPLE_TITLES:
        pick_example(at, key)
        goto(at, "examples")
        goto(at, "workbench")
        assert not at.exception, key
