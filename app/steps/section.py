"""What a step's workbench section is drawn with: the page's ``Section`` (the setup, its result, the
editors, the inputs' problems) and the pieces every section uses (its heading, a grid chart, the
wait for valid input).

A step's ``section(page)`` (app/steps/<step>.py) draws its heading, editors, words and charts; a step
with no section of its own is drawn as its heading and its charts (``plain_section``).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app import i18n, result_cache
from app.charts import heatmap_panels
from app.charts.figure_cache import figure
from app.grids import editor_labels, editor_widgets
from app.safe import lit
from app.session import this_run
from app.session.this_run import Current, Inputs
from app.steps.view import StepView
from app.widgets import chart
from course.steps import number_of


def step_header(name: str, formula: str | None = None, what: str | None = None) -> None:
    """Title, formula and what/why as one element (each element drawn costs a rerun time)."""
    st.markdown(step_markdown(name, formula, what))


def step_markdown(name: str, formula: str | None = None, what: str | None = None) -> str:
    """A step's heading (its number: its place in the course), formula and what/why: the course's own
    Markdown (course/steps.py), or the formula and what given (the app's own too:
    tests/app/test_escaping.py checks every call)."""
    step = i18n.step(name)
    what_word = i18n.t("What.")
    why_word = i18n.t("Why.")
    return (f"### {number_of(name)}. {step.title}\n\n$$\n{i18n.tex(formula or step.formula)}\n$$\n\n"
            f"**{what_word}** {what or step.what}  \n**{why_word}** {step.why}")


def grid(fig, *, key: str) -> None:
    """A grid chart, and next to it why its cells carry no numbers when they do not."""
    chart(fig, key=key)
    note = heatmap_panels.numbers_note(fig)
    if note:
        st.caption(lit(note))


def waiting() -> None:
    st.info(i18n.t("Waiting for valid input: fix the input with a warning sign and this step comes back."))


def shared_result(key: bytes):
    """A fragment's result, from the server's result cache: a fragment keeps its arguments for the
    session's lifetime, so it is given the key, never the result. Evicted meanwhile (another
    session's long sequence needed the room): the whole page runs again and computes it."""
    result = result_cache.result_of(key)
    if result is None:
        st.rerun()
    return result


class Section:
    """One Setup and its MHAResult as the workbench's sections draw them."""

    def __init__(self, current: Current, inputs: Inputs):
        self.current, self.inputs = current, inputs
        self.setup, self.result, self.problems = current.setup, current.result, current.problems
        self.sizes = inputs.sizes
        self.q_tokens, self.k_tokens = inputs.tokens, inputs.kv_tokens
        self.heads = [i18n.t("head {number}").format(number=i + 1) for i in range(self.sizes.n_heads)]
        self.large = inputs.large
        self.view = (StepView(self.setup, self.result, self.q_tokens, self.k_tokens, large=self.large,
                              language=i18n.language(), build=figure,
                              keep=this_run.keeper(st.session_state[this_run.RESULT_KEY]))
                     if self.result is not None else None)

    def viewed(self, **choices) -> StepView:
        """The page's view of the result, for the head or query chosen on the page."""
        return replace(self.view, **choices) if choices else self.view

    def problem(self, name: str) -> None:
        if name in self.problems:
            st.error(lit(self.problems[name]), icon=":material/warning:")

    def owner(self, name: str, head: int, group: int) -> str:
        """Whose matrix an editor holds: the query head's, or its key/value head's when they are grouped."""
        if name in ("w_q", "b_q") or self.sizes.groups == self.sizes.n_heads:
            return self.heads[head]
        return i18n.t("key/value head {number}").format(number=f"{group + 1:d}")

    def editor(self, name: str, head: int | None = None, boolean: bool = False,
               editable: bool = True) -> None:
        rows, columns = editor_labels.grid_labels(name, self.q_tokens, self.k_tokens, self.sizes)
        editor_widgets.editor_ui(name, rows, columns, head=head, boolean=boolean, editable=editable)


def plain_section(page: Section, name: str, charts) -> None:
    """A step with no editor or words of its own: its heading and its charts (if it has any)."""
    step_header(name)
    if page.view is None:
        return waiting()
    for key, fig in (charts(page.view) if charts is not None else {}).items():
        grid(fig, key=key)
