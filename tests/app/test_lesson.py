"""Presenter mode, the examples' lessons and comparing two setups (issue 8, parts 1 and 4), and the
chapters' numbers where the workbench shows them (issue 7, finding 6)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.charts import number_text
from app.views.present import SCREENS
from course.examples import all_examples
from course.steps import screen_position
from mha_core import count_parameters, largest_change
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
    presenter_screens,
    shown,
    texts,
    to_screen,
)

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()


# --- largest_change -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4)),
              elements=st.floats(-5, 5)),
       st.data())
def test_largest_change_is_the_cell_a_loop_finds(before, data):
    after = data.draw(arrays(np.float64, before.shape, elements=st.floats(-5, 5)))
    index, was, now = largest_change(before, after)
    best, best_gap = None, -1.0
    for cell in np.ndindex(before.shape):  # the naive reference: first cell with the largest gap
        gap = abs(after[cell] - before[cell])
        if gap > best_gap:
            best, best_gap = cell, gap
    assert abs(after[index] - before[index]) == best_gap
    assert (was, now) == (before[index], after[index])
    assert index == best


def test_largest_change_skips_masked_cells_and_refuses_two_shapes():
    before = np.array([[np.nan, 0.2], [0.5, 0.5]])
    after = np.array([[np.nan, 0.3], [0.5, 0.1]])
    assert largest_change(before, after) == ((1, 1), 0.5, 0.1)
    with pytest.raises(ValueError, match="one shape"):
        largest_change(np.zeros((2, 2)), np.zeros((2, 3)))


# --- Lessons --------------------------------------------------------------------------------------


def _numbers_of(result, setup) -> np.ndarray:
    arrays_ = [result.scores, result.scaled, result.weights, 1 - result.weights, result.head_outputs,
               result.output, np.array([distance for distance in _disagreements(result)])]
    sizes = setup.sizes
    counts = [count_parameters(sizes.d_model, sizes.n_heads, sizes.d_k, sizes.d_v)]
    values = np.concatenate([np.ravel(a) for a in arrays_] + [np.array(counts, dtype=float)])
    return values[np.isfinite(values)]


def _disagreements(result):
    from mha_core import pairwise_disagreement
    for query in range(result.weights.shape[1]):
        yield from pairwise_disagreement(result.weights, query, "l2").ravel()


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_says_what_to_look_for_and_its_numbers_are_the_live_ones(key):
    """Each decimal the lesson quotes is a number the page computes, to the digits printed."""
    example = EXAMPLES[key]
    lesson = example.lesson
    assert lesson is not None and lesson.look_for
    assert lesson.screen in [screen.key for screen in SCREENS]  # it names a screen
    assert bool(lesson.forecast) == bool(lesson.forecast_answer)
    values = _numbers_of(example.run(), example)
    for text in re.findall(r"\d+\.\d+(?:e-\d+)?", lesson.look_for):
        number = float(text)
        if "e" in text:  # '1.3e-14': two significant figures
            digits = len(text.split("e")[0].replace(".", "")) - 1
            assert np.any(np.abs(values - number) <= 0.5 * 10 ** (np.floor(np.log10(number)) - digits)
                          * 1.0001), (key, text)
        else:
            decimals = len(text.split(".")[1])
            assert np.any(np.abs(values - number) <= 0.5 * 10 ** -decimals * 1.0001), (key, text)


# --- The presenter in AppTest -------------------------------------------------------------------


def screen_title(at) -> str:
    return next(text for text in texts(at.markdown) if text.startswith("### "))


def heading(screen: int) -> str:
    return f"### {screen + 1} / {len(SCREENS)} · {SCREENS[screen].title}"


def walk(at) -> list[str]:
    """Next through every screen, revealing each forecast; the titles seen, in order."""
    return [screen_title(at) for _ in presenter_screens(at)]


def reveal_if_asked(at) -> bool:
    asked = any(b.key == "present_reveal" for b in at.button)
    if asked:
        at.button(key="present_reveal").click().run()
    return asked


@pytest.mark.parametrize("key", [*EXAMPLES, "random"])
def test_presenter_walks_every_screen_forward_and_back(key):
    at = fresh_app()
    pick_example(at, key)
    goto(at, "present")
    assert not at.exception
    titles = walk(at)
    assert titles == [heading(i) for i in range(len(SCREENS))]
    assert address(at)["step"] == SCREENS[-1].key == "cost"
    assert at.button(key="present_next").disabled
    for i in range(len(SCREENS) - 1, 0, -1):
        at.button(key="present_back").click().run()
        assert not at.exception
        assert screen_title(at) == heading(i - 1)
    assert at.button(key="present_back").disabled


def test_the_first_screen_tells_the_story_and_where_to_look():
    """The point itself answers the forecast of its screen (issue 16, finding 1): the first screen
    says where it is, the point's screen shows it after Reveal."""
    at = fresh_app()
    pick_example(at, "ex_d_one_huge_score")
    goto(at, "present")
    page = " ".join(texts(at.markdown))
    assert "Exponentials magnify gaps" in page
    assert f"What to look for:** on screen {screen_position('softmax') + 1}" in page
    assert "0.99999999588" not in page.replace("\\", "")


def test_the_point_is_flagged_on_its_screen_after_the_chapters_forecast():
    at = fresh_app()
    pick_example(at, "ex_d_one_huge_score")
    goto(at, "present")
    to_screen(at, "softmax")  # where example D's point is
    forecast = " ".join(texts(at.markdown))
    assert "Scores 0, 0 and 20" in forecast.replace("\\", "")
    assert "present_weights" not in chart_specs(at)  # the result waits for Reveal
    assert reveal_if_asked(at)
    assert "Almost all on token 3" in " ".join(texts(at.markdown)).replace("\\", "")
    np.testing.assert_allclose(heatmap_values(chart_specs(at)["present_weights"])[0],
                               EXAMPLES["ex_d_one_huge_score"].run().weights[0], atol=1e-9)
    assert any("The point is on this screen" in text for text in texts(at.success))


def test_back_hides_the_answer_again_and_a_new_example_asks_its_own_question():
    at = fresh_app()
    goto(at, "present")
    to_screen(at, "softmax")
    assert reveal_if_asked(at)
    at.button(key="present_back").click().run()
    at.button(key="present_next").click().run()
    assert any(b.key == "present_reveal" for b in at.button)  # asked again, not shown stale
    before = [t for t in texts(at.markdown) if "Forecast" in t]
    pick_example(at, "ex_e_negative_score")  # a new example starts its lesson on screen 1
    assert not at.exception
    assert screen_title(at) == heading(0)
    to_screen(at, "softmax")
    after = [t for t in texts(at.markdown) if "Forecast" in t]
    assert after and after != before
    assert "Scores \\-3 and 1" in after[0]
    assert reveal_if_asked(at)
    np.testing.assert_allclose(heatmap_values(chart_specs(at)["present_weights"])[0],
                               EXAMPLES["ex_e_negative_score"].run().weights[0], atol=1e-9)


def test_a_bookmark_opens_the_example_at_its_step():
    at = fresh_app()
    pick_example(at, "ex_f_scaled")
    goto(at, "present")
    to_screen(at, "softmax")
    params = address(at)
    assert params["step"] == "softmax"  # the screen, by its name
    student = open_address(params, "present")
    assert not student.exception
    assert screen_title(student) == heading(screen_position("softmax"))
    assert student.session_state["origin"] == "ex_f_scaled"


def test_a_link_to_a_step_that_does_not_exist_lands_on_the_last_one():
    at = open_address({"example": "ex_c_equal_scores", "step": "99"}, "present")
    assert not at.exception
    assert screen_title(at) == heading(len(SCREENS) - 1)
    assert any("does not have" in text for text in texts(at.caption))


def test_the_presenter_waits_for_valid_input_without_a_traceback():
    """An emptied token box: the screen says why, and one click brings the example's tokens back."""
    at = fresh_app()
    at.text_input(key="tokens_text").set_value("").run()
    goto(at, "present")
    assert not at.exception
    assert any("This setting cannot be drawn" in text for text in texts(at.main.markdown))
    assert any("type at least one token" in text for text in shown(at.main.error))
    at.button(key="setting_fix_0").click().run()
    assert not at.exception and at.session_state["tokens_text"] == "the cat sat"
    assert not any("This setting cannot be drawn" in text for text in texts(at.main.markdown))


def test_the_cost_screen_substitutes_example_is_numbers():
    at = open_address({"example": "ex_i_parameter_count", "step": "cost"}, "present")
    assert not at.exception
    assert "About how many parameters" in " ".join(texts(at.markdown))  # the chapter's forecast first
    assert reveal_if_asked(at)
    latex = " ".join(element.value for element in at.latex if "= 1{,}048{,}576" in element.value)
    assert "2 \\cdot 8 \\cdot 512 \\cdot 64}_{W^Q,\\,W^K}" in latex
    assert any("4 · 512² = 1,048,576" in text for text in texts(at.markdown))


# --- Compare two setups -------------------------------------------------------------------------


def named_change(at) -> str:
    text = next(t for t in texts(at.markdown) if "Largest change in the weights" in t)
    return text.replace("\\", "").replace("**", "")


def test_example_f_scaled_against_unscaled_is_one_click():
    at = fresh_app()
    pick_example(at, "ex_f_scaled")
    at.button(key="compare_partner").click().run()
    assert not at.exception
    assert at.session_state["origin"] == "ex_f_unscaled"
    a, b = EXAMPLES["ex_f_scaled"].run(), EXAMPLES["ex_f_unscaled"].run()
    gap = np.abs(b.weights - a.weights)
    head, query, key = np.unravel_index(np.argmax(gap), gap.shape)  # the direct computation
    tokens, kv_tokens = EXAMPLES["ex_f_unscaled"].tokens, EXAMPLES["ex_f_unscaled"].kv_tokens
    expected = (f"head {head + 1}, query '{tokens[query]}', key '{kv_tokens[key]}': "
                f"{number_text.format_number(a.weights[head, query, key], near_one=True)} → "
                f"{number_text.format_number(b.weights[head, query, key], near_one=True)}")
    assert expected in named_change(at)
    specs = chart_specs(at)
    np.testing.assert_allclose(heatmap_values(specs["compare_weights_delta"])[0], (b.weights - a.weights)[0],
                               atol=1e-12)
    at.button(key="compare_unpin").click().run()
    assert "compare_weights_delta" not in chart_specs(at)


def test_pin_then_edit_one_w_q_cell_names_the_largest_change():
    at = fresh_app()
    a = EXAMPLES["the_cat_sat_two_heads"].run()
    at.button(key="compare_pin").click().run()
    edit_cell(at, "w_q", 0, 0, "-1", head=0)  # head 1's W_Q: the horizontal axis flips
    assert not at.exception
    pinned = at.session_state["pinned"]
    assert pinned.same_inputs(EXAMPLES["the_cat_sat_two_heads"])  # A did not move with the edit
    drawn_b = np.stack(heatmap_values(chart_specs(at)["compare_weights_B"]))
    delta = drawn_b - a.weights
    head, query, key = np.unravel_index(np.argmax(np.abs(delta)), delta.shape)
    tokens = EXAMPLES["the_cat_sat_two_heads"].tokens
    assert f"head {head + 1}, query '{tokens[query]}', key '{tokens[key]}'" in named_change(at)
    np.testing.assert_allclose(np.stack(heatmap_values(chart_specs(at)["compare_weights_A"])), a.weights,
                               atol=1e-9)


def test_pinned_setups_of_other_sizes_say_so():
    at = fresh_app()
    at.button(key="compare_pin").click().run()
    pick_example(at, "ex_a_single_head")
    assert not at.exception
    assert any("sizes differ" in text for text in texts(at.warning))


def test_a_generated_example_also_starts_its_lesson_on_screen_one():
    at = open_address({"example": "ex_g_coreference", "step": "weighted_sum"}, "present")
    assert screen_title(at) == heading(screen_position("weighted_sum"))
    pick_example(at, "random")
    assert not at.exception
    assert screen_title(at) == heading(0)


@pytest.mark.parametrize("key", [k for k in EXAMPLES if max(EXAMPLES[k].sizes.d_model, 8) <= 8])
def test_every_small_grid_on_the_presenter_carries_its_numbers(key):
    """The room reads the numbers off the cells: every heatmap of a small example prints them."""
    at = open_address({"example": key}, "present")
    for screen in presenter_screens(at):
        for name, spec in chart_specs(at).items():
            for trace in spec["data"]:
                if trace["type"] == "heatmap" and trace.get("x0", 1) > 0:
                    assert "texttemplate" in trace, (key, screen + 1, name)


def page_text(at) -> str:
    return " ".join(texts(at.markdown) + texts(at.caption) + texts(at.latex) + texts(at.info))


def test_example_i_shows_its_parameter_counts(at):
    pick_example(at, "ex_i_parameter_count")
    text = page_text(at)
    assert "1,048,576" in text and "262,144" in text


def test_example_d_shows_the_winners_weight_without_rounding_it_to_one(at):
    pick_example(at, "ex_d_one_huge_score")
    at.toggle(key="drill_open").set_value(True).run()
    spec = chart_specs(at)["chart_weights"]
    cells = json.dumps(spec["data"][0].get("text"))
    assert "2.1e-9" in cells and "1 \\u2212 4.1e-9" in cells
    pick(at, "drill_key", "3 · k3")
    line = next(latex for latex in texts(at.latex) if "a_{1,3}" in latex)
    exact = float(re.search(r"\(= (0\.9+\d*)\)", line).group(1))
    assert abs(exact - 0.99999999588) <= 5e-12  # the chapter's number to its printed precision
    assert "4.1" in line


def test_example_h_writes_its_shapes(at):
    pick_example(at, "ex_h_cross_attention")
    titles = json.dumps([chart_specs(at)[key]["layout"].get("annotations", []) for key in
                         ("chart_scores", "chart_heads", "chart_qkv")], ensure_ascii=False)
    for shape in ("S₁ [3 × 5]", "head₁ [3 × 64]", "Q₁ [3 × 64]", "K₁ [5 × 64]", "V₁ [5 × 64]"):
        assert shape in titles, shape


def test_example_f_scaled_says_d_k_is_64(at):
    pick_example(at, "ex_f_scaled")
    assert "√64" in page_text(at) and r"\sqrt{64}" in page_text(at)


def test_example_b_names_no_head_against_itself_and_explains_the_empty_entropy(at):
    pick_example(at, "ex_b_two_heads_one_token")
    text = page_text(at)
    assert "head 1 vs head 1" not in text.replace("*", "")
    assert "With one key every head puts all of its weight on it" in text
    assert "chart_entropy" not in chart_specs(at)


def test_step_4_formula_follows_the_scaling_and_the_mask(at):
    at.selectbox(key="scale_kind").set_value("none").run()
    formula = next(text for text in texts(at.markdown) if "operatorname{softmax}" in text)
    assert r"\sqrt" not in formula
    at.selectbox(key="mask_kind").set_value("causal").run()
    formula = next(text for text in texts(at.markdown) if "operatorname{softmax}" in text)
    assert r"-\infty" in formula


def test_masked_cells_look_the_same_in_scores_and_weights(at):
    at.selectbox(key="mask_kind").set_value("causal").run()
    specs = chart_specs(at)
    scaled = np.stack(heatmap_values(specs["chart_scaled"]))
    drawn = np.stack(heatmap_values(specs["chart_weights"]))
    np.testing.assert_array_equal(np.isnan(scaled), np.isnan(drawn))
    assert np.isnan(drawn[:, 0, 1:]).all()
    assert "masked" in json.dumps(specs["chart_weights"]["data"][0])


def test_hover_text_has_no_internal_words(at):
    for key, spec in chart_specs(at).items():
        assert "signed" not in json.dumps(spec), key
