"""Multi-head attention in NumPy, returning every intermediate the page draws.

The steps follow the course text (its four chapters): project, score, scale, mask,
softmax, weight the values, concatenate the heads, mix with W_O.

Conventions (those of PyTorch's ``scaled_dot_product_attention``):
  * the scale is 1/sqrt(d_k) unless told otherwise;
  * a boolean mask means "may attend" (True takes part).  Note that
    ``torch.nn.MultiheadAttention``'s ``attn_mask`` uses the opposite
    convention (True = blocked).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from mha_core.validation import (
    as_float_array,
    check_bias,
    check_matrix,
    check_max_bytes,
    check_projection,
    resolve_mask,
    resolve_scale,
)

# The default memory budget of one call (max_bytes; see attention_bytes).  The largest size
# benchmarked (bench/core.py: n = 2048, d_model = 512, h = 8) needs 0.4 GiB in float32 and 0.8 GiB
# in float64, so 2 GiB leaves headroom above it, while n = 8192 with h = 8 (6 GiB in float32, seconds
# per call) or n = 20000 with h = 16 (149 GiB) is refused up front instead of swapping or failing
# with MemoryError halfway.  A server running many sessions in a small container should pass less.
DEFAULT_MAX_BYTES = 2 * 2**30


@dataclass(frozen=True)
class MHAResult:
    """Every intermediate of one multi-head attention call (arrays are read-only).

    scores, scaled and weights are views of one buffer, and head_outputs is a view of concat's.
    """

    q: np.ndarray  # [h, n_q, d_k]
    k: np.ndarray  # [h, n_k, d_k]  each query head's keys: heads of one group share theirs (kv_heads)
    v: np.ndarray  # [h, n_k, d_v]  likewise
    scores: np.ndarray  # [h, n_q, n_k]  raw q . k
    scaled: np.ndarray  # [h, n_q, n_k]  scores * scale, -inf where masked
    weights: np.ndarray  # [h, n_q, n_k]  softmax over keys
    head_outputs: np.ndarray  # [h, n_q, d_v]  weights @ v
    concat: np.ndarray  # [n_q, h * d_v]  heads side by side, in head order
    output: np.ndarray  # [n_q, d_model]  concat @ w_o (+ b_o)
    scale: float  # the multiplier applied to the scores
    mask: np.ndarray | None  # [n_q, n_k] bool, True = may attend; None = all allowed
    kv_heads: int = 0  # key/value heads g (grouped-query attention); 0 means one per query head

    @property
    def n_heads(self) -> int:
        return self.q.shape[0]

    @property
    def groups(self) -> int:
        """Key/value heads: h for standard multi-head attention, 1 for multi-query attention."""
        return self.kv_heads or self.n_heads

    def group_of(self, head: int) -> int:
        """The key/value head query head ``head`` reads (0-based), as PyTorch's enable_gqa repeats them."""
        return head // (self.n_heads // self.groups)


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max-shifted softmax. -inf gets weight 0; a row that is all -inf gives zeros, not NaN."""
    z = np.asarray(z)
    if not np.issubdtype(z.dtype, np.floating):
        z = z.astype(np.float64)
    if np.isnan(z).any() or np.isposinf(z).any():
        raise ValueError(f"z must not contain NaN or +inf (shape {list(z.shape)})")
    return _softmax(z, axis)


def _softmax(z: np.ndarray, axis: int, out: np.ndarray | None = None) -> np.ndarray:
    """softmax without the input check: z is known to hold no NaN or +inf. Writes to out if given."""
    row_max = np.max(z, axis=axis, keepdims=True)
    row_max[row_max == -np.inf] = 0.0  # an all -inf row: exp(-inf - 0) = 0 everywhere
    out = np.subtract(z, row_max, out=out)
    np.exp(out, out=out)
    total = np.sum(out, axis=axis, keepdims=True)
    total[total == 0] = 1.0  # all -inf row stays all zeros
    out /= total
    return out


# The formula, once, as the course writes it (picoGPT-style). The trainer (mha_core/train.py) computes
# with it, the exported script (course/export.py) carries its source, and multi_head_attention below is
# the same computation made lean and checked (tests/core/test_attention.py holds the three equal).


def softmax_rows(z):  # [..., n] -> [..., n]: each row adds up to 1 (a row of -inf only: all 0)
    """Softmax over the last axis, shifted by each row's largest entry (the same weights, and exp
    cannot overflow); a -inf entry gets weight 0."""
    row_max = z.max(axis=-1, keepdims=True)
    e = np.exp(z - np.where(np.isneginf(row_max), 0.0, row_max))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def attention(q, k, v, scale, allowed=True):  # [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v]
    """softmax(scale · Q Kᵀ, a blocked pair -inf) V: each query's blend of the values, [..., n_q, d_v],
    and the weights, [..., n_q, n_k]. allowed: bool [n_q, n_k], True = may attend (True: every pair)."""
    weights = softmax_rows(np.where(allowed, q @ k.swapaxes(-1, -2) * scale, -np.inf))  # [..., n_q, n_k]
    return weights @ v, weights


def project(x: np.ndarray, w: np.ndarray) -> np.ndarray:  # [n, d_model], [h, d_model, d] -> [h, n, d]
    """x @ w[i] for every head i (matmul broadcasts x over the heads)."""
    return x @ w


def multi_head_attention(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    *,
    x_kv=None,
    mask=None,
    scale="sqrt",
    b_q=None,
    b_k=None,
    b_v=None,
    b_o=None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> MHAResult:
    """Concat(head_1, ..., head_h) W_O with head_i = softmax(scale * Q_i K_i^T) V_i (``attention``, made
    lean: one buffer for the score grids, no max shift where exp cannot overflow, overflow checked).

    x [n_q, d_model]; x_kv [n_k, d_model] (default x); w_q [h, d_model, d_k]; w_k [g, d_model, d_k];
    w_v [g, d_model, d_v]; w_o [h*d_v, d_model]; b_q [h, d_k]; b_k [g, d_k]; b_v [g, d_v];
    b_o [d_model]; mask None | "causal" | Window(w) | bool [n_q, n_k] (True = may attend).
    g, the key/value heads, divides h: g = h is standard multi-head attention, g = 1 multi-query,
    in between grouped-query attention (query head i reads key/value head i // (h/g)).
    scale "sqrt" (1/sqrt(d_k)) | "none" | a positive float multiplier.
    max_bytes: the most memory the call may allocate (see attention_bytes), None for no limit;
    a larger call raises ValueError before allocating anything large.
    Invalid arguments raise ValueError naming the argument and its shape or value.
    """
    x = check_matrix("x", x)
    dtype = x.dtype
    x_kv = x if x_kv is None else check_matrix("x_kv", x_kv, dtype=dtype, d_model=x.shape[1])
    d_model = x.shape[1]
    w_q = check_projection("w_q", w_q, d_model, dtype)
    h, _, d_k = w_q.shape
    w_k = check_projection("w_k", w_k, d_model, dtype, d=d_k, d_name="d_k (from w_q)")
    g = w_k.shape[0]
    if h % g:
        raise ValueError(f"w_k has {g} key/value heads, which must divide the h={h} query heads of w_q "
                         f"(shape {list(w_k.shape)})")
    w_v = check_projection("w_v", w_v, d_model, dtype, h=g, h_name="g={h} key/value heads like w_k")
    d_v = w_v.shape[2]
    w_o = as_float_array("w_o", w_o, dtype)
    if w_o.shape != (h * d_v, d_model):
        raise ValueError(
            f"w_o must have shape [h*d_v, d_model] = [{h * d_v}, {d_model}] "
            f"(h={h}, d_v={d_v}), got {list(w_o.shape)}"
        )
    n_q, n_k = x.shape[0], x_kv.shape[0]
    max_bytes = check_max_bytes(max_bytes)
    if max_bytes is not None:  # before the mask too: "causal" builds an [n_q, n_k] matrix
        needed = _attention_bytes(n_q, n_k, h, d_k, d_v, d_model, dtype.itemsize, mask is not None, g)
        if needed > max_bytes:
            raise ValueError(
                f"n_q={n_q}, n_k={n_k}, h={h}, d_k={d_k}, d_v={d_v}, d_model={d_model} in {dtype.name} "
                f"would need {_format_bytes(needed)} (the score grids alone "
                f"{_format_bytes(3 * h * n_q * n_k * dtype.itemsize)}); the budget max_bytes is "
                f"{_format_bytes(max_bytes)}: use fewer tokens or heads, or raise max_bytes (None = no limit)"
            )
    allowed = resolve_mask(mask, n_q, n_k)  # [n_q, n_k] bool or None
    multiplier = resolve_scale(scale, d_k, dtype)

    # The course's projections (course/steps.py): each head's query, key and value spaces.
    q = project(x, w_q)  # [h, n_q, d_k]
    k = project(x_kv, w_k)  # [g, n_k, d_k]
    v = project(x_kv, w_v)  # [g, n_k, d_v]
    q = _add_bias(q, check_bias("b_q", b_q, (h, d_k), dtype))
    k = _add_bias(k, check_bias("b_k", b_k, (g, d_k), dtype))
    v = _add_bias(v, check_bias("b_v", b_v, (g, d_v), dtype))
    if g < h:  # grouped-query: each key/value head serves h/g query heads in a row
        k, v = np.repeat(k, h // g, axis=0), np.repeat(v, h // g, axis=0)  # [h, n_k, d_k], [h, n_k, d_v]

    # raw_scores, softmax: score every query against every key, then scale. scores, scaled, weights: views
    #    of one block: one large allocation per call instead of three, which glibc's malloc keeps
    #    mapped between calls at mid sizes (n ~ 512) instead of handing it back to the OS and
    #    page-faulting it in again (that cost ~30% of a call at n = 512).
    block = np.empty((3, h, n_q, n_k), dtype)
    scores, scaled, weights = block  # three [h, n_q, n_k] views
    np.matmul(q, k.transpose(0, 2, 1), out=scores)
    np.multiply(scores, dtype.type(multiplier), out=scaled)
    bound = _check_no_overflow(q, k, v, scores, scaled, multiplier)  # >= every finite |scaled|

    # softmax: mask: a blocked pair gets -inf, hence weight 0.
    if allowed is not None:
        scaled += np.where(allowed, dtype.type(0), dtype.type(-np.inf))  # [n_q, n_k] on every head

    # softmax and head_outputs: softmax over the keys, then blend the values.
    _attention_softmax(scaled, bound, out=weights)  # [h, n_q, n_k]
    heads = np.empty((n_q, h, d_v), dtype)  # each query's head outputs side by side, in head order
    head_outputs = np.matmul(weights, v, out=heads.transpose(1, 0, 2))  # [h, n_q, d_v] view

    # concatenation: concatenate the heads in head order (free: heads is laid out that way) and mix with W_O.
    concat = heads.reshape(n_q, h * d_v)  # [n_q, h*d_v]
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below, with a clear message
        output = concat @ w_o  # [n_q, d_model]
    b_o = check_bias("b_o", b_o, (d_model,), dtype)
    if b_o is not None:
        output += b_o
    if not np.isfinite(output).all():
        raise ValueError(
            "output overflowed: the values or w_o are too large for "
            f"{dtype.name} (max |w_o| = {np.max(np.abs(w_o)):.3g})"
        )

    arrays = dict(
        q=q, k=k, v=v, scores=scores, scaled=scaled, weights=weights,
        head_outputs=head_outputs, concat=concat, output=output, mask=allowed,
    )
    for array in (block, heads, *arrays.values()):  # the two shared buffers, then every field
        if array is not None:
            array.flags.writeable = False
    return MHAResult(scale=float(multiplier), kv_heads=g if g < h else 0, **arrays)


def attention_bytes(
    n_q: int, n_k: int, h: int, d_k: int, d_v: int, d_model: int, itemsize: int, *, masked: bool = False,
    kv_heads: int | None = None,
) -> int:
    """The most bytes one multi_head_attention call of these sizes allocates (itemsize 8 for float64,
    4 for float32; masked if a mask is given; kv_heads g < h for grouped-query attention), so a size can
    be checked before calling.

    The returned arrays, the largest temporary and the call's Python objects; not the inputs or
    their conversion.  tests/core/test_validation.py checks it against tracemalloc: never below the
    measured peak, and at most 10% above it from 100 KiB up.
    """
    sizes = dict(n_q=n_q, n_k=n_k, h=h, d_k=d_k, d_v=d_v, d_model=d_model, itemsize=itemsize,
                 kv_heads=h if kv_heads is None else kv_heads)
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return _attention_bytes(*(int(v) for v in list(sizes.values())[:7]), bool(masked), int(sizes["kv_heads"]))


def _attention_bytes(n_q, n_k, h, d_k, d_v, d_model, itemsize, masked, kv_heads) -> int:
    """attention_bytes without the argument checks (the sizes come from validated arrays)."""
    grid = h * n_q * n_k  # entries of one [h, n_q, n_k] grid
    mask = n_q * n_k if masked else 0  # the returned bool mask
    grouped = kv_heads * n_k * (d_k + d_v) if kv_heads < h else 0  # k and v before their repeat
    early = itemsize * (h * (n_q + n_k) * d_k + h * n_k * d_v + 3 * grid + grouped) + mask  # q, k, v, block
    late = itemsize * (n_q * h * d_v + n_q * d_model)  # heads (= concat, head_outputs) and output
    # Temporaries of projections to softmax, all freed before heads and output exist: |scores| while the
    # scores are few, else the bool finiteness scan of scaled or NumPy's ufunc buffer (dividing by
    # the broadcast row sums buffers up to np.getbufsize() elements); one projection's finiteness
    # (bool); the 0/-inf mask matrix; the softmax's row maxima and sums with their == tests.
    if grid <= _SCAN_SCORES_UP_TO:
        scores_temporary = grid * itemsize
    else:
        scores_temporary = max(grid, np.getbufsize() * itemsize)
    temporary = max(
        scores_temporary,
        h * max(n_q, n_k) * max(d_k, d_v),
        n_q * n_k * itemsize if masked else 0,
        2 * h * n_q * (itemsize + 1),
    )
    return early + max(temporary, late + n_q * d_model) + _CALL_OVERHEAD_BYTES  # + the output's isfinite


def _format_bytes(nbytes: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} bytes"


def _add_bias(a: np.ndarray, bias: np.ndarray | None) -> np.ndarray:  # [h, n, d], [h, d] -> [h, n, d]
    """a + bias per head, in place: a is a fresh projection."""
    if bias is not None:
        a += bias[:, None, :]
    return a


def _check_no_overflow(q, k, v, scores, scaled, multiplier) -> float:
    """Raise if a projection or a score overflowed; return a bound on the finite |scaled| entries.

    Large score grids are bounded without reading them (see _score_bound), so the full scan of
    the scores only runs when they could have overflowed; the bound is then inf.
    """
    bound = _score_bound(q, k, scores)  # >= every |q . k|; not finite if q or k is not
    suspects = (("v", v),) if bound < np.inf else (("q", q), ("k", k), ("v", v))
    for name, a in suspects:
        if not np.isfinite(a).all():
            raise ValueError(
                f"the projection {name} overflowed in {a.dtype.name}: "
                "x or its projection matrix holds values too large"
            )
    if bound * max(multiplier, 1.0) < np.finfo(q.dtype).max / 2:
        return bound * multiplier
    if not np.isfinite(scaled).all():
        raise ValueError(
            f"the scores q.k overflowed in {q.dtype.name} (bound {bound:.3g}): "
            "scale the embeddings or projections down"
        )
    return np.inf


def _score_bound(q: np.ndarray, k: np.ndarray, scores: np.ndarray) -> float:
    """A bound >= every |q_i . k_j|: the exact maximum when the scores are few (one cheap pass),
    else (longest query) * (longest key), by Cauchy-Schwarz, without reading the scores.

    inf (or NaN) when q or k is not finite or their squared lengths overflow: callers then take
    their safe path.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if scores.size <= _SCAN_SCORES_UP_TO:
            return float(np.max(np.abs(scores)))
        q_len2 = float(np.einsum("hnd,hnd->hn", q, q).max())  # squared length of the longest query
        k_len2 = float(np.einsum("hnd,hnd->hn", k, k).max())
    return math.sqrt(q_len2) * math.sqrt(k_len2)


def _attention_softmax(z: np.ndarray, bound: float, out: np.ndarray) -> np.ndarray:  # [h, n_q, n_k]
    """Softmax over the keys into out, for z holding no NaN/+inf and no finite |entry| > bound.

    When exp cannot overflow or underflow within +-bound, the max shift (a pass to find the row
    maxima and one to subtract them) is mathematically a no-op and is skipped: exp(z) / sum(exp(z)).
    """
    if not bound <= _EXP_SAFE[z.dtype]:
        return _softmax(z, axis=-1, out=out)
    np.exp(z, out=out)  # each entry in [exp(-bound), exp(bound)], or 0 where z is -inf (masked)
    total = np.einsum("hqk->hq", out)[..., None]  # [h, n_q, 1] row sums (faster than np.sum here)
    total[total == 0] = 1.0  # a fully masked row stays all zeros
    out /= total
    return out


_CALL_OVERHEAD_BYTES = 8 * 1024  # the call's Python objects: array headers, the result (4-6 KiB measured)

_SCAN_SCORES_UP_TO = 16_384  # below this a pass over the scores is cheaper than two einsums

# exp(+-limit) and n_k terms of that size are finite and normal: half the log of the largest float.
_EXP_SAFE = {np.dtype(t): float(np.log(np.finfo(t).max)) / 2 for t in (np.float32, np.float64)}
