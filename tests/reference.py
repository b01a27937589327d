"""A deliberately naive reference: plain Python loops over heads, queries, keys and dimensions."""

import math

import numpy as np


def naive_mha(x, w_q, w_k, w_v, w_o, x_kv=None, allowed=None, scale=None, biases=None):
    """Returns a dict with the same fields as MHAResult, computed one number at a time.

    w_k, w_v (and b_k, b_v) may hold g key/value heads, g dividing h: query head i reads group
    i // (h / g), and k, v are returned per query head."""
    x_kv = x if x_kv is None else x_kv
    biases = biases or {}
    h, d_model, d_k = w_q.shape
    d_v = w_v.shape[2]
    n_q, n_k = len(x), len(x_kv)
    scale = 1 / math.sqrt(d_k) if scale is None else scale

    def proj(rows, w, bias, head, width):
        return [[sum(row[c] * w[head][c][j] for c in range(d_model))
                 + (bias[head][j] if bias is not None else 0.0) for j in range(width)] for row in rows]

    out = {name: [] for name in ("q", "k", "v", "scores", "scaled", "weights", "head_outputs")}
    heads_per_group = h // len(w_k)
    for head in range(h):
        group = head // heads_per_group
        q = proj(x, w_q, biases.get("b_q"), head, d_k)
        k = proj(x_kv, w_k, biases.get("b_k"), group, d_k)
        v = proj(x_kv, w_v, biases.get("b_v"), group, d_v)
        scores = [[sum(q[i][c] * k[j][c] for c in range(d_k)) for j in range(n_k)] for i in range(n_q)]
        scaled, weights = [], []
        for i in range(n_q):
            row = [scores[i][j] * scale if allowed is None or allowed[i][j] else -math.inf
                   for j in range(n_k)]
            top = max(row)
            exps = [0.0 if s == -math.inf else math.exp(s - top) for s in row]
            total = sum(exps)
            scaled.append(row)
            weights.append([e / total if total > 0 else 0.0 for e in exps])
        head_out = [[sum(weights[i][j] * v[j][c] for j in range(n_k)) for c in range(d_v)]
                    for i in range(n_q)]
        for name, value in zip(out, (q, k, v, scores, scaled, weights, head_out), strict=True):
            out[name].append(value)
    concat = [[out["head_outputs"][head][i][c] for head in range(h) for c in range(d_v)]
              for i in range(n_q)]
    b_o = biases.get("b_o")
    output = [[sum(concat[i][r] * w_o[r][c] for r in range(h * d_v)) + (b_o[c] if b_o is not None else 0)
               for c in range(d_model)] for i in range(n_q)]
    out = {name: np.array(value) for name, value in out.items()}
    out["concat"], out["output"] = np.array(concat), np.array(output)
    return out
