"""Step "softmax": scale every score, then softmax each row into weights that add up to 1 (and the
mask, when some pairs may not attend)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import i18n, widgets
from app.charts import figure_layout, figure_style, figures
from app.charts.figure_cache import figure
from app.grids import editor_labels
from app.safe import lit
from app.session import state
from app.steps.drawing import ScreenDrawing, StepDrawing
from app.steps.projector import CHART_WIDTH, SELECTORS_PX, TABLE_PX, WORKED_LINE_PX, Projector, numbers_off
from app.steps.section import Section, grid, step_header, waiting
from app.steps.step_text import drill_lines
from app.steps.view import Charts, StepView, grid_of_heads, sub
from app.widgets import chart
from course.i18n import N_, translator
from course.worksheet import scaling_words
from mha_core import row_sum_deviation

NAME = "softmax"
ZOOM = 12  # positions a side of the zoomed window of a long sequence's weights
# The scaled scores' panel titles ('scaled₁ [3 × 3]'): a word, so in the reader's language (S and A
# are symbols, the same in every language).
SCALED = N_("scaled")


def _scaling(setup, d_k: int) -> str:
    """What the scaling does, in the reader's language and numbers: 'divided by √64 (× 0,125)'."""
    return scaling_words(setup.scaling, d_k, i18n.t, i18n.numbers_in)


def charts(view: StepView) -> Charts:
    r = view.result
    scaled = translator(view.language)(SCALED)
    return Charts({"chart_scaled": grid_of_heads(view, scaled, r.scaled, kind="scores", mask=r.mask),
                   "chart_weights": grid_of_heads(view, "A", r.weights, kind="weights", mask=r.mask)})


def section(page: Section) -> None:
    setup = page.setup
    scaling_formula = setup.scaling.latex(page.sizes.d_k) if setup else r"Q_i K_i^{\top}"
    masked = setup is not None and setup.mask is not None
    formula = (r"A_i = \operatorname{softmax}\!\left(" + scaling_formula
               + (r" + M\right),\quad M_{jk} = -\infty \text{ where } j \text{ may not attend to } k"
                  if masked else r"\right)"))
    what = None
    if setup is not None and setup.scaling.kind != "sqrt":
        what = (i18n.t("Scale every score (here: {scaling}), then turn each row into positive weights "
                       "that add up to 1.").format(scaling=lit(_scaling(setup, page.sizes.d_k))))
    step_header(NAME, formula, what)
    if page.inputs.mask_kind == "custom":
        mask_editor(page)
    if page.result is None:
        return waiting()
    r = page.result
    size = f"{setup.mask.size:d}" if setup.mask_kind == "window" else ""
    mask_note = {"causal": i18n.t("causal: a query sees itself and the tokens before it"),
                 "window": i18n.t("a sliding window of {size}: a query sees the last {size} tokens, "
                                  "itself included").format(size=size),
                 "custom": i18n.t("your grid")}.get(setup.mask_kind)
    scaled = i18n.t("Scaled scores: {scaling}").format(scaling=lit(_scaling(setup, page.sizes.d_k)))
    if mask_note:
        scaled += i18n.t("; masked cells (mask: {note}) are blank here and in the weights").format(
            note=lit(mask_note))
    st.caption(scaled)  # the scaling's words went through lit above; the rest is the app's own
    drawn = charts(page.view)
    grid(drawn["chart_scaled"], key="chart_scaled")
    st.caption(i18n.t("Attention weights A = softmax over each row (one colour scale 0 to 1 for all "
                      "heads)"))
    grid(drawn["chart_weights"], key="chart_weights")
    if r.weights[0].size > figure_layout.IMAGE_FROM_CELLS:
        zoom(page, r)
    deviation = row_sum_deviation(r.weights)
    blocked = int(np.sum(~r.mask.any(axis=1))) if r.mask is not None else 0  # rows with no key
    check = i18n.t("Check: every row sums to 1 (largest deviation {deviation}).").format(
        deviation=lit(i18n.numbers_in(f"{deviation:.1e}")))
    if blocked:
        check = i18n.t("Check: every row that may attend to a key sums to 1 (largest deviation "
                       "{deviation}); {blocked} fully masked row(s) attend to nothing (all 0).").format(
            deviation=lit(i18n.numbers_in(f"{deviation:.1e}")), blocked=f"{blocked:d}")
    st.success(check, icon=":material/check_circle:")


def zoom(page: Section, r) -> None:
    """A long sequence's weights: one head's window at full resolution, with its numbers."""
    n_q, n_k = r.weights.shape[1:]
    st.caption(i18n.t("Each head's {n_q} × {n_k} grid is sent as a picture (block means beyond {blocks} "
                      "positions a side): numbers on cells and editing cell by cell are off. One head's "
                      "window of {zoom} × {zoom} at full resolution, with its numbers:").format(
        n_q=f"{n_q:d}", n_k=f"{n_k:d}", blocks=f"{figure_layout.IMAGE_BLOCKS:d}", zoom=f"{ZOOM:d}"))
    head_column, query_column, key_column = st.columns(3)
    head = widgets.choice_ui(head_column, i18n.t("head"), page.heads, "zoom_head")
    q0 = int(query_column.number_input(i18n.t("queries from"), 1, max(1, n_q - ZOOM + 1),
                                       key="zoom_query")) - 1
    k0 = int(key_column.number_input(i18n.t("keys from"), 1, max(1, n_k - ZOOM + 1), key="zoom_key")) - 1
    rows, cols = slice(q0, q0 + ZOOM), slice(k0, k0 + ZOOM)
    window = r.weights[head:head + 1, rows, cols]  # [1, <= ZOOM, <= ZOOM]
    title = i18n.t("{symbol}, a window").format(symbol=f"A{sub(head + 1)}")
    chart(figure(figures.head_grids, window, editor_labels.row_labels(page.q_tokens)[rows],
                 editor_labels.row_labels(page.k_tokens)[cols], kind="weights", large=page.large,
                 mask=r.mask[rows, cols] if r.mask is not None else None,
                 head_names=[figure_style.shape_title(title, window.shape[1:])]),
          key="chart_zoom")


def mask_editor(page: Section) -> None:
    st.caption(i18n.t("Mask: tick the (query, key) pairs that may attend"))
    page.editor(state.MASK, boolean=True)
    if page.setup is None or not isinstance(page.setup.mask, np.ndarray):
        return
    blocked = np.flatnonzero(~page.setup.mask.any(axis=1))
    if blocked.size:
        names = ", ".join(lit(f"{i + 1} · {page.q_tokens[i]}") for i in blocked)
        st.warning(i18n.t("Row {names} blocks every key: nothing can be attended to, so its weights are "
                          "all 0 and its head outputs are zero vectors. Tick at least one key to fix it.")
                   .format(names=names), icon=":material/warning:")


def softmax_screen(screen: Projector) -> None:
    """The scaled scores and the weights of one head: stacked when both fit, else side by side."""
    head, query = screen.pickers()
    key = int(np.argmax(screen.r.weights[head, query]))
    st.latex(i18n.tex(drill_lines(screen.r, head, query, key)[-1]))
    room = screen.room - SELECTORS_PX - WORKED_LINE_PX
    keys = {"chart_scaled": "present_scaled", "chart_weights": "present_weights"}
    stacked = screen.charts(charts, room // 2, head=head)
    fits = sum(stacked[key]["layout"]["height"] + TABLE_PX for key in keys) <= room
    side_by_side = screen.charts(charts, room, width=CHART_WIDTH // 2, head=head)
    if fits and (not numbers_off(stacked, keys) or numbers_off(side_by_side, keys)):  # built if asked
        for key, key_ in keys.items():  # stacked, unless side by side the cells keep their numbers
            chart(stacked[key], key=key_)
        return
    for column, (key, key_) in zip(st.columns(2), keys.items(), strict=True):
        with column:
            chart(side_by_side[key], key=key_)


def softmax_formula(screen: Projector) -> None:
    scaling = screen.setup.scaling.latex(screen.sizes.d_k)
    st.latex(i18n.tex(r"A_i = \operatorname{softmax}\!\left(" + scaling + r"\right)"))


DRAWING = StepDrawing(NAME, charts, section, {"softmax": ScreenDrawing(softmax_screen, softmax_formula)})
