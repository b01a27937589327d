"""The numbers behind the Labs page (NumPy only): one softmax row, why scores are scaled, size and cost.

Score lab: one query's raw scores and the keys' values -> weights and the output (chapter 001,
examples C to G). Scaling lab: random queries and keys of width d_k, with and without 1/sqrt(d_k)
(example F). Size and cost: parameters, FLOPs and shapes of one block (examples H and I, chapter
004 step 6), grouped-query attention's parameters and KV cache, and what full, causal and
sliding-window attention cost as the sequence grows. The page only draws what these return.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from course.answers import refusal
from course.i18n import N_, localized_number_text, number, number_marks, translator
from mha_core.analysis import attention_flops, count_parameters
from mha_core.attention import softmax
from mha_core.setup import Setup, parse_number
from mha_core.typed_number import Refused

# --- Score lab -------------------------------------------------------------------------------

SCORE_EXAMPLES = ("ex_c_equal_scores", "ex_d_one_huge_score", "ex_e_negative_score", "ex_f_unscaled",
                  "ex_f_scaled", "ex_g_coreference")  # the score-level examples, in the chapter's order
MAX_KEYS = 24  # keys of one query: a bar chart and its numbers stay readable
TEMPERATURE = (0.05, 20.0)  # below 0.05 every row is one-hot already; above 20 nearly flat
SEPARATORS = re.compile(r"[,;\s]+")  # "2, 2, 2", "2;2;2" and "2 2 2" all read as three numbers
COMMA_LANGUAGE_SEPARATORS = re.compile(r"(?:[;\s]|,(?!\d)|(?<!\d),)+")  # there "0,5" is one number
LISTS = (N_("scores"), N_("values"))  # what the score lab's boxes hold, as its messages name them


def parse_numbers(text: str, what: str = "scores", language: str = "en") -> np.ndarray:  # "2, 2, 2" -> [3]
    """A typed list of numbers; a ValueError naming the item at fault and how to fix it, in ``language``.

    Items are separated by semicolons, spaces or commas; in a language that writes a decimal comma, a
    comma between two digits is one ("0,5; 1,5" and "0,5 1,5" are 0.5 and 1.5, "2, 2, 2" three 2s). Each
    item is read by the one reader of a cell (mha_core/typed_number.py's ``read_cell``, at most ±1e6).
    """
    _ = translator(language)
    named = _(what)  # "scores" or "values" (LISTS) in the reader's language
    separators = COMMA_LANGUAGE_SEPARATORS if number_marks(language)[0] == "," else SEPARATORS
    items = [item for item in separators.split(str(text).strip()) if item]
    if not items:
        raise ValueError(_("Type at least one number for the {what}, separated by commas (e.g. 2, 2, 2).")
                         .format(what=named))
    if len(items) > MAX_KEYS:
        raise ValueError(_("{count} {what} is more than the {limit} this lab takes; remove some.")
                         .format(count=len(items), what=named, limit=MAX_KEYS))
    numbers = []
    for position, item in enumerate(items, start=1):
        try:
            numbers.append(parse_number(item))
        except Refused as error:
            raise ValueError(_("{what}, item {position}: {error}.").format(
                what=named[:1].upper() + named[1:], position=position,
                error=refusal(error, language))) from None
    return np.array(numbers, dtype=float)


def check_temperature(temperature: float) -> float:
    low, high = TEMPERATURE
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not (
            low <= temperature <= high):
        raise ValueError(f"The temperature T must be a number from {low:g} to {high:g}, got {temperature!r}.")
    return float(temperature)


@dataclass(frozen=True)
class ScoreRow:
    """One query's softmax, every step kept: scores / T -> weights -> weight x value -> output."""

    scores: np.ndarray  # [n_k] as typed
    values: np.ndarray  # [n_k] one number per key
    temperature: float
    scaled: np.ndarray  # [n_k] scores / T
    weights: np.ndarray  # [n_k] softmax(scaled), positive, sum 1
    terms: np.ndarray  # [n_k] weights * values
    output: float  # sum of the terms

    @property
    def negative(self) -> np.ndarray:  # [m] positions of negative scores (their weights are still > 0)
        return np.flatnonzero(self.scores < 0)


def score_row(scores, values, temperature: float = 1.0) -> ScoreRow:  # [n_k], [n_k] -> ScoreRow
    """Softmax of scores / T and the weighted sum of the values."""
    scores = np.asarray(scores, dtype=float)  # [n_k]
    values = np.asarray(values, dtype=float)  # [n_k]
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError(f"scores must be a non-empty list, got shape {list(scores.shape)}")
    if values.shape != scores.shape:
        raise ValueError(f"{scores.size} scores but {values.size} values: give one value per score.")
    if not (np.isfinite(scores).all() and np.isfinite(values).all()):
        raise ValueError("scores and values must be finite numbers")
    temperature = check_temperature(temperature)
    scaled = scores / temperature  # [n_k]
    weights = softmax(scaled)  # [n_k]
    terms = weights * values  # [n_k]
    return ScoreRow(scores, values, temperature, scaled, weights, terms, float(terms.sum()))


@dataclass(frozen=True)
class ScoreInputs:
    """What an example puts into the score lab's boxes."""

    scores: np.ndarray  # [n_k]
    values: np.ndarray  # [n_k]
    keys: tuple[str, ...]
    temperature: float  # 1, or sqrt(d) for an example scaled by 1/sqrt(d) (example F: 8)


def score_inputs(example: Setup) -> ScoreInputs:
    """A score-level example's scores (x_kv column 0), values (column 1), key names and scaling as T."""
    x_kv = np.asarray(example.x_kv, dtype=float)  # [n_k, 2]
    multiplier = example.scaling.multiplier(d_k=1)  # the examples give their scores directly
    return ScoreInputs(x_kv[:, 0].copy(), x_kv[:, 1].copy(), tuple(example.key_tokens), 1.0 / multiplier)


def top_weight(gap, n_keys: int, temperature: float = 1.0):  # gap [...] -> [...]
    """Softmax weight of the top key when the other n_keys - 1 scores are `gap` lower (example D's curve).

    1 / (1 + (n_keys - 1) e^(-gap / T)): 1/n_keys at gap 0, rising to 1 as the gap grows.
    """
    if n_keys < 1:
        raise ValueError(f"n_keys must be at least 1, got {n_keys}")
    exponent = np.minimum(-np.asarray(gap, dtype=float) / temperature, 700.0)  # e^700 is still finite
    return 1.0 / (1.0 + (n_keys - 1) * np.exp(exponent))


def gap_curve(n_keys: int, temperature: float = 1.0, largest: float = 40.0,
              points: int = 161) -> tuple[np.ndarray, np.ndarray]:  # -> gaps [points], weights [points]
    """The top weight against the gap, from 0 to `largest`."""
    gaps = np.linspace(0.0, largest, points)  # [points]
    return gaps, top_weight(gaps, n_keys, temperature)


def gap_of(scores) -> float | None:  # [n_k] -> top minus the others, when the others are all equal
    """The gap the curve's formula describes, or None when the other scores differ (example G)."""
    scores = np.sort(np.asarray(scores, dtype=float))[::-1]  # [n_k], largest first
    if scores.size < 2 or np.ptp(scores[1:]) > 0:
        return None
    return float(scores[0] - scores[1])


# --- Scaling lab -----------------------------------------------------------------------------

WIDTHS = tuple(2**i for i in range(11))  # d_k = 1, 2, 4, ..., 1024
PAIRS = (500, 1000, 2000, 5000)  # random (q, k) pairs per histogram


def dot_products(d_k: int, n_pairs: int, seed: int) -> np.ndarray:  # -> [n_pairs]
    """q . k for n_pairs random pairs with standard normal entries: mean 0, variance d_k."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_pairs, d_k))  # [n_pairs, d_k]
    k = rng.standard_normal((n_pairs, d_k))  # [n_pairs, d_k]
    return np.einsum("pd,pd->p", q, k)


def largest_weights(widths, n_keys: int, n_draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean largest softmax weight of one query over n_keys random keys, for each d_k in widths.

    Returns (unscaled [len(widths)], scaled by 1/sqrt(d_k) [len(widths)]): unscaled climbs to 1
    (one-hot) as d_k grows; scaled stays level.
    """
    rng = np.random.default_rng(seed)
    unscaled, scaled = [], []
    for d_k in widths:
        q = rng.standard_normal((n_draws, 1, d_k))  # [n_draws, 1, d_k]
        k = rng.standard_normal((n_draws, n_keys, d_k))  # [n_draws, n_keys, d_k]
        scores = np.einsum("dqc,dkc->dk", q, k)  # [n_draws, n_keys]
        unscaled.append(softmax(scores).max(axis=-1).mean())
        scaled.append(softmax(scores / math.sqrt(d_k)).max(axis=-1).mean())
    return np.array(unscaled), np.array(scaled)


# --- Size and cost ---------------------------------------------------------------------------


def limit_problems(values: dict[str, int], limits: dict[str, int], language: str = "en") -> dict[str, str]:
    """A message for each value below 1 or above its limit, by key; {} when every value fits."""
    _ = translator(language)
    problems = {}
    for key, value in values.items():
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or not 1 <= value <= limits[key]:
            given = number(value, language, 0) if whole else repr(value)
            problems[key] = _("{value} is outside what this lab takes: give a whole number from 1 to "
                              "{limit}.").format(value=given, limit=number(limits[key], language, 0))
    return problems


def kv_heads_problem(n_heads: int, kv_heads: int, language: str = "en") -> str | None:
    """Why g key/value heads cannot serve h query heads (g must divide h), or None."""
    if n_heads % kv_heads == 0:
        return None
    _ = translator(language)
    divisors = ", ".join(str(g) for g in range(1, n_heads + 1) if n_heads % g == 0)
    return _("g = {g} key/value heads do not divide h = {h} query heads: each key/value head serves the same "
             "number of query heads, so choose g from {divisors}.").format(g=kv_heads, h=n_heads,
                                                                           divisors=divisors)


@dataclass(frozen=True)
class ParameterCount:
    """Learnable numbers of one MHA block, matrix by matrix (count_parameters gives the total at g = h)."""

    w_q: int  # h * d_model * d_k
    w_k: int  # g * d_model * d_k: g key/value heads, g = h in standard multi-head attention
    w_v: int  # g * d_model * d_v
    w_o: int  # h * d_v * d_model
    biases: int  # h*d_k + g*d_k + g*d_v + d_model, or 0
    total: int  # count_parameters' answer; the terms above add up to it (tested)
    kv_heads: int  # g


def parameter_count(d_model: int, n_heads: int, d_k: int, d_v: int, bias: bool = False,
                    kv_heads: int | None = None) -> ParameterCount:
    """Example I's count, term by term; with g = kv_heads key/value heads (grouped-query attention:
    W_K [g, d_model, d_k] and W_V [g, d_model, d_v], each shared by h / g query heads)."""
    g = n_heads if kv_heads is None else kv_heads
    total = count_parameters(d_model, n_heads, d_k, d_v, bias, kv_heads=g)  # checks the sizes and g
    terms = dict(w_q=n_heads * d_model * d_k, w_k=g * d_model * d_k, w_v=g * d_model * d_v,
                 w_o=n_heads * d_v * d_model, biases=n_heads * d_k + g * (d_k + d_v) + d_model if bias else 0)
    return ParameterCount(**terms, total=total, kv_heads=g)


# --- Grouped-query attention and the KV cache ---------------------------------------------------

VALUE_BYTES = {4: "4 · fp32", 2: "2 · fp16, bf16", 1: "1 · int8, fp8"}  # bytes per number stored
BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def kv_bytes_per_token(kv_heads: int, d_k: int, d_v: int, bytes_per_value: int) -> int:
    """Bytes one token adds to one layer's cache: g keys of d_k numbers and g values of d_v numbers."""
    return kv_heads * (d_k + d_v) * bytes_per_value


def kv_cache_bytes(layers: int, kv_heads: int, d_k: int, d_v: int, context: int, bytes_per_value: int) -> int:
    """The whole KV cache of one sequence: every layer keeps K [context, g, d_k] and V [context, g, d_v]."""
    return layers * context * kv_bytes_per_token(kv_heads, d_k, d_v, bytes_per_value)


def binary_size(n_bytes: int) -> tuple[float, str]:
    """Bytes in the largest binary unit that keeps the number at least 1: 4294967296 -> (4.0, "GiB")."""
    value, unit = float(n_bytes), BINARY_UNITS[0]
    for unit in BINARY_UNITS:
        if value < 1024 or unit == BINARY_UNITS[-1]:
            break
        value /= 1024
    return value, unit


def binary_size_text(n_bytes: int, language: str = "en") -> str:
    """"4 GiB", "128 MiB", "1.5 KiB": at most three significant digits, as the language writes numbers."""
    value, unit = binary_size(n_bytes)
    if value >= 100:  # 100 to 1023: a whole number (f"{1000.5:.3g}" would read 1e+03)
        return f"{number(round(value), language, 0)} {unit}"
    return f"{localized_number_text(f'{value:.3g}', language)} {unit}"


# --- Attention cost against sequence length ---------------------------------------------------

KINDS = ("full", "causal", "window")  # every key; keys up to the query; the last w keys up to the query
SEQUENCE_LENGTHS = tuple(2**i for i in range(7, 16))  # n = 128, 256, ..., 32768: the cost chart's points


def attended_pairs(n: int, kind: str, window: int | None = None) -> int:
    """(query, key) pairs that take part in n tokens' attention.

    full: n²; causal: n(n+1)/2 (row i sees keys 0..i); window w: row i sees its last min(i+1, w) keys,
    w(w+1)/2 + (n-w)w in all for w < n, and causal's count for w >= n.
    """
    if kind == "full":
        return n * n
    if kind == "causal":
        return n * (n + 1) // 2
    if kind == "window":
        if window is None or window < 1:
            raise ValueError(f"a sliding window needs a width of at least 1, got {window!r}")
        w = min(window, n)
        return w * (w + 1) // 2 + (n - w) * w
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


@dataclass(frozen=True)
class AttentionCost:
    """One layer's attention over n tokens, all h heads, counting only the pairs that take part."""

    pairs: int  # attended (query, key) pairs of one head
    score_flops: int  # QKᵀ: 2 h pairs d_k (a multiply-add counts 2)
    sum_flops: int  # weights · V: 2 h pairs d_v
    weight_bytes: int  # the weights kept: h pairs bytes_per_value

    @property
    def flops(self) -> int:
        return self.score_flops + self.sum_flops


def attention_cost(n: int, n_heads: int, d_k: int, d_v: int, kind: str, window: int | None = None,
                   bytes_per_value: int = 4) -> AttentionCost:
    """FLOPs of the score and weighted-sum steps and bytes of the weight grid, for one layer.

    Full attention's FLOPs are ``attention_flops(n, n, h, d_k, d_v)``. A kernel that computes the whole
    n × n grid and then masks it spends full attention's cost whatever the mask; these counts are what
    a kernel that skips the masked pairs spends.
    """
    pairs = attended_pairs(n, kind, window)
    return AttentionCost(pairs=pairs, score_flops=2 * n_heads * pairs * d_k,
                         sum_flops=2 * n_heads * pairs * d_v, weight_bytes=n_heads * pairs * bytes_per_value)


def cost_curves(lengths, n_heads: int, d_k: int, d_v: int, window: int,
                bytes_per_value: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """kind -> (FLOPs [len(lengths)], weight bytes [len(lengths)]) for full, causal and windowed attention."""
    curves = {}
    for kind in KINDS:
        costs = [attention_cost(n, n_heads, d_k, d_v, kind, window, bytes_per_value) for n in lengths]
        curves[kind] = (np.array([c.flops for c in costs], dtype=float),  # [len(lengths)]
                        np.array([c.weight_bytes for c in costs], dtype=float))  # [len(lengths)]
    return curves


def head_split_flops(n_q: int, n_k: int, n_heads: int, d_k: int, d_v: int) -> tuple[int, int]:
    """Attention FLOPs of h heads of width d_k and d_v, and of one head of width h*d_k and h*d_v.

    They are equal (chapter 004, step 6): h x n^2 x d_k = n^2 x (h d_k).
    """
    thin = attention_flops(n_q, n_k, n_heads, d_k, d_v)
    wide = attention_flops(n_q, n_k, 1, n_heads * d_k, n_heads * d_v)
    return thin, wide


@dataclass(frozen=True)
class ShapeStep:
    name: str  # as the page writes it
    shape: tuple[int, int]
    how: str  # where the shape comes from


def cross_attention_shapes(n_q: int, n_k: int, d_model: int, n_heads: int, d_k: int,
                           d_v: int, language: str = "en") -> tuple[ShapeStep, ...]:
    """Example H's shape algebra for any sizes: one row per query, one column per key."""
    _ = translator(language)
    scores = f"[{n_q} × {d_k}] · [{d_k} × {n_k}]"
    return (
        ShapeStep(_("X (queries' side)"), (n_q, d_model), _("n_q tokens, d_model numbers each")),
        ShapeStep(_("X_kv (keys' side)"), (n_k, d_model), _("n_k tokens: cross-attention's second input")),
        ShapeStep("Q_i = X W_i^Q", (n_q, d_k), f"[{n_q} × {d_model}] · [{d_model} × {d_k}]"),
        ShapeStep("K_i = X_kv W_i^K", (n_k, d_k), f"[{n_k} × {d_model}] · [{d_model} × {d_k}]"),
        ShapeStep("V_i = X_kv W_i^V", (n_k, d_v), f"[{n_k} × {d_model}] · [{d_model} × {d_v}]"),
        ShapeStep(_("scores Q_i K_iᵀ"), (n_q, n_k), scores if n_q == n_k else
                  _("{product}: not square, the hallmark of cross-attention").format(product=scores)),
        ShapeStep(_("weights (softmax over keys)"), (n_q, n_k), _("each row sums to 1")),
        ShapeStep(_("head_i = weights V_i"), (n_q, d_v),
                  _("{product}: the {n_k} cancels").format(product=f"[{n_q} × {n_k}] · [{n_k} × {d_v}]",
                                                          n_k=n_k)),
        ShapeStep(_("concat of the heads"), (n_q, n_heads * d_v),
                  _("{h} heads of {d_v} side by side").format(h=n_heads, d_v=d_v)),
        ShapeStep(_("output = concat W_O"), (n_q, d_model), f"[{n_q} × {n_heads * d_v}] · "
                  f"[{n_heads * d_v} × {d_model}]"),
    )
