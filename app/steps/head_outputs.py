"""Step "head_outputs": each head's answer, head_i = A_i V_i, a blend of the value rows; and the
presenter's screen on why the heads are narrow slices."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import i18n
from app.charts import figure_layout, figure_style, number_text
from app.safe import lit
from app.steps import softmax
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import CAPTION_PX, SELECTORS_PX, TABLE_PX, WORKED_LINE_PX, Projector
from app.steps.section import Section, grid, step_header, waiting
from app.steps.view import Charts, StepView, grid_of_heads
from app.widgets import chart
from course.i18n import N_, translator
from mha_core.derive import cost_of

NAME = "head_outputs"
SHOWN_TERMS = 3  # the largest terms of a weighted sum written out
HEAD = N_("head")  # the panels' titles ('head₁ [3 × 1]'): a word, in the reader's language


def charts(view: StepView) -> Charts:
    d_v = figure_style.dims("v", view.result.head_outputs.shape[2])
    head = translator(view.language)(HEAD)
    return Charts({"chart_heads": grid_of_heads(view, head, view.result.head_outputs, d_v, kind="signed")})


def section(page: Section) -> None:
    step_header(NAME)
    if page.result is None:
        return waiting()
    grid(charts(page.view)["chart_heads"], key="chart_heads")


def weighted_sum(screen: Projector) -> None:
    head, query = screen.pickers()
    weights, values = screen.r.weights[head, query], screen.r.v[head]  # [n_k], [n_k, d_v]
    shown = np.argsort(-weights, kind="stable")[:SHOWN_TERMS]
    terms = " + ".join(rf"{tex_number(weights[k])}\,v_{{{k + 1}}}" for k in sorted(shown))
    more = r" + \dots" if len(weights) > len(shown) else ""
    st.latex(i18n.tex(rf"\text{{head}}_{{{head + 1}}}[{query + 1}] = {terms}{more}"))
    blend = (i18n.t("Row {query} · {token} of head {head} blends the value rows by its weights (the "
                    "largest shown); V has {rows} rows of {columns}.") if more else
             i18n.t("Row {query} · {token} of head {head} blends the value rows by its weights (all "
                    "shown); V has {rows} rows of {columns}."))
    st.caption(blend.format(query=f"{query + 1:d}", token=lit(screen.q_tokens[query]), head=f"{head + 1:d}",
                            rows=f"{values.shape[0]:d}", columns=f"{values.shape[1]:d}"))
    budget = screen.room - SELECTORS_PX - WORKED_LINE_PX - 2 * CAPTION_PX
    chart(screen.charts(charts, budget, head=head)["chart_heads"], key="present_head_output")


def tex_number(value: float) -> str:
    """A weight for LaTeX: '0.67', '2.1e-9', '(1 - 4.1e-9)' (bracketed: it multiplies a value)."""
    text = number_text.format_number(float(value), near_one=True).replace("−", "-")
    text = text.replace("e-", r"\mathrm{e}{-}")
    return f"({text})" if " " in text else text


def split(screen: Projector) -> None:
    sz, cost = screen.sizes, cost_of(screen.sizes)
    if sz.n_heads == 1:
        st.markdown(i18n.t("**One head** of width {d_k}: {flops} FLOPs. With h heads of width d_k / h "
                           "the work would stay the same, with h viewpoints.")
                    .format(d_k=f"{sz.d_k:d}", flops=i18n.number(cost.flops)))
    else:
        st.markdown(i18n.t("**Why narrow slices?** {h} heads of width {d_k} cost {flops} FLOPs; one head "
                           "of width {width} would cost {wide}. Same work, {h} viewpoints.")
                    .format(h=f"{sz.n_heads:d}", d_k=f"{sz.d_k:d}", flops=i18n.number(cost.flops),
                            width=f"{sz.n_heads * sz.d_k:d}",
                            wide=i18n.number(cost.one_wide_head_flops)))
    budget = screen.room - 2 * CAPTION_PX
    heads = range(sz.n_heads)
    fig = all_heads(screen, heads, budget)
    if fig["layout"]["height"] + TABLE_PX > budget and sz.n_heads > figure_layout.MAX_PER_ROW:
        heads = head_page(screen)  # one row of heads at a time: two (or more) screens, no scrolling
        fig = all_heads(screen, heads, budget - SELECTORS_PX)
    chart(fig, key="present_all_heads")


def split_formula(screen: Projector) -> None:
    sz = screen.sizes
    st.latex(i18n.tex(rf"d_k = {sz.d_k:d},\quad h = {sz.n_heads:d},\quad "
                      rf"h \times d_k = {sz.n_heads * sz.d_k:d}"))


def all_heads(screen: Projector, heads: range, budget: int):
    """Every head's weights side by side (titles short enough for a row of four at 20 px)."""
    return screen.charts(softmax.charts, budget, shown=tuple(heads), kv_in_titles=False)["chart_weights"]


def head_page(screen: Projector) -> range:
    """A pager over the heads, MAX_PER_ROW at a time: the heads shown."""
    per, h = figure_layout.MAX_PER_ROW, screen.sizes.n_heads
    pages = [range(start, min(start + per, h)) for start in range(0, h, per)]
    labels = [i18n.t("heads {first}–{last}").format(first=f"{page.start + 1:d}", last=f"{page.stop:d}")
              if len(page) > 1 else screen.heads[page.start] for page in pages]
    chosen = st.segmented_control(i18n.t("Heads shown"), labels, key="present_head_page",
                                  default=labels[0], required=True, label_visibility="collapsed",
                                  format_func=lit)
    return pages[labels.index(chosen) if chosen in labels else 0]


DRAWING = StepDrawing(NAME, charts, section, {"weighted_sum": ScreenDrawing(weighted_sum),
                                              "split": ScreenDrawing(split, split_formula)})
