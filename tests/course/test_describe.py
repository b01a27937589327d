"""course.describe against naive loops: a matrix's extremes, each attention row's top key and
spread, which rows are flat, whether values are weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from course import describe
from mha_core.analysis import FLAT_AT


def naive_extremes(values):  # [r, c] -> ((row, col, value) of the first max, of the first min) or None
    best = worst = None
    for i, row in enumerate(values.tolist()):
        for j, v in enumerate(row):
            if not math.isfinite(v):
                continue
            if best is None or v > best[2]:
                best = (i, j, v)
            if worst is None or v < worst[2]:
                worst = (i, j, v)
    return best, worst


def naive_focus(row):  # [n_k] with NaN for masked -> (col, value, spread, flat) or None
    seen = [(j, v) for j, v in enumerate(row) if math.isfinite(v)]
    if not seen:
        return None
    col, value = seen[0]
    for j, v in seen:
        if v > value:
            col, value = j, v
    n = len(seen)
    entropy = -sum(v * math.log(v) for _, v in seen if v > 0)
    spread = min(max(entropy / math.log(n), 0.0), 1.0) if n > 1 else 0.0
    return col, value, spread, n > 1 and spread >= FLAT_AT


finite_or_nan = st.floats(-1e6, 1e6, allow_nan=False) | st.just(float("nan"))


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 6)), elements=finite_or_nan))
def test_matrix_extremes_are_the_first_largest_and_smallest_finite_cells(values):
    facts = describe.matrix_facts(values)
    best, worst = naive_extremes(values)
    assert facts.shape == values.shape
    assert facts.masked == int(np.isnan(values).sum())
    if best is None:
        assert facts.largest is None and facts.smallest is None
        return
    assert (facts.largest.row, facts.largest.col, facts.largest.value) == best
    assert (facts.smallest.row, facts.smallest.col, facts.smallest.value) == worst


def softmax_rows(scores):  # [n_q, n_k] with NaN masked -> [n_q, n_k], masked stay NaN
    out = np.full(scores.shape, np.nan)
    for i, row in enumerate(scores):
        keep = np.isfinite(row)
        if keep.any():
            e = np.exp(row[keep] - row[keep].max())
            out[i, keep] = e / e.sum()
    return out


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 7)),
              elements=st.floats(-6, 6) | st.just(float("nan"))))
def test_each_rows_focus_and_flatness_match_a_loop(scores):
    weights = softmax_rows(scores)
    facts = describe.weights_facts(weights)
    expected = [(i, naive_focus(row)) for i, row in enumerate(weights.tolist())]
    expected = [(i, f) for i, f in expected if f is not None]
    assert [r.row for r in facts.rows] == [i for i, _ in expected]
    for got, (_, (col, value, spread, flat)) in zip(facts.rows, expected, strict=True):
        assert got.col == col and got.value == value
        assert got.spread == pytest.approx(spread, abs=1e-12)
        if abs(spread - FLAT_AT) > 1e-9:  # exactly at the line: either side is a rounding
            assert got.flat == flat


def test_the_sharpest_row_and_the_flat_rows_of_a_known_head():
    weights = np.array([[1 / 3, 1 / 3, 1 / 3],  # 'the': uniform, flat
                        [0.10, 0.20, 0.70],  # 'cat'
                        [0.02, 0.67, 0.31]])  # 'sat'
    facts = describe.weights_facts(weights)
    assert (facts.sharpest.row, facts.sharpest.col, facts.sharpest.value) == (1, 2, 0.70)
    assert [r.row for r in facts.flat] == [0]
    assert facts.rows[0].spread == pytest.approx(1.0)


def test_a_causal_row_with_one_key_is_sharp_and_one_split_between_two_is_flat():
    nan = float("nan")
    weights = np.array([[1.0, nan, nan], [0.5, 0.5, nan], [nan, nan, nan]])  # last row: fully masked
    facts = describe.weights_facts(weights)
    assert [r.row for r in facts.rows] == [0, 1]
    assert not facts.rows[0].flat and facts.rows[0].spread == 0.0
    assert facts.rows[1].flat and facts.rows[1].spread == pytest.approx(1.0)


def test_equal_weights_name_the_first_key():
    facts = describe.weights_facts(np.array([[0.4, 0.4, 0.2]]))
    assert facts.rows[0].col == 0


@pytest.mark.parametrize(("values", "weights"), [
    (np.array([[0.2, 0.8], [1.0, 0.0]]), True),
    (np.array([[0.5, 0.5, float("nan")]]), True),  # masked cells left out of the sum
    (np.array([[0.2, 0.7]]), False),  # sums to 0.9
    (np.array([[1.5, -0.5]]), False),  # sums to 1 but is not a distribution
    (np.array([[float("nan"), float("nan")]]), False),
    (np.array([0.5, 0.5]), False),  # one axis: a series, not rows
])
def test_looks_like_weights(values, weights):
    assert describe.looks_like_weights(values) is weights


def test_series_facts_are_the_first_highest_and_lowest():
    facts = describe.series_facts([0.3, 0.9, float("nan"), 0.9, -0.1])
    assert facts.size == 5
    assert (facts.highest.col, facts.highest.value) == (1, 0.9)
    assert (facts.lowest.col, facts.lowest.value) == (4, -0.1)
    assert describe.series_facts([float("nan")]).highest is None


def test_one_axis_is_refused_where_two_are_needed():
    with pytest.raises(ValueError, match="two axes"):
        describe.matrix_facts(np.zeros(3))
    with pytest.raises(ValueError, match="two axes"):
        describe.weights_facts(np.zeros((2, 2, 2)))


def naive_pairs(distances):  # [n, n] -> ((i, j, d) furthest, (i, j, d) closest), first of equals, i < j
    far = near = None
    n = len(distances)
    for i in range(n):
        for j in range(i + 1, n):
            d = distances[i][j]
            if far is None or d > far[2]:
                far = (i, j, d)
            if near is None or d < near[2]:
                near = (i, j, d)
    return far, near


@pytest.mark.parametrize("seed", range(5))
def test_the_furthest_and_closest_pair_match_a_loop(seed):
    points = np.random.default_rng(seed).normal(size=(int(np.random.default_rng(seed).integers(2, 8)), 3))
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)  # [n, n]
    assert describe.looks_like_distances(distances)
    far, near = describe.pair_facts(distances)
    want_far, want_near = naive_pairs(distances.tolist())
    assert (far.row, far.col, far.value) == want_far
    assert (near.row, near.col, near.value) == want_near


@pytest.mark.parametrize("values", [np.array([[0.0, 1.0], [2.0, 0.0]]), np.array([[1.0, 1.0], [1.0, 1.0]]),
                                    np.array([[0.0]]), np.array([[0.0, -1.0], [-1.0, 0.0]])])
def test_what_is_not_a_distance_matrix(values):
    assert not describe.looks_like_distances(values)
