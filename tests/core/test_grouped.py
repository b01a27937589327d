"""Grouped-query and multi-query attention, and the sliding window, against the naive loops of
tests/reference.py (which index each query head's key/value group one number at a time)."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core import Window, multi_head_attention
from tests.reference import naive_mha

FIELDS = ("q", "k", "v", "scores", "weights", "head_outputs", "concat", "output")


def _case(rng, n_q, n_k, d_model, h, g, d_k, d_v, bias=False, cross=False):
    case = dict(
        x=rng.standard_normal((n_q, d_model)),
        w_q=rng.standard_normal((h, d_model, d_k)), w_k=rng.standard_normal((g, d_model, d_k)),
        w_v=rng.standard_normal((g, d_model, d_v)), w_o=rng.standard_normal((h * d_v, d_model)),
    )
    if cross:
        case["x_kv"] = rng.standard_normal((n_k, d_model))
    biases = dict(b_q=rng.standard_normal((h, d_k)), b_k=rng.standard_normal((g, d_k)),
                  b_v=rng.standard_normal((g, d_v)), b_o=rng.standard_normal(d_model)) if bias else {}
    return case, biases


def _window_by_loops(n_q: int, n_k: int, size: int) -> list[list[bool]]:
    return [[0 <= i - j < size for j in range(n_k)] for i in range(n_q)]


@pytest.mark.parametrize("h, g", [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2), (8, 1)])
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_grouped_query_attention_matches_the_naive_loops(h, g, bias, cross):
    rng = np.random.default_rng(h * 10 + g)
    n_q, n_k = 5, (7 if cross else 5)
    case, biases = _case(rng, n_q, n_k, 6, h, g, 3, 2, bias, cross)
    result = multi_head_attention(**case, **biases)
    expected = naive_mha(**case, biases=biases)
    for name in FIELDS:
        np.testing.assert_allclose(getattr(result, name), expected[name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
    assert result.groups == g and result.n_heads == h
    assert [result.group_of(i) for i in range(h)] == [i // (h // g) for i in range(h)]


def test_heads_of_one_group_share_their_keys_and_values_and_other_groups_do_not():
    rng = np.random.default_rng(3)
    case, _ = _case(rng, 4, 4, 6, 6, 2, 3, 3)
    result = multi_head_attention(**case)
    for head in range(6):
        same = result.group_of(head) == result.group_of(0)
        assert np.array_equal(result.k[head], result.k[0]) == same
        assert np.array_equal(result.v[head], result.v[0]) == same


def test_one_group_per_head_is_standard_multi_head_attention():
    rng = np.random.default_rng(4)
    case, _ = _case(rng, 4, 4, 6, 3, 3, 2, 2)
    result = multi_head_attention(**case)
    assert result.kv_heads == 0 and result.groups == 3


@pytest.mark.parametrize("h, g", [(4, 3), (6, 4), (2, 3)])
def test_key_value_heads_that_do_not_divide_the_query_heads_are_refused(h, g):
    rng = np.random.default_rng(5)
    case, _ = _case(rng, 3, 3, 4, h, g, 2, 2)
    with pytest.raises(ValueError, match=rf"w_k has {g} key/value heads, which must divide the h={h}"):
        multi_head_attention(**case)


def test_w_v_must_have_the_key_heads_of_w_k():
    rng = np.random.default_rng(6)
    case, _ = _case(rng, 3, 3, 4, 4, 2, 2, 2)
    case["w_v"] = rng.standard_normal((4, 4, 2))
    with pytest.raises(ValueError, match=r"w_v must have g=2 key/value heads like w_k"):
        multi_head_attention(**case)


@pytest.mark.parametrize("size", [1, 2, 3, 10])
@pytest.mark.parametrize("n_q, n_k", [(6, 6), (4, 7)])
def test_a_sliding_window_matches_a_mask_built_by_loops(size, n_q, n_k):
    rng = np.random.default_rng(size)
    case, _ = _case(rng, n_q, n_k, 4, 2, 1, 2, 2, cross=n_q != n_k)
    allowed = _window_by_loops(n_q, n_k, size)
    result = multi_head_attention(**case, mask=Window(size))
    expected = naive_mha(**case, allowed=allowed)
    np.testing.assert_array_equal(result.mask, np.array(allowed))
    for name in ("weights", "output"):
        np.testing.assert_allclose(getattr(result, name), expected[name], rtol=1e-12, atol=1e-12)


def test_a_window_as_long_as_the_sequence_is_causal():
    rng = np.random.default_rng(8)
    case, _ = _case(rng, 5, 5, 4, 2, 2, 2, 2)
    windowed = multi_head_attention(**case, mask=Window(5))
    causal = multi_head_attention(**case, mask="causal")
    np.testing.assert_array_equal(windowed.weights, causal.weights)


@pytest.mark.parametrize("size", [0, -1, 2.5, True, "3"])
def test_a_window_needs_a_whole_positive_size(size):
    with pytest.raises(ValueError, match="sliding window needs a whole number"):
        Window(size)
