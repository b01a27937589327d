"""Step "heads_compared": the heads side by side for one query token; do they disagree, and is any of
them flat?"""

from __future__ import annotations

import streamlit as st

from app import i18n, widgets
from app.adapter.fragments import fragment
from app.charts import bar_figures, figure_style, figures
from app.charts.figure_cache import figure
from app.grids import editor_labels
from app.room import following
from app.safe import lit
from app.session import this_run
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import CAPTION_PX, SELECTORS_PX, Projector
from app.steps.section import Section, grid, shared_result, step_header, waiting
from app.steps.view import Charts, StepView
from app.widgets import chart
from course.i18n import N_, translator
from mha_core.analysis import FLAT_AT, METRICS

NAME = "heads_compared"
METRIC_NAMES = {"l2": N_("L2 (Euclidean)"), "js": N_("Jensen-Shannon"), "tv": N_("total variation")}


def charts(view: StepView) -> Charts:
    """The query's row in every head, as bars and as one grid of heads by keys; with two heads and two
    keys or more, how far apart the heads are and how flat each is."""
    r, query = view.result, view.query
    _ = translator(view.language)
    rows = r.weights[:, query, :]  # [h, n_k]: one row per head, on the weights' one scale
    title = figure_style.shape_title(_("Query {number} · {token}").format(number=f"{query + 1:d}",
                                                                     token=view.q_tokens[query]), rows.shape)
    made = {"chart_bars": lambda: view.chart(bar_figures.query_bars, r.weights, query, view.k_tokens,
                                             head_names=view.heads),
            "chart_heads_row": lambda: view.chart(figures.head_grids, rows[None], view.heads,
                                                  view.k_tokens, kind="weights", cols_are_tokens=False,
                                                  head_names=[title])}
    compared = view.compared
    if compared.comparable:
        made["chart_disagreement"] = lambda: view.chart(figures.disagreement_heatmap, compared.distances,
                                                        metric=view.metric, head_names=view.heads)
        made["chart_entropy"] = lambda: view.chart(bar_figures.entropy_bars, compared.entropy,
                                                   head_names=view.heads, flat_at=FLAT_AT)
    return Charts(made)


def section(page: Section) -> None:
    step_header(NAME)
    if page.result is None:
        return waiting()
    compared_alone(st.session_state[this_run.RESULT_KEY], page.q_tokens, page.k_tokens, page.heads,
                   page.large)


@fragment
def compared_alone(key: bytes, q_tokens, k_tokens, heads, large) -> None:
    """The comparison reruns alone when its query or metric changes."""
    r = shared_result(key)
    left, right = st.columns([2, 1])
    query = widgets.choice_ui(left, i18n.t("query token"), editor_labels.row_labels(q_tokens), "focus_query")
    following.sync_selection_params()
    metric = right.selectbox(i18n.t("disagreement"), METRICS, key="metric",
                             format_func=i18n.labels(METRIC_NAMES))
    view = StepView(None, r, q_tokens, k_tokens, query=query, metric=metric, large=large,
                    language=i18n.language(), build=figure, keep=this_run.keeper(key))
    drawn = charts(view)
    chart(drawn["chart_bars"], key="chart_bars")
    if len(heads) == 1:
        st.caption(i18n.t("With one head there is nothing to compare."))
        return
    if len(k_tokens) == 1:
        st.caption(i18n.t("With one key every head puts all of its weight on it: the heads cannot "
                          "disagree, and every entropy is 0."))
        return
    metric_name = i18n.labels(METRIC_NAMES)(metric)
    compared = view.compared
    a, b, value = compared.pair
    if value == 0:
        st.markdown(i18n.t("For this query all {n} heads agree exactly ({metric} distance 0).")
                    .format(n=f"{len(heads):d}", metric=lit(metric_name)))
    else:
        st.markdown(i18n.t("Largest disagreement for this query: **{a}** vs **{b}** = **{value}** "
                           "({metric}).")
                    .format(a=lit(heads[a]), b=lit(heads[b]), value=i18n.number(value, 3),
                            metric=lit(metric_name)))
    cols = st.columns(2)
    with cols[0]:
        grid(drawn["chart_disagreement"], key="chart_disagreement")
    with cols[1]:
        chart(drawn["chart_entropy"], key="chart_entropy")
    flat = [heads[i] for i in compared.flat]
    if flat:
        flat_words = (i18n.t("{heads} is flat for this query (nearly uniform): such a head has nothing to "
                             "say, which is not the same as disagreeing. Compare heads that both have an "
                             "opinion.")
                      if len(flat) == 1 else
                      i18n.t("{heads} are flat for this query (nearly uniform): such a head has nothing to "
                             "say, which is not the same as disagreeing. Compare heads that both have an "
                             "opinion."))
        st.info(flat_words.format(heads=lit(", ".join(flat))), icon=":material/lightbulb:")


def disagreement(screen: Projector) -> None:
    query = screen.query(st)
    budget = screen.room - SELECTORS_PX - 2 * CAPTION_PX
    view = screen.fitted_view(budget, query=query)  # the derivation, as the workbench's (metric L2)
    compared, heads = view.compared, view.heads
    if compared.comparable:
        a, b, value = compared.pair
        flat = [heads[i] for i in compared.flat]
        apart = i18n.t("Most apart for this query: **{a}** and **{b}**, L2 distance **{distance}**.")
        apart = apart.format(a=lit(heads[a]), b=lit(heads[b]), distance=i18n.number(value, 3))
        flat_words = i18n.t("Flat (nothing to say): {heads}.").format(heads=lit(", ".join(flat)))
        st.markdown(apart + (" " + flat_words if flat else ""))
    else:
        st.markdown(i18n.t("With one head, or one key, there is nothing to disagree about."))
    chart(charts(view)["chart_heads_row"], key="present_heads_row")


DRAWING = StepDrawing(NAME, charts, section, {"disagreement": ScreenDrawing(disagreement)})
