"""Step "projections": three questions per head, Query, Key and Value (Q = X W_Q, K and V from X_kv)."""

from __future__ import annotations

import streamlit as st

from app import i18n, widgets
from app.charts import figure_style, figures
from app.grids import editor_widgets
from app.safe import lit
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import SELECTORS_PX, Projector
from app.steps.section import Section, grid, step_header
from app.steps.view import Charts, StepView, sub
from app.widgets import chart
from mha_core.setup import SPECS

NAME = "projections"


def charts(view: StepView) -> Charts:
    """Q, K and V of the shown head; K and V named by their key/value head when heads share them."""
    r, head = view.result, view.head
    number = {"Q": head + 1, "K": r.group_of(head) + 1, "V": r.group_of(head) + 1}
    titles = [figure_style.shape_title(f"{name}{sub(number[name])}", a[head].shape)
              for name, a in (("Q", r.q), ("K", r.k), ("V", r.v))]
    return Charts({"chart_qkv": lambda: view.chart(figures.qkv_panels, r.q[head], r.k[head], r.v[head],
                                                   view.q_tokens, view.k_tokens, titles=titles)})


def section(page: Section) -> None:
    step_header(NAME)
    # One head at a time: every head's matrices still count; only the drawing is per head.
    head = widgets.choice_ui(st, i18n.t("head"), page.heads, "shown_head", segmented=True)
    sz = page.sizes
    group = head // (sz.n_heads // sz.groups)  # the key/value head this query head reads
    if sz.groups < sz.n_heads:
        st.caption(lit(sharing_text(sz.n_heads, sz.groups, head)))
    names = "W_Q, W_K, W_V" + (", b_Q, b_K, b_V" if sz.bias else "")
    editable = editor_widgets.edit_toggle_ui(editor_widgets.EDIT_PROJECTIONS, names)
    for column, name in zip(st.columns(3), ("w_q", "w_k", "w_v"), strict=True):
        with column:
            width = sz.d_v if name == "w_v" else sz.d_k
            st.caption(i18n.t("{matrix} of {head} [{rows} × {columns}]").format(
                matrix=lit(SPECS[name].label), head=lit(page.owner(name, head, group)),
                rows=f"{sz.d_model:d}", columns=f"{width:d}"))
            page.editor(name, head=head if name == "w_q" else group, editable=editable)
    if sz.bias:
        for column, name in zip(st.columns(3), ("b_q", "b_k", "b_v"), strict=True):
            with column:
                st.caption(i18n.t("{matrix} of {head}").format(matrix=lit(SPECS[name].label),
                                                               head=lit(page.owner(name, head, group))))
                page.editor(name, head=head if name == "b_q" else group, editable=editable)
    for name in ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v"):
        page.problem(name)
    if page.view is not None:
        grid(charts(page.viewed(head=head))["chart_qkv"], key="chart_qkv")


def sharing_text(n_heads: int, groups: int, head: int | None = None) -> str:
    """Which query heads read which key/value head (grouped-query or multi-query attention)."""
    per = n_heads // groups
    parts = [i18n.t("heads {first}–{last} read key/value head {group}").format(
        first=f"{g * per + 1:d}", last=f"{(g + 1) * per:d}", group=f"{g + 1:d}") for g in range(groups)]
    if groups == 1:
        text = i18n.t("Multi-query attention: all {h} query heads read one key/value head. They score "
                      "against the same keys and blend the same values; only their queries differ.").format(
            h=f"{n_heads:d}")
    else:
        text = i18n.t("{h} query heads share {g} key/value heads: {parts}. Heads of one group score against "
                      "the same keys and blend the same values; only their queries differ.").format(
            h=f"{n_heads:d}", g=f"{groups:d}", parts="; ".join(parts))
    if head is not None:
        text += " " + i18n.t("Editing W_K or W_V here changes every head that reads key/value head "
                             "{group}.").format(group=f"{head // per + 1:d}")
    return text


def qkv(screen: Projector) -> None:
    head, _ = screen.pickers(query=False)
    chart(screen.charts(charts, screen.room - SELECTORS_PX, head=head)["chart_qkv"], key="present_qkv")


DRAWING = StepDrawing(NAME, charts, section, {"qkv": ScreenDrawing(qkv)}, one_head_at_a_time=True)
