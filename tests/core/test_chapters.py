"""Every number the course text (its four chapters) prints, checked to the precision it prints."""

import math

import numpy as np
import pytest

from course.examples import all_examples
from mha_core import count_parameters, multi_head_attention, pairwise_disagreement, softmax

EXAMPLES = all_examples()


def decimals(printed: float | str) -> float:
    """Half a unit in the last printed place: the tolerance a printed number allows."""
    text = str(printed)
    places = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0 ** -places


def assert_printed(actual, printed, carried=0.0):
    """actual rounds to the printed numbers (each checked to its own printed precision).

    carried: extra slack where the seed computed from its own rounded intermediates.
    """
    for a, p in zip(np.ravel(actual), np.ravel(np.asarray(printed, dtype=object)), strict=True):
        limit = decimals(p) + carried + 1e-12
        assert abs(a - float(p)) <= limit, f"{a} is not {p} to its printed precision"


def run(key):
    return EXAMPLES[key].run()


def test_every_example_runs_and_reproduces_nothing_nan():
    for key, example in EXAMPLES.items():
        result = example.run()
        assert np.isfinite(result.output).all(), key
        np.testing.assert_allclose(result.weights.sum(-1), 1.0, err_msg=key)


# Chapter 000: cat chases mouse, head 1.
def test_seed000_head1_scores_and_scaled_scores():
    result = run("cat_chases_mouse")
    np.testing.assert_array_equal(result.q[0], [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(result.k[0], [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(result.v[0], [[1, 0], [0, 1], [0, 0]])
    np.testing.assert_array_equal(result.scores[0], [[1, 0, 1], [0, 1, 1], [1, 1, 2]])
    assert_printed(result.scaled[0], [["0.71", "0", "0.71"], ["0", "0.71", "0.71"], ["0.71", "0.71", "1.41"]])


def test_seed000_head1_softmax_story():
    w = run("cat_chases_mouse").weights[0]  # [n_q, n_k]
    assert np.argmax(w[2]) == 2  # mouse attends most strongly to itself
    assert w[0, 0] == pytest.approx(w[0, 2]) and w[0, 1] < w[0, 0]  # cat: itself and mouse
    assert w[1, 1] == pytest.approx(w[1, 2]) and w[1, 0] < w[1, 1]  # chases: itself and mouse


def test_seed000_head2_sees_differently():
    result = run("cat_chases_mouse")
    assert not np.allclose(result.weights[0], result.weights[1])
    np.testing.assert_allclose(result.weights[1, 2], 1 / 3)  # our head 2: 'mouse' has nothing to say


# Chapter 002: the cat sat.
def test_seed002_single_head_sat_is_uniform_and_the_attends_to_itself():
    w = run("the_cat_sat_one_head").weights[0]
    np.testing.assert_allclose(w[2], [1 / 3, 1 / 3, 1 / 3], rtol=1e-12)
    assert np.argmax(w[0]) == 0


def test_seed002_two_heads_rows_and_disagreement():
    result = run("the_cat_sat_two_heads")
    assert_printed(result.weights[0, 2], ["0.665", "0.090", "0.245"])
    assert_printed(result.weights[1, 2], ["0.090", "0.665", "0.245"])
    np.testing.assert_array_equal(result.scores[0, 2], [2, 0, 1])
    np.testing.assert_array_equal(result.scores[1, 2], [0, 2, 1])
    assert_printed(pairwise_disagreement(result.weights, 2)[0, 1], "0.813")


def test_seed002_printed_two_place_rows():
    """The caption prints [0.67, 0.09, 0.24]: 0.2447 truncated, so allow the seed's rounding."""
    w = run("the_cat_sat_two_heads").weights
    np.testing.assert_allclose(w[0, 2], [0.67, 0.09, 0.24], atol=0.006)
    np.testing.assert_allclose(w[1, 2], [0.09, 0.67, 0.24], atol=0.006)


def test_seed002_flat_head_for_the_and_cat():
    w = run("the_cat_sat_two_heads").weights
    np.testing.assert_allclose(w[1, 0], 1 / 3)  # 'the' = (2, 0): head B (vertical) sees nothing
    np.testing.assert_allclose(w[0, 1], 1 / 3)  # 'cat' = (0, 2): head A (horizontal) sees nothing


# Chapter 001: examples A to I.
def test_example_a():
    result = run("ex_a_single_head")
    np.testing.assert_array_equal(result.scores[0], np.eye(2))
    assert_printed(result.scaled[0, 0, 0], "0.707")
    assert_printed(result.weights[0, 0], ["0.6698", "0.3302"])
    assert_printed(result.weights[0, 1], ["0.3302", "0.6698"])
    # The seed blends the values with its 4-place weights (0.6698 * 2 = 1.3396): the weights'
    # rounding (5e-5) times the largest value (4) is carried into its outputs.
    assert_printed(result.head_outputs[0], [["1.3396", "1.3208"], ["0.6604", "2.6792"]], carried=4 * 5e-5)


def test_example_b():
    result = run("ex_b_two_heads_one_token")
    np.testing.assert_array_equal(result.weights, np.ones((2, 1, 1)))
    np.testing.assert_array_equal(result.head_outputs[:, 0], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(result.output, [[1, 2, 3, 4]])


def test_example_c():
    result = run("ex_c_equal_scores")
    np.testing.assert_allclose(result.weights[0, 0], [1 / 3] * 3, rtol=1e-12)
    np.testing.assert_allclose(result.output[0, 1], 20.0, rtol=1e-12)


def test_example_d():
    result = run("ex_d_one_huge_score")
    assert_printed(result.weights[0, 0, 2], "0.99999999588")
    assert_printed(result.weights[0, 0, 0], "0.0000000021")
    assert_printed(result.output[0, 1], "29.99999994")
    assert math.isclose(math.exp(20), 4.85e8, rel_tol=0.001)


def test_example_e():
    result = run("ex_e_negative_score")
    assert_printed(result.weights[0, 0], ["0.01799", "0.98201"])
    assert_printed(result.output[0, 1], "198.20")
    assert (result.weights > 0).all()


def test_example_f_unscaled_vs_scaled():
    unscaled, scaled = run("ex_f_unscaled"), run("ex_f_scaled")
    assert_printed(unscaled.weights[0, 0, 0], "0.99999999999999")
    np.testing.assert_allclose(scaled.scaled[0, 0], [5, 1])
    assert_printed(scaled.weights[0, 0, 0], "0.9820")
    assert_printed(scaled.weights[0, 0, 1], "0.018")


def test_example_f_scale_is_one_over_sqrt_d_k():
    """The seed's 'divide by 8' is 1/sqrt(64): 'sqrt' scaling with a real d_k = 64 head agrees."""
    d_k = 64
    w = np.zeros((1, 2, d_k))
    w[0, 0, 0] = 1.0
    x_kv = np.array([[40.0, 0], [8.0, 0]])
    result = multi_head_attention(np.array([[1.0, 0]]), w, w, w, np.zeros((d_k, 2)), x_kv=x_kv)
    np.testing.assert_allclose(result.scaled[0, 0], [5, 1])


def test_example_g():
    assert_printed(run("ex_g_coreference").weights[0, 0, 0], "0.6963")
    np.testing.assert_allclose(softmax(np.array([3.0, 0.5, 0.2, 1.0, 0.3, 0.6]))[0], 0.6963, atol=5e-5)


def test_example_h_shapes():
    example = EXAMPLES["ex_h_cross_attention"]
    result = example.run()
    assert result.scores.shape == (8, 3, 5)
    assert result.head_outputs.shape == (8, 3, 64)
    assert result.concat.shape == (3, 512) and result.output.shape == (3, 512)
    np.testing.assert_allclose(result.weights.sum(-1), 1.0)


def test_example_i_parameter_count():
    example = EXAMPLES["ex_i_parameter_count"]
    assert count_parameters(512, 8) == 1048576 == 4 * 512**2
    per_head = example.w_q[0].size
    assert per_head == 32768
    assert example.w_q.size + example.w_k.size + example.w_v.size == 786432
    assert example.w_o.size == 262144
    total = sum(getattr(example, name).size for name in ("w_q", "w_k", "w_v", "w_o"))
    assert total == count_parameters(example.d_model, example.n_heads) == 1048576


def test_examples_record_expected_numbers_consistent_with_their_runs():
    """The `expected` dicts shown in the app's captions are the chapters' numbers, and they hold."""
    two = EXAMPLES["the_cat_sat_two_heads"]
    assert_printed(pairwise_disagreement(two.run().weights, two.focus_query)[0, 1],
                   str(two.expected["disagreement"]))
    assert EXAMPLES["ex_g_coreference"].expected["w_cat"] == 0.6963
