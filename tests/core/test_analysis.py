"""Parameter counts, FLOP counts and the seeded initialisers."""

import numpy as np
import pytest

from mha_core import (
    attention_flops,
    count_parameters,
    fill,
    mha_flops,
    multi_head_attention,
    random_matrix,
    random_weights,
    select_matrix,
)

# --- count_parameters ------------------------------------------------------------------------------------


def hand_count(d_model, h, d_k, d_v, bias=False):
    """W_Q, W_K [h, d_model, d_k], W_V [h, d_model, d_v], W_O [h*d_v, d_model] (+ b_q, b_k, b_v, b_o)."""
    weights = h * d_model * d_k * 2 + h * d_model * d_v + h * d_v * d_model
    biases = h * d_k * 2 + h * d_v + d_model
    return weights + (biases if bias else 0)


def test_seed_example_i_d_model_512_with_8_heads():
    d_model, h = 512, 8
    d_k = d_model // h
    per_head_projection = d_model * d_k  # one W_i^Q, W_i^K or W_i^V
    assert per_head_projection == 32768
    projections = 3 * h * per_head_projection
    assert projections == 786432
    total = count_parameters(d_model, h)
    assert total == 1048576 == 4 * 512**2 == 2**20
    assert total - projections == 262144 == d_model * d_model  # what is left is W_O
    # One head on its own: its W_Q, W_K, W_V and its [d_v, d_model] slice of W_O, 32768 each.
    assert count_parameters(d_model, 1, d_k=d_k, d_v=d_k) == 4 * per_head_projection


@pytest.mark.parametrize("d_model, h", [(512, 1), (512, 2), (512, 64), (12, 3), (12, 4), (1, 1), (64, 64)])
def test_dividing_heads_always_cost_four_d_model_squared(d_model, h):
    """The stacked-projection trick: h heads of width d_model/h hold what one big head holds."""
    assert count_parameters(d_model, h) == 4 * d_model**2
    assert count_parameters(d_model, h, bias=True) == 4 * d_model**2 + 4 * d_model


@pytest.mark.parametrize("h, g", [(8, 8), (8, 2), (8, 1), (6, 3)])
@pytest.mark.parametrize("bias", [False, True])
def test_grouped_key_value_heads_count_the_arrays_a_setup_holds(h, g, bias):
    """W_K, W_V (and b_K, b_V) of g key/value heads: the sizes of the arrays a grouped Setup is built from."""
    rng = np.random.default_rng(0)
    d_model, d_k, d_v = 12, 3, 2
    arrays = [rng.normal(size=(h, d_model, d_k)), rng.normal(size=(g, d_model, d_k)),
              rng.normal(size=(g, d_model, d_v)), rng.normal(size=(h * d_v, d_model))]
    if bias:
        arrays += [np.zeros((h, d_k)), np.zeros((g, d_k)), np.zeros((g, d_v)), np.zeros(d_model)]
    assert count_parameters(d_model, h, d_k, d_v, bias=bias, kv_heads=g) == sum(a.size for a in arrays)
    assert (count_parameters(d_model, h, d_k, d_v, bias=bias, kv_heads=h)
            == count_parameters(d_model, h, d_k, d_v, bias=bias) == hand_count(d_model, h, d_k, d_v, bias))


def test_key_value_heads_must_divide_the_heads():
    with pytest.raises(ValueError, match="kv_heads=3 must divide n_heads=8"):
        count_parameters(16, 8, kv_heads=3)


def test_bias_adds_b_q_b_k_b_v_and_b_o():
    assert count_parameters(512, 8, bias=True) == 1048576 + 3 * 512 + 512 == 1050624
    assert count_parameters(512, 8, bias=True) - count_parameters(512, 8) == 2048


@pytest.mark.parametrize("d_model, h, d_k, d_v", [
    (10, 3, 4, 7), (4, 2, 2, 3), (512, 8, 64, 32), (6, 1, 1, 5), (3, 5, 2, 2), (8, 4, 5, 1),
])
@pytest.mark.parametrize("bias", [False, True])
def test_d_k_different_from_d_v_matches_the_hand_formula(d_model, h, d_k, d_v, bias):
    assert count_parameters(d_model, h, d_k=d_k, d_v=d_v, bias=bias) == hand_count(d_model, h, d_k, d_v, bias)


def test_hand_formula_example_d_k_4_d_v_7():
    # h=3, d_model=10: W_Q, W_K 3*10*4 each, W_V 3*10*7, W_O 21*10; biases 3*4 + 3*4 + 3*7 + 10.
    assert count_parameters(10, 3, d_k=4, d_v=7) == 120 + 120 + 210 + 210 == 660
    assert count_parameters(10, 3, d_k=4, d_v=7, bias=True) == 660 + 12 + 12 + 21 + 10 == 715


@pytest.mark.parametrize("d_model, h, d_k, d_v", [(10, 3, 4, 7), (8, 2, 4, 4), (5, 4, 1, 3)])
def test_count_matches_the_sizes_of_the_arrays_multi_head_attention_takes(d_model, h, d_k, d_v):
    weights = random_weights(np.random.default_rng(1), d_model, h, d_k, d_v)
    assert sum(w.size for w in weights.values()) == count_parameters(d_model, h, d_k=d_k, d_v=d_v)
    biases = dict(b_q=np.zeros((h, d_k)), b_k=np.zeros((h, d_k)), b_v=np.zeros((h, d_v)),
                  b_o=np.zeros(d_model))
    r = multi_head_attention(np.ones((2, d_model)), **weights, **biases)  # the shapes really are accepted
    assert r.output.shape == (2, d_model)
    total = sum(a.size for a in (*weights.values(), *biases.values()))
    assert total == count_parameters(d_model, h, d_k=d_k, d_v=d_v, bias=True)


def test_count_accepts_numpy_integers():
    assert count_parameters(np.int64(512), np.int32(8)) == 1048576


# --- FLOPs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model, h, n_q, n_k", [
    (512, 8, 10, 10), (64, 4, 3, 5), (12, 3, 7, 1), (6, 6, 2, 9), (1, 1, 1, 1), (1024, 16, 128, 64),
])
def test_thin_heads_cost_the_same_as_one_wide_head(d_model, h, n_q, n_k):
    """Chapter 004 step 6: h heads of width d_model/h do the work of one head of width d_model."""
    thin = attention_flops(n_q, n_k, h, d_model // h)
    wide = attention_flops(n_q, n_k, 1, d_model)
    assert thin == wide == 4 * n_q * n_k * d_model
    assert mha_flops(n_q, n_k, d_model, h, d_model // h, d_model // h) == mha_flops(n_q, n_k, d_model, 1,
                                                                                    d_model, d_model)


def test_attention_flops_formula():
    # 2 * h * n_q * n_k * (d_k + d_v): QK^T then AV, two FLOPs per multiply-add.
    assert attention_flops(3, 5, 2, 4, 6) == 2 * 2 * 3 * 5 * (4 + 6) == 600
    assert attention_flops(3, 5, 2, 4) == attention_flops(3, 5, 2, 4, 4) == 480  # d_v defaults to d_k
    assert attention_flops(3, 5, 2, 4) != attention_flops(5, 3, 2, 4, 1)


def test_mha_flops_adds_projections_core_and_mix():
    n_q, n_k, d_model, h, d_k, d_v = 3, 5, 8, 2, 4, 6
    projections = 2 * (n_q * d_model * h * d_k + n_k * d_model * h * d_k + n_k * d_model * h * d_v)
    mix = 2 * n_q * (h * d_v) * d_model
    expected = projections + attention_flops(n_q, n_k, h, d_k, d_v) + mix
    assert mha_flops(n_q, n_k, d_model, h, d_k, d_v) == expected == 1984 + 600 + 576


# --- init ------------------------------------------------------------------------------------------------


def test_select_of_2_4_2_gives_each_head_its_own_two_dims():
    s = select_matrix((2, 4, 2))
    assert s.shape == (2, 4, 2)
    np.testing.assert_array_equal(s[0], [[1, 0], [0, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(s[1], [[0, 0], [0, 0], [1, 0], [0, 1]])
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(x @ s[0], x[:, 0:2])  # head 0 keeps dims 0 and 1
    np.testing.assert_array_equal(x @ s[1], x[:, 2:4])  # head 1 keeps dims 2 and 3
    np.testing.assert_array_equal(fill("identity", (2, 4, 2)), s)


def test_select_heads_tile_the_input_and_wrap():
    s = select_matrix((4, 6, 3))  # 4 heads of 3 dims over 6 inputs: heads 2 and 3 wrap onto 0 and 1
    for head in range(4):
        rows = [(head * 3 + j) % 6 for j in range(3)]
        np.testing.assert_array_equal(s[head][rows, range(3)], 1.0)
        assert s[head].sum() == 3
    np.testing.assert_array_equal(s[2], s[0])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_square_two_d_select_is_the_identity(n):
    np.testing.assert_array_equal(select_matrix((n, n)), np.eye(n))
    np.testing.assert_array_equal(fill("identity", (n, n)), np.eye(n))


def test_non_square_select_keeps_the_first_dims_or_wraps():
    np.testing.assert_array_equal(select_matrix((4, 2)), [[1, 0], [0, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(select_matrix((2, 4)), [[1, 0, 1, 0], [0, 1, 0, 1]])
    np.testing.assert_array_equal(select_matrix((3,)), np.zeros(3))  # a bias: nothing to select


def test_select_rejects_four_dimensional_shapes():
    with pytest.raises(ValueError, match=r"select_matrix.*\(1, 2, 2, 2\)"):
        select_matrix((1, 2, 2, 2))


@pytest.mark.parametrize("shape", [(3,), (4, 4), (2, 4, 2), (3, 5, 2)])
def test_random_fill_is_reproducible_with_the_same_seed_and_not_with_another(shape):
    a = fill("random", shape, np.random.default_rng(7))
    b = fill("random", shape, np.random.default_rng(7))
    c = fill("random", shape, np.random.default_rng(8))
    assert a.shape == shape and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.isfinite(a).all() and np.unique(a).size == a.size
    np.testing.assert_array_equal(fill("random", shape), fill("random", shape))  # no rng: seed 0


def test_random_matrix_std_is_one_over_sqrt_fan_in():
    m = random_matrix(np.random.default_rng(0), (400, 300))  # fan_in = 400: std 0.05
    assert m.std() == pytest.approx(0.05, rel=0.03)
    assert abs(m.mean()) < 0.005
    assert random_matrix(np.random.default_rng(0), (20_000,)).std() == pytest.approx(1.0, rel=0.03)


def test_random_weights_have_the_shapes_multi_head_attention_takes():
    w = random_weights(np.random.default_rng(3), d_model=6, n_heads=3, d_k=2, d_v=4)
    assert {k: v.shape for k, v in w.items()} == {
        "w_q": (3, 6, 2), "w_k": (3, 6, 2), "w_v": (3, 6, 4), "w_o": (12, 6),
    }
    assert not np.array_equal(w["w_q"], w["w_k"])  # drawn independently


@pytest.mark.parametrize("shape", [(3,), (2, 5), (2, 4, 3)])
def test_zeros_fill(shape):
    z = fill("zeros", shape)
    assert z.shape == shape and z.dtype == np.float64
    np.testing.assert_array_equal(z, 0.0)


def test_fill_returns_a_new_array_each_time():
    a = fill("identity", (2, 2))
    a[0, 0] = 5.0
    np.testing.assert_array_equal(fill("identity", (2, 2)), np.eye(2))
    b = fill("zeros", (2,))
    b[0] = 1.0
    np.testing.assert_array_equal(fill("zeros", (2,)), 0.0)


@pytest.mark.parametrize("kind", ["ones", "Random", "identity_", "", "eye"])
def test_unknown_fill_kind_raises(kind):
    with pytest.raises(ValueError, match=r"fill kind.*random.*identity.*zeros.*" + repr(kind)):
        fill(kind, (2, 2))
