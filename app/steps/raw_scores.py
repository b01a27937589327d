"""Step "raw_scores": one dot product per (query, key) pair, S = Q Kᵀ, in every head."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import i18n
from app.safe import lit
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import CAPTION_PX, SELECTORS_PX, WORKED_LINE_PX, Projector
from app.steps.section import Section, grid, step_header, waiting
from app.steps.step_text import drill_lines
from app.steps.view import Charts, StepView, grid_of_heads
from app.widgets import chart
from course.steps import STEPS

NAME = "raw_scores"


def charts(view: StepView) -> Charts:
    return Charts({"chart_scores": grid_of_heads(view, "S", view.result.scores, kind="scores")})


def section(page: Section) -> None:
    step_header(NAME)
    if page.result is None:
        return waiting()
    sz, cost = page.sizes, STEPS[NAME].derive(page.setup, page.result, {})
    st.caption(i18n.t("Each head's scores are [{n_q} × {n_k}] (queries × keys). Cost of all {h} heads' "
                      "scores and blends: {flops} FLOPs; one head of width {width} would cost {wide}. "
                      "Thin heads add viewpoints, not work.")
               .format(n_q=f"{sz.n_q:d}", n_k=f"{sz.n_k:d}", h=f"{sz.n_heads:d}",
                       flops=i18n.number(cost.flops), width=f"{sz.n_heads * sz.d_k:d}",
                       wide=i18n.number(cost.one_wide_head_flops)))
    grid(charts(page.view)["chart_scores"], key="chart_scores")


def dot_product(screen: Projector) -> None:
    head, query = screen.pickers()
    asked = screen.asked_key(head, query)  # the pair the revealed forecast asked about, worked out
    key = int(np.argmax(screen.r.scores[head, query])) if asked is None else asked  # else a bright beam
    st.latex(i18n.tex(drill_lines(screen.r, head, query, key)[0]))
    against = (i18n.t("Query {query} · {query_token} against key {key} · {key_token}, its highest score "
                      "in head {head}.") if asked is None else
               i18n.t("Query {query} · {query_token} against key {key} · {key_token} in head {head}: the "
                      "pair the forecast asked about."))
    st.caption(against.format(query=f"{query + 1:d}", query_token=lit(screen.q_tokens[query]),
                              key=f"{key + 1:d}", key_token=lit(screen.k_tokens[key]),
                              head=f"{head + 1:d}"))
    budget = screen.room - SELECTORS_PX - WORKED_LINE_PX - CAPTION_PX
    chart(screen.charts(charts, budget, head=head)["chart_scores"], key="present_scores")


DRAWING = StepDrawing(NAME, charts, section, {"dot_product": ScreenDrawing(dot_product)})
