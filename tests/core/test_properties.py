"""Property-based tests (hypothesis) of multi_head_attention, softmax and the analysis numbers.

Shapes are small (h 1-4, n_q, n_k 1-7, d_model 1-8, d_k, d_v 1-5) and values span tiny (1e-30)
to huge (embeddings 1e3, scores past 1e4) magnitudes, in float64 and float32.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mha_core import (
    multi_head_attention,
    normalised_entropy,
    pairwise_disagreement,
    row_entropy,
    softmax,
)

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

# Sized for a 2-core machine: the whole file runs in a few seconds.
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = ("q", "k", "v", "scores", "scaled", "weights", "head_outputs", "concat", "output")
FINITE_FIELDS = tuple(name for name in FIELDS if name != "scaled")  # scaled holds -inf where masked
ULP_SLACK = 4 * np.finfo(np.float64).eps  # rounding slack for "in [0, 1]" (see the xfail tests below)

UNIT = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)
X_MAGNITUDES = st.sampled_from([1e-30, 1e-3, 1.0, 30.0, 1e3])  # embeddings up to 1e3
W_MAGNITUDES = st.sampled_from([1e-30, 0.1, 1.0, 3.0])
B_MAGNITUDES = st.sampled_from([1e-30, 1.0, 100.0])


def scaled_array(draw, shape, magnitudes):
    """A float64 array of ``shape`` with entries in [-1, 1] times one drawn magnitude."""
    unit = draw(hnp.arrays(np.float64, shape, elements=UNIT))
    return unit * draw(magnitudes)


@st.composite
def mha_case(draw, dtype=np.float64, cross=None, masks=True, biases=True):
    """Keyword arguments for one valid multi_head_attention call, plus the sizes."""
    h = draw(st.integers(1, 4))
    n_q = draw(st.integers(1, 7))
    cross = draw(st.booleans()) if cross is None else cross
    n_k = draw(st.integers(1, 7)) if cross else n_q
    d_model = draw(st.integers(1, 8))
    d_k, d_v = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    case = dict(
        x=scaled_array(draw, (n_q, d_model), X_MAGNITUDES),
        w_q=scaled_array(draw, (h, d_model, d_k), W_MAGNITUDES),
        w_k=scaled_array(draw, (h, d_model, d_k), W_MAGNITUDES),
        w_v=scaled_array(draw, (h, d_model, d_v), W_MAGNITUDES),
        w_o=scaled_array(draw, (h * d_v, d_model), W_MAGNITUDES),
    )
    if cross:
        case["x_kv"] = scaled_array(draw, (n_k, d_model), X_MAGNITUDES)
    if biases:
        for name, shape in (("b_q", (h, d_k)), ("b_k", (h, d_k)), ("b_v", (h, d_v)), ("b_o", (d_model,))):
            if draw(st.booleans()):
                case[name] = scaled_array(draw, shape, B_MAGNITUDES)
    case = {name: value.astype(dtype) for name, value in case.items()}
    if masks:
        kind = draw(st.sampled_from(["none", "causal", "array"]))
        if kind == "causal":
            case["mask"] = "causal"
        elif kind == "array":
            case["mask"] = draw(hnp.arrays(np.bool_, (n_q, n_k)))
    case["scale"] = draw(st.one_of(st.sampled_from(["sqrt", "none"]), st.floats(1e-3, 10.0)))
    return case, dict(h=h, n_q=n_q, n_k=n_k, d_model=d_model, d_k=d_k, d_v=d_v)


def allowed_of(case, n_q, n_k):
    """The [n_q, n_k] "may attend" matrix a case asks for."""
    mask = case.get("mask")
    if mask is None:
        return np.ones((n_q, n_k), dtype=bool)
    if isinstance(mask, str):
        return np.tril(np.ones((n_q, n_k), dtype=bool))
    return mask


def as_dtype(case, dtype):
    """The case with every float array cast to dtype (the bool mask untouched)."""
    return {k: v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype != bool else v
            for k, v in case.items()}


def row_sum_tolerance(dtype):
    return 1e-12 if dtype == np.float64 else 1e-5


# --- multi_head_attention -------------------------------------------------------------------------------


@SETTINGS
@given(mha_case(), st.sampled_from([np.float64, np.float32]))
def test_shapes_of_every_field(case_and_sizes, dtype):
    case, s = case_and_sizes
    r = multi_head_attention(**as_dtype(case, dtype))
    h, n_q, n_k, d_model, d_k, d_v = (s[k] for k in ("h", "n_q", "n_k", "d_model", "d_k", "d_v"))
    expected = dict(
        q=(h, n_q, d_k), k=(h, n_k, d_k), v=(h, n_k, d_v), scores=(h, n_q, n_k), scaled=(h, n_q, n_k),
        weights=(h, n_q, n_k), head_outputs=(h, n_q, d_v), concat=(n_q, h * d_v), output=(n_q, d_model),
    )
    for name, shape in expected.items():
        assert getattr(r, name).shape == shape, name
    assert r.n_heads == h


@SETTINGS
@given(mha_case(), st.sampled_from([np.float64, np.float32]))
def test_weights_are_a_distribution_per_row_or_all_zero_and_everything_is_finite(case_and_sizes, dtype):
    case, s = case_and_sizes
    case = as_dtype(case, dtype)
    r = multi_head_attention(**case)
    allowed = allowed_of(case, s["n_q"], s["n_k"])
    for name in FINITE_FIELDS:
        assert np.isfinite(getattr(r, name)).all(), name
    assert np.isfinite(r.scaled[:, allowed]).all()
    assert not np.isnan(r.weights).any()
    assert (r.weights >= 0).all() and (r.weights <= 1).all()
    sums = r.weights.sum(axis=-1)  # [h, n_q]
    some_key = allowed.any(axis=1)  # [n_q]
    np.testing.assert_allclose(sums[:, some_key], 1.0, rtol=0, atol=row_sum_tolerance(dtype))
    assert (r.weights[:, ~some_key, :] == 0).all(), "a fully masked row must be all zeros"


@SETTINGS
@given(mha_case())
def test_masked_positions_get_exactly_zero_weight_and_minus_inf_scaled(case_and_sizes):
    case, s = case_and_sizes
    r = multi_head_attention(**case)
    allowed = allowed_of(case, s["n_q"], s["n_k"])
    assert (r.weights[:, ~allowed] == 0.0).all()
    assert np.isneginf(r.scaled[:, ~allowed]).all()
    # scaled is scores * scale wherever the pair may attend; scores stay raw everywhere.
    np.testing.assert_allclose(r.scaled[:, allowed], (r.scores * r.scale)[:, allowed], rtol=1e-15, atol=0)
    assert np.isfinite(r.scores).all()
    if r.mask is not None:
        np.testing.assert_array_equal(r.mask, allowed)


@SETTINGS
@given(mha_case(masks=False, cross=False))
def test_causal_mask_zeros_the_upper_triangle(case_and_sizes):
    case, s = case_and_sizes
    r = multi_head_attention(**case, mask="causal")
    upper = np.triu(np.ones((s["n_q"], s["n_k"]), dtype=bool), k=1)
    assert (r.weights[:, upper] == 0.0).all()
    assert np.isneginf(r.scaled[:, upper]).all()
    assert np.isfinite(r.scaled[:, ~upper]).all()
    # The first query can only see the first key: all of its attention goes there.
    np.testing.assert_array_equal(r.weights[:, 0, 0], 1.0)
    np.testing.assert_allclose(r.head_outputs[:, 0, :], r.v[:, 0, :], rtol=1e-12, atol=0)


@SETTINGS
@given(mha_case(), st.sampled_from([np.float64, np.float32]))
def test_inputs_are_never_modified(case_and_sizes, dtype):
    case, _ = case_and_sizes
    case = as_dtype(case, dtype)
    before = {k: v.copy() for k, v in case.items() if isinstance(v, np.ndarray)}
    r = multi_head_attention(**case)
    for name, original in before.items():
        np.testing.assert_array_equal(case[name], original, err_msg=name)
        assert case[name].dtype == original.dtype, name
        assert case[name].flags.writeable, f"{name} was made read-only"
        for field in FIELDS:
            assert not np.shares_memory(getattr(r, field), case[name]), f"{field} aliases {name}"


@SETTINGS
@given(mha_case(dtype=np.float32))
def test_float32_inputs_stay_float32(case_and_sizes):
    case, _ = case_and_sizes
    r = multi_head_attention(**case)
    for name in FIELDS:
        assert getattr(r, name).dtype == np.float32, name


@SETTINGS
@given(mha_case(masks=False, biases=False))
def test_integer_and_list_inputs_compute_in_float64(case_and_sizes):
    case, _ = case_and_sizes
    rounded = {k: np.round(v * 3).astype(np.int64) if isinstance(v, np.ndarray) else v
               for k, v in case.items()}
    r = multi_head_attention(**{k: v.tolist() if isinstance(v, np.ndarray) else v
                                for k, v in rounded.items()})
    for name in FIELDS:
        assert getattr(r, name).dtype == np.float64, name
    as_float = multi_head_attention(**{k: v.astype(np.float64) if isinstance(v, np.ndarray) else v
                                       for k, v in rounded.items()})
    np.testing.assert_array_equal(r.output, as_float.output)


@SETTINGS
@given(mha_case(cross=True), st.data())
def test_permuting_keys_permutes_weight_columns_and_leaves_output_unchanged(case_and_sizes, data):
    case, s = case_and_sizes
    perm = np.array(data.draw(st.permutations(range(s["n_k"]))))
    if isinstance(case.get("mask"), str):  # causal depends on key order: use its explicit matrix
        case = dict(case, mask=allowed_of(case, s["n_q"], s["n_k"]))
    permuted = dict(case, x_kv=case["x_kv"][perm])
    if "mask" in case:
        permuted["mask"] = case["mask"][:, perm]
    a, b = multi_head_attention(**case), multi_head_attention(**permuted)

    # Rounding in the scores may differ with the key order; bound its effect on the weights.
    score_bound = s["d_k"] * np.abs(a.q).max() * np.abs(a.k).max()
    weight_atol = 1e-12 + 1e-13 * score_bound * a.scale
    np.testing.assert_allclose(b.scores, a.scores[:, :, perm], rtol=1e-12, atol=1e-300 + 1e-13 * score_bound)
    np.testing.assert_allclose(b.weights, a.weights[:, :, perm], rtol=0, atol=weight_atol)
    np.testing.assert_array_equal(np.isneginf(b.scaled), np.isneginf(a.scaled[:, :, perm]))

    heads_atol = 1e-300 + (weight_atol * s["n_k"] + 1e-12) * np.abs(a.v).max()
    np.testing.assert_allclose(b.head_outputs, a.head_outputs, rtol=0, atol=heads_atol)
    out_atol = heads_atol * s["h"] * s["d_v"] * np.abs(case["w_o"]).max() + 1e-12 * np.abs(a.output).max()
    np.testing.assert_allclose(b.output, a.output, rtol=0, atol=out_atol + 1e-300)


@SETTINGS
@given(mha_case(cross=True, masks=False))
def test_cross_attention_shapes_follow_queries_for_rows_and_keys_for_columns(case_and_sizes):
    case, s = case_and_sizes
    assume(s["n_q"] != s["n_k"])
    r = multi_head_attention(**case)
    assert r.scores.shape == r.weights.shape == (s["h"], s["n_q"], s["n_k"])
    assert r.k.shape[1] == r.v.shape[1] == s["n_k"]
    assert r.q.shape[1] == r.head_outputs.shape[1] == r.output.shape[0] == s["n_q"]
    # Swapping in a different key/value set of another length must change nothing on the query side.
    only_first_key = multi_head_attention(**dict(case, x_kv=case["x_kv"][:1]))
    assert only_first_key.weights.shape == (s["h"], s["n_q"], 1)
    np.testing.assert_array_equal(only_first_key.weights, 1.0)
    np.testing.assert_allclose(only_first_key.q, r.q, rtol=1e-15, atol=0)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 7), st.floats(50.0, 100.0),
       st.sampled_from([np.float64, np.float32]), st.data())
def test_scores_of_1e4_do_not_overflow_and_give_one_hot_weights(h, n, top, dtype, data):
    """d_model = d_k = 1 and q = k = v = x, so query i scores key j with x_i * x_j (up to 1e4)."""
    x = data.draw(hnp.arrays(np.float64, n, elements=st.floats(-top, top - 20.0, allow_subnormal=False)))
    hot = data.draw(st.integers(0, n - 1))
    x[hot] = top
    x = x.astype(dtype)[:, None]  # [n, 1]
    ones = np.ones((h, 1, 1), dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning would fail the test
        r = multi_head_attention(x, ones, ones, ones, np.ones((h, 1), dtype), scale="none")
    assert r.scores.max() == pytest.approx(top * top, rel=1e-6)
    assert r.scores.max() >= 2500
    assert np.isfinite(r.weights).all() and np.isfinite(r.output).all()
    for i in range(n):
        if x[i, 0] >= 10:  # the gap in the exponent is at least 10 * 20 = 200
            np.testing.assert_allclose(r.weights[:, i, hot], 1.0, rtol=0, atol=1e-30)
            np.testing.assert_allclose(r.output[i], h * top, rtol=1e-6)


# --- softmax ---------------------------------------------------------------------------------------------

SCORE_ROWS = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7),
    elements=st.one_of(
        st.floats(-1e4, 1e4, allow_nan=False, allow_subnormal=False),
        st.sampled_from([1e-30, -1e-30, 0.0]),
    ),
)


def with_minus_inf(draw, z):
    """z with some entries (possibly whole rows) set to -inf."""
    blocked = draw(hnp.arrays(np.bool_, z.shape))
    out = z.copy()
    out[blocked] = -np.inf
    return out


@SETTINGS
@given(st.data())
def test_softmax_rows_are_distributions_minus_inf_gets_zero_and_input_is_kept(data):
    z = with_minus_inf(data.draw, data.draw(SCORE_ROWS))
    original = z.copy()
    w = softmax(z)
    np.testing.assert_array_equal(z, original)
    assert w.shape == z.shape and w.dtype == np.float64
    assert not np.isnan(w).any()
    assert ((w >= 0) & (w <= 1)).all()
    assert (w[np.isneginf(z)] == 0).all()
    live = ~np.isneginf(z).all(axis=-1)
    np.testing.assert_allclose(w.sum(axis=-1)[live], 1.0, rtol=0, atol=1e-12)
    assert (w[~live] == 0).all()
    # The largest score of a live row gets the largest weight.
    flat_z, flat_w = z.reshape(-1, z.shape[-1]), w.reshape(-1, w.shape[-1])
    for row_z, row_w in zip(flat_z, flat_w, strict=True):
        if not np.isneginf(row_z).all():
            assert row_w[np.argmax(row_z)] == row_w.max()


@SETTINGS
@given(st.data(), st.floats(-1e4, 1e4, allow_nan=False))
def test_softmax_is_invariant_to_adding_a_constant_to_a_row(data, c):
    z = with_minus_inf(data.draw, data.draw(SCORE_ROWS))
    shifted = z + c  # -inf stays -inf
    # Rounding z + c loses at most half an ulp of |z| + |c| <= 2e4 in the exponent.
    np.testing.assert_allclose(softmax(shifted), softmax(z), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(softmax(shifted) == 0, softmax(z) == 0)


@SETTINGS
@given(st.data(), st.floats(-1e4, 1e4, allow_nan=False), st.sampled_from([np.float64, np.float32]))
def test_softmax_of_a_1e4_gap_is_exactly_one_hot(data, top, dtype):
    n = data.draw(st.integers(1, 7))
    gaps = data.draw(hnp.arrays(np.float64, n, elements=st.floats(800.0, 2e4)))
    others = top - gaps
    hot = data.draw(st.integers(0, n - 1))
    z = others.copy()
    z[hot] = top
    w = softmax(z.astype(dtype))
    expected = np.zeros(n)
    expected[hot] = 1.0
    assert w.dtype == dtype
    np.testing.assert_array_equal(w, expected)


def test_softmax_keeps_float32_and_handles_all_minus_inf_rows():
    z = np.array([[0.0, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf]], dtype=np.float32)
    w = softmax(z)
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w[1], 0.0)
    np.testing.assert_allclose(w[0], [1 / (1 + math.e), math.e / (1 + math.e), 0.0], rtol=1e-6)


# --- entropy and disagreement ----------------------------------------------------------------------------

WEIGHTS = st.builds(
    lambda z, sharp: softmax(z * sharp),
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=3, max_dims=3, min_side=1, max_side=7),
               elements=st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)),
    st.sampled_from([1e-30, 1.0, 10.0, 100.0, 1e4]),
)


@SETTINGS
@given(st.integers(1, 64), st.integers(1, 5))
def test_row_entropy_of_uniform_rows_is_log2_n_and_of_one_hot_is_zero(n, rows):
    uniform = np.full((rows, n), 1.0 / n)
    np.testing.assert_allclose(row_entropy(uniform), np.full(rows, math.log2(n)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(row_entropy(uniform, base=math.e), np.full(rows, math.log(n)), rtol=1e-12,
                               atol=1e-12)
    one_hot = np.eye(n)[np.arange(rows) % n]
    np.testing.assert_array_equal(row_entropy(one_hot), 0.0)
    np.testing.assert_array_equal(normalised_entropy(one_hot), 0.0)
    np.testing.assert_allclose(normalised_entropy(uniform), 1.0 if n > 1 else 0.0, rtol=0, atol=1e-12)


@SETTINGS
@given(WEIGHTS)
def test_normalised_entropy_is_in_0_1_and_row_entropy_at_most_log2_n(w):
    n_k = w.shape[-1]
    e = normalised_entropy(w)
    assert e.shape == w.shape[:-1]
    assert (e >= 0).all()
    assert (e <= 1 + ULP_SLACK).all()
    assert (row_entropy(w) <= math.log2(n_k) + 1e-12).all()
    if n_k == 1:
        np.testing.assert_array_equal(e, 0.0)


@SETTINGS
@given(WEIGHTS, st.sampled_from(["l2", "js", "tv"]), st.data())
def test_pairwise_disagreement_is_symmetric_with_zero_diagonal(w, metric, data):
    query = data.draw(st.integers(-w.shape[1], w.shape[1] - 1))
    d = pairwise_disagreement(w, query, metric)
    h = w.shape[0]
    assert d.shape == (h, h)
    np.testing.assert_array_equal(d, d.T)
    np.testing.assert_array_equal(np.diag(d), 0.0)
    assert (d >= 0).all()
    if metric in ("js", "tv"):
        assert (d <= 1 + ULP_SLACK).all()


@SETTINGS
@given(WEIGHTS, st.data())
def test_pairwise_l2_and_tv_match_a_naive_loop(w, data):
    query = data.draw(st.integers(0, w.shape[1] - 1))
    h = w.shape[0]
    l2, tv = pairwise_disagreement(w, query, "l2"), pairwise_disagreement(w, query, "tv")
    for a in range(h):
        for b in range(h):
            pa, pb = w[a, query].tolist(), w[b, query].tolist()
            naive_l2 = math.sqrt(sum((x - y) ** 2 for x, y in zip(pa, pb, strict=True)))
            naive_tv = 0.5 * sum(abs(x - y) for x, y in zip(pa, pb, strict=True))
            assert l2[a, b] == pytest.approx(naive_l2, rel=1e-12, abs=1e-15)
            assert tv[a, b] == pytest.approx(naive_tv, rel=1e-12, abs=1e-15)


def naive_js(p, r):
    """Jensen-Shannon distance (base 2) of two lists, one term at a time."""
    m = [0.5 * (a + b) for a, b in zip(p, r, strict=True)]

    def kl(u):
        return sum(ui * math.log2(ui / mi) for ui, mi in zip(u, m, strict=True) if ui > 0)

    return math.sqrt(min(max(0.5 * (kl(p) + kl(r)), 0.0), 1.0))


@SETTINGS
@given(WEIGHTS, st.data())
def test_pairwise_js_matches_a_naive_loop(w, data):
    query = data.draw(st.integers(0, w.shape[1] - 1))
    js = pairwise_disagreement(w, query, "js")
    for a in range(w.shape[0]):
        for b in range(w.shape[0]):
            p, r = w[a, query], w[b, query]
            naive = naive_js(p.tolist(), r.tolist())
            assert js[a, b] == pytest.approx(naive, rel=1e-9, abs=1e-7)


def test_disagreement_extremes_and_seed_002_value():
    one_hots = np.array([[[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]]])
    for metric in ("js", "tv"):
        d = pairwise_disagreement(one_hots, 0, metric)
        np.testing.assert_allclose(d, [[0, 1, 0], [1, 0, 1], [0, 1, 0]], rtol=0, atol=1e-15, err_msg=metric)
    np.testing.assert_allclose(pairwise_disagreement(one_hots, 0, "l2")[0, 1], math.sqrt(2), rtol=1e-15)
    # Chapter 002: query "sat", head A softmax(2, 0, 1), head B softmax(0, 2, 1): disagreement 0.813.
    rows = softmax(np.array([[[2.0, 0.0, 1.0]], [[0.0, 2.0, 1.0]]]))
    assert pairwise_disagreement(rows, 0, "l2")[0, 1] == pytest.approx(0.813, abs=5e-4)


# Both documented ranges ("normalised ... in [0, 1]", "tv ... in [0, 1]") were once broken by one ulp
# (rounding, unclipped). Deterministic reproducers of those cases.
def test_normalised_entropy_of_a_uniform_row_never_exceeds_one():
    assert normalised_entropy(np.full((1, 5), 0.2))[0] <= 1.0


def test_tv_distance_never_exceeds_one():
    w = np.array([[[8.053435289857314e-05, 0.0, 0.9999194656470956, 6.098581254690566e-15]],
                  [[0.0, 1.0, 0.0, 0.0]]])
    assert pairwise_disagreement(w, 0, "tv").max() <= 1.0
