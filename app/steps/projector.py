"""What a step's presenter screen is drawn with: the ``Projector`` (one setup's result, one head and
one query at a time, charts fitted into a projector's 1280 x 720) and the room each part takes.

A step's screens (app/steps/<step>.py ``screens``) are drawn by functions of a Projector; its ``room``
is the height the screen's charts have (app/views/present.py sets it per screen).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import streamlit as st

from app import i18n, phone_css, widgets
from app.charts import figure_layout, figure_spec, heatmap_panels
from app.charts.figure_cache import figure
from app.grids import editor_labels
from app.session import state
from app.session.this_run import Current, Inputs
from app.steps.view import Charts, StepView

# The charts' column measures about 660 px at 1280 px with the sidebar collapsed. Figures are planned
# a little wider: their own margin for a narrower column (figure_layout.FIT_SLACK) is not needed here.
CHART_WIDTH = 800
# A chart's cells are as tall as LARGE's (72 px) when the screen has room, else shorter: the first of
# these heights whose figure fits. Below 42 px a cell holds no 20-px number (the hover and the table
# below the chart keep them); the chapter's small examples fit with their numbers.
CELL_HEIGHTS = (72, 60, 52, 46, 42, 34, 28, 22)
PROJECTOR = replace(figure_layout.LARGE, title_font=20, row_gap=10)
# Vertical room for the charts' column of a screen, px: 720 less the header, the formula and padding.
CHARTS_PX = 515
SELECTORS_PX = 52  # the head and query pickers, one row
WORKED_LINE_PX = 66  # a worked formula line under the pickers
CAPTION_PX = 34  # a line of text
TABLE_PX = 40  # "Numbers as a table" under every chart (app/widgets.chart), closed, and its gap
# A phone scrolls: a student following on one gets each chart up to this tall, not the projector's
# share of 720 px (the Concat chart was 12-px rows with no numbers).
PHONE_CHART_PX = 900


class Projector:
    """One setup's result on the projector: its charts fitted, for one head and one query at a time."""

    def __init__(self, current: Current, inputs: Inputs):
        self.setup, self.r = current.setup, current.result
        self.sizes = inputs.sizes
        self.q_tokens, self.k_tokens = inputs.tokens, inputs.kv_tokens
        self.heads = [i18n.t("head {number}").format(number=i + 1) for i in range(self.sizes.n_heads)]
        self.room = CHARTS_PX  # px the charts' column has for this screen's charts (app/views/present.py)
        self.asked: tuple[int, int, int] | None = None  # (head, query, key) the revealed forecast asked about
        self.view = StepView(self.setup, self.r, self.q_tokens, self.k_tokens, language=i18n.language())

    def charts(self, charts: Callable[[StepView], Charts], budget: int, *, width: int = CHART_WIDTH,
               head: int | None = None, **choices) -> Charts:
        """A step's charts (its ``charts``, as the workbench draws them), each fitted into ``budget`` px
        of the projector; for one head, or the heads in ``choices['shown']``."""
        return charts(self.fitted_view(budget, width=width, head=head, **choices))

    def fitted_view(self, budget: int, *, width: int = CHART_WIDTH, head: int | None = None,
                    **choices) -> StepView:
        """The step charts' view for the projector: charts fitted into ``budget`` px, of one head."""
        if head is not None:
            choices.update(head=head, shown=(head,))
        return replace(self.view, build=partial(fit, budget=budget, width=width), **choices)

    def asked_key(self, head: int, query: int) -> int | None:
        """The key the revealed forecast asked about, when it asked about this head and query."""
        return self.asked[2] if self.asked is not None and tuple(self.asked[:2]) == (head, query) else None

    def pickers(self, query: bool = True) -> tuple[int, int]:
        """The head and (if asked) the query, in one row: (head, query or 0)."""
        if not query:
            return self.head(st), 0
        left, right = st.columns([3, 2], vertical_alignment="center")
        return self.head(left), self.query(right)

    def head(self, where) -> int:
        return widgets.choice_ui(where, i18n.t("head"), self.heads, "shown_head", segmented=True,
                                 label_visibility="collapsed")

    def query(self, where) -> int:
        example = state.examples().get(self.setup.origin)
        default = min(getattr(example, "focus_query", 0), len(self.q_tokens) - 1)
        return widgets.choice_ui(where, i18n.t("query token"), editor_labels.row_labels(self.q_tokens),
                                 "focus_query", default=default, label_visibility="collapsed")


def numbers_off(charts, keys) -> bool:
    """Whether any of these charts leaves its cells' numbers off (heatmap_panels.numbers_note says why)."""
    return any(heatmap_panels.numbers_note(charts[key]) for key in keys)


def fit(builder: Callable[..., figure_spec.FigureSpec], *args, budget: int, width: int = CHART_WIDTH,
        large=None, **kwargs):
    """A step chart's build on the projector (app/step_charts.StepView.build): fitted, in the projector's
    type whatever the page's."""
    return fitted(builder, *args, budget=budget, width=width, **kwargs)


def fitted(builder: Callable[..., figure_spec.FigureSpec], *args, budget: int, width: int = CHART_WIDTH,
           **kwargs):
    """A figure in the projector's style with the tallest cells (CELL_HEIGHTS) that keep it within
    ``budget`` px; the shortest cells if none does (the test of the examples says whether they fit)."""
    def with_cells(cell_max: int):
        return figure(builder, *args, large=replace(PROJECTOR, cell_max=cell_max), width=width, **kwargs)

    if phone_css.narrow():
        budget = max(budget, PHONE_CHART_PX)
    return figure_layout.tallest_cells_within(with_cells, CELL_HEIGHTS, budget - TABLE_PX)
