"""Numbers about attention: how sure a head is, how heads differ, what MHA costs."""

from __future__ import annotations

import numpy as np

from mha_core.validation import as_float_array

METRICS = ("l2", "js", "tv")


def row_entropy(weights: np.ndarray, base: float = 2.0) -> np.ndarray:  # [..., n_k] -> [...]
    """Entropy of each attention row (0 = one-hot; log_base(n_k) = uniform, "nothing to say")."""
    w = as_float_array("weights", weights)
    terms = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    return -terms.sum(axis=-1) / np.log(base)


FLAT_AT = 0.95  # normalised entropy from which a head's row is "flat": that head has nothing to say


def normalised_entropy(weights: np.ndarray) -> np.ndarray:  # [..., n_k] -> [...] in [0, 1]
    """Entropy divided by its maximum log(n_k): 1 means perfectly flat. 0 when n_k == 1."""
    w = as_float_array("weights", weights)
    n_k = w.shape[-1]
    if n_k < 2:
        return np.zeros(w.shape[:-1])
    return np.clip(row_entropy(w, base=n_k), 0.0, 1.0)  # rounding can overshoot 1 by an ulp


def pairwise_disagreement(weights, query: int, metric: str = "l2") -> np.ndarray:
    """[h, n_q, n_k], query index -> [h, h] distances between the heads' rows for that query.

    "l2": Euclidean distance (chapter 002's 0.813); "js": Jensen-Shannon distance, base 2, in [0, 1];
    "tv": total variation distance, half the L1 distance, in [0, 1].
    """
    w = as_float_array("weights", weights)
    if w.ndim != 3:
        raise ValueError(f"weights must have shape [h, n_q, n_k], got {list(w.shape)}")
    if isinstance(query, bool) or not isinstance(query, (int, np.integer)):
        raise ValueError(f"query must be an integer index, got {query!r}")
    if not -w.shape[1] <= query < w.shape[1]:
        raise ValueError(f"query must index one of n_q={w.shape[1]} rows, got {query}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    rows = w[:, query, :]  # [h, n_k]
    diff = rows[:, None, :] - rows[None, :, :]  # [h, h, n_k]
    if metric == "l2":
        return np.sqrt(np.sum(diff**2, axis=-1))
    if metric == "tv":
        return np.clip(0.5 * np.sum(np.abs(diff), axis=-1), 0.0, 1.0)  # rounding can overshoot 1
    return _jensen_shannon_distance(rows)


def _jensen_shannon_distance(rows: np.ndarray) -> np.ndarray:  # [h, n_k] -> [h, h]
    p = rows[:, None, :]
    r = rows[None, :, :]
    m = 0.5 * (p + r)  # [h, h, n_k]
    divergence = 0.5 * (_kl_base2(p, m) + _kl_base2(r, m))
    return np.sqrt(np.clip(divergence, 0.0, 1.0))


def _kl_base2(p: np.ndarray, m: np.ndarray) -> np.ndarray:  # [..., n_k] -> [...]
    p, m = np.broadcast_arrays(p, m)
    safe = p > 0
    ratio = np.where(safe, p, 1.0) / np.where(safe, m, 1.0)
    return np.sum(np.where(safe, p * np.log2(ratio), 0.0), axis=-1)


def count_parameters(d_model: int, n_heads: int, d_k=None, d_v=None, bias: bool = False,
                     kv_heads: int | None = None) -> int:
    """Learnable numbers in one MHA block: h*(2*d_model*d_k + d_model*d_v) + h*d_v*d_model (+ biases);
    with g key/value heads (grouped-query attention) W_K and W_V hold g heads instead of h.

    d_k and d_v default to d_model / n_heads, which must then be a whole number.
    """
    d_model, n_heads = _positive_int("d_model", d_model), _positive_int("n_heads", n_heads)
    g = n_heads if kv_heads is None else _positive_int("kv_heads", kv_heads)
    if n_heads % g:
        raise ValueError(f"kv_heads={g} must divide n_heads={n_heads}")
    d_k = _head_width("d_k", d_k, d_model, n_heads)
    d_v = _head_width("d_v", d_v, d_model, n_heads)
    weights = n_heads * d_model * d_k + g * d_model * (d_k + d_v) + n_heads * d_v * d_model
    biases = n_heads * d_k + g * (d_k + d_v) + d_model if bias else 0
    return weights + biases


def attention_flops(n_q: int, n_k: int, n_heads: int, d_k: int, d_v: int | None = None) -> int:
    """Multiply-adds x 2 of the attention core (QK^T and AV) for all heads: 2*h*n_q*n_k*(d_k+d_v).

    h heads of width d_model/h cost exactly what one head of width d_model costs (chapter 004, step 6).
    """
    n_q, n_k = _positive_int("n_q", n_q), _positive_int("n_k", n_k)
    n_heads, d_k = _positive_int("n_heads", n_heads), _positive_int("d_k", d_k)
    d_v = d_k if d_v is None else _positive_int("d_v", d_v)
    return 2 * n_heads * n_q * n_k * (d_k + d_v)


def mha_flops(n_q: int, n_k: int, d_model: int, n_heads: int, d_k: int, d_v: int) -> int:
    """FLOPs of a whole MHA call: projections, attention core, and W_O."""
    projections = 2 * n_heads * d_model * (n_q * d_k + n_k * (d_k + d_v))
    mix = 2 * n_q * n_heads * d_v * d_model
    return projections + attention_flops(n_q, n_k, n_heads, d_k, d_v) + mix


def head_width(d_model: int, n_heads: int) -> int:
    """d_model / n_heads, or a ValueError that says how to fix a split that is not whole."""
    d_model, n_heads = _positive_int("d_model", d_model), _positive_int("n_heads", n_heads)
    if d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise ValueError(
            f"n_heads={n_heads} does not divide d_model={d_model}, so d_k = d_model/h = "
            f"{d_model / n_heads:.3g} is not a whole number. Choose h in {divisors}, or make d_model "
            f"a multiple of {n_heads} (e.g. {n_heads * max(1, round(d_model / n_heads))}), "
            "or set d_k and d_v yourself."
        )
    return d_model // n_heads


def _head_width(name: str, value, d_model: int, n_heads: int) -> int:
    return head_width(d_model, n_heads) if value is None else _positive_int(name, value)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def head_contributions(head_outputs: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """head_i @ W_O[rows of head i] for every head: [h, n_q, d_v], [h*d_v, d_model] -> [h, n_q, d_model].

    Their sum over heads is concat @ W_O, the output before b_O.
    """
    head_outputs = as_float_array("head_outputs", head_outputs)
    w_o = as_float_array("w_o", w_o)
    h, _, d_v = head_outputs.shape
    if w_o.shape[0] != h * d_v:
        raise ValueError(f"w_o must have h*d_v = {h * d_v} rows, got shape {list(w_o.shape)}")
    return head_outputs @ w_o.reshape(h, d_v, w_o.shape[1])  # [h, n_q, d_model]


def row_sum_deviation(weights: np.ndarray) -> float:  # [..., n_k] -> largest |row sum - 1|
    """How far the attention rows are from summing to 1, ignoring rows that are fully masked
    (all zero: nothing to attend to). 0.0 when every row is masked."""
    w = as_float_array("weights", weights)
    sums = w.sum(axis=-1)  # [...]
    live = sums[np.any(w > 0, axis=-1)]
    return float(np.max(np.abs(live - 1.0))) if live.size else 0.0


def contribution_gap(contributions: np.ndarray, output: np.ndarray, b_o=None) -> float:
    """Largest |sum of the heads' contributions (+ b_O) - output|: 0 up to rounding.

    contributions [h, n_q, d_model], output [n_q, d_model], b_o [d_model] or None.
    """
    total = as_float_array("contributions", contributions).sum(axis=0)  # [n_q, d_model]
    if b_o is not None:
        total = total + as_float_array("b_o", b_o)
    return float(np.max(np.abs(total - as_float_array("output", output))))


def most_disagreeing_pair(distances: np.ndarray) -> tuple[int, int, float] | None:
    """The two different heads furthest apart in a [h, h] distance matrix, as (a, b, distance)
    with a < b; None with fewer than two heads."""
    d = as_float_array("distances", distances)
    h = d.shape[0]
    if d.ndim != 2 or d.shape != (h, h):
        raise ValueError(f"distances must be square [h, h], got {list(d.shape)}")
    if h < 2:
        return None
    a, b = np.triu_indices(h, k=1)
    best = int(np.argmax(d[a, b]))
    return int(a[best]), int(b[best]), float(d[a[best], b[best]])


def largest_change(before: np.ndarray, after: np.ndarray) -> tuple[tuple[int, ...], float, float]:
    """Where two arrays of one shape differ most, as (index, value before, value after).

    Cells that are not finite on either side (masked: NaN or -inf) are skipped; with no
    difference at all the first cell is returned.
    """
    a, b = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"before and after must have one shape, got {list(a.shape)} and {list(b.shape)}")
    gap = np.abs(b - a)  # same shape as the inputs
    gap[~(np.isfinite(a) & np.isfinite(b))] = -1.0
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))
    return index, float(a[index]), float(b[index])


PATTERN_AT = 0.5  # the mean weight a head puts on one kind of key before it is named after it
BROAD_AT = 0.8  # normalised entropy (mean over queries) from which a head is "broad"
PATTERNS = ("previous", "next", "self", "[CLS]", "[SEP]", "broad", "mixed")


def head_pattern(weights: np.ndarray) -> str:
    """A one-word guess at what a head does, from its weights [n, n] over one text whose first
    and last tokens are [CLS] and [SEP] (BertViz's categories).

    The mean weight over queries on the previous token, the next one, itself, [CLS] or [SEP]:
    the largest of these at or above PATTERN_AT names the head; otherwise "broad" when its rows
    are nearly uniform, else "mixed".
    """
    w = as_float_array("weights", weights)
    n = w.shape[0]
    if w.ndim != 2 or w.shape != (n, n):
        raise ValueError(f"weights must be square [n, n], got {list(w.shape)}")
    if n < 3:
        return "mixed"
    shares = {
        "previous": float(np.mean(np.diagonal(w, offset=-1))),
        "next": float(np.mean(np.diagonal(w, offset=1))),
        "self": float(np.mean(np.diagonal(w))),
        "[CLS]": float(np.mean(w[:, 0])),
        "[SEP]": float(np.mean(w[:, -1])),
    }
    best = max(shares, key=shares.get)
    if shares[best] >= PATTERN_AT:
        return best
    return "broad" if float(np.mean(normalised_entropy(w))) >= BROAD_AT else "mixed"


def attention_change(before: list[np.ndarray], after: list[np.ndarray]) -> np.ndarray:
    """The largest change of any cell of each head's weights, layer by layer: [layers, h].

    before, after: one weights array [h, n, n] per layer, of one text."""
    return np.array([[_largest_gap(a[head], b[head])
                      for head in range(len(a))] for a, b in zip(before, after, strict=True)])


def _largest_gap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(b, dtype=float) - np.asarray(a, dtype=float))))


def sentence_cosine(hidden_a: np.ndarray, hidden_b: np.ndarray) -> float:
    """Cosine similarity of two texts' sentence embeddings, each the mean of its last hidden states
    [n, d] over the tokens (sentence-transformers' mean pooling)."""
    a = np.mean(np.asarray(hidden_a, dtype=float), axis=0)  # [d]
    b = np.mean(np.asarray(hidden_b, dtype=float), axis=0)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
