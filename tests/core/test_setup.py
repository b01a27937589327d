"""mha_core.setup: the one table of input arrays, Scaling, the shared input rules, and the page's
checks in mha_core.analysis (row sums, contributions, the most-disagreeing pair)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.examples import all_examples
from mha_core import (
    ARRAYS,
    LIMITS,
    Scaling,
    Setup,
    Sizes,
    contribution_gap,
    head_contributions,
    most_disagreeing_pair,
    multi_head_attention,
    pairwise_disagreement,
    row_sum_deviation,
)
from mha_core.setup import covering, parse_number, resized, token_problem, without_invisible
from tests.reference import naive_mha

EXAMPLES = all_examples()


def test_the_table_names_every_argument_of_the_core_once():
    import inspect
    names = [spec.name for spec in ARRAYS]
    assert len(names) == len(set(names))
    core = set(inspect.signature(multi_head_attention).parameters) - {"mask", "scale", "max_bytes"}
    assert set(names) == core


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_has_exactly_the_shapes_of_the_table(key):
    setup = EXAMPLES[key]
    sizes = setup.sizes
    assert {spec.name for spec in sizes.present()} == set(setup.arrays())
    for spec in sizes.present():
        assert getattr(setup, spec.name).shape == spec.shape(sizes), spec.name


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 6), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 4), st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_a_setup_built_from_the_table_runs_and_matches_a_naive_loop(n_q, n_k, d_model, h, d_k, d_v, cross,
                                                                    bias, seed):
    rng = np.random.default_rng(seed)
    sizes = Sizes(n_q=n_q, n_k=n_k if cross else n_q, d_model=d_model, n_heads=h, d_k=d_k, d_v=d_v,
                  cross=cross, bias=bias)
    arrays = {spec.name: rng.normal(size=spec.shape(sizes)) for spec in sizes.present()}
    tokens = tuple(f"t{i}" for i in range(n_q))
    setup = Setup(tokens=tokens, kv_tokens=tuple(f"k{i}" for i in range(n_k)) if cross else None,
                  scaling=Scaling("multiply", 0.5), **arrays)
    assert setup.sizes == sizes
    result = setup.run()
    biases = {name: arrays.get(name) for name in ("b_q", "b_k", "b_v", "b_o")} if bias else None
    expected = naive_mha(arrays["x"], arrays["w_q"], arrays["w_k"], arrays["w_v"], arrays["w_o"],
                         x_kv=arrays.get("x_kv"), scale=0.5, biases=biases)
    np.testing.assert_allclose(result.output, expected["output"], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("scaling, d_k, multiplier", [
    (Scaling("sqrt"), 4, 0.5), (Scaling("none"), 4, 1.0), (Scaling("sqrt_of", 64), 1, 0.125),
    (Scaling("multiply", 0.3), 9, 0.3),
])
def test_scaling_multiplies_as_it_says(scaling, d_k, multiplier):
    assert scaling.multiplier(d_k) == pytest.approx(multiplier, rel=1e-15)
    core = scaling.core_argument()
    assert core in ("sqrt", "none") or core == pytest.approx(multiplier)


@pytest.mark.parametrize("kind, value", [
    ("sqrt", 2.0), ("none", 1.0), ("sqrt_of", 0), ("sqrt_of", 2.5), ("sqrt_of", True), ("multiply", 5000),
    ("multiply", 1e-9), ("multiply", "1"), ("temperature", 2.0), ("sqrt_of", None),
])
def test_a_scaling_outside_its_one_range_is_refused(kind, value):
    with pytest.raises(ValueError, match="scaling"):
        Scaling(kind, value)


def test_the_formula_shows_the_scaling_in_use():
    assert r"\sqrt{d_k}" in Scaling("sqrt").latex(64) and r"\sqrt{64}" in Scaling("sqrt").latex(64)
    assert r"\sqrt{64}" in Scaling("sqrt_of", 64).latex(1)
    assert r"\sqrt" not in Scaling("none").latex(4)
    assert "0.3" in Scaling("multiply", 0.3).latex(4)


@pytest.mark.parametrize("text, value", [
    ("1", 1.0), ("-2.5", -2.5), ("−2.5", -2.5), ("1e-3", 1e-3), (".5", 0.5), ("5.", 5.0), (" 3 ", 3.0),
    ("+4", 4.0), ("1E2", 100.0), ("1000000", 1e6), ("0e-400", 0.0),
    ("-0.000", 0.0), ("1e-310", 1e-310), ("1,5", 1.5), ("−0,25", -0.25),  # issue 40, 5: a decimal comma
])
def test_a_number_is_read_exactly_as_typed(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text, words", [
    ("", "is empty"), ("1,5,0", "not a number"), ("1,5.0", "not a number"), ("0x10", "not a number"),
    ("inf", "not a number"),
    ("nan", "not a number"), ("1e308", "outside the range"), ("1000001", "outside the range"),
    ("1.2.3", "not a number"), ("1 2", "not a number"), ("٣", "not a number"),
    ("1e-400", "it would become 0"), ("-0.5e-330", "it would become 0"),  # issue 15, finding 10: was 0.0
])
def test_anything_else_is_refused_saying_what_was_found(text, words):
    with pytest.raises(ValueError, match=words):
        parse_number(text)


@pytest.mark.parametrize("tokens, words", [
    ([], "at least one"), (["w"] * (LIMITS.tokens + 1), f"limit of {LIMITS.tokens}"),
    (["x" * 41], "41 characters"),
    (["ca\u200bt"], "U+200B"), (["\ufeffcat"], "U+FEFF"), (["\u202ecat"], "U+202E"), (["a\x00"], "U+0000"),
    (["a b"], "without spaces"),
])
def test_token_rules_name_the_token_at_fault(tokens, words):
    assert words in token_problem(tokens)


@pytest.mark.parametrize("token", ["ca\u200bt", "\ufeffcat", "\u202ecat", "c\x00a\u2028t", "\ue000cat"])
def test_without_invisible_removes_what_the_token_rule_refuses_and_nothing_else(token):
    assert token_problem([token]) is not None
    assert without_invisible(token) == "cat"
    assert token_problem([without_invisible(token)]) is None
    assert without_invisible("猫é🙂<b>x</b>") == "猫é🙂<b>x</b>"


@pytest.mark.parametrize("tokens", [["the", "cat"], ["猫", "é", "🙂", "<b>x</b>", "$x$"], ["x" * 40] * 24])
def test_good_tokens_pass(tokens):
    assert token_problem(tokens) is None


def test_resizing_keeps_what_fits_and_covering_remembers_both(rng):
    old = rng.normal(size=(2, 4, 2))
    small = resized(old, (4, 4, 1), np.zeros((4, 4, 1)))
    np.testing.assert_array_equal(small[:2, :, :1], old[:, :, :1])
    both = covering(old, small)
    assert both.shape == (4, 4, 2)
    np.testing.assert_array_equal(resized(both, (2, 4, 2), np.zeros((2, 4, 2))), old)


def test_same_inputs_ignores_the_origin_and_sees_every_array():
    setup = EXAMPLES["cat_chases_mouse"].setup()
    assert setup.same_inputs(setup.with_origin("file"))
    x = setup.x.copy()
    x[2, 3] = 0.5
    assert not setup.same_inputs(dataclasses.replace(setup, x=x))
    assert not setup.same_inputs(dataclasses.replace(setup, scaling=Scaling("none")))
    assert not setup.same_inputs(dataclasses.replace(setup, mask="causal"))


# --- the page's checks, in mha_core.analysis --------------------------------------------------


def test_row_sum_deviation_ignores_fully_masked_rows_and_sees_a_bad_row():
    weights = np.array([[[0.5, 0.5], [0.0, 0.0]], [[1.0, 0.0], [0.25, 0.75]]])  # [h, n_q, n_k]
    assert row_sum_deviation(weights) == 0.0
    weights[1, 1, 0] = 0.5
    assert row_sum_deviation(weights) == pytest.approx(0.25)


def test_contribution_gap_is_zero_for_the_real_output_and_not_for_another(rng):
    setup = EXAMPLES["visual_walkthrough"]
    r = setup.run()
    parts = head_contributions(r.head_outputs, setup.w_o)
    assert contribution_gap(parts, r.output) < 1e-12
    assert contribution_gap(parts, r.output + 0.01) == pytest.approx(0.01)
    b_o = rng.normal(size=setup.d_model)
    r_b = multi_head_attention(setup.x, setup.w_q, setup.w_k, setup.w_v, setup.w_o, b_o=b_o)
    assert contribution_gap(head_contributions(r_b.head_outputs, setup.w_o), r_b.output, b_o) < 1e-12


def test_the_most_disagreeing_pair_is_two_different_heads():
    setup = EXAMPLES["the_cat_sat_two_heads"]
    distances = pairwise_disagreement(setup.run().weights, setup.focus_query)
    a, b, value = most_disagreeing_pair(distances)
    assert (a, b) == (0, 1) and round(value, 3) == 0.813  # chapter 002
    one_token = EXAMPLES["ex_b_two_heads_one_token"]
    a, b, value = most_disagreeing_pair(pairwise_disagreement(one_token.run().weights, 0))
    assert a != b and value == 0.0  # not "head 1 vs head 1"
    assert most_disagreeing_pair(np.zeros((1, 1))) is None


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**16))
def test_the_most_disagreeing_pair_matches_a_loop(h, seed):
    d = np.random.default_rng(seed).random((h, h))
    d = (d + d.T) / 2
    a, b, value = most_disagreeing_pair(d)
    best = max((d[i, j], i, j) for i in range(h) for j in range(i + 1, h))
    assert (value, a, b) == (best[0], best[1], best[2]) and not math.isnan(value)
