"""mha_core: multi-head attention in pure NumPy, every intermediate exposed."""

from mha_core.analysis import (
    attention_flops,
    contribution_gap,
    count_parameters,
    head_contributions,
    head_width,
    largest_change,
    mha_flops,
    most_disagreeing_pair,
    normalised_entropy,
    pairwise_disagreement,
    row_entropy,
    row_sum_deviation,
)
from mha_core.attention import MHAResult, attention_bytes, multi_head_attention, project, softmax
from mha_core.init import fill, random_matrix, random_weights, select_matrix
from mha_core.setup import ARRAYS, LIMITS, Limits, Scaling, Setup, Sizes
from mha_core.validation import Window

__all__ = [
    "ARRAYS", "LIMITS", "Limits", "MHAResult", "Scaling", "Setup", "Sizes", "Window",
    "attention_bytes", "attention_flops", "contribution_gap", "count_parameters", "fill",
    "head_contributions", "head_width", "largest_change", "mha_flops", "most_disagreeing_pair",
    "multi_head_attention",
    "normalised_entropy", "pairwise_disagreement", "project", "random_matrix", "random_weights",
    "row_entropy", "row_sum_deviation", "select_matrix", "softmax",
]
