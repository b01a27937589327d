"""Per-head weights <-> the packed layout of torch.nn.MultiheadAttention (and most checkpoints).

Ours: w_q, w_k [h, d_model, d_k], w_v [h, d_model, d_v], applied as x @ w[i]; w_o [h*d_v, d_model].
Packed: in_proj_weight [3*h*d, d_model] = [W_Q; W_K; W_V] in [out, in] form, head i in rows
i*d:(i+1)*d of each block; in_proj_bias [3*h*d]; out_proj.weight [d_model, h*d_v] = w_o.T.
"""

from __future__ import annotations

import numpy as np


def _out_in(w: np.ndarray) -> np.ndarray:  # [h, d_model, d] -> [h*d, d_model]
    return w.transpose(0, 2, 1).reshape(-1, w.shape[1])


def _per_head(block: np.ndarray, h: int) -> np.ndarray:  # [h*d, d_model] -> [h, d_model, d]
    return block.reshape(h, -1, block.shape[1]).transpose(0, 2, 1)


def to_packed(w_q, w_k, w_v, w_o, b_q=None, b_k=None, b_v=None, b_o=None) -> dict[str, np.ndarray]:
    """Our per-head arrays as in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias.

    Needs d_k == d_v (one packed in_proj); missing biases are zeros.
    """
    h, d_model, d_k = w_q.shape
    if w_v.shape[2] != d_k:
        raise ValueError(f"a packed in_proj needs d_k == d_v, got d_k={d_k}, d_v={w_v.shape[2]}")
    zeros = np.zeros((h, d_k), dtype=w_q.dtype)
    biases = [zeros if b is None else np.asarray(b) for b in (b_q, b_k, b_v)]
    return {
        "in_proj_weight": np.concatenate([_out_in(w_q), _out_in(w_k), _out_in(w_v)]),
        "in_proj_bias": np.concatenate([b.ravel() for b in biases]),
        "out_proj_weight": np.ascontiguousarray(np.asarray(w_o).T),
        "out_proj_bias": np.zeros(d_model, dtype=w_q.dtype) if b_o is None else np.asarray(b_o),
    }


def from_packed(in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, n_heads: int) -> dict:
    """The inverse of to_packed: per-head w_q, w_k, w_v, w_o and b_q, b_k, b_v, b_o."""
    in_proj_weight = np.asarray(in_proj_weight)
    three_hd, d_model = in_proj_weight.shape
    if three_hd % (3 * n_heads):
        raise ValueError(f"in_proj_weight has {three_hd} rows, not a multiple of 3*n_heads={3 * n_heads}")
    q, k, v = np.split(in_proj_weight, 3)
    b_q, b_k, b_v = (b.reshape(n_heads, -1) for b in np.split(np.asarray(in_proj_bias), 3))
    return {
        "w_q": _per_head(q, n_heads), "w_k": _per_head(k, n_heads), "w_v": _per_head(v, n_heads),
        "w_o": np.ascontiguousarray(np.asarray(out_proj_weight).T),
        "b_q": b_q, "b_k": b_k, "b_v": b_v, "b_o": np.asarray(out_proj_bias),
    }
