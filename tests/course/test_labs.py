"""The Labs page: its numbers are the chapters' numbers (pure tests), and the page draws them (AppTest)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import lab_figures
from course.labs import (
    MAX_KEYS,
    SCORE_PRESETS,
    WIDTHS,
    cross_attention_shapes,
    dot_products,
    gap_curve,
    gap_of,
    head_split_flops,
    largest_weights,
    parameter_count,
    parse_numbers,
    score_inputs,
    score_row,
    top_weight,
)
from course.scenarios import all_scenarios
from mha_core import attention_flops, count_parameters
from tests.apptest_util import chart_specs, fresh_app, goto

SCENARIOS = all_scenarios()


def lab_row(key: str, temperature: float | None = None):
    inputs = score_inputs(SCENARIOS[key])
    return score_row(inputs.scores, inputs.values, inputs.temperature if temperature is None else temperature)


# --- The chapter's numbers -------------------------------------------------------------------


def test_example_c_equal_scores_give_the_plain_average():
    row = lab_row("ex_c_equal_scores")
    np.testing.assert_allclose(row.weights, SCENARIOS["ex_c_equal_scores"].expected["weights"], atol=1e-15)
    assert round(row.output, 10) == SCENARIOS["ex_c_equal_scores"].expected["output"] == 20


def test_example_d_one_huge_score_collapses_onto_token_3():
    row = lab_row("ex_d_one_huge_score")
    expected = SCENARIOS["ex_d_one_huge_score"].expected
    assert round(row.weights[2], 11) == expected["w3"] == 0.99999999588
    assert round(row.weights[0], 10) == expected["w1"]
    assert round(row.output, 8) == expected["output"] == 29.99999994
    assert round(row.output) == 30


def test_example_e_negative_score_still_gets_a_positive_weight():
    row = lab_row("ex_e_negative_score")
    expected = SCENARIOS["ex_e_negative_score"].expected
    assert round(row.output, 2) == expected["output"] == 198.20
    np.testing.assert_allclose(row.weights, expected["weights"], atol=5e-6)  # printed to 5 decimals
    assert list(row.negative) == [0]
    assert row.weights[0] > 0


def test_example_f_scaled_and_unscaled():
    unscaled, scaled = lab_row("ex_f_unscaled"), lab_row("ex_f_scaled")
    assert score_inputs(SCENARIOS["ex_f_scaled"]).temperature == 8.0  # √64, read from the preset's scaling
    np.testing.assert_allclose(scaled.scaled, SCENARIOS["ex_f_scaled"].expected["scaled"])  # (5, 1)
    assert round(scaled.weights[0], 4) == SCENARIOS["ex_f_scaled"].expected["w1"] == 0.9820
    assert round(unscaled.weights[0], 14) == SCENARIOS["ex_f_unscaled"].expected["w1"]
    np.testing.assert_allclose(unscaled.weights[1], math.exp(-32), rtol=1e-12)  # 1 − w1 = e^-32, not 0


def test_example_g_weight_on_cat():
    row = lab_row("ex_g_coreference")
    inputs = score_inputs(SCENARIOS["ex_g_coreference"])
    assert inputs.keys[int(np.argmax(row.weights))] == "cat"
    assert round(row.weights[0], 4) == SCENARIOS["ex_g_coreference"].expected["w_cat"] == 0.6963


def test_every_score_preset_loads_into_the_lab():
    for key in SCORE_PRESETS:
        inputs = score_inputs(SCENARIOS[key])
        assert inputs.scores.shape == inputs.values.shape == (len(inputs.keys),)


# --- The softmax row ---------------------------------------------------------------------------


def naive_softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=MAX_KEYS),
       st.floats(min_value=0.05, max_value=20))
def test_weights_and_output_match_a_naive_loop(pairs, temperature):
    scores, values = [s for s, _ in pairs], [v for _, v in pairs]
    row = score_row(scores, values, temperature)
    expected = naive_softmax([s / temperature for s in scores])
    np.testing.assert_allclose(row.weights, expected, rtol=1e-9, atol=1e-300)
    assert math.isclose(row.output, sum(w * v for w, v in zip(expected, values, strict=True)),
                        rel_tol=1e-9, abs_tol=1e-9 * max(1.0, max(abs(v) for v in values)))
    slack = 1e-9 * max(1.0, max(abs(v) for v in values))
    assert min(values) - slack <= row.output <= max(values) + slack  # a blend of the values


@given(st.lists(st.floats(min_value=-1e3, max_value=-1e-3), min_size=1, max_size=8),
       st.floats(min_value=-5, max_value=5))
def test_negative_scores_give_positive_weights(negatives, other):
    row = score_row([*negatives, other], [1.0] * (len(negatives) + 1))
    assert np.all(row.weights[:len(negatives)] >= 0)
    assert np.all(row.weights[np.flatnonzero(np.array(negatives) > -700)] > 0)  # e^-700 still > 0
    assert set(row.negative) >= set(range(len(negatives)))


def test_temperature_divides_the_scores():
    scores = np.array([3.0, 0.5, -1.0])
    cooled = score_row(scores, [1, 2, 3], temperature=0.5)
    doubled = score_row(scores * 2, [1, 2, 3], temperature=1.0)
    np.testing.assert_allclose(cooled.weights, doubled.weights, rtol=1e-12)
    np.testing.assert_allclose(cooled.scaled, scores / 0.5)
    hot = score_row(scores, [1, 2, 3], temperature=20)
    assert hot.weights.max() - hot.weights.min() < 0.25 * (cooled.weights.max() - cooled.weights.min())
    with pytest.raises(ValueError, match="temperature"):
        score_row(scores, [1, 2, 3], temperature=0)


def test_mismatched_lengths_are_refused_with_a_message():
    with pytest.raises(ValueError, match="3 scores but 2 values"):
        score_row([1, 2, 3], [1, 2])


# --- Example D's curve -------------------------------------------------------------------------


@pytest.mark.parametrize("n_keys", [2, 3, 6, 24])
def test_gap_curve_rises_from_uniform_to_one(n_keys):
    gaps, weights = gap_curve(n_keys, temperature=1.0)
    assert math.isclose(weights[0], 1 / n_keys)
    assert np.all(np.diff(weights) >= 0)  # monotone; float64 reaches exactly 1 near gap 37
    assert np.all(np.diff(weights[weights < 1 - 1e-12]) > 0)
    assert np.all(1 - weights <= (n_keys - 1) * np.exp(-gaps) + 1e-15)  # the gap to 1 shrinks like e^-gap
    assert weights[-1] == pytest.approx(1.0, abs=1e-15)


def test_gap_curve_agrees_with_the_softmax_and_example_d():
    assert round(float(top_weight(20, 3)), 11) == SCENARIOS["ex_d_one_huge_score"].expected["w3"]
    row = score_row([0, 0, 0, 4.5], [0, 0, 0, 1], temperature=1.5)
    assert math.isclose(float(top_weight(4.5, 4, 1.5)), row.weights[-1], rel_tol=1e-12)
    assert gap_of([0, 0, 20]) == 20 and gap_of([-3, 1]) == 4 and gap_of([2, 2, 2]) == 0
    assert gap_of([3.0, 0.5, 0.2]) is None  # the others differ: the curve's formula does not apply


# --- Scaling lab -------------------------------------------------------------------------------


@pytest.mark.parametrize("d_k", [1, 16, 64, 1024])
def test_dot_product_spread_is_sqrt_dk_unscaled_and_one_scaled(d_k):
    products = dot_products(d_k, 5000, seed=3)  # std's relative error is about 1/sqrt(2N) to 2/sqrt(N)
    assert math.isclose(products.std(), math.sqrt(d_k), rel_tol=0.08)
    assert math.isclose((products / math.sqrt(d_k)).std(), 1.0, rel_tol=0.08)
    assert abs(products.mean()) < 4 * math.sqrt(d_k / 5000)


def test_dot_products_are_seeded():
    np.testing.assert_array_equal(dot_products(8, 100, 5), dot_products(8, 100, 5))
    assert not np.array_equal(dot_products(8, 100, 5), dot_products(8, 100, 6))


def test_largest_weight_climbs_unscaled_and_stays_level_scaled():
    unscaled, scaled = largest_weights(WIDTHS, n_keys=8, n_draws=200, seed=0)
    assert unscaled[0] == scaled[0]  # d_k = 1: dividing by √1 changes nothing
    assert unscaled[-1] > 0.9 and unscaled[-1] > unscaled[0] + 0.5
    assert scaled.max() - scaled.min() < 0.15
    assert np.all(unscaled[1:] > scaled[1:])


# --- Size and cost -----------------------------------------------------------------------------


def test_example_i_parameter_count():
    count = parameter_count(512, 8, 64, 64)
    expected = SCENARIOS["ex_i_parameter_count"].expected
    assert count.total == expected["total"] == 1_048_576 == 4 * 512**2
    assert count.w_q // 8 == expected["per_head_projection"]
    assert count.w_q + count.w_k + count.w_v == expected["projections"]
    assert count.w_o == expected["w_o"]
    with_bias = parameter_count(512, 8, 64, 64, bias=True)
    assert with_bias.total == 1_048_576 + 4 * 512 == count_parameters(512, 8, bias=True)


@given(st.integers(1, 256), st.integers(1, 16), st.integers(1, 64), st.integers(1, 64), st.booleans())
def test_parameter_terms_add_up_to_count_parameters(d_model, h, d_k, d_v, bias):
    count = parameter_count(d_model, h, d_k, d_v, bias)
    assert count.w_q + count.w_k + count.w_v + count.w_o + count.biases == count.total
    assert count.total == count_parameters(d_model, h, d_k, d_v, bias)


@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 16), st.integers(1, 128), st.integers(1, 128))
def test_h_thin_heads_cost_one_wide_head(n_q, n_k, h, d_k, d_v):
    thin, wide = head_split_flops(n_q, n_k, h, d_k, d_v)
    assert thin == wide == attention_flops(n_q, n_k, 1, h * d_k, h * d_v)


def test_chapter_004_step_6_numbers():
    thin, wide = head_split_flops(10, 10, 8, 64, 64)
    assert thin == wide == 2 * 10 * 10 * (512 + 512)  # 8 × n²·64 = n²·512, for QKᵀ and for AV


def test_example_h_shapes():
    shapes = {step.name: step.shape for step in cross_attention_shapes(3, 5, 512, 8, 64, 64)}
    assert shapes["Q_i = X W_i^Q"] == (3, 64)
    assert shapes["K_i = X_kv W_i^K"] == (5, 64)
    assert shapes["scores Q_i K_iᵀ"] == SCENARIOS["ex_h_cross_attention"].expected["scores_shape"][1:]
    assert shapes["head_i = weights V_i"] == SCENARIOS["ex_h_cross_attention"].expected["head_shape"]
    assert shapes["concat of the heads"] == SCENARIOS["ex_h_cross_attention"].expected["concat_shape"]
    assert shapes["output = concat W_O"] == (3, 512)


def test_example_h_shapes_match_the_core():
    result = SCENARIOS["ex_h_cross_attention"].run()
    shapes = {step.name: step.shape for step in cross_attention_shapes(3, 5, 512, 8, 64, 64)}
    assert shapes["scores Q_i K_iᵀ"] == result.scores.shape[1:]
    assert shapes["head_i = weights V_i"] == result.head_outputs.shape[1:]
    assert shapes["output = concat W_O"] == result.output.shape


# --- Parsing typed lists -----------------------------------------------------------------------


def test_parse_numbers_reads_what_a_person_types():
    np.testing.assert_array_equal(parse_numbers("2, 2, 2"), [2, 2, 2])
    np.testing.assert_array_equal(parse_numbers(" 3.0 ,0.5; -1e-3  −2 "), [3.0, 0.5, -1e-3, -2])


@pytest.mark.parametrize(("text", "message"), [
    ("", "at least one number"),
    (" , ", "at least one number"),
    ("1, abc, 3", "item 2: 'abc' is not a number"),
    ("1e9", "outside the range"),
    ("nan", "is not a number"),
    ("inf", "is not a number"),
    ("0x10", "is not a number"),
    ("1, 2٣", "is not a number"),  # a non-ASCII digit
    (", ".join(["1"] * (MAX_KEYS + 1)), f"more than the {MAX_KEYS}"),
])
def test_parse_numbers_refuses_bad_lists_with_a_message(text, message):
    with pytest.raises(ValueError, match=message):
        parse_numbers(text)


# --- Figures -----------------------------------------------------------------------------------


def test_weight_bars_print_tiny_and_near_one_weights():
    row = lab_row("ex_d_one_huge_score")
    fig = lab_figures.weight_bars(row.weights, ["k1", "<b>k2</b>", "k3"], row.scores, row.values)
    bar = fig.data[0]
    assert list(bar.text) == ["2.1e-9", "2.1e-9", "1 − 4.1e-9"]
    assert list(fig.layout.xaxis.ticktext) == ["k1", "&lt;b&gt;k2&lt;/b&gt;", "k3"]


def test_gap_figure_marks_the_current_gap():
    gaps, weights = gap_curve(3)
    fig = lab_figures.gap_figure(gaps, weights, gap=20, weight=float(top_weight(20, 3)), n_keys=3,
                                 temperature=1.0)
    marker = fig.data[-1]
    assert list(marker.x) == [20] and marker.y[0] > 0.999999
    assert "1 − 4.122e-9" in marker.text[0]


def test_spread_histograms_titles_give_the_stds():
    products = dot_products(64, 2000, 0)
    fig = lab_figures.spread_histograms(products, products / 8, 64)
    titles = [annotation.text for annotation in fig.layout.annotations]
    assert titles[0].startswith(f"q·k: std {products.std():.2f}") and "√d_k = 8.00" in titles[0]
    assert titles[1] == f"q·k / √d_k: std {(products / 8).std():.2f}"


# --- The page (AppTest) ------------------------------------------------------------------------


def page_text(at) -> str:
    """Everything the page wrote, with markdown's backslash escapes removed."""
    parts = [element.value for kind in ("title", "subheader", "markdown", "caption", "info", "error", "latex")
             for element in at.get(kind)]
    parts += [f"{metric.label}: {metric.value}" for metric in at.metric]
    return "\n".join(parts).replace("\\", "")


@pytest.fixture(scope="module")
def labs():
    at = fresh_app()
    goto(at, "labs")
    assert not at.exception
    return at


def test_labs_page_draws_all_three_labs(labs):
    text = page_text(labs)
    assert "Score lab" in text and "why divide by √d_k" in "".join(tab.label for tab in labs.tabs)
    assert {"lab_chart_weights", "lab_chart_gap", "lab_chart_spread", "lab_chart_largest",
            "lab_chart_f_unscaled", "lab_chart_f_scaled"} <= set(chart_specs(labs))
    assert "= **20.00**" in text  # example C, the default
    assert "1 − 1.266e-14" in text and "0.9820" in text  # example F side by side


PRESET_OUTPUTS = [  # preset -> what its output line must say
    ("ex_d_one_huge_score", "= **30.00** (more precisely 29.99999994)"),
    ("ex_e_negative_score", "= **198.20** (more precisely 198.201379)"),
    ("ex_f_unscaled", "(1 − 1.266e-14) × 1.00"),
    ("ex_f_scaled", "= **0.98** (more precisely 0.98201379)"),
    ("ex_g_coreference", "= **0.70** (more precisely 0.6963042487)"),
    ("ex_c_equal_scores", "= **20.00**\n"),
]


def test_each_preset_button_loads_its_numbers(labs):
    at = labs
    for key, output in PRESET_OUTPUTS:
        at.button(key=f"lab_load_{key}").click().run()
        assert not at.exception
        text = page_text(at)
        assert output in text, (key, [m.value for m in at.markdown if "output" in m.value])
        inputs = score_inputs(SCENARIOS[key])
        np.testing.assert_allclose(parse_numbers(at.text_input(key="lab_scores").value), inputs.scores)
        assert at.slider(key="lab_temperature").value == inputs.temperature
        names = at.text_input(key="lab_keys").value  # empty for k1, k2, ...: the lab's own names
        assert names == ("cat ate the fish because it" if key == "ex_g_coreference" else "")


def test_preset_numbers_reach_the_weight_chart_and_notes(labs):
    at = labs
    at.button(key="lab_load_ex_e_negative_score").click().run()
    bars = chart_specs(at)["lab_chart_weights"]["data"][0]
    assert bars["text"] == ["0.02", "0.98"]
    assert "Negative score -3 ('k1', weight 0.0180): every weight is still positive" in page_text(at)
    at.button(key="lab_load_ex_g_coreference").click().run()
    assert chart_specs(at)["lab_chart_weights"]["layout"]["xaxis"]["ticktext"][0] == "cat"
    assert "0.6963" in page_text(at)  # the weight on 'cat' in the output's arithmetic
    at.button(key="lab_load_ex_f_scaled").click().run()
    assert "0.9820 × 1.00" in page_text(at)


def test_a_bad_score_list_gets_a_message_and_keeps_the_text(labs):
    at = labs
    at.button(key="lab_load_ex_c_equal_scores").click().run()
    at.text_input(key="lab_scores").input("2, abc, 2").run()
    assert not at.exception
    assert any("item 2: 'abc' is not a number" in e.value.replace("\\", "") for e in at.error)
    assert at.text_input(key="lab_scores").value == "2, abc, 2"
    assert "lab_chart_weights" not in chart_specs(at)
    at.text_input(key="lab_scores").input("1, 2").run()  # two scores, three values
    assert any("2 scores but 3 values" in e.value for e in at.error)
    at.text_input(key="lab_scores").input("1e9, 0, 0").run()
    assert any("outside the range" in e.value.replace("\\", "") for e in at.error)
    at.text_input(key="lab_scores").input("2, 2, 2").run()
    assert not at.error and "= **20.00**" in page_text(at)


def test_negative_scores_too_small_for_float64_are_not_called_zero(labs):
    at = labs
    at.text_input(key="lab_scores").input("-1000000, 1000000, 0").run()
    at.text_input(key="lab_values").input("1, 2, 3").run()
    assert not at.exception and not at.error
    assert "'k1', weight too small for the computer, shown as 0" in page_text(at)
    at.button(key="lab_load_ex_c_equal_scores").click().run()


def test_typing_survives_a_visit_to_another_page(labs):
    at = labs
    at.text_input(key="lab_values").input("1, 2, 4").run()
    goto(at, "workbench")
    goto(at, "labs")
    assert at.text_input(key="lab_values").value == "1, 2, 4"
    at.button(key="lab_load_ex_c_equal_scores").click().run()


def test_temperature_and_gap_move_the_curve(labs):
    at = labs
    at.slider(key="lab_gap").set_value(4.0).run()
    at.slider(key="lab_temperature").set_value(2.0).run()
    gap = chart_specs(at)["lab_chart_gap"]["data"]
    marker = gap[-1]
    assert marker["x"] == [4.0]
    assert math.isclose(marker["y"][0], float(top_weight(4.0, 3, 2.0)), rel_tol=1e-12)
    assert len(gap) == 3  # the T = 1 reference curve is drawn when T differs
    at.slider(key="lab_temperature").set_value(1.0).run()


def test_size_inputs_give_example_i(labs):
    at = labs
    at.button(key="lab_size_reset").click().run()
    text = page_text(at)
    assert "learnable numbers: 1,048,576" in text
    assert "1,048,576 = 4 × 512² weights" in text
    at.checkbox(key="lab_bias").check().run()
    assert f"learnable numbers: {1_048_576 + 4 * 512:,}" in page_text(at)
    at.checkbox(key="lab_bias").uncheck().run()


def test_size_inputs_explain_a_split_that_is_not_whole(labs):
    at = labs
    at.number_input(key="lab_heads").set_value(7).run()
    assert not at.exception
    assert any("does not divide d_model=512" in e.value.replace("\\", "") for e in at.error)
    at.checkbox(key="lab_even_split").uncheck().run()
    text = page_text(at)
    assert "7 heads of width 64: 26,880" in text and "1 head of width 448: 26,880" in text
    assert "(3 × 5) · (5 × 64) = (3 × 64)" in text
    at.button(key="lab_size_reset").click().run()
    assert not at.error
