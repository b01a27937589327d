"""Step "output": the block's output next to its input, a grid of the same shape."""

from __future__ import annotations

from app.charts import figure_style, figures
from app.steps.drawing import StepDrawing
from app.steps.section import Section, grid, step_header, waiting
from app.steps.view import Charts, StepView
from course.i18n import translator

NAME = "output"


def charts(view: StepView) -> Charts:
    x, out = view.setup.x, view.result.output  # both [n_q, d_model]
    _ = translator(view.language)
    titles = {"left_title": figure_style.shape_title(_("input X"), x.shape),
              "right_title": figure_style.shape_title(_("output"), out.shape)}
    return Charts({"chart_output": lambda: view.chart(figures.side_by_side, x, out, view.q_tokens, **titles)})


def section(page: Section) -> None:
    step_header(NAME)
    if page.result is None:
        return waiting()
    grid(charts(page.view)["chart_output"], key="chart_output")


DRAWING = StepDrawing(NAME, charts, section)  # on the presenter: on the concatenation's screen
