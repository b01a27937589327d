"""Step "concatenation": the heads' outputs side by side, then one final mix W_O; and the presenter's
screen on what the block costs."""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.charts import figure_layout, figure_style, figures, heatmap_panels
from app.grids import editor_widgets
from app.safe import lit
from app.steps import output
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import CAPTION_PX, TABLE_PX, Projector, fitted
from app.steps.section import Section, grid, step_header, waiting
from app.steps.step_text import parameter_terms, sizes_line
from app.steps.view import Charts, StepView, grid_of_heads
from app.widgets import chart
from course.i18n import translator
from course.steps import screen_position
from mha_core.derive import cost_of

NAME = "concatenation"
X_SCREEN = "arrows"  # the screen of the input X (app/steps/embeddings.py): its number is counted


def charts(view: StepView) -> Charts:
    r = view.result
    _ = translator(view.language)
    title = _("Concat {shape}: one band per head").format(
        shape=figure_style.shape_title("", r.concat.shape).strip())
    d_model = figure_style.dims("d", r.output.shape[1])
    return Charts({
        "chart_concat": lambda: view.chart(figures.concat_bands, r.concat, view.q_tokens, r.n_heads,
                                           r.head_outputs.shape[2], title=title),
        "chart_contributions": grid_of_heads(view, "C", view.contributions.per_head, d_model, kind="signed")})


def section(page: Section) -> None:
    step_header(NAME)
    sz = page.sizes
    editable = editor_widgets.edit_toggle_ui(editor_widgets.EDIT_OUTPUT_MIX,
                                             "W_O" + (", b_O" if sz.bias else ""))
    st.caption(i18n.t("W_O [{rows} × {columns}]: row band i mixes head i's output")
               .format(rows=f"{sz.n_heads * sz.d_v:d}", columns=f"{sz.d_model:d}"))
    page.editor("w_o", editable=editable)
    page.problem("w_o")
    if sz.bias:
        st.caption(f"b_O [{sz.d_model:d}]")
        page.editor("b_o", editable=editable)
        page.problem("b_o")
    if page.result is None:
        return waiting()
    drawn = charts(page.view)
    grid(drawn["chart_concat"], key="chart_concat")
    st.caption(i18n.t("Each head's contribution head_i · W_O[rows of head i]; they add up to the output"))
    grid(drawn["chart_contributions"], key="chart_contributions")
    gap = lit(i18n.numbers_in(f"{page.view.contributions.gap:.1e}"))
    st.success(i18n.t("Check: the contributions sum to the output (largest difference {gap}).")
               .format(gap=gap), icon=":material/check_circle:")


def concatenate(screen: Projector) -> None:
    """The concatenation, then the output next to the input X (one scale: they have one width)."""
    sz, r = screen.sizes, screen.r
    room = screen.room - CAPTION_PX  # two charts' tables: a little more air than one
    concat = screen.charts(charts, room // 2)["chart_concat"]
    chart(concat, key="present_concat")
    budget = room - concat["layout"]["height"] - TABLE_PX
    pair = screen.charts(output.charts, budget)["chart_output"]
    small = max(r.output.shape) <= figure_layout.NUMBERS_UP_TO  # its numbers are drawn when they fit
    if small and heatmap_panels.numbers_note(pair):  # side by side they do not: the output alone
        title = i18n.t("{output}: the input's shape (X: screen {screen})").format(
            output=figure_style.shape_title(i18n.t("output"), r.output.shape),
            screen=f"{screen_position(X_SCREEN) + 1:d}")
        pair = fitted(figures.matrix_heatmap, r.output, screen.q_tokens, figure_style.dims("d", sz.d_model),
                      budget=budget, title=title)
    chart(pair, key="present_output")


def cost(screen: Projector) -> None:
    sz, spent = screen.sizes, cost_of(screen.sizes)
    d = sz.d_model
    st.latex(i18n.tex(parameter_terms(sz)))
    if spent.four_d_squared:
        st.markdown(i18n.t("With h · d_k = d_model that is **4 · {d}² = {total}**, whatever h is: more "
                           "heads split the same parameters into more viewpoints.")
                    .format(d=f"{d:d}", total=i18n.number(4 * d * d)))
    st.markdown(sizes_line(sz))
    st.markdown(i18n.t("**Work of attention** for {n_q} × {n_k} tokens: {flops} FLOPs (scores and blends "
                       "of all heads); it grows with n², so long sentences cost most here.")
                .format(n_q=f"{sz.n_q:d}", n_k=f"{sz.n_k:d}", flops=i18n.number(spent.flops)))


DRAWING = StepDrawing(NAME, charts, section, {
    "concatenate": ScreenDrawing(concatenate),
    "cost": ScreenDrawing(cost, formula=lambda screen: None)})  # the cost screen's formula is its result
