"""Every invalid argument raises ValueError with a message naming the argument and its shape or value."""

import re

import numpy as np
import pytest

import mha_core
from mha_core import (
    attention_flops,
    count_parameters,
    head_width,
    multi_head_attention,
    normalised_entropy,
    pairwise_disagreement,
    row_entropy,
    softmax,
)

# A valid call: h=2, n_q=n_k=3, d_model=4, d_k=2, d_v=3.
H, N, D_MODEL, D_K, D_V = 2, 3, 4, 2, 3


def valid_case():
    rng = np.random.default_rng(0)
    return dict(
        x=rng.standard_normal((N, D_MODEL)),
        w_q=rng.standard_normal((H, D_MODEL, D_K)),
        w_k=rng.standard_normal((H, D_MODEL, D_K)),
        w_v=rng.standard_normal((H, D_MODEL, D_V)),
        w_o=rng.standard_normal((H * D_V, D_MODEL)),
    )


def call(**overrides):
    return multi_head_attention(**{**valid_case(), **overrides})


def shape(*dims):
    """The regex for a shape as the messages print it, e.g. [3, 5]."""
    return re.escape(str(list(dims)))


def with_value(array, index, value):
    out = np.array(array, dtype=float)
    out[index] = value
    return out


def test_the_valid_case_is_valid():
    r = call()
    assert r.output.shape == (N, D_MODEL)


# --- shapes ----------------------------------------------------------------------------------------------

SHAPE_ERRORS = {
    "x 1-D": (dict(x=np.ones(D_MODEL)), r"\bx\b.*2-D.*" + shape(4)),
    "x 3-D": (dict(x=np.ones((1, N, D_MODEL))), r"\bx\b.*2-D.*" + shape(1, 3, 4)),
    "x scalar": (dict(x=1.0), r"\bx\b.*2-D.*" + shape()),
    "x_kv 1-D": (dict(x_kv=np.ones(D_MODEL)), r"x_kv.*2-D.*" + shape(4)),
    "x_kv other d_model": (dict(x_kv=np.ones((5, 3))), r"x_kv.*d_model=4.*" + shape(5, 3)),
    "w_q 2-D": (dict(w_q=np.ones((D_MODEL, D_K))), r"w_q.*3-D.*" + shape(4, 2)),
    "w_q 4-D": (dict(w_q=np.ones((1, H, D_MODEL, D_K))), r"w_q.*3-D.*" + shape(1, 2, 4, 2)),
    "w_q other d_model": (dict(w_q=np.ones((H, 5, D_K))), r"w_q.*d_model=4.*" + shape(2, 5, 2)),
    "w_k other h": (dict(w_k=np.ones((3, D_MODEL, D_K))), r"w_k.*h=2.*" + shape(3, 4, 2)),
    "w_k other d_k": (dict(w_k=np.ones((H, D_MODEL, 3))), r"w_k.*d_k.*=2.*" + shape(2, 4, 3)),
    "w_k other d_model": (dict(w_k=np.ones((H, 3, D_K))), r"w_k.*d_model=4.*" + shape(2, 3, 2)),
    "w_k 2-D": (dict(w_k=np.ones((D_MODEL, D_K))), r"w_k.*3-D.*" + shape(4, 2)),
    "w_v other h": (dict(w_v=np.ones((1, D_MODEL, D_V))), r"w_v.*h=2.*" + shape(1, 4, 3)),
    "w_v other d_model": (dict(w_v=np.ones((H, 5, D_V))), r"w_v.*d_model=4.*" + shape(2, 5, 3)),
    "w_o square": (dict(w_o=np.ones((D_MODEL, D_MODEL))), r"w_o.*" + shape(6, 4) + ".*" + shape(4, 4)),
    "w_o transposed": (dict(w_o=np.ones((D_MODEL, H * D_V))), r"w_o.*" + shape(6, 4) + ".*" + shape(4, 6)),
    "w_o 3-D": (dict(w_o=np.ones((H, D_V, D_MODEL))), r"w_o.*" + shape(6, 4) + ".*" + shape(2, 3, 4)),
    "w_o 1-D": (dict(w_o=np.ones(H * D_V * D_MODEL)), r"w_o.*" + shape(6, 4) + ".*" + shape(24)),
    "b_q wrong d": (dict(b_q=np.ones((H, 3))), r"b_q.*" + shape(2, 2) + ".*" + shape(2, 3)),
    "b_q flat": (dict(b_q=np.ones(H * D_K)), r"b_q.*" + shape(2, 2) + ".*" + shape(4)),
    "b_k wrong h": (dict(b_k=np.ones((1, D_K))), r"b_k.*" + shape(2, 2) + ".*" + shape(1, 2)),
    "b_v d_k wide": (dict(b_v=np.ones((H, D_K))), r"b_v.*" + shape(2, 3) + ".*" + shape(2, 2)),
    "b_o wrong": (dict(b_o=np.ones(3)), r"b_o.*" + shape(4) + ".*" + shape(3)),
    "b_o 2-D": (dict(b_o=np.ones((1, D_MODEL))), r"b_o.*" + shape(4) + ".*" + shape(1, 4)),
    "b_o scalar": (dict(b_o=1.0), r"b_o.*" + shape(4) + ".*" + shape()),
}


@pytest.mark.parametrize("overrides, pattern", SHAPE_ERRORS.values(), ids=SHAPE_ERRORS.keys())
def test_wrong_shapes_are_named_with_their_shapes(overrides, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**overrides)


EMPTY_ERRORS = {
    "x no rows": (dict(x=np.ones((0, D_MODEL))), r"\bx\b.*non-empty.*" + shape(0, 4)),
    "x no columns": (dict(x=np.ones((N, 0))), r"\bx\b.*non-empty.*" + shape(3, 0)),
    "x empty list": (dict(x=[]), r"\bx\b.*" + shape(0)),
    "x_kv no rows": (dict(x_kv=np.ones((0, D_MODEL))), r"x_kv.*non-empty.*" + shape(0, 4)),
    "w_q no heads": (dict(w_q=np.ones((0, D_MODEL, D_K))), r"w_q.*empty.*" + shape(0, 4, 2)),
    "w_q d_k 0": (dict(w_q=np.ones((H, D_MODEL, 0))), r"w_q.*empty.*" + shape(2, 4, 0)),
    "w_v d_v 0": (dict(w_v=np.ones((H, D_MODEL, 0))), r"w_v.*empty.*" + shape(2, 4, 0)),
    "w_o empty": (dict(w_o=np.ones((0, D_MODEL))), r"w_o.*" + shape(0, 4)),
    "b_q empty": (dict(b_q=np.ones((0,))), r"b_q.*" + shape(0)),
}


@pytest.mark.parametrize("overrides, pattern", EMPTY_ERRORS.values(), ids=EMPTY_ERRORS.keys())
def test_empty_arrays_are_rejected(overrides, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**overrides)


# --- values ----------------------------------------------------------------------------------------------

def non_finite_cases():
    case = valid_case()
    yield "x", with_value(case["x"], (0, 1), np.nan), r"\bx\b.*finite.*nan.*\(0, 1\)"
    yield "x", with_value(case["x"], (2, 3), np.inf), r"\bx\b.*finite.*inf.*\(2, 3\)"
    yield "x_kv", with_value(case["x"], (1, 0), -np.inf), r"x_kv.*finite.*-inf.*\(1, 0\)"
    yield "w_q", with_value(case["w_q"], (1, 2, 0), np.nan), r"w_q.*finite.*nan.*\(1, 2, 0\)"
    yield "w_k", with_value(case["w_k"], (0, 0, 1), np.inf), r"w_k.*finite.*inf.*\(0, 0, 1\)"
    yield "w_v", with_value(case["w_v"], (1, 3, 2), -np.inf), r"w_v.*finite.*-inf.*\(1, 3, 2\)"
    yield "w_o", with_value(case["w_o"], (5, 3), np.nan), r"w_o.*finite.*nan.*\(5, 3\)"
    yield "b_q", with_value(np.zeros((H, D_K)), (1, 1), np.nan), r"b_q.*finite.*nan.*\(1, 1\)"
    yield "b_k", with_value(np.zeros((H, D_K)), (0, 1), np.inf), r"b_k.*finite.*inf.*\(0, 1\)"
    yield "b_v", with_value(np.zeros((H, D_V)), (1, 2), np.nan), r"b_v.*finite.*nan.*\(1, 2\)"
    yield "b_o", with_value(np.zeros(D_MODEL), (3,), -np.inf), r"b_o.*finite.*-inf.*\(3,\)"


@pytest.mark.parametrize("name, value, pattern", list(non_finite_cases()),
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(non_finite_cases())])
def test_nan_and_inf_inputs_are_named_with_value_and_index(name, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**{name: value})


def test_a_weight_too_big_for_float32_is_named_when_computing_in_float32():
    """With float32 x everything is computed in float32, where 1e300 is not representable."""
    huge = with_value(valid_case()["w_k"], (0, 0, 0), 1e300)  # fine in float64 ...
    assert np.isfinite(call(w_k=huge).weights).all()
    case = {k: v.astype(np.float32) for k, v in valid_case().items()}
    with np.errstate(over="ignore"), pytest.raises(ValueError, match=r"w_k.*finite.*inf.*\(0, 0, 0\)"):
        multi_head_attention(**{**case, "w_k": huge})  # ... but not once cast to float32


NON_NUMERIC = {
    "x string": ("x", "hello", r"\bx\b.*numeric.*<U5"),
    "x strings": ("x", [["a", "b"], ["c", "d"]], r"\bx\b.*numeric"),
    "x object": ("x", np.array([[1.0, None], [2.0, 3.0]], dtype=object), r"\bx\b.*numeric.*object"),
    "x ragged": ("x", [[1.0, 2.0], [3.0]], r"\bx\b.*numeric"),
    "x complex": ("x", np.ones((N, D_MODEL), dtype=complex), r"\bx\b.*real.*complex"),
    "x None": ("x", None, r"\bx\b.*None"),
    "x dict": ("x", {"a": 1}, r"\bx\b.*numeric.*object"),
    "x_kv string": ("x_kv", "abc", r"x_kv.*numeric"),
    "w_q object": ("w_q", np.array([[[None]]], dtype=object), r"w_q.*numeric.*object"),
    "w_k strings": ("w_k", [[["1"]]], r"w_k.*numeric"),
    "w_v None": ("w_v", None, r"w_v.*None"),
    "w_o string": ("w_o", "identity", r"w_o.*numeric"),
    "b_q string": ("b_q", "zeros", r"b_q.*numeric"),
    "b_o object": ("b_o", np.array([None] * D_MODEL, dtype=object), r"b_o.*numeric.*object"),
}


@pytest.mark.parametrize("name, value, pattern", NON_NUMERIC.values(), ids=NON_NUMERIC.keys())
def test_strings_objects_and_none_are_rejected_by_name(name, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**{name: value})


# --- mask ------------------------------------------------------------------------------------------------

MASK_ERRORS = {
    "unknown string": (dict(mask="causl"), r"mask.*'causl'"),
    "capitalised": (dict(mask="Causal"), r"mask.*'Causal'"),
    "empty string": (dict(mask=""), r"mask.*''"),
    "wrong shape": (dict(mask=np.ones((N, N - 1), dtype=bool)), r"mask.*" + shape(3, 3) + ".*" + shape(3, 2)),
    "transposed cross": (dict(x_kv=np.ones((5, D_MODEL)), mask=np.ones((5, N), dtype=bool)),
                         r"mask.*" + shape(3, 5) + ".*" + shape(5, 3)),
    "1-D": (dict(mask=np.ones(N, dtype=bool)), r"mask.*" + shape(3, 3) + ".*" + shape(3)),
    "scalar True": (dict(mask=True), r"mask.*" + shape(3, 3) + ".*" + shape()),
    "batched": (dict(mask=np.ones((1, N, N), dtype=bool)), r"mask.*" + shape(3, 3) + ".*" + shape(1, 3, 3)),
    "int array": (dict(mask=np.ones((N, N), dtype=int)), r"mask.*bool.*int"),
    "float array": (dict(mask=np.ones((N, N))), r"mask.*bool.*float64"),
    "0/1 list": (dict(mask=[[1, 0, 0], [1, 1, 0], [1, 1, 1]]), r"mask.*bool.*int"),
    "object": (dict(mask=np.array([[True, None, True]] * N, dtype=object)), r"mask.*bool.*object"),
}


@pytest.mark.parametrize("overrides, pattern", MASK_ERRORS.values(), ids=MASK_ERRORS.keys())
def test_bad_masks_are_rejected(overrides, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**overrides)


# --- scale -----------------------------------------------------------------------------------------------

SCALE_ERRORS = {
    "zero": (0, r"scale.*positive.*\b0\b"),
    "zero float": (0.0, r"scale.*positive.*0\.0"),
    "negative": (-1.5, r"scale.*positive.*-1\.5"),
    "negative numpy": (np.float64(-2.0), r"scale.*positive.*-2\.0"),
    "nan": (float("nan"), r"scale.*finite.*nan"),
    "inf": (float("inf"), r"scale.*finite.*inf"),
    "-inf": (float("-inf"), r"scale.*-inf"),
    "True": (True, r"scale.*True"),
    "False": (False, r"scale.*False"),
    "unknown string": ("sqrt(d_k)", r"scale.*'sqrt\(d_k\)'"),
    "capitalised string": ("Sqrt", r"scale.*'Sqrt'"),
    "None": (None, r"scale.*None"),
    "list": ([0.5], r"scale.*\[0\.5\]"),
    "complex": (1j, r"scale.*1j"),
}


@pytest.mark.parametrize("scale, pattern", SCALE_ERRORS.values(), ids=SCALE_ERRORS.keys())
def test_bad_scales_are_rejected(scale, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(scale=scale)


@pytest.mark.parametrize("zero_queries", [False, True], ids=["random", "zero-queries"])
def test_a_scale_too_big_for_float32_is_named(zero_queries):
    case = {k: v.astype(np.float32) for k, v in valid_case().items()}
    if zero_queries:  # scores are exactly 0: 0 * inf gives NaN
        case["w_q"] = np.zeros_like(case["w_q"])
    with np.errstate(all="ignore"), pytest.raises(ValueError) as error:
        multi_head_attention(**case, scale=1e39)
    assert re.search(r"\bscale\b.*1e\+?39", str(error.value)), str(error.value)


# --- overflow --------------------------------------------------------------------------------------------

OVERFLOWS = {
    "scores float64": (dict(x=np.full((N, D_MODEL), 1e200)), np.float64, r"scores.*overflow.*float64"),
    "q float64": (dict(x=np.full((N, D_MODEL), 1e300), w_q=np.full((H, D_MODEL, D_K), 1e10)), np.float64,
                  r"\bq\b.*overflow"),
    "v float64": (dict(x=np.full((N, D_MODEL), 1e300), w_v=np.full((H, D_MODEL, D_V), 1e10),
                       w_q=np.full((H, D_MODEL, D_K), 1e-300), w_k=np.full((H, D_MODEL, D_K), 1e-300)),
                  np.float64, r"\bv\b.*overflow"),
    "output float64": (dict(x=np.full((N, D_MODEL), 1e300), w_q=np.zeros((H, D_MODEL, D_K)),
                            w_o=np.full((H * D_V, D_MODEL), 1e300)), np.float64, r"output.*overflow"),
    "scores float32": (dict(x=np.full((N, D_MODEL), 1e20)), np.float32, r"overflow.*float32"),
    "scale multiplies": (dict(x=np.full((N, D_MODEL), 1e100), scale=1e300), np.float64, r"overflow"),
}


@pytest.mark.parametrize("overrides, dtype, pattern", OVERFLOWS.values(), ids=OVERFLOWS.keys())
def test_overflow_raises_instead_of_returning_nan(overrides, dtype, pattern):
    case = {**valid_case(), "w_q": np.ones((H, D_MODEL, D_K)), "w_k": np.ones((H, D_MODEL, D_K)),
            "w_v": np.ones((H, D_MODEL, D_V))}
    case.update(overrides)
    case = {k: v.astype(dtype) if isinstance(v, np.ndarray) else v for k, v in case.items()}
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=pattern):
        multi_head_attention(**case)


def test_large_but_representable_scores_do_not_raise():
    """1e150 embeddings give scores near 1e301: big, finite, and a valid (one-hot-ish) softmax."""
    x = np.array([[1e150, 0.0], [0.0, 1e150]])
    w = np.eye(2)[None]  # [1, 2, 2]
    r = multi_head_attention(x, w, w, np.zeros((1, 2, 2)), np.eye(2), scale="none")
    np.testing.assert_array_equal(r.weights[0], np.eye(2))
    assert np.isfinite(r.output).all()


# --- analysis --------------------------------------------------------------------------------------------

def test_pairwise_disagreement_rejects_an_unknown_metric():
    w = softmax(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match=r"metric.*'l2'.*'js'.*'tv'.*'kl'"):
        pairwise_disagreement(w, 0, "kl")
    with pytest.raises(ValueError, match=r"metric.*'L2'"):
        pairwise_disagreement(w, 0, "L2")


@pytest.mark.parametrize("query, pattern", [
    (3, r"query.*n_q=3.*\b3\b"),
    (-4, r"query.*n_q=3.*-4"),
    (100, r"query.*n_q=3.*100"),
    (1.0, r"query.*integer.*1\.0"),
    (True, r"query.*integer.*True"),
    ("0", r"query.*integer.*'0'"),
    (None, r"query.*integer.*None"),
])
def test_pairwise_disagreement_rejects_bad_queries(query, pattern):
    w = softmax(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=pattern):
        pairwise_disagreement(w, query)


def test_pairwise_disagreement_accepts_negative_and_numpy_indices():
    w = softmax(np.arange(24.0).reshape(2, 3, 4) % 5)
    np.testing.assert_array_equal(pairwise_disagreement(w, -1), pairwise_disagreement(w, 2))
    np.testing.assert_array_equal(pairwise_disagreement(w, np.int64(1)), pairwise_disagreement(w, 1))


@pytest.mark.parametrize("weights, pattern", [
    (np.full((3, 3), 1 / 3), r"weights.*\[h, n_q, n_k\].*" + shape(3, 3)),
    (np.full((1, 2, 3, 3), 1 / 3), r"weights.*\[h, n_q, n_k\].*" + shape(1, 2, 3, 3)),
    (np.full(3, 1 / 3), r"weights.*" + shape(3)),
    (np.full((2, 1, 2), np.nan), r"weights.*finite.*nan"),
    ("uniform", r"weights.*numeric"),
])
def test_pairwise_disagreement_rejects_bad_weights(weights, pattern):
    with pytest.raises(ValueError, match=pattern):
        pairwise_disagreement(weights, 0)


@pytest.mark.parametrize("fn", [row_entropy, normalised_entropy])
def test_entropies_reject_non_finite_weights(fn):
    with pytest.raises(ValueError, match=r"weights.*finite.*nan"):
        fn(np.array([[0.5, np.nan]]))


def test_count_parameters_with_heads_that_do_not_divide_says_how_to_fix():
    with pytest.raises(ValueError, match=r"n_heads=3.*d_model=10") as error:
        count_parameters(10, 3)
    message = str(error.value)
    assert "[1, 2, 5, 10]" in message, message  # the head counts that would work
    assert "d_k" in message and "d_v" in message, message  # or give the widths yourself
    # The advice is right: giving both widths works, and so do the suggested head counts.
    assert count_parameters(10, 3, d_k=4, d_v=4) == 3 * (2 * 10 * 4 + 10 * 4) + 3 * 4 * 10
    assert count_parameters(10, 5) == 4 * 10 * 10


def test_count_parameters_with_only_d_k_given_still_needs_d_v():
    with pytest.raises(ValueError, match=r"n_heads=3.*d_model=10"):
        count_parameters(10, 3, d_k=4)
    with pytest.raises(ValueError, match=r"n_heads=3.*d_model=10"):
        count_parameters(10, 3, d_v=4)


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(d_model=0, n_heads=1), r"d_model.*positive.*\b0\b"),
    (dict(d_model=-8, n_heads=2), r"d_model.*positive.*-8"),
    (dict(d_model=8, n_heads=0), r"n_heads.*positive.*\b0\b"),
    (dict(d_model=8, n_heads=-2), r"n_heads.*positive.*-2"),
    (dict(d_model=8, n_heads=2, d_k=0), r"d_k.*positive.*\b0\b"),
    (dict(d_model=8, n_heads=2, d_k=4, d_v=-1), r"d_v.*positive.*-1"),
    (dict(d_model=8.0, n_heads=2), r"d_model.*integer.*8\.0"),
    (dict(d_model=8, n_heads=True), r"n_heads.*integer.*True"),
    (dict(d_model="512", n_heads=8), r"d_model.*integer.*'512'"),
])
def test_count_parameters_rejects_non_positive_sizes(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        count_parameters(**kwargs)


@pytest.mark.parametrize("args, pattern", [
    ((0, 3, 1, 2), r"n_q.*positive.*\b0\b"),
    ((3, -1, 1, 2), r"n_k.*positive.*-1"),
    ((3, 3, 0, 2), r"n_heads.*positive.*\b0\b"),
    ((3, 3, 1, 0), r"d_k.*positive.*\b0\b"),
    ((3, 3, 1, 2, 0), r"d_v.*positive.*\b0\b"),
])
def test_attention_flops_rejects_non_positive_sizes(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        attention_flops(*args)


def test_head_width_of_10_and_3_suggests_valid_head_counts():
    with pytest.raises(ValueError, match=r"n_heads=3.*d_model=10") as error:
        mha_core.head_width(10, 3)
    message = str(error.value)
    assert "[1, 2, 5, 10]" in message, message
    assert "3.33" in message, message  # the fractional width it would have been
    for h in (1, 2, 5, 10):
        assert head_width(10, h) == 10 // h


@pytest.mark.parametrize("args, pattern", [
    ((0, 1), r"d_model.*positive.*\b0\b"),
    ((8, 0), r"n_heads.*positive.*\b0\b"),
    ((8, -4), r"n_heads.*positive.*-4"),
    ((7, 2), r"n_heads=2.*d_model=7.*\[1, 7\]"),
])
def test_head_width_rejects_bad_splits(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        head_width(*args)


# --- softmax ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("z, pattern", [
    (np.array([[0.0, np.nan, 1.0]]), r"\bz\b.*NaN.*" + shape(1, 3)),
    (np.array([np.nan, np.nan]), r"\bz\b.*NaN.*" + shape(2)),
    (np.array([[1.0, np.inf], [0.0, 0.0]]), r"\bz\b.*\+inf.*" + shape(2, 2)),
    (np.array([0.0, np.nan], dtype=np.float32), r"\bz\b.*NaN"),
])
def test_softmax_rejects_nan_and_plus_inf(z, pattern):
    with pytest.raises(ValueError, match=pattern):
        softmax(z)


def test_softmax_accepts_minus_inf():
    np.testing.assert_array_equal(softmax(np.array([0.0, -np.inf])), [1.0, 0.0])


def test_a_scale_too_small_for_float32_is_named_not_rounded_to_zero():
    case = {k: v.astype(np.float32) for k, v in valid_case().items()}
    with pytest.raises(ValueError, match=r"scale=1e-50 is outside what float32 can hold"):
        multi_head_attention(**case, scale=1e-50)
    result = multi_head_attention(**valid_case(), scale=1e-50)  # float64 holds it
    assert result.scale == 1e-50
