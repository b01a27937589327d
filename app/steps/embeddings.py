"""Step "embeddings": a sentence is a grid, X (and X_kv for cross-attention)."""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.charts import figure_style, figures
from app.charts.figure_cache import figure
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import Projector
from app.steps.section import Section, grid, step_header
from app.steps.view import Charts, StepView
from app.widgets import chart, following
from mha_core import LIMITS

NAME = "embeddings"


def charts(view: StepView) -> Charts:
    setup, d_model = view.setup, figure_style.dims("d", view.setup.sizes.d_model)
    made = {"chart_x": lambda: view.chart(figures.matrix_heatmap, setup.x, view.q_tokens, d_model,
                                          title=figure_style.shape_title("X", setup.x.shape))}
    if setup.x_kv is not None:
        made["chart_x_kv"] = lambda: view.chart(figures.matrix_heatmap, setup.x_kv, view.k_tokens, d_model,
                                                title=figure_style.shape_title("X_kv", setup.x_kv.shape))
    return Charts(made)


def section(page: Section) -> None:
    step_header(NAME)
    left, right = st.columns(2)
    with left:
        sizes = page.sizes
        editable = max(sizes.n_q, sizes.d_model) <= LIMITS.editable and not following()
        rows = (i18n.t("X [{rows} × {columns}]: one row per query token (edit any cell)") if editable
                else i18n.t("X [{rows} × {columns}]: one row per query token"))
        st.caption(rows.format(rows=f"{sizes.n_q:d}", columns=f"{sizes.d_model:d}"))
        page.editor("x")
        page.problem("x")
        if sizes.cross:
            st.caption(i18n.t("X_kv [{rows} × {columns}]: the key/value side")
                       .format(rows=f"{sizes.n_k:d}", columns=f"{sizes.d_model:d}"))
            page.editor("x_kv")
            page.problem("x_kv")
    with right:
        if page.view is not None:
            for key, fig in charts(page.view).items():
                grid(fig, key=key)


def alone(tokens: list[str], x, large: bool) -> None:
    """The step drawn from X alone, while a setting the later steps need is refused (x [n_q, d_model])."""
    step_header(NAME)
    title = figure_style.shape_title("X", x.shape)
    grid(figure(figures.matrix_heatmap, x, tokens, figure_style.dims("d", x.shape[1]), title=title,
                large=large, language=i18n.language()), key="chart_x")


def arrows(screen: Projector) -> None:
    chart(screen.charts(charts, screen.room)["chart_x"], key="present_x")


DRAWING = StepDrawing(NAME, charts, section, {"arrows": ScreenDrawing(arrows)})
