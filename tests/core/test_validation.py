"""Every invalid argument raises ValueError with a message naming the argument and its shape or value."""

import gc
import re
import time
import tracemalloc
import warnings

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
from mha_core.attention import DEFAULT_MAX_BYTES, attention_bytes

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
    "w_v other h": (dict(w_v=np.ones((1, D_MODEL, D_V))), r"w_v.*g=2 key/value heads.*" + shape(1, 4, 3)),
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
    with pytest.raises(ValueError, match=re.escape(
        "w_k holds 1e+300 at index (0, 0, 0), outside float32's range (±3.4e+38)"
    )):
        multi_head_attention(**{**case, "w_k": huge})  # ... but not once cast to float32


OUT_OF_FLOAT32 = {  # name, the float64 value, its index, the value as the message prints it
    "w_q": ("w_q", 1e300, (0, 1, 0), "1e+300"),
    "w_v negative": ("w_v", -5e38, (1, 3, 2), "-5e+38"),
    "x_kv": ("x_kv", 1e39, (2, 0), "1e+39"),
    "w_o": ("w_o", -1e300, (5, 3), "-1e+300"),
    "b_k": ("b_k", 7e38, (1, 0), "7e+38"),
    "b_o": ("b_o", 1e300, (3,), "1e+300"),
}


@pytest.mark.parametrize("name, value, index, printed", OUT_OF_FLOAT32.values(), ids=OUT_OF_FLOAT32.keys())
def test_float64_values_outside_float32s_range_are_named_not_reported_as_inf(name, value, index, printed):
    """The cast to float32 overflows to inf; the message names the value as given, and no warning leaks."""
    case = {k: v.astype(np.float32) for k, v in valid_case().items()}
    base = {"x_kv": valid_case()["x"], "b_k": np.zeros((H, D_K)), "b_o": np.zeros(D_MODEL)}.get(name)
    array = with_value(valid_case()[name] if base is None else base, index, value)  # float64
    expected = f"{name} holds {printed} at index {index}, outside float32's range (±3.4e+38)"
    with warnings.catch_warnings(), pytest.raises(ValueError) as error:
        warnings.simplefilter("error")  # the old code warned "overflow encountered in cast" first
        multi_head_attention(**{**case, name: array})
    assert str(error.value) == expected


def test_a_real_inf_cast_to_float32_is_still_reported_as_not_finite():
    case = {k: v.astype(np.float32) for k, v in valid_case().items()}
    w_k = with_value(valid_case()["w_k"], (1, 2, 1), -np.inf)  # float64 -inf, not an overflow
    with pytest.raises(ValueError, match=re.escape("w_k must be finite, found -inf at index (1, 2, 1)")):
        multi_head_attention(**{**case, "w_k": w_k})


@pytest.mark.skipif(np.finfo(np.longdouble).max < np.longdouble("1e400"),
                    reason="long double is float64 on this platform")
def test_a_long_double_outside_float64s_range_is_named():
    x = np.ones((N, D_MODEL), dtype=np.longdouble)
    x[1, 2] = np.longdouble("1e400")
    expected = "x holds 1e+400 at index (1, 2), outside float64's range (±1.8e+308)"
    with pytest.raises(ValueError, match=re.escape(expected)):
        call(x=x)


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


# --- memory budget -----------------------------------------------------------------------------------------

def sized_case(n_q, n_k, h, d_model, d_k, d_v, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    case = dict(
        x=rng.standard_normal((n_q, d_model)), x_kv=rng.standard_normal((n_k, d_model)),
        w_q=rng.standard_normal((h, d_model, d_k)), w_k=rng.standard_normal((h, d_model, d_k)),
        w_v=rng.standard_normal((h, d_model, d_v)), w_o=rng.standard_normal((h * d_v, d_model)),
    )
    return {name: a.astype(dtype) for name, a in case.items()}


def traced_peak(fn) -> int:
    """Bytes allocated at fn()'s peak above those allocated before (tracemalloc sees NumPy's arrays)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_the_default_budget_is_2_gib():
    assert DEFAULT_MAX_BYTES == 2 * 2**30


@pytest.mark.parametrize("mask", [None, "causal"])
def test_20000_tokens_and_16_heads_are_refused_at_once_without_allocating(mask):
    """143 GiB of score grids: the old code raised MemoryError, after allocating the projections.
    "causal" too: the check comes before the [n_q, n_k] causal mask is built (400 MB)."""
    case = sized_case(20_000, 20_000, 16, 4, 4, 4)
    del case["x_kv"]  # self-attention
    errors = []

    def refused():
        with pytest.raises(ValueError) as error:
            multi_head_attention(**case, mask=mask)
        errors.append(str(error.value))

    start = time.perf_counter()
    peak = traced_peak(refused)
    seconds = time.perf_counter() - start
    message = errors[0]
    sizes = re.escape("n_q=20000, n_k=20000, h=16, d_k=4, d_v=4, d_model=4 in float64 would need ")
    assert re.match(sizes + r"149\.\d GiB \(the score grids alone 143\.1 GiB\)", message), message
    assert "the budget max_bytes is 2.0 GiB" in message, message
    assert peak < 2**20, peak  # the input checks' temporaries (x is 625 KiB), nothing of the call's size
    assert seconds < 1.0, seconds  # about a millisecond here; 1 s leaves room for a loaded machine


@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "causal"])
def test_a_call_just_over_a_custom_budget_is_refused_and_just_under_accepted(masked):
    n_q, n_k, h, d_model, d_k, d_v = 300, 200, 4, 32, 8, 16  # ~3 MB in float32
    case = sized_case(n_q, n_k, h, d_model, d_k, d_v, np.float32)
    mask = "causal" if masked else None
    needed = attention_bytes(n_q, n_k, h, d_k, d_v, d_model, 4, masked=masked)
    assert 3e6 < needed < 4e6, needed
    with pytest.raises(ValueError, match=r"n_q=300, n_k=200, h=4, d_k=8, d_v=16.*float32.*max_bytes"):
        multi_head_attention(**case, mask=mask, max_bytes=needed - 1)
    result = multi_head_attention(**case, mask=mask, max_bytes=needed)
    assert result.weights.shape == (h, n_q, n_k)
    assert multi_head_attention(**case, mask=mask, max_bytes=np.int64(needed)).weights.shape == (h, n_q, n_k)


def test_max_bytes_none_means_no_limit_and_zero_refuses_everything():
    assert call(max_bytes=None).output.shape == (N, D_MODEL)
    with pytest.raises(ValueError, match=r"n_q=3, n_k=3, h=2.*max_bytes is 0 bytes"):
        call(max_bytes=0)


@pytest.mark.parametrize("max_bytes, pattern", [
    (-1, r"max_bytes.*>= 0.*-1"),
    (-(2**40), r"max_bytes.*>= 0"),
    (True, r"max_bytes.*True"),
    (False, r"max_bytes.*False"),
    (2.0**31, r"max_bytes.*2147483648\.0"),
    (np.float64(1e9), r"max_bytes.*1000000000\.0"),
    ("2GiB", r"max_bytes.*'2GiB'"),
    ([1024], r"max_bytes.*\[1024\]"),
])
def test_invalid_max_bytes_is_named(max_bytes, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(max_bytes=max_bytes)


@pytest.mark.parametrize("args, pattern", [
    ((0, 3, 1, 2, 2, 4, 8), r"n_q.*positive.*\b0\b"),
    ((3, 3, -1, 2, 2, 4, 8), r"\bh\b.*positive.*-1"),
    ((3, 3, 1, 2.0, 2, 4, 8), r"d_k.*positive integer.*2\.0"),
    ((3, 3, 1, 2, 2, True, 8), r"d_model.*True"),
    ((3, 3, 1, 2, 2, 4, 0), r"itemsize.*\b0\b"),
])
def test_attention_bytes_rejects_bad_sizes(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        attention_bytes(*args)


def orthogonal_scores_case(n_q, n_k, h, d_model, d_k, d_v, dtype):
    """Queries and keys in orthogonal halves of d_k, scaled so |q| |k| overflows: every score is 0,
    but the Cauchy-Schwarz bound is not finite, so the call takes its path that scans the scores
    for overflow and softmaxes with the max shift (the path with the largest temporary)."""
    case = sized_case(n_q, n_k, h, d_model, d_k, d_v)
    half = d_k // 2
    case["w_q"][:, :, half:] = 0
    case["w_k"][:, :, :half] = 0
    big = 1e20 if dtype == np.float32 else 1e160
    case["x"] *= big
    case["x_kv"] *= big
    case["w_v"][:] = 0  # keeps v and the output finite
    return {name: a.astype(dtype) for name, a in case.items()}


ESTIMATE_SIZES = [  # (n_q, n_k, h, d_model, d_k, d_v)
    (3, 3, 2, 4, 2, 3),  # tiny: the call's Python objects dominate
    (100, 100, 1, 8, 2, 2),
    (300, 200, 4, 32, 8, 16),
    (50, 700, 1, 64, 3, 5),  # NumPy's ufunc buffer is the largest temporary
    (1, 2000, 8, 64, 8, 256),  # one query, wide values
    (2000, 1, 8, 16, 2, 2),  # one key
    (64, 64, 16, 1024, 64, 64),  # wide model
    (1000, 1000, 1, 8, 2, 2),  # one head, the score grids dominate
    (512, 512, 8, 512, 64, 64),  # the benchmark's middle size
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("path", ["plain", "overflow-scan"])
@pytest.mark.parametrize("mask", [None, "causal"], ids=["unmasked", "causal"])
@pytest.mark.parametrize("sizes", ESTIMATE_SIZES, ids=["x".join(map(str, s)) for s in ESTIMATE_SIZES])
def test_attention_bytes_matches_the_peak_tracemalloc_measures(sizes, mask, path, dtype):
    """Never below the measured peak; at most 10% above it from 100 KiB up, and at most its 8 KiB
    allowance for the call's Python objects (~5 KiB measured) above it below that."""
    n_q, n_k, h, d_model, d_k, d_v = sizes
    make = orthogonal_scores_case if path == "overflow-scan" else sized_case
    case = make(n_q, n_k, h, d_model, d_k, d_v, dtype)
    itemsize = np.dtype(dtype).itemsize
    estimate = attention_bytes(n_q, n_k, h, d_k, d_v, d_model, itemsize, masked=mask is not None)
    multi_head_attention(**case, mask=mask, scale="none")  # warm-up: NumPy's and Python's caches
    peak = traced_peak(lambda: multi_head_attention(**case, mask=mask, scale="none"))
    assert peak <= estimate, (peak, estimate)
    if estimate >= 100 * 2**10:
        assert estimate <= 1.10 * peak, (peak, estimate)
    else:
        assert estimate - peak <= 8 * 2**10, (peak, estimate)


GROUPED_SIZES = [  # (n_q, n_k, h, g, d_model, d_k, d_v)
    (300, 200, 4, 1, 32, 8, 16),
    (300, 200, 4, 2, 32, 8, 16),
    (64, 64, 16, 4, 1024, 64, 64),  # wide model: the repeated keys and values weigh most
    (512, 512, 8, 2, 512, 64, 64),
]


@pytest.mark.parametrize("sizes", GROUPED_SIZES, ids=["x".join(map(str, s)) for s in GROUPED_SIZES])
def test_attention_bytes_with_grouped_key_value_heads_matches_the_peak(sizes):
    """Grouped-query attention projects g key/value heads, then repeats them for the h query heads: both
    are counted, never below the measured peak and at most 10% above it."""
    n_q, n_k, h, g, d_model, d_k, d_v = sizes
    case = sized_case(n_q, n_k, h, d_model, d_k, d_v, np.float64)
    case["w_k"], case["w_v"] = case["w_k"][:g], case["w_v"][:g]
    estimate = attention_bytes(n_q, n_k, h, d_k, d_v, d_model, 8, kv_heads=g)
    multi_head_attention(**case, scale="none")
    peak = traced_peak(lambda: multi_head_attention(**case, scale="none"))
    assert peak <= estimate <= 1.10 * peak, (peak, estimate)
