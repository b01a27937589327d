"""Each step's worked numbers in words and formulas, shared by the layouts: the block's sizes and
parameter count (the projections and concatenation steps, the cost screen's terms) and one cell's
arithmetic (the drill-down, the presenter's worked lines, the Quiz's answers). Positions and numbers
only, never tokens."""

from __future__ import annotations

import numpy as np

from app import i18n
from app.charts import number_text
from mha_core.derive import cost_of


def sizes_line(sizes) -> str:
    """Shapes and the parameter count of this block, per projection and in all."""
    cost, number = cost_of(sizes), i18n.number
    shapes = dict(d_model=f"{sizes.d_model:d}", h=f"{sizes.n_heads:d}", d_k=f"{sizes.d_k:d}",
                  d_v=f"{sizes.d_v:d}")
    sizes_words = i18n.t("**Sizes:** {n_q} × {n_k} (queries × keys), d_model = {d_model}, h = {h}, "
                         "d_k = {d_k}, d_v = {d_v}.").format(n_q=f"{sizes.n_q:d}", n_k=f"{sizes.n_k:d}",
                                                             **shapes)
    if sizes.groups < sizes.n_heads:
        words = i18n.t("**Parameters:** W_Q {wq} (h × d_model × d_k = {h} × {d_model} × {d_k}), W_K {wk} and "
                       "W_V {wv} (only g = {g} key/value heads), W_O {wo}: **{total}** in all; with biases "
                       "{with_bias}.")
    else:
        words = i18n.t("**Parameters:** W_Q and W_K {wq} each (h × d_model × d_k = {h} × {d_model} × "
                       "{d_k}), W_V {wv}, W_O {wo}: **{total}** in all; with biases {with_bias}.")
    parameters = words.format(
        wq=number(cost.per_query_key), wk=number(cost.per_key), wv=number(cost.per_value),
        wo=number(cost.per_output), g=f"{sizes.groups:d}", total=number(cost.total),
        with_bias=number(cost.with_bias), **shapes)
    return f"{sizes_words}  \n{parameters}"


def parameter_terms(sizes) -> str:
    """The block's parameter count as LaTeX, one underbraced product per projection: W_K and W_V
    count the g key/value heads, which are fewer than the h query heads when they are grouped."""
    h, g, d, d_k, d_v = sizes.n_heads, sizes.groups, sizes.d_model, sizes.d_k, sizes.d_v
    total = number_text.latex_int(cost_of(sizes).total)
    if g < h:
        return (rf"\underbrace{{{h:d} \cdot {d:d} \cdot {d_k:d}}}_{{W^Q}} + "
                rf"\underbrace{{{g:d} \cdot {d:d} \cdot {d_k:d}}}_{{W^K}} + "
                rf"\underbrace{{{g:d} \cdot {d:d} \cdot {d_v:d}}}_{{W^V}} + "
                rf"\underbrace{{{h * d_v:d} \cdot {d:d}}}_{{W^O}} = {total}")
    return (rf"\underbrace{{2 \cdot {h:d} \cdot {d:d} \cdot {d_k:d}}}_{{W^Q,\,W^K}} + "
            rf"\underbrace{{{h:d} \cdot {d:d} \cdot {d_v:d}}}_{{W^V}} + "
            rf"\underbrace{{{h * d_v:d} \cdot {d:d}}}_{{W^O}} = {total}")


def _num(value: float, *, weight: bool = False) -> str:
    """A number for LaTeX: exact for whole numbers, four figures otherwise, and scientific (or
    "1 − 4.1e-9") where those would hide it, as on the cells and in the hover."""
    if not np.isfinite(value):
        return r"-\infty" if value < 0 else r"\infty"
    value = float(value)
    if weight:
        text = number_text.hover_number(value, near_one=True)
    elif value == int(value) and abs(value) < 1e6:
        text = str(int(value))
    elif abs(value) < 1e-3 or abs(value) >= 1e5:
        text = number_text.format_number(value)
    else:
        text = f"{value:.4g}"
    text = text.replace("−", "-").replace("e-", r"\mathrm{e}{-}").replace("e+", r"\mathrm{e}{+}")
    return text.replace(" (", r"\;\;(= ")  # "1 - 4.1e-9 (0.9999…)": the exact value, not a product


def drill_lines(r, head: int, query: int, key: int) -> list[str]:
    """LaTeX lines for one cell: dot product terms, scaling, softmax. Positions, never tokens."""
    q, k = r.q[head, query], r.k[head, key]  # [d_k]
    terms = " + ".join(f"({_num(a)})({_num(b)})" for a, b in zip(q[:8], k[:8], strict=True))
    terms += r" + \dots" if q.size > 8 else ""
    score, scaled = r.scores[head, query, key], r.scaled[head, query, key]
    row = r.scaled[head, query]  # [n_k]
    denominator = " + ".join(rf"e^{{{_num(s)}}}" for s in row[:8] if np.isfinite(s))
    denominator += r" + \dots" if row.size > 8 else ""
    lines = [
        rf"q_{{{query + 1}}} \cdot k_{{{key + 1}}} = {terms} = {_num(score)}",
        rf"s = {_num(score)} \times {_num(r.scale)} = {_num(scaled)}",
    ]
    if np.isfinite(scaled):
        lines.append(rf"a_{{{query + 1},{key + 1}}} = \frac{{e^{{{_num(scaled)}}}}}{{{denominator}}}"
                     rf" = {_num(r.weights[head, query, key], weight=True)}")
    else:
        lines.append(rf"a_{{{query + 1},{key + 1}}} = 0 \quad \text{{(masked: this query may not attend to "
                     r"this key)}")
    return lines
