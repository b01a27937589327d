"""The Labs page: its numbers are the chapters' numbers (pure tests), and the page draws them (AppTest)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.charts import lab_figures
from course.examples import all_examples
from course.labs import (
    KINDS,
    MAX_KEYS,
    SCORE_EXAMPLES,
    SEQUENCE_LENGTHS,
    WIDTHS,
    attended_pairs,
    attention_cost,
    binary_size_text,
    cost_curves,
    cross_attention_shapes,
    dot_products,
    gap_curve,
    gap_of,
    head_split_flops,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_heads_problem,
    largest_weights,
    limit_problems,
    parameter_count,
    parse_numbers,
    score_inputs,
    score_row,
    top_weight,
)
from mha_core import attention_flops, count_parameters
from tests.apptest_util import chart_specs, fresh_app, goto

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()


def lab_row(key: str, temperature: float | None = None):
    inputs = score_inputs(EXAMPLES[key])
    return score_row(inputs.scores, inputs.values, inputs.temperature if temperature is None else temperature)


# --- The chapter's numbers -------------------------------------------------------------------


def test_example_c_equal_scores_give_the_plain_average():
    row = lab_row("ex_c_equal_scores")
    np.testing.assert_allclose(row.weights, EXAMPLES["ex_c_equal_scores"].expected["weights"], atol=1e-15)
    assert round(row.output, 10) == EXAMPLES["ex_c_equal_scores"].expected["output"] == 20


def test_example_d_one_huge_score_collapses_onto_token_3():
    row = lab_row("ex_d_one_huge_score")
    expected = EXAMPLES["ex_d_one_huge_score"].expected
    assert round(row.weights[2], 11) == expected["w3"] == 0.99999999588
    assert round(row.weights[0], 10) == expected["w1"]
    assert round(row.output, 8) == expected["output"] == 29.99999994
    assert round(row.output) == 30


def test_example_e_negative_score_still_gets_a_positive_weight():
    row = lab_row("ex_e_negative_score")
    expected = EXAMPLES["ex_e_negative_score"].expected
    assert round(row.output, 2) == expected["output"] == 198.20
    np.testing.assert_allclose(row.weights, expected["weights"], atol=5e-6)  # printed to 5 decimals
    assert list(row.negative) == [0]
    assert row.weights[0] > 0


def test_example_f_scaled_and_unscaled():
    unscaled, scaled = lab_row("ex_f_unscaled"), lab_row("ex_f_scaled")
    assert score_inputs(EXAMPLES["ex_f_scaled"]).temperature == 8.0  # √64, read from the example's scaling
    np.testing.assert_allclose(scaled.scaled, EXAMPLES["ex_f_scaled"].expected["scaled"])  # (5, 1)
    assert round(scaled.weights[0], 4) == EXAMPLES["ex_f_scaled"].expected["w1"] == 0.9820
    assert round(unscaled.weights[0], 14) == EXAMPLES["ex_f_unscaled"].expected["w1"]
    np.testing.assert_allclose(unscaled.weights[1], math.exp(-32), rtol=1e-12)  # 1 − w1 = e^-32, not 0


def test_example_g_weight_on_cat():
    row = lab_row("ex_g_coreference")
    inputs = score_inputs(EXAMPLES["ex_g_coreference"])
    assert inputs.keys[int(np.argmax(row.weights))] == "cat"
    assert round(row.weights[0], 4) == EXAMPLES["ex_g_coreference"].expected["w_cat"] == 0.6963


def test_every_score_example_loads_into_the_lab():
    for key in SCORE_EXAMPLES:
        inputs = score_inputs(EXAMPLES[key])
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
    assert round(float(top_weight(20, 3)), 11) == EXAMPLES["ex_d_one_huge_score"].expected["w3"]
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
    expected = EXAMPLES["ex_i_parameter_count"].expected
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
    assert shapes["scores Q_i K_iᵀ"] == EXAMPLES["ex_h_cross_attention"].expected["scores_shape"][1:]
    assert shapes["head_i = weights V_i"] == EXAMPLES["ex_h_cross_attention"].expected["head_shape"]
    assert shapes["concat of the heads"] == EXAMPLES["ex_h_cross_attention"].expected["concat_shape"]
    assert shapes["output = concat W_O"] == (3, 512)


def test_example_h_shapes_match_the_core():
    result = EXAMPLES["ex_h_cross_attention"].run()
    shapes = {step.name: step.shape for step in cross_attention_shapes(3, 5, 512, 8, 64, 64)}
    assert shapes["scores Q_i K_iᵀ"] == result.scores.shape[1:]
    assert shapes["head_i = weights V_i"] == result.head_outputs.shape[1:]
    assert shapes["output = concat W_O"] == result.output.shape


# --- Grouped-query attention and the KV cache ------------------------------------------------------


def block_arrays(d_model: int, h: int, g: int, d_k: int, d_v: int, bias: bool) -> list[np.ndarray]:
    """One grouped-query block's learnable arrays, built at their shapes (the reference count)."""
    arrays = [np.zeros((h, d_model, d_k)), np.zeros((g, d_model, d_k)),  # W_Q, W_K
              np.zeros((g, d_model, d_v)), np.zeros((h, d_v, d_model))]  # W_V, W_O
    if bias:
        arrays += [np.zeros((h, d_k)), np.zeros((g, d_k)), np.zeros((g, d_v)), np.zeros(d_model)]
    return arrays


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.sampled_from([1, 2, 3, 4, 6, 8, 12]), st.integers(1, 32), st.integers(1, 32),
       st.booleans(), st.data())
def test_grouped_query_parameters_are_the_arrays_sizes(d_model, h, d_k, d_v, bias, data):
    g = data.draw(st.sampled_from([g for g in range(1, h + 1) if h % g == 0]))
    count = parameter_count(d_model, h, d_k, d_v, bias, kv_heads=g)
    arrays = block_arrays(d_model, h, g, d_k, d_v, bias)
    assert count.total == sum(a.size for a in arrays)
    assert (count.w_q, count.w_k, count.w_v, count.w_o) == tuple(a.size for a in arrays[:4])
    assert count.biases == sum(a.size for a in arrays[4:])
    standard = parameter_count(d_model, h, d_k, d_v, bias)
    assert standard.kv_heads == h and standard == parameter_count(d_model, h, d_k, d_v, bias, kv_heads=h)
    assert standard.total == count_parameters(d_model, h, d_k, d_v, bias)
    assert standard.total - count.total == (h - g) * (d_model + bias) * (d_k + d_v)  # what sharing saves


def test_kv_heads_must_divide_the_query_heads():
    assert all(kv_heads_problem(8, g) is None for g in (1, 2, 4, 8))
    message = kv_heads_problem(8, 3)
    assert "g = 3" in message and "h = 8" in message and "1, 2, 4, 8" in message
    with pytest.raises(ValueError, match="divide"):
        parameter_count(512, 8, 64, 64, kv_heads=3)
    with pytest.raises(ValueError):
        parameter_count(512, 8, 64, 64, kv_heads=0)


@pytest.mark.parametrize(("layers", "g", "d_k", "d_v", "context", "bytes_per_value"), [
    (1, 1, 1, 1, 1, 1), (2, 4, 8, 8, 5, 4), (3, 2, 4, 6, 7, 2), (4, 1, 16, 8, 3, 1), (2, 8, 2, 2, 9, 2)])
def test_kv_cache_bytes_are_a_real_cache_s_nbytes(layers, g, d_k, d_v, context, bytes_per_value):
    dtype = {4: np.float32, 2: np.float16, 1: np.int8}[bytes_per_value]
    keys = np.zeros((layers, context, g, d_k), dtype=dtype)  # [L, n, g, d_k]
    values = np.zeros((layers, context, g, d_v), dtype=dtype)  # [L, n, g, d_v]
    assert kv_cache_bytes(layers, g, d_k, d_v, context, bytes_per_value) == keys.nbytes + values.nbytes
    one = keys[0, :1].nbytes + values[0, :1].nbytes  # one token, one layer
    assert kv_bytes_per_token(g, d_k, d_v, bytes_per_value) == one


def test_a_7b_class_model_s_kv_cache_at_8k_tokens():
    """32 layers, 32 query heads of d_k 128, 8192 tokens in fp16: 4 GiB; 1 GiB at g = 8; 128 MiB at g = 1."""
    per_token = {g: kv_bytes_per_token(g, 128, 128, 2) for g in (32, 8, 1)}
    assert per_token[32] == 2 * 32 * 128 * 2 == 16 * 1024
    totals = {g: kv_cache_bytes(32, g, 128, 128, 8192, 2) for g in (32, 8, 1)}
    assert totals == {32: 4 * 2**30, 8: 2**30, 1: 128 * 2**20}
    assert [binary_size_text(totals[g]) for g in (32, 8, 1)] == ["4 GiB", "1 GiB", "128 MiB"]


@pytest.mark.parametrize(("n_bytes", "text"), [(0, "0 B"), (512, "512 B"), (1000, "1,000 B"), (1024, "1 KiB"),
                                               (1536, "1.5 KiB"), (int(12.34 * 2**20), "12.3 MiB"),
                                               (1023 * 2**30, "1,023 GiB"), (2**40, "1 TiB")])
def test_binary_sizes_read_as_a_person_writes_them(n_bytes, text):
    assert binary_size_text(n_bytes) == text


def test_limits_are_checked_one_by_one():
    limits = {"a": 10, "b": 10, "c": 10}
    problems = limit_problems({"a": 0, "b": 10, "c": 11}, limits)
    assert set(problems) == {"a", "c"} and "from 1 to 10" in problems["c"]
    assert limit_problems({"a": 1}, limits) == {}
    assert "10.000" in limit_problems({"a": 10_001}, {"a": 10_000}, "de")["a"]  # the reader's digits


# --- Attention cost against sequence length ----------------------------------------------------


def allowed_mask(n: int, kind: str, window: int | None = None) -> np.ndarray:  # -> [n, n] True = may attend
    """The mask itself, built with NumPy: the reference the pair counts are checked against."""
    if kind == "full":
        return np.ones((n, n), dtype=bool)
    causal = np.tril(np.ones((n, n), dtype=bool))  # [n, n] keys up to the query
    if kind == "causal":
        return causal
    return causal & ~np.tril(np.ones((n, n), dtype=bool), -window)  # [n, n] and no more than w - 1 back


def pairs_by_loop(mask: np.ndarray) -> int:
    return sum(1 for i in range(mask.shape[0]) for j in range(mask.shape[1]) if mask[i, j])


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40), st.integers(1, 50), st.sampled_from(KINDS))
def test_attended_pairs_count_a_mask_s_true_cells(n, window, kind):
    mask = allowed_mask(n, kind, window)  # [n, n]
    assert attended_pairs(n, kind, window) == pairs_by_loop(mask)
    if kind == "window":
        assert list(mask.sum(axis=1)) == [min(i + 1, window) for i in range(n)]  # row i: min(i+1, w) keys


def test_causal_is_about_half_and_a_window_about_n_times_w():
    n, w = 32768, 4096
    assert attended_pairs(n, "causal") == n * (n + 1) // 2
    assert attended_pairs(n, "window", w) == w * (w + 1) // 2 + (n - w) * w
    causal = attended_pairs(n, "causal")
    assert attended_pairs(n, "window", n) == attended_pairs(n, "window", 10 * n) == causal
    doubled = attended_pairs(2 * n, "window", w) - attended_pairs(n, "window", w)
    assert doubled == n * w  # past n = w each new token adds exactly w pairs: linear in n
    with pytest.raises(ValueError):
        attended_pairs(8, "window", 0)
    with pytest.raises(ValueError):
        attended_pairs(8, "diagonal")


@pytest.mark.parametrize("kind", KINDS)
def test_attention_cost_counts_the_core_s_flops_and_the_weights_bytes(kind):
    h, d_k, d_v, n, w = 4, 16, 8, 20, 6
    cost = attention_cost(n, h, d_k, d_v, kind, w, bytes_per_value=2)
    mask = allowed_mask(n, kind, w)  # [n, n]
    kept = np.zeros((h, int(mask.sum())), dtype=np.float16)  # [h, pairs] the weights that take part
    assert cost.weight_bytes == kept.nbytes
    assert cost.score_flops == 2 * h * mask.sum() * d_k and cost.sum_flops == 2 * h * mask.sum() * d_v
    if kind == "full":
        assert cost.flops == attention_flops(n, n, h, d_k, d_v)


def test_cost_curves_grow_quadratically_full_and_linearly_windowed():
    curves = cost_curves(SEQUENCE_LENGTHS, 32, 128, 128, window=1024, bytes_per_value=2)
    flops, memory = curves["full"]
    assert flops.shape == memory.shape == (len(SEQUENCE_LENGTHS),)
    np.testing.assert_allclose(flops[1:] / flops[:-1], 4.0, rtol=0)  # n doubles: n² quadruples
    causal = curves["causal"][0] / flops
    assert np.all((causal > 0.5) & (causal < 0.51))
    window = curves["window"][1]
    past = np.array(SEQUENCE_LENGTHS) >= 2048
    np.testing.assert_allclose(np.diff(window[past]) / np.diff(np.array(SEQUENCE_LENGTHS)[past]),
                               32 * 1024 * 2, rtol=1e-12)  # bytes per extra token: h w b


def test_cost_figure_draws_three_curves_per_panel_on_log_axes():
    curves = cost_curves(SEQUENCE_LENGTHS, 8, 64, 64, window=4096, bytes_per_value=4)
    fig = lab_figures.attention_cost_figure(SEQUENCE_LENGTHS, curves, window=4096)
    assert len(fig.data) == 6 and [trace.showlegend for trace in fig.data].count(True) == 3
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == fig.layout.yaxis2.type == "log"
    assert list(fig.layout.xaxis2.ticktext) == ["128", "256", "512", "1K", "2K", "4K", "8K", "16K", "32K"]
    np.testing.assert_array_equal(fig.data[1].y, curves["full"][1])  # the memory panel's full curve
    assert fig.data[1].hovertext[-1] == "full, n = 32768: 32 GiB"  # 8 heads × 32768² × 4 bytes
    assert list(fig.layout.yaxis2.ticktext) == ["32 KiB", "1 MiB", "32 MiB", "1 GiB", "32 GiB"]
    assert [shape.x0 for shape in fig.layout.shapes] == [4096, 4096]  # each panel: where the window bites
    summary = lab_figures.cost_summary(SEQUENCE_LENGTHS, curves, window=4096)
    assert summary == ("Attention cost of one layer for n from 128 to 32,768 tokens, on log axes; at n = "
                       "32,768: FLOPs of QKᵀ and weights · V: full 2.2e12, causal 1.1e12, sliding window of "
                       "4,096 2.6e11. memory of the weights kept: full 32 GiB, causal 16 GiB, sliding window "
                       "3.75 GiB.")


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


EXAMPLE_OUTPUTS = [  # example -> what its output line must say
    ("ex_d_one_huge_score", "= **30.00** (more precisely 29.99999994)"),
    ("ex_e_negative_score", "= **198.20** (more precisely 198.201379)"),
    ("ex_f_unscaled", "(1 − 1.266e-14) × 1.00"),
    ("ex_f_scaled", "= **0.98** (more precisely 0.98201379)"),
    ("ex_g_coreference", "= **0.70** (more precisely 0.6963042487)"),
    ("ex_c_equal_scores", "= **20.00**\n"),
]


def test_each_example_button_loads_its_numbers(labs):
    at = labs
    for key, output in EXAMPLE_OUTPUTS:
        at.button(key=f"lab_load_{key}").click().run()
        assert not at.exception
        text = page_text(at)
        assert output in text, (key, [m.value for m in at.markdown if "output" in m.value])
        inputs = score_inputs(EXAMPLES[key])
        np.testing.assert_allclose(parse_numbers(at.text_input(key="lab_scores").value), inputs.scores)
        assert at.select_slider(key="lab_temperature").value == inputs.temperature
        names = at.text_input(key="lab_keys").value  # empty for k1, k2, ...: the lab's own names
        assert names == ("cat ate the fish because it" if key == "ex_g_coreference" else "")


def test_example_numbers_reach_the_weight_chart_and_notes(labs):
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
    at.select_slider(key="lab_gap").set_value(4.0).run()
    at.select_slider(key="lab_temperature").set_value(2.0).run()
    gap = chart_specs(at)["lab_chart_gap"]["data"]
    marker = gap[-1]
    assert marker["x"] == [4.0]
    assert math.isclose(marker["y"][0], float(top_weight(4.0, 3, 2.0)), rel_tol=1e-12)
    assert len(gap) == 3  # the T = 1 reference curve is drawn when T differs
    at.select_slider(key="lab_temperature").set_value(1.0).run()


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


def test_the_7b_example_compares_multi_head_grouped_and_multi_query_caches(labs):
    at = labs
    at.button(key="lab_size_7b").click().run()
    assert not at.exception and not at.error
    text = page_text(at)
    assert "| g = 32 (multi-head) | 67,108,864 | 16 KiB | 4 GiB |" in text
    assert "| **g = 8 (grouped-query)** | 41,943,040 | 4 KiB | 1 GiB |" in text
    assert "| g = 1 (multi-query) | 34,603,008 | 512 B | 128 MiB |" in text
    assert "KV cache with g = 8: 1 GiB" in text and "multi-head (g = h = 32): 4 GiB" in text
    cost = chart_specs(at)["lab_chart_cost"]
    assert len(cost["data"]) == 6 and cost["layout"]["yaxis"]["type"] == "log"
    at.button(key="lab_size_reset").click().run()


def errors_under(at, key: str) -> list[str]:
    """The messages drawn in the column of the number input ``key`` (under it), unescaped."""
    column = next(c for c in at.columns if any(n.key == key for n in c.number_input))
    return [e.value.replace("\\", "") for e in column.error]


def test_kv_heads_that_do_not_divide_h_are_said_under_their_input_and_nothing_is_computed(labs):
    at = labs
    at.button(key="lab_size_7b").click().run()
    at.number_input(key="lab_kv_heads").set_value(3).run()
    assert not at.exception
    said = errors_under(at, "lab_kv_heads")
    assert said == ["g = 3 key/value heads do not divide h = 32 query heads: each key/value head serves the "
                    "same number of query heads, so choose g from 1, 2, 4, 8, 16, 32."]
    text = page_text(at)
    assert "KV cache with" not in text and "GiB |" not in text and "multi-query) |" not in text
    assert "The cache appears once g divides h" in text
    at.number_input(key="lab_kv_heads").set_value(32).run()
    assert not at.error and "| **g = 32 (multi-head)** | 67,108,864 | 16 KiB | 4 GiB |" in page_text(at)
    at.button(key="lab_size_reset").click().run()


def test_sizes_above_their_limits_are_said_under_their_inputs_before_anything_is_computed(labs):
    at = labs
    at.button(key="lab_size_reset").click().run()
    at.number_input(key="lab_context").set_value(10_000_001).run()
    assert not at.exception
    assert any("from 1 to 10,000,000" in said for said in errors_under(at, "lab_context"))
    assert at.number_input(key="lab_context").value == 10_000_001  # kept as typed, not reset
    assert "KV cache with" not in page_text(at)
    at.number_input(key="lab_context").set_value(1024).run()
    at.number_input(key="lab_d_model").set_value(70_000).run()
    column = next(c for c in at.columns if any(n.key == "lab_d_model" for n in c.number_input))
    assert any("from 1 to 65,536" in e.value.replace("\\", "") for e in column.error)
    assert "learnable numbers" not in page_text(at) and "lab_chart_cost" not in chart_specs(at)
    at.button(key="lab_size_reset").click().run()
    assert not at.error


def test_the_window_moves_the_cost_chart(labs):
    at = labs
    at.button(key="lab_size_reset").click().run()
    at.number_input(key="lab_window").set_value(512).run()
    assert not at.exception
    spec = chart_specs(at)["lab_chart_cost"]
    window = [trace for trace in spec["data"] if trace["name"] == "sliding window, w = 512"]
    assert len(window) == 2 and spec["layout"]["shapes"][0]["x0"] == 512
    assert window[0]["hovertext"][-1] == f"sliding window, w = 512, n = 32768: " \
        f"{attention_cost(32768, 8, 64, 64, 'window', 512).flops:.4e}".replace("e+", "e")
    at.number_input(key="lab_window").set_value(4096).run()
