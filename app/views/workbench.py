"""The workbench: every step of multi-head attention, in the order of the course.

``render(current, inputs)`` draws one Setup and its MHAResult: the example's story, then each step's
section (app/steps/<step>.py), then the drill-down; it reads nothing else but the editors' bases (to
draw them) and the selections (through widgets.choice_ui).
"""

from __future__ import annotations

import streamlit as st

from app import frame, i18n, phone_css, setting_fixes, setup_ui, widgets
from app.adapter import cell_opener
from app.adapter.fragments import fragment
from app.grids import editor_labels
from app.room import following
from app.safe import lit
from app.session import state, this_run
from app.session.this_run import Current, Inputs
from app.steps import embeddings
from app.steps.drawing import drawing_of
from app.steps.section import Section, plain_section, shared_result
from app.steps.step_text import drill_lines, sizes_line
from app.style import LARGE_TYPE_CSS
from app.views import compare
from course.i18n import N_
from course.steps import STEPS

PATH = "workbench"  # the page's address (app/streamlit_app.py)


def render(current: Current, inputs: Inputs) -> None:
    frame.link_notes()
    if inputs.sizes is None:
        setting_fixes.refusal_ui(inputs.errors, example_tokens(current), following=widgets.following())
        story(current)
        still_drawn(inputs)
        return
    setting_fixes.remember(inputs.sizes)
    frame.hand_over(current)
    steps(inputs, frame.mark(current))


@fragment
def steps(inputs: Inputs, mark: frame.Mark) -> None:
    """The steps, rerun alone by what happens among them (an edit of a grid, a head picked, a table
    opened): the frame's sidebar and inputs stay as the whole run drew them, so such a run costs
    the steps only. What the frame drew from the result changing (the first edit of an example, a
    link that no longer fits, another example opened by a button here) runs the whole page."""
    current = frame.taken()
    alone = current is None
    if alone:
        i18n.language.start()  # read once for this run, as the frame does for a whole one
        phone_css.column_width.start()
        current = this_run.build(inputs)
        following.publish(current, PATH)  # the class's pages run while this one draws (issue 40, 8)
        if frame.mark(current) != mark:
            st.rerun(scope="app")
    draw(current, inputs)
    if alone:
        frame.finish(current, PATH, whole=False)


def draw(current: Current, inputs: Inputs) -> None:
    if inputs.large:
        st.html(LARGE_TYPE_CSS)
    story(current)
    compare.render(current)
    for note in current.notes:
        st.info(lit(note), icon=":material/add_circle:")
    if current.error:
        st.error(i18n.t("The computation refused these inputs: {error}").format(error=lit(current.error)),
                 icon=":material/warning:")
    page = Section(current, inputs)
    for name in STEPS:  # the course's registry is the only list of steps, in the course's order
        drawing = drawing_of(name)  # app/steps/<name>.py
        if drawing.section is not None:
            drawing.section(page)
        else:
            plain_section(page, name, drawing.charts)
    drill_down_toggle(page)


def still_drawn(inputs: Inputs) -> None:
    """Under a refused setting, the steps it leaves whole: the sentence's grid X, while the query tokens
    and d_model stand (the heads, or the cells of h heads, at fault)."""
    if "tokens_text" in inputs.errors:
        return
    x = state.read("x")
    if x.bad or x.value.shape != (len(inputs.tokens), st.session_state[state.D_MODEL]):
        return
    embeddings.alone(inputs.tokens, x.value, inputs.large)


def example_tokens(current: Current) -> tuple[str, ...]:
    """The tokens of the example the page started from, for a fix of an emptied token box."""
    return current.base.tokens if current.base is not None else ()


def story(current: Current) -> None:
    """Which example is on screen, what it teaches, and the sizes and parameter count. Once edited, its
    words (which name the example's tokens and numbers) say they describe the example as given."""
    base = current.base
    example = state.examples().get(base.origin) if base is not None else None
    if example is not None:
        as_given = current.edited
        with st.container(border=True, key="example_story"):
            edited = widgets.whose_edit(below=True) if as_given else ""
            st.markdown(f"**{lit(i18n.t(example.title))}**{lit(edited)} · {lit(i18n.t(example.source))}")
            lesson = example.lesson
            point = lit(i18n.t(lesson.look_for)) if lesson is not None else None
            if as_given:  # the example's words, greyed as one caption: they are not the page's numbers
                look_for = "" if point is None else "  \n" + i18n.t(LOOK_FOR_AS_GIVEN).format(point=point)
                st.caption(i18n.t(AS_GIVEN) + "  \n" + lit(i18n.t(example.story)) + look_for)
                if not widgets.following():
                    setup_ui.reset_button(st, "reset_story")
            else:
                st.caption(lit(i18n.t(example.story)))
                if point is not None:
                    st.markdown(i18n.t(LOOK_FOR).format(point=point))
    if current.setup is not None:
        st.markdown(sizes_line(current.setup.sizes))


AS_GIVEN = N_("The words below describe the example as the chapter gives it, not the numbers on the page "
              "now.")
LOOK_FOR = N_("**What to look for:** {point}")
LOOK_FOR_AS_GIVEN = N_("**What to look for in the example as given:** {point}")


def drill_down_toggle(page: Section) -> None:
    """Below the steps: one (query, key) cell of one head, opened on request."""
    if page.result is None:
        return
    cell_opener.cell_opener_ui()  # Enter on a cell of the scores' or weights' tables opens it here
    # A toggle rather than an expander: a collapsed expander still builds its contents every run.
    if st.toggle(i18n.t("Drill down: one (query, key) cell of one head, with the live numbers"),
                 key="drill_open"):
        drill_down(st.session_state[this_run.RESULT_KEY], page.q_tokens, page.k_tokens, page.heads)


@fragment
def drill_down(key: bytes, q_tokens, k_tokens, heads) -> None:
    """The drill-down reruns alone when its head, query or key changes."""
    r = shared_result(key)
    with st.container(key="drill_down"):  # where a cell opened from a table puts the focus
        drill_down_body(r, q_tokens, k_tokens, heads)


def drill_down_body(r, q_tokens, k_tokens, heads) -> None:
    cols = st.columns(3)
    head = widgets.choice_ui(cols[0], i18n.t("head"), heads, "drill_head")
    query = widgets.choice_ui(cols[1], i18n.t("query"), editor_labels.row_labels(q_tokens), "drill_query")
    key = widgets.choice_ui(cols[2], i18n.t("key"), editor_labels.row_labels(k_tokens), "drill_key")
    for line in drill_lines(r, head, query, key):
        st.latex(i18n.tex(line))
    st.caption(i18n.t("The core computes exactly this fraction. When a score is large enough for e^s to "
                      "overflow, it first subtracts the row's largest score from every score, which leaves "
                      "the fraction unchanged."))
    following.sync_selection_params()
