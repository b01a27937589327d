"""What a course step shows, computed once from a Setup and its MHAResult.

Each function returns a frozen dataclass that every view of the step reads (the workbench, the
presenter, the Real model page, the downloadable page): a view draws these numbers and never
recomputes them. The course's registry (course/steps.py) names which step shows which.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha_core.analysis import (
    FLAT_AT,
    attention_flops,
    contribution_gap,
    count_parameters,
    head_contributions,
    most_disagreeing_pair,
    normalised_entropy,
    pairwise_disagreement,
)
from mha_core.attention import MHAResult
from mha_core.setup import Setup, Sizes


@dataclass(frozen=True)
class HeadComparison:
    """heads_compared, for one query: how far apart the heads' rows are, and which heads have an opinion."""

    query: int
    metric: str
    distances: np.ndarray | None  # [h, h]; None when there is nothing to compare (one head or one key)
    pair: tuple[int, int, float] | None  # the two heads most apart (a < b) and their distance
    entropy: np.ndarray  # [h] normalised entropy of each head's row, in [0, 1]
    flat: tuple[int, ...]  # heads whose row is nearly uniform (entropy >= FLAT_AT)

    @property
    def comparable(self) -> bool:
        return self.distances is not None


def compare_heads(weights: np.ndarray, query: int, metric: str = "l2") -> HeadComparison:
    """weights [h, n_q, n_k] -> the heads' rows for ``query`` compared pairwise under ``metric``."""
    h, _, n_k = weights.shape
    entropy = normalised_entropy(weights[:, query, :])  # [h]
    flat = tuple(int(i) for i in np.flatnonzero(entropy >= FLAT_AT))
    if h == 1 or n_k == 1:
        return HeadComparison(query, metric, None, None, entropy, flat)
    distances = pairwise_disagreement(weights, query, metric)  # [h, h]
    return HeadComparison(query, metric, distances, most_disagreeing_pair(distances), entropy, flat)


@dataclass(frozen=True)
class Contributions:
    """concatenation: each head's share of the output, head_i · W_O[rows of head i], and the check that they
    add up to it."""

    per_head: np.ndarray  # [h, n_q, d_model]
    gap: float  # largest |sum of the contributions + b_O - output|: 0 up to rounding


def contributions_of(setup: Setup, result: MHAResult) -> Contributions:
    w_o = setup.w_o.astype(result.head_outputs.dtype, copy=False)  # float32 for a long sequence
    per_head = head_contributions(result.head_outputs, w_o)  # [h, n_q, d_model]
    return Contributions(per_head, contribution_gap(per_head, result.output, setup.b_o))


@dataclass(frozen=True)
class Cost:
    """What the block costs: parameters per projection and in all, and the work of attention."""

    per_query_key: int  # W_Q's parameters, h · d_model · d_k (W_K's too unless key/value heads are grouped)
    per_key: int  # W_K's, g · d_model · d_k with g key/value heads (g = h: per_query_key)
    per_value: int  # W_V's, g · d_model · d_v
    per_output: int  # W_O's, h · d_v · d_model
    total: int
    with_bias: int
    flops: int  # scores and blends of all heads
    one_wide_head_flops: int  # the same work as one head of width h · d_k
    four_d_squared: bool  # h · d_k = h · d_v = d_model, g = h: the total is 4 · d_model², whatever h is


def cost_of(sizes: Sizes) -> Cost:
    h, g, d_model, d_k, d_v = sizes.n_heads, sizes.groups, sizes.d_model, sizes.d_k, sizes.d_v
    return Cost(per_query_key=h * d_model * d_k, per_key=g * d_model * d_k, per_value=g * d_model * d_v,
                per_output=h * d_v * d_model, total=count_parameters(d_model, h, d_k, d_v, kv_heads=g),
                with_bias=count_parameters(d_model, h, d_k, d_v, bias=True, kv_heads=g),
                flops=attention_flops(sizes.n_q, sizes.n_k, h, d_k, d_v),
                one_wide_head_flops=attention_flops(sizes.n_q, sizes.n_k, 1, h * d_k, h * d_v),
                four_d_squared=h * d_k == d_model == h * d_v and g == h)
