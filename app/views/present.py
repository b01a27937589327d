"""Presenter mode: one step per screen, in the course's order, readable from the back of a room.

A screen can first ask the room a forecast (the chapter's own Forecast box, or a question
generated from the live state) and show its result only after Reveal. The screen lives in
``selections["present_step"]``, so the address bar holds it with the state.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np
import streamlit as st

from app import (
    figure_layout,
    figure_spec,
    figures,
    frame,
    i18n,
    number_text,
    page_scripts,
    phone_css,
    questions,
    session_keys,
    state,
    widgets,
)
from app.figure_cache import figure
from app.safe import lit
from app.state import Current, Inputs
from app.step_charts import CHARTS, StepView
from app.step_text import drill_lines, parameter_terms, sizes_line
from app.style import LARGE_TYPE_CSS
from app.widgets import chart
from course.i18n import N_
from course.quiz import DrawnForecast, Question, drawn_forecast, forecast
from course.steps import SCREENS, STEPS
from mha_core.derive import cost_of

# Everything on a screen fits a projector's 1280 x 720 without scrolling (tests/app/test_present_fit.py):
# text of 20 px with tight lines, formulas of 24 px, little padding and small gaps between elements.
PRESENTER_CSS = """<style>
/* Two invisible elements (this style, the scroll frame) first, then the header row below the app's bar */
[data-testid="stMain"] .block-container { padding-top: 2.85rem; padding-bottom: 0.5rem; }
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
[data-testid="stMain"] [data-testid="stVerticalBlockBorderWrapper"] > div { padding: 0.6rem 0.8rem; }
</style>"""
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
# The heading between Back and Next: its column measures about 825 px at 1280 px, and a character of
# its 28.8-px type about 12 px on average (German's screen 4 wraps after 58 of its 73 characters); a
# margin keeps the estimate on the safe side. A second line takes HEADING_LINE_PX from the charts.
HEADING_PX = 780
HEADING_CHAR_PX = 12.1
HEADING_LINE_PX = 35
WORKED_LINE_PX = 66  # a worked formula line under the pickers
CAPTION_PX = 34  # a line of text
TABLE_PX = 40  # "Numbers as a table" under every chart (app/widgets.chart), closed, and its gap
# A phone scrolls: a student following on one gets each chart up to this tall, not the projector's
# share of 720 px (the Concat chart was 12-px rows with no numbers).
PHONE_CHART_PX = 900
SHOWN_TERMS = 3  # the largest terms of a weighted sum written out
STEP_KEY = "present_step"
TO_THE_TOP = "present_to_the_top"
REVEALED = state.REVEALED  # (screen, question prompt) the room has seen the answer to
# The screen of the softmax weights: the room can draw a head's row there first.
SOFTMAX_SCREEN = next(i for i, screen in enumerate(SCREENS) if screen.key == "softmax")


# The session keys this module owns (app/session_keys.py).
session_keys.register(*(session_keys.Key(name, "present") for name in ("present_source", TO_THE_TOP)))


def screen_number() -> int:
    """The screen shown, from 0; a link's out-of-range step is clamped to the nearest screen."""
    selections = st.session_state.selections
    position = int(np.clip(selections.get(STEP_KEY, 0), 0, len(SCREENS) - 1))
    if position != selections.get(STEP_KEY, 0):
        st.caption(i18n.t("The link asked for a step this lesson does not have; showing step {step}.")
                   .format(step=f"{position + 1:d}"))
    selections[STEP_KEY] = position
    return position


def start_again_on_a_new_example() -> None:
    """A new example, or a new draw of "random", starts its lesson on screen 1 (edits do not)."""
    ss = st.session_state
    source = (ss.get("origin"), ss.get("origin_seed"))
    if ss.get("present_source") not in (None, source):
        ss.selections[STEP_KEY] = 0
        ss.pop(REVEALED, None)
    ss.present_source = source


def go(delta: int) -> None:
    selections = st.session_state.selections
    selections[STEP_KEY] = int(np.clip(selections.get(STEP_KEY, 0) + delta, 0, len(SCREENS) - 1))
    st.session_state.pop(REVEALED, None)  # a screen met again asks its question again
    st.session_state[TO_THE_TOP] = True  # a new screen starts at its top


def reveal(screen: int, question: Question) -> None:
    """Show the answer, and the result drawn for the head and query the question was about."""
    st.session_state[REVEALED] = (screen, question.prompt)
    questions.reveal_asked(screen)  # the room's question asked from this screen is revealed with it
    if question.cell is not None:
        head, query, _ = question.cell
        st.session_state.selections.update(shown_head=head, focus_query=query)


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
    if current.result is None or inputs.sizes is None:
        st.warning(i18n.t("An input is at fault: fix the one with a warning sign on the workbench (nothing "
                          "you typed is lost), and the lesson carries on here."), icon=":material/warning:")
        return
    draw = Draw(current, inputs)
    draw.formula(screen)
    question = forecast_for(lesson, current, screen)
    charts, words = st.columns([3, 2], gap="medium")
    with words:
        if screen == 0:
            title_card(example, current)
        revealed = question is None or ask(screen, question, drawings(current, question, screen))
        where_the_point_is(lesson, screen, shown=revealed)  # after Reveal: it may answer the forecast
        if question is None or not revealed:
            draw.why(screen)  # once revealed, the answer's own explanation takes its room
    with charts:
        room = questions.asked_here(screen)  # the room's answers where the result will be
        if room and (not revealed or room_view() == ROOM_ANSWERS):
            questions.presenter_panel(partial(reveal, screen, question) if question is not None else None)
        elif revealed:
            draw.screen(screen, above=SELECTORS_PX if room else 0)
        else:
            st.info(i18n.t("The result appears here after **Reveal**: first, let the room forecast."),
                    icon=":material/psychology_alt:")


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
    back.button("◀ " + i18n.t("Back"), key="present_back", on_click=go, args=(-1,),
                disabled=screen == 0 or led, use_container_width=True)
    title.markdown(f"### {screen_heading(screen)}")
    forward.button(i18n.t("Next") + " ▶", key="present_next", on_click=go, args=(1,), type="primary",
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
            if lesson.forecast or lesson.screen > 1:
                st.markdown(i18n.t("**What to look for:** on screen {screen}, after the room's forecast.")
                            .format(screen=f"{lesson.screen:d}"))
            else:
                point = lit(i18n.t(lesson.look_for))
                st.markdown(i18n.t("**What to look for:** {point}").format(point=point))


def where_the_point_is(lesson, screen: int, *, shown: bool) -> None:
    """The lesson's point on its screen once the screen's forecast is revealed; elsewhere, where it is."""
    if lesson is None:
        return
    if lesson.screen == screen + 1:
        if shown:
            point = lit(i18n.t(lesson.look_for))
            st.success(i18n.t("**The point is on this screen:** {point}").format(point=point),
                       icon=":material/my_location:")
    elif screen > 0:
        st.caption(i18n.t("This example's point appears on screen {screen}.")
                   .format(screen=f"{lesson.screen:d}"))


def forecast_for(lesson, current: Current, screen: int) -> Question | None:
    """The chapter's Forecast box on the screen of its point, else one made from the live state."""
    if lesson is not None and lesson.forecast and lesson.screen == screen + 1:
        whose = (i18n.t("The chapter's own forecast.") if lesson.from_chapter
                 else i18n.t("This example's own forecast: it goes beyond the chapters."))
        return Question(kind="chapter", prompt=i18n.t(lesson.forecast), answer=i18n.t(lesson.forecast_answer),
                        step=SCREENS[screen].step, explanation=whose)
    if screen == 0:
        return None
    return forecast(current.setup, current.result, SCREENS[screen].step, seed=screen,
                    idea=SCREENS[screen].idea, language=i18n.language())


def drawings(current: Current, question: Question | None, screen: int) -> tuple:
    """The forecasts the room can draw on this screen: (one head's row, its whole grid or None)."""
    if screen != SOFTMAX_SCREEN:
        return None, None
    selections = st.session_state.selections
    head, query = (question.cell[:2] if question is not None and question.cell is not None
                   else (selections.get("shown_head", 0), selections.get("focus_query", 0)))
    return (drawn_forecast(current.setup, current.result, head, query, language=i18n.language()),
            drawn_forecast(current.setup, current.result, head, language=i18n.language()))


def ask(screen: int, question: Question, drawn: tuple[DrawnForecast | None, DrawnForecast | None]) -> bool:
    """The forecast box; True once the room has seen the answer (then the result is drawn).
    The teacher of a room can ask it to the room, or have the room draw a head's row (drawn)."""
    led = widgets.following()  # the teacher's Reveal reveals it here too (app/live.py)
    revealed = st.session_state.get(REVEALED) == (screen, question.prompt) or (
        led and st.session_state.get("room_revealed") == screen)
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
        else:
            st.button(i18n.t("Reveal"), key="present_reveal", on_click=reveal, args=(screen, question),
                      type="primary", disabled=led)
            if question.kind != "chapter":  # generated from the live state: it can be marked
                questions.ask_button(question, key="present_ask", screen=screen)
            questions.draw_button(*drawn, screen=screen)
    return revealed



class Draw:
    """Each screen's charts, large, for one head and one query at a time."""

    def __init__(self, current: Current, inputs: Inputs):
        self.setup, self.r = current.setup, current.result
        self.sizes = inputs.sizes
        self.q_tokens, self.k_tokens = inputs.tokens, inputs.kv_tokens
        self.heads = [i18n.t("head {number}").format(number=i + 1) for i in range(self.sizes.n_heads)]
        self.room = CHARTS_PX  # px the charts' column has for this screen's charts (see screen)
        self.view = StepView(self.setup, self.r, self.q_tokens, self.k_tokens, language=i18n.language())

    def charts(self, number: int, budget: int, *, width: int = CHART_WIDTH, head: int | None = None,
               **choices):
        """Step ``number``'s charts (app/step_charts.py, as the workbench draws them), each fitted into
        ``budget`` px of the projector; for one head, or the heads in ``choices['shown']``."""
        return CHARTS[number](self.fitted_view(budget, width=width, head=head, **choices))

    def fitted_view(self, budget: int, *, width: int = CHART_WIDTH, head: int | None = None,
                    **choices) -> StepView:
        """The step charts' view for the projector: charts fitted into ``budget`` px, of one head."""
        if head is not None:
            choices.update(head=head, shown=(head,))
        return replace(self.view, build=partial(fit, budget=budget, width=width), **choices)

    def screen(self, screen: int, *, above: int = 0) -> None:
        """Screen ``screen``'s charts in the room left by ``above`` px of other things above them."""
        self.room = CHARTS_PX - above - HEADING_LINE_PX * (heading_lines(screen_heading(screen)) - 1)
        getattr(self, SCREENS[screen].key)()  # each screen of the registry is drawn by its key

    def formula(self, screen: int) -> None:
        """The screen's formula, across the page (the cost screen's formula is its result)."""
        key = SCREENS[screen].key
        if key == "softmax":
            scaling = self.setup.scaling.latex(self.sizes.d_k)
            st.latex(i18n.tex(r"A_i = \operatorname{softmax}\!\left(" + scaling + r"\right)"))
        elif key == "split":
            sz = self.sizes
            st.latex(i18n.tex(rf"d_k = {sz.d_k:d},\quad h = {sz.n_heads:d},\quad "
                     rf"h \times d_k = {sz.n_heads * sz.d_k:d}"))
        elif key != "cost":
            st.latex(i18n.tex(STEPS[SCREENS[screen].step].formula))

    def why(self, screen: int) -> None:
        why_word = i18n.t("Why.")
        if SCREENS[screen].why:  # the screen's own (the registry's text, like the step's)
            st.markdown(f"**{why_word}** {i18n.screen(screen).why}")
        else:
            st.markdown(f"**{why_word}** {i18n.step(SCREENS[screen].step).why}")

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
        return widgets.choice_ui(where, i18n.t("query token"), state.row_labels(self.q_tokens), "focus_query",
                                 default=default, label_visibility="collapsed")

    def arrows(self):
        chart(self.charts(1, self.room)["chart_x"], key="present_x")

    def qkv(self):
        head, _ = self.pickers(query=False)
        chart(self.charts(2, self.room - SELECTORS_PX, head=head)["chart_qkv"], key="present_qkv")

    def dot_product(self):
        head, query = self.pickers()
        key = int(np.argmax(self.r.scores[head, query]))  # the best-aligned key: a bright beam
        st.latex(i18n.tex(drill_lines(self.r, head, query, key)[0]))
        against = i18n.t("Query {query} · {query_token} against key {key} · {key_token}, its highest score "
                         "in head {head}.")
        st.caption(against.format(query=f"{query + 1:d}", query_token=lit(self.q_tokens[query]),
                                  key=f"{key + 1:d}", key_token=lit(self.k_tokens[key]),
                                  head=f"{head + 1:d}"))
        budget = self.room - SELECTORS_PX - WORKED_LINE_PX - CAPTION_PX
        chart(self.charts(3, budget, head=head)["chart_scores"], key="present_scores")

    def softmax(self):
        """The scaled scores and the weights of one head: stacked when both fit, else side by side."""
        head, query = self.pickers()
        key = int(np.argmax(self.r.weights[head, query]))
        st.latex(i18n.tex(drill_lines(self.r, head, query, key)[-1]))
        room = self.room - SELECTORS_PX - WORKED_LINE_PX
        keys = {"chart_scaled": "present_scaled", "chart_weights": "present_weights"}
        stacked = self.charts(4, room // 2, head=head)
        fits = sum(stacked[key]["layout"]["height"] + TABLE_PX for key in keys) <= room
        side_by_side = self.charts(4, room, width=CHART_WIDTH // 2, head=head)
        if fits and (not numbers_off(stacked, keys) or numbers_off(side_by_side, keys)):  # built if asked
            for key, key_ in keys.items():  # stacked, unless side by side the cells keep their numbers
                chart(stacked[key], key=key_)
            return
        for column, (key, key_) in zip(st.columns(2), keys.items(), strict=True):
            with column:
                chart(side_by_side[key], key=key_)

    def weighted_sum(self):
        head, query = self.pickers()
        weights, values = self.r.weights[head, query], self.r.v[head]  # [n_k], [n_k, d_v]
        shown = np.argsort(-weights, kind="stable")[:SHOWN_TERMS]
        terms = " + ".join(rf"{_tex_number(weights[k])}\,v_{{{k + 1}}}" for k in sorted(shown))
        more = r" + \dots" if len(weights) > len(shown) else ""
        st.latex(i18n.tex(rf"\text{{head}}_{{{head + 1}}}[{query + 1}] = {terms}{more}"))
        blend = (i18n.t("Row {query} · {token} of head {head} blends the value rows by its weights (the "
                        "largest shown); V has {rows} rows of {columns}.") if more else
                 i18n.t("Row {query} · {token} of head {head} blends the value rows by its weights (all "
                        "shown); V has {rows} rows of {columns}."))
        st.caption(blend.format(query=f"{query + 1:d}", token=lit(self.q_tokens[query]), head=f"{head + 1:d}",
                                rows=f"{values.shape[0]:d}", columns=f"{values.shape[1]:d}"))
        budget = self.room - SELECTORS_PX - WORKED_LINE_PX - 2 * CAPTION_PX
        chart(self.charts(5, budget, head=head)["chart_heads"], key="present_head_output")

    def split(self):
        sz, cost = self.sizes, cost_of(self.sizes)
        if sz.n_heads == 1:
            st.markdown(i18n.t("**One head** of width {d_k}: {flops} FLOPs. With h heads of width d_k / h "
                               "the work would stay the same, with h viewpoints.")
                        .format(d_k=f"{sz.d_k:d}", flops=i18n.number(cost.flops)))
        else:
            st.markdown(i18n.t("**Why narrow slices?** {h} heads of width {d_k} cost {flops} FLOPs; one head "
                               "of width {width} would cost {wide}. Same work, {h} viewpoints.")
                        .format(h=f"{sz.n_heads:d}", d_k=f"{sz.d_k:d}", flops=i18n.number(cost.flops),
                                width=f"{sz.n_heads * sz.d_k:d}",
                                wide=i18n.number(cost.one_wide_head_flops)))
        budget = self.room - 2 * CAPTION_PX
        heads = range(sz.n_heads)
        fig = self.all_heads(heads, budget)
        if fig["layout"]["height"] + TABLE_PX > budget and sz.n_heads > figure_layout.MAX_PER_ROW:
            heads = self.head_page()  # one row of heads at a time: two (or more) screens, no scrolling
            fig = self.all_heads(heads, budget - SELECTORS_PX)
        chart(fig, key="present_all_heads")

    def all_heads(self, heads: range, budget: int):
        """Every head's weights side by side (titles short enough for a row of four at 20 px)."""
        return self.charts(4, budget, shown=tuple(heads), kv_in_titles=False)["chart_weights"]

    def head_page(self) -> range:
        """A pager over the heads, MAX_PER_ROW at a time: the heads shown."""
        per, h = figure_layout.MAX_PER_ROW, self.sizes.n_heads
        pages = [range(start, min(start + per, h)) for start in range(0, h, per)]
        labels = [i18n.t("heads {first}–{last}").format(first=f"{page.start + 1:d}", last=f"{page.stop:d}")
                  if len(page) > 1 else self.heads[page.start] for page in pages]
        chosen = st.segmented_control(i18n.t("Heads shown"), labels, key="present_head_page",
                                      default=labels[0], required=True, label_visibility="collapsed",
                                      format_func=lit)
        return pages[labels.index(chosen) if chosen in labels else 0]

    def disagreement(self):
        query = self.query(st)
        budget = self.room - SELECTORS_PX - 2 * CAPTION_PX
        view = self.fitted_view(budget, query=query)  # step 6's derivation, as the workbench's (metric L2)
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
        chart(CHARTS[6](view)["chart_heads_row"], key="present_heads_row")

    def concatenate(self):
        """The concatenation, then the output next to the input X (one scale: they have one width)."""
        sz, r = self.sizes, self.r
        room = self.room - CAPTION_PX  # two charts' tables: a little more air than one
        concat = self.charts(7, room // 2)["chart_concat"]
        chart(concat, key="present_concat")
        budget = room - concat["layout"]["height"] - TABLE_PX
        pair = self.charts(8, budget)["chart_output"]
        small = max(r.output.shape) <= figure_layout.NUMBERS_UP_TO  # its numbers are drawn when they fit
        if small and figures.numbers_note(pair):  # side by side they do not: the output alone
            title = i18n.t("{output}: the input's shape (X: screen 1)").format(
                output=figures.shape_title(i18n.t("output"), r.output.shape))
            pair = fitted(figures.matrix_heatmap, r.output, self.q_tokens, figures.dims("d", sz.d_model),
                          budget=budget, title=title)
        chart(pair, key="present_output")

    def cost(self):
        sz, cost = self.sizes, cost_of(self.sizes)
        d = sz.d_model
        st.latex(i18n.tex(parameter_terms(sz)))
        if cost.four_d_squared:
            st.markdown(i18n.t("With h · d_k = d_model that is **4 · {d}² = {total}**, whatever h is: more "
                               "heads split the same parameters into more viewpoints.")
                        .format(d=f"{d:d}", total=i18n.number(4 * d * d)))
        st.markdown(sizes_line(sz))
        st.markdown(i18n.t("**Work of attention** for {n_q} × {n_k} tokens: {flops} FLOPs (scores and blends "
                           "of all heads); it grows with n², so long sentences cost most here.")
                    .format(n_q=f"{sz.n_q:d}", n_k=f"{sz.n_k:d}", flops=i18n.number(cost.flops)))


def numbers_off(charts, keys) -> bool:
    """Whether any of these charts leaves its cells' numbers off (figures.numbers_note says why)."""
    return any(figures.numbers_note(charts[key]) for key in keys)


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


def _tex_number(value: float) -> str:
    """A weight for LaTeX: '0.67', '2.1e-9', '(1 - 4.1e-9)' (bracketed: it multiplies a value)."""
    text = number_text.format_number(float(value), near_one=True).replace("−", "-")
    text = text.replace("e-", r"\mathrm{e}{-}")
    return f"({text})" if " " in text else text
