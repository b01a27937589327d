"""Presenter mode: one step per screen, in the course's order, readable from the back of a room.

A screen can first ask the room a forecast (the chapter's own Forecast box, or a question
generated from the live state) and show its result only after Reveal. The screen lives in
``selections["present_step"]``, so the address bar holds it with the state.
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np
import streamlit as st

from app import frame, i18n, setting_fixes, widgets
from app.adapter import page_scripts
from app.room import live, questions
from app.safe import lit
from app.session import session_keys, state
from app.session.this_run import Current, Inputs
from app.steps.drawing import drawing_of
from app.steps.projector import CHARTS_PX, SELECTORS_PX, Projector
from app.style import LARGE_TYPE_CSS
from app.widgets import chart
from course.i18n import N_
from course.quiz import DrawnForecast, Question, drawn_forecast, forecast
from course.steps import SCREENS, STEPS, screen_position, seed_of

# Everything on a screen fits a projector's 1280 x 720 without scrolling (tests/app/test_present_fit.py):
# text of 20 px with tight lines, formulas of 24 px, little padding and small gaps between elements.
PRESENTER_CSS = """<style>
/* The header row just below the app's bar (app/style.py's HEADER_HEIGHT, 3.75rem) */
[data-testid="stMain"] .block-container { padding-top: 3.95rem; padding-bottom: 0.5rem; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.55rem; }
[data-testid="stMain"] h3 { padding: 0; font-size: 1.8rem; line-height: 1.2; }
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li { font-size: 1.25rem; line-height: 1.38; }
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p { margin-bottom: 0.35rem; }
[data-testid="stMain"] [data-testid="stMarkdownContainer"] { margin-bottom: -0.35rem; }  /* the last one's */
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 1.15rem; line-height: 1.35; }
[data-testid="stMain"] .katex { font-size: 1.1em; }  /* inline: 22 px in 20-px text */
[data-testid="stMain"] .katex-display { margin: 0 0 0.35rem; padding: 0.1em 0 0.2em; }
[data-testid="stMain"] .katex-display .katex { font-size: 1.5em; }  /* a formula: 24 px */
[data-testid="stMain"] [data-testid="stSelectbox"] * { font-size: 1.25rem; }  /* the chosen query, legible */
[data-testid="stMain"] [data-testid="stAlert"] { padding: 0.5rem 0.75rem; }
</style>"""
# The heading between Back and Next: its column measures about 825 px at 1280 px, and a character of
# its 28.8-px type about 12 px on average (German's screen 4 wraps after 58 of its 73 characters); a
# margin keeps the estimate on the safe side. A second line takes HEADING_LINE_PX from the charts.
HEADING_PX = 780
HEADING_CHAR_PX = 12.1
HEADING_LINE_PX = 35
STEP_KEY = "present_step"
TO_THE_TOP = "present_to_the_top"
REVEALED = state.REVEALED  # (screen, question prompt) the room has seen the answer to


# The session keys this module owns (app/session/session_keys.py).
PRESENT_SOURCE = "present_source"
session_keys.register(*(session_keys.Key(name, __name__) for name in (PRESENT_SOURCE, TO_THE_TOP)))


def screen_number() -> int:
    """The screen shown, from 0; a link's out-of-range step is clamped to the nearest screen."""
    selections = st.session_state[state.SELECTIONS]
    position = int(np.clip(selections.get(STEP_KEY, 0), 0, len(SCREENS) - 1))
    if position != selections.get(STEP_KEY, 0):
        st.caption(i18n.t("The link asked for a step this lesson does not have; showing step {step}.")
                   .format(step=f"{position + 1:d}"))
    selections[STEP_KEY] = position
    return position


def start_again_on_a_new_example() -> None:
    """A new example, or a new draw of "random", starts its lesson on screen 1 (edits do not)."""
    ss = st.session_state
    source = (ss.get(state.ORIGIN), ss.get(state.ORIGIN_SEED))
    if ss.get("present_source") not in (None, source):
        ss[state.SELECTIONS][STEP_KEY] = 0
        ss.pop(REVEALED, None)
    ss.present_source = source


def go(delta: int) -> None:
    selections = st.session_state[state.SELECTIONS]
    selections[STEP_KEY] = int(np.clip(selections.get(STEP_KEY, 0) + delta, 0, len(SCREENS) - 1))
    st.session_state.pop(REVEALED, None)  # a screen met again asks its question again
    st.session_state[TO_THE_TOP] = True  # a new screen starts at its top


def as_the_room_left_it(screen: int, question: Question | None, drawn: tuple) -> None:
    """A teacher who took the lead again (a reload, another device) finds the screen as the room
    left it: the question asked from it, with its answers, and its Reveal (issue 40, 1)."""
    if not live.is_teacher() or question is None:
        return
    questions.resume(screen, question, *drawn)
    if st.session_state.pop(live.ROOM_REVEALED, None) == screen:
        st.session_state[REVEALED] = (screen, question.prompt)


def reveal(screen: int, question: Question) -> None:
    """Show the answer, and the result drawn for the head and query the question was about."""
    st.session_state[REVEALED] = (screen, question.prompt)
    questions.reveal_asked(screen)  # the room's question asked from this screen is revealed with it
    if question.cell is not None:
        head, query, _ = question.cell
        st.session_state[state.SELECTIONS].update(shown_head=head, focus_query=query)


def render(current: Current, inputs: Inputs) -> None:
    st.set_page_config(initial_sidebar_state="collapsed")  # the room sees the lesson, not the controls
    st.html(LARGE_TYPE_CSS + PRESENTER_CSS)
    start_again_on_a_new_example()
    frame.link_notes()  # a link's step that names no screen, say
    screen = screen_number()
    header(screen)
    new_screen = st.session_state.pop(TO_THE_TOP, False)
    page_scripts.scroll_to_top("present_to_the_top_script", now=new_screen)  # drawn always: places kept
    example = state.examples().get(current.base.origin) if current.base is not None else None
    lesson = example.lesson if example is not None and not current.edited else None
    if inputs.sizes is None:
        setting_fixes.refusal_ui(inputs.errors, current.base.tokens if current.base is not None else (),
                                 following=widgets.following())
        return
    if current.result is None:
        st.warning(i18n.t("An input is at fault: fix the one with a warning sign on the workbench (nothing "
                          "you typed is lost), and the lesson carries on here."), icon=":material/warning:")
        return
    projector = Projector(current, inputs)
    formula(projector, screen)
    question = forecast_for(lesson, current, screen)
    drawn = drawings(current, question, screen) if question is not None else (None, None)
    as_the_room_left_it(screen, question, drawn)
    charts, words = st.columns([3, 2], gap="medium")
    room = questions.asked_here(screen)  # the room's answers where the result will be
    with words:
        if screen == 0:
            title_card(example, current)
        revealed = question is None or ask(screen, question, drawn, asked=room)
        where_the_point_is(lesson, screen, shown=revealed)  # after Reveal: it may answer the forecast
        if question is None or (room and not revealed):
            why(screen)  # once revealed, the answer's own explanation takes its room
    with charts:
        if room and (not revealed or room_view() == ROOM_ANSWERS):
            questions.presenter_panel(reveal_button=False)  # the forecast box's Reveal reveals both
        elif revealed:
            projector.asked = question.cell if question is not None else None  # its working shows that pair
            draw_screen(projector, screen, above=SELECTORS_PX if room else 0)
        else:  # the result's room is free until Reveal: the screen's why is read there meanwhile
            st.info(i18n.t("The result appears here after **Reveal**: first, let the room forecast."),
                    icon=":material/psychology_alt:")
            why(screen)


ROOM_ANSWERS, RESULT = "The room's answers", "The result"
ROOM_VIEWS = {"The result": N_("The result"), "The room's answers": N_("The room's answers")}  # their labels


def room_view() -> str:
    """Once revealed, the room's answers or the screen's result: one at a time, so each fits the screen."""
    return st.segmented_control(i18n.t("Show"), [RESULT, ROOM_ANSWERS], key="present_room_view",
                                default=RESULT, required=True, label_visibility="collapsed",
                                format_func=i18n.labels(ROOM_VIEWS)) or RESULT


def screen_heading(screen: int) -> str:
    return f"{screen + 1} / {len(SCREENS)} · {i18n.screen(screen).title}"


def heading_lines(heading: str) -> int:
    """The lines a screen's heading takes between Back and Next at 1280 px (a long German or French
    title takes two, and the charts get that much less room)."""
    wide = sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in heading)
    return max(1, math.ceil(wide * HEADING_CHAR_PX / HEADING_PX))


def header(screen: int) -> None:
    """Back, the screen's number and title, Next: one row (a student following a room is led by
    the teacher: "Explore on my own" in the sidebar gives the buttons back)."""
    led = widgets.following()
    back, title, forward = st.columns([1, 6, 1], vertical_alignment="center")
    back.button(i18n.t("Back"), key="present_back", on_click=go, args=(-1,), icon=":material/arrow_back:",
                disabled=screen == 0 or led, use_container_width=True)
    title.markdown(f"### {screen_heading(screen)}")
    forward.button(i18n.t("Next"), key="present_next", on_click=go, args=(1,), type="primary",
                   icon=":material/arrow_forward:", icon_position="right",
                   disabled=screen == len(SCREENS) - 1 or led, use_container_width=True)


def title_card(example, current: Current) -> None:
    """The first screen: which example, what it teaches, what to look for (where it is, when the
    lesson's point answers a forecast asked on its screen)."""
    with st.container(border=True):
        if example is None:
            st.markdown(i18n.t("**Your own setup**: every number on these screens is computed from it."))
            return
        edited = widgets.whose_edit() if current.edited else ""
        st.markdown(f"**{lit(i18n.t(example.title))}**{lit(edited)}  \n{lit(i18n.t(example.story))}")
        lesson = example.lesson
        if lesson is not None and not current.edited:
            if lesson.forecast or point_screen(lesson) > 0:
                st.markdown(i18n.t("**What to look for:** on screen {screen}, after the room's forecast.")
                            .format(screen=f"{point_screen(lesson) + 1:d}"))
            else:
                point = lit(i18n.t(lesson.look_for))
                st.markdown(i18n.t("**What to look for:** {point}").format(point=point))


def point_screen(lesson) -> int:
    """The position of the screen where a lesson's point appears (it names the screen)."""
    return screen_position(lesson.screen)


def where_the_point_is(lesson, screen: int, *, shown: bool) -> None:
    """The lesson's point on its screen once the screen's forecast is revealed; elsewhere, where it is."""
    if lesson is None:
        return
    if point_screen(lesson) == screen:
        if shown:
            point = lit(i18n.t(lesson.look_for))
            st.success(i18n.t("**The point is on this screen:** {point}").format(point=point),
                       icon=":material/my_location:")
    elif screen > 0:
        st.caption(i18n.t("This example's point appears on screen {screen}.")
                   .format(screen=f"{point_screen(lesson) + 1:d}"))


def forecast_for(lesson, current: Current, screen: int) -> Question | None:
    """The chapter's Forecast box on the screen of its point, else one made from the live state."""
    if lesson is not None and lesson.forecast and point_screen(lesson) == screen:
        whose = (i18n.t("The chapter's own forecast.") if lesson.from_chapter
                 else i18n.t("This example's own forecast: it goes beyond the chapters."))
        return Question(kind=questions.CHAPTER, prompt=i18n.t(lesson.forecast),
                        answer=i18n.t(lesson.forecast_answer), step=SCREENS[screen].step, explanation=whose)
    if screen == 0:
        return None
    return forecast(current.setup, current.result, SCREENS[screen].step,
                    seed=seed_of(SCREENS[screen].key),  # by its name: a step added in front moves none
                    idea=SCREENS[screen].idea, language=i18n.language())


def drawings(current: Current, question: Question | None, screen: int) -> tuple:
    """The forecasts the room can draw on this screen: (one head's row, its whole grid or None)."""
    if SCREENS[screen].key != "softmax":  # the screen of the weights: the room can draw a row first
        return None, None
    selections = st.session_state[state.SELECTIONS]
    head, query = (question.cell[:2] if question is not None and question.cell is not None
                   else (selections.get("shown_head", 0), selections.get("focus_query", 0)))
    return (drawn_forecast(current.setup, current.result, head, query, language=i18n.language()),
            drawn_forecast(current.setup, current.result, head, language=i18n.language()))


def ask(screen: int, question: Question, drawn: tuple[DrawnForecast | None, DrawnForecast | None], *,
        asked: bool = False) -> bool:
    """The forecast box; True once the room has seen the answer (then the result is drawn).
    The teacher of a room can ask it to the room, or have the room draw a head's row (drawn), until
    the room is asked from here (``asked``: its answers arrive, the one Reveal reveals both)."""
    led = widgets.following()  # the teacher's Reveal reveals it here too (app/room/room_box.py)
    revealed = st.session_state.get(REVEALED) == (screen, question.prompt) or (
        led and st.session_state.get(live.ROOM_REVEALED) == screen)
    forecast_word = i18n.t("Forecast.")
    answer_word = i18n.t("Answer:")
    with st.container(border=True):
        st.markdown(f"**{forecast_word}** {lit(question.prompt)}")
        if question.choices and not revealed:
            options = (f"**{lit(chr(65 + i))}** {lit(choice)}" for i, choice in enumerate(question.choices))
            st.markdown("  ·  ".join(options))
        if revealed:
            st.markdown(f"**{answer_word}** {lit(question.answer_text)}")
            if question.explanation:
                st.caption(question.explanation)
        else:  # one row of buttons (a second row ran German's softmax screen past 720 px)
            buttons = st.container(horizontal=True, gap="small")
            buttons.button(i18n.t("Reveal"), key="present_reveal", on_click=reveal, args=(screen, question),
                           type="primary", disabled=led)
            if not asked:
                with buttons:  # a chapter's own forecast is asked as a poll: its answer is words
                    questions.ask_button(question, key="present_ask", screen=screen)
                questions.draw_button(*drawn, screen=screen)
    return revealed



def draw_screen(projector: Projector, screen: int, *, above: int = 0) -> None:
    """Screen ``screen``'s charts in the room left by ``above`` px of other things above them: its
    step's drawing of it (app/steps/<step>.py), or else its step's charts, each fitted."""
    projector.room = CHARTS_PX - above - HEADING_LINE_PX * (heading_lines(screen_heading(screen)) - 1)
    drawing = drawing_of(SCREENS[screen].step)
    drawn = drawing.screens.get(SCREENS[screen].key)
    if drawn is not None:
        drawn.draw(projector)
    elif drawing.charts is not None:
        shares = len(drawing.charts(projector.view))  # the charts' keys: nothing is built yet
        for key, fig in projector.charts(drawing.charts, projector.room // max(shares, 1)).items():
            chart(fig, key=f"present_{key}")


def formula(projector: Projector, screen: int) -> None:
    """The screen's formula, across the page: its own (the cost screen's is its result: none), or its
    step's."""
    drawn = drawing_of(SCREENS[screen].step).screens.get(SCREENS[screen].key)
    if drawn is not None and drawn.formula is not None:
        drawn.formula(projector)
    else:
        st.latex(i18n.tex(STEPS[SCREENS[screen].step].formula))


def why(screen: int) -> None:
    why_word = i18n.t("Why.")
    if SCREENS[screen].why:  # the screen's own (the registry's text, like the step's)
        st.markdown(f"**{why_word}** {i18n.screen(screen).why}")
    else:
        st.markdown(f"**{why_word}** {i18n.step(SCREENS[screen].step).why}")
