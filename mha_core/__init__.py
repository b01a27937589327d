"""mha_core: multi-head attention in pure NumPy, every intermediate exposed."""

from mha_core.analysis import (
    attention_flops,
    count_parameters,
    head_contributions,
    head_width,
    mha_flops,
    normalised_entropy,
    pairwise_disagreement,
    row_entropy,
)
from mha_core.attention import MHAResult, multi_head_attention, project, softmax
from mha_core.init import fill, random_matrix, random_weights, select_matrix
from mha_core.scenarios import DEFAULT_SCENARIO, Scenario, all_scenarios

__all__ = [
    "DEFAULT_SCENARIO", "MHAResult", "Scenario", "all_scenarios", "attention_flops",
    "count_parameters", "fill", "head_contributions", "head_width", "mha_flops", "multi_head_attention",
    "normalised_entropy", "pairwise_disagreement", "project", "random_matrix", "random_weights",
    "row_entropy", "select_matrix", "softmax",
]
