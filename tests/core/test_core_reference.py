"""Every field of multi_head_attention against the naive loop reference."""

import numpy as np
import pytest

from mha_core import multi_head_attention, softmax
from tests.reference import naive_mha

FIELDS = ("q", "k", "v", "scores", "scaled", "weights", "head_outputs", "concat", "output")


def random_case(rng, h, n_q, n_k, d_model, d_k, d_v, cross):
    x = rng.standard_normal((n_q, d_model))
    return dict(
        x=x,
        x_kv=rng.standard_normal((n_k, d_model)) if cross else None,
        w_q=rng.standard_normal((h, d_model, d_k)),
        w_k=rng.standard_normal((h, d_model, d_k)),
        w_v=rng.standard_normal((h, d_model, d_v)),
        w_o=rng.standard_normal((h * d_v, d_model)),
    )


@pytest.mark.parametrize("h, n_q, n_k, d_model, d_k, d_v, cross", [
    (1, 3, 3, 4, 4, 4, False),
    (2, 4, 4, 6, 3, 3, False),
    (4, 5, 5, 8, 2, 3, False),
    (3, 2, 6, 5, 4, 2, True),
    (2, 7, 1, 3, 1, 5, True),
])
def test_every_field_matches_naive_loop(rng, h, n_q, n_k, d_model, d_k, d_v, cross):
    case = random_case(rng, h, n_q, n_k, d_model, d_k, d_v, cross)
    result = multi_head_attention(**case)
    expected = naive_mha(**case)
    for name in FIELDS:
        np.testing.assert_allclose(getattr(result, name), expected[name], rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("scale", ["none", 0.3, 2.5])
def test_scale_options_match_naive_loop(rng, scale):
    case = random_case(rng, 2, 4, 4, 4, 2, 2, cross=False)
    result = multi_head_attention(**case, scale=scale)
    expected = naive_mha(**case, scale=1.0 if scale == "none" else scale)
    np.testing.assert_allclose(result.weights, expected["weights"], rtol=1e-10)
    assert result.scale == (1.0 if scale == "none" else scale)


def test_biases_match_naive_loop(rng):
    h, d_model, d_k, d_v = 2, 5, 3, 2
    case = random_case(rng, h, 4, 6, d_model, d_k, d_v, cross=True)
    biases = dict(b_q=rng.standard_normal((h, d_k)), b_k=rng.standard_normal((h, d_k)),
                  b_v=rng.standard_normal((h, d_v)), b_o=rng.standard_normal(d_model))
    result = multi_head_attention(**case, **biases)
    expected = naive_mha(**case, biases=biases)
    for name in FIELDS:
        np.testing.assert_allclose(getattr(result, name), expected[name], rtol=1e-10, atol=1e-12,
                                   err_msg=name)


def test_masks_match_naive_loop_and_fully_masked_row_is_zero(rng):
    case = random_case(rng, 3, 4, 5, 6, 2, 2, cross=True)
    allowed = rng.random((4, 5)) > 0.4
    allowed[1] = False  # a fully masked row
    allowed[0, 0] = True
    result = multi_head_attention(**case, mask=allowed)
    expected = naive_mha(**case, allowed=allowed)
    np.testing.assert_allclose(result.weights, expected["weights"], rtol=1e-10, atol=1e-15)
    np.testing.assert_array_equal(result.weights[:, 1, :], 0.0)
    np.testing.assert_array_equal(result.head_outputs[:, 1, :], 0.0)
    assert np.isneginf(result.scaled[:, ~allowed]).all()
    assert not np.isnan(result.weights).any()


def test_causal_mask_blocks_the_future(rng):
    case = random_case(rng, 2, 5, 5, 4, 2, 2, cross=False)
    result = multi_head_attention(**case, mask="causal")
    expected = naive_mha(**case, allowed=np.tril(np.ones((5, 5), dtype=bool)))
    np.testing.assert_allclose(result.weights, expected["weights"], rtol=1e-10, atol=1e-15)
    assert np.all(np.triu(result.weights[0], k=1) == 0)
    np.testing.assert_allclose(result.weights[:, 0, 0], 1.0)  # the first token sees only itself


def test_extreme_scores_do_not_overflow():
    row = softmax(np.array([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4]]))
    np.testing.assert_allclose(row, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-15)


def test_result_arrays_are_read_only(rng):
    result = multi_head_attention(**random_case(rng, 2, 3, 3, 4, 2, 2, cross=False))
    with pytest.raises(ValueError):
        result.weights[0, 0, 0] = 1.0


def test_float32_stays_float32(rng):
    case = {k: (v.astype(np.float32) if v is not None else None)
            for k, v in random_case(rng, 2, 3, 3, 4, 2, 2, cross=False).items()}
    result = multi_head_attention(**case)
    assert result.weights.dtype == np.float32 and result.output.dtype == np.float32


@pytest.mark.parametrize("mask", [None, "causal", "blocked row"])
def test_the_course_s_formula_is_the_core_s_and_the_naive_loop_s(rng, mask):
    """Issue 40, 9: mha_core.attention.attention is the one written formula (the trainer computes with
    it, the exported script carries it); the lean core gives its numbers, and so does the naive loop."""
    from mha_core.attention import attention

    case = random_case(rng, 3, 4, 5, 6, 2, 3, True)
    allowed = None if mask is None else np.tril(np.ones((4, 5), bool)) if mask == "causal" else (
        np.ones((4, 5), bool) & (np.arange(4) != 2)[:, None])  # query 3 may attend to nothing
    result = multi_head_attention(**case, mask=allowed)
    head_outputs, weights = attention(result.q, result.k, result.v, result.scale,
                                      True if allowed is None else allowed)
    expected = naive_mha(**case, allowed=allowed)
    for name, value in (("weights", weights), ("head_outputs", head_outputs)):
        np.testing.assert_allclose(value, getattr(result, name), rtol=1e-12, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(value, expected[name], rtol=1e-10, atol=1e-12, err_msg=name)
    if mask == "blocked row":
        assert not weights[:, 2].any() and not head_outputs[:, 2].any()
