"""torch.nn.MultiheadAttention holding our per-head weights, for the parity tests and bench/core.py.

Imports torch only when called, so that importing this module never needs torch.
"""

from __future__ import annotations

from mha_core.packing import to_packed

WEIGHTS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


def torch_mha(params: dict, d_model: int, h: int, dtype=None):
    """nn.MultiheadAttention(d_model, h) in eval mode with params' weights in its packed layout
    (mha_core.packing.to_packed); params holds w_q ... b_o (other keys are ignored)."""
    import torch

    mha = torch.nn.MultiheadAttention(d_model, h, bias=True, batch_first=True, dtype=dtype)
    packed = to_packed(**{name: params[name] for name in WEIGHTS})
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(packed["in_proj_weight"]))
        mha.in_proj_bias.copy_(torch.from_numpy(packed["in_proj_bias"]))
        mha.out_proj.weight.copy_(torch.from_numpy(packed["out_proj_weight"]))
        mha.out_proj.bias.copy_(torch.from_numpy(packed["out_proj_bias"]))
    return mha.eval()
