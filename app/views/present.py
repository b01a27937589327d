"""Presenter mode: one step per screen, in the course's order, readable from the back of a room.

A screen can first ask the room a forecast (the chapter's own Forecast box, or a question
generated from the live state) and show its result only after Reveal. The screen lives in
``selections["present_step"]``, so the address bar holds it with the state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import streamlit as st

from app import figures, questions, state, widgets
from app.figure_cache import figure
from app.safe import lit
from app.state import Current
from app.steps import STEPS
from app.views.workbench import LARGE_TYPE_CSS, _sub, drill_lines, sizes_line
from app.widgets import Inputs, chart
from mha_core import attention_flops, count_parameters, normalised_entropy, pairwise_disagreement
from mha_core.analysis import FLAT_AT, most_disagreeing_pair
from mha_core.quiz import DrawnForecast, Question, drawn_forecast, forecast

PRESENTER_CSS = """<style>
[data-testid="stMain"] .block-container { padding-top: 4rem; }  /* just below the app's header bar */
[data-testid="stMain"] h3 { padding-top: 0; }
[data-testid="stMain"] .katex-display .katex { font-size: 1.25em; }  /* a worked line fits its column */
[data-testid="stMain"] [data-testid="stSelectbox"] * { font-size: 1.3rem; }  /* the chosen query, legible */
</style>"""
# The charts' column measures about 740 px at 1280 px with the sidebar collapsed. Figures are planned
# for a wider one: their own margin for a narrower column (figures.FIT_SLACK) is not needed here,
# and without it numbers of 20 px fit on the cells of a 7 x 8 grid.
CHART_WIDTH = 900
SHOWN_TERMS = 3  # the largest terms of a weighted sum written out
STEP_KEY = "present_step"
TO_THE_TOP = "present_to_the_top"
REVEALED = state.REVEALED  # (screen, question prompt) the room has seen the answer to
SOFTMAX_SCREEN = 3  # the screen of the softmax weights: the room can draw a head's row there first


@dataclass(frozen=True)
class Screen:
    title: str
    step: int  # the workbench step whose formula, what and why it shows (and whose forecast it asks)


SCREENS = (
    Screen("A sentence is a stack of arrows", 1),
    Screen("Three questions: Query, Key, Value", 2),
    Screen("One head, one dot product: how much do I care?", 3),
    Screen("Scale, then softmax: a fair split of attention", 4),
    Screen("Weighted sum of values: the head's answer", 5),
    Screen("Split into h heads: the same trick on narrow slices", 3),
    Screen("Do the heads disagree?", 6),
    Screen("Concatenate, then one final mix W_O", 7),
    Screen("What it costs: parameters and work", 7),
)

# Arrow keys and a presentation clicker's Page Up/Down press Back and Next. Unlike
# streamlit-shortcuts' listener (which calls preventDefault on every matching key before it looks
# for the button), this one leaves keys typed into a field alone and does nothing on other pages.
KEYS_SCRIPT = """<script>
const doc = window.parent.document;
const pressed = (event) => {
  const target = event.target;
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  const typing = ['INPUT', 'TEXTAREA', 'SELECT'].includes(target && target.tagName);
  if (typing || (target && target.isContentEditable)) return;
  const which = {ArrowRight: 'present_next', PageDown: 'present_next',
                 ArrowLeft: 'present_back', PageUp: 'present_back'}[event.key];
  const button = which && doc.querySelector(`.st-key-${which} button`);
  if (button && !button.disabled) { event.preventDefault(); button.click(); }
};
// One listener, owned by the newest frame: a removed frame's listener would stop working.
if (window.parent.__presenterKeys) doc.removeEventListener('keydown', window.parent.__presenterKeys);
window.parent.__presenterKeys = pressed;
doc.addEventListener('keydown', pressed);
</script>"""


def screen_number() -> int:
    """The screen shown, from 0; a link's out-of-range step is clamped to the nearest screen."""
    selections = st.session_state.selections
    position = int(np.clip(selections.get(STEP_KEY, 0), 0, len(SCREENS) - 1))
    if position != selections.get(STEP_KEY, 0):
        st.caption(f"The link asked for a step this lesson does not have; showing step {position + 1}.")
    selections[STEP_KEY] = position
    return position


def start_again_on_a_new_preset() -> None:
    """A new preset, or a new draw of "random", starts its lesson on screen 1 (edits do not)."""
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
    start_again_on_a_new_preset()
    screen = screen_number()
    header(screen)
    new_screen = st.session_state.pop(TO_THE_TOP, False)
    scroll = f"{widgets.SCROLL_TO_TOP}<!-- screen {screen} -->" if new_screen else ""  # one iframe per screen
    st.iframe(KEYS_SCRIPT + scroll, height=1)
    scenario = state.presets().get(current.base.origin) if current.base is not None else None
    lesson = scenario.lesson if scenario is not None and not current.edited else None
    if current.result is None or inputs.sizes is None:
        st.warning("An input is at fault: fix the one with a warning sign on the workbench (nothing you "
                   "typed is lost), and the lesson carries on here.", icon=":material/warning:")
        return
    draw = Draw(current, inputs)
    draw.formula(screen)
    charts, words = st.columns([2, 1], gap="medium")
    with words:
        if screen == 0:
            title_card(scenario, current)
        where_the_point_is(lesson, screen)
        question = forecast_for(lesson, current, screen)
        shown = question is None or ask(screen, question, drawings(current, question, screen))
        draw.why(screen)
    with charts:
        if questions.asked_here(screen):  # the room's answers where the result will be, wide enough to read
            questions.presenter_panel(partial(reveal, screen, question) if question is not None else None)
        if shown:
            draw.screen(screen)
        else:
            st.info("The result appears here after **Reveal**: first, let the room forecast.",
                    icon=":material/psychology_alt:")


def header(screen: int) -> None:
    """Back, the screen's number and title, Next: one row (a student following a room is led by
    the teacher: "Explore on my own" in the sidebar gives the buttons back)."""
    led = widgets.following()
    back, title, forward = st.columns([1, 6, 1], vertical_alignment="center")
    back.button("◀ Back", key="present_back", on_click=go, args=(-1,), disabled=screen == 0 or led,
                use_container_width=True)
    title.markdown(f"### {screen + 1} / {len(SCREENS)} · {SCREENS[screen].title}")
    forward.button("Next ▶", key="present_next", on_click=go, args=(1,), type="primary",
                   disabled=screen == len(SCREENS) - 1 or led, use_container_width=True)


def title_card(scenario, current: Current) -> None:
    """The first screen: which example, what it teaches, what to look for."""
    with st.container(border=True):
        if scenario is None:
            st.markdown("**Your own setup**: every number on these screens is computed from it.")
        else:
            edited = " (edited: the numbers are yours, not the chapter's)" if current.edited else ""
            st.markdown(f"**{lit(scenario.title)}**{edited}  \n{lit(scenario.story)}")
            if scenario.lesson is not None and not current.edited:
                st.markdown(f"**What to look for:** {lit(scenario.lesson.look_for)}")


def where_the_point_is(lesson, screen: int) -> None:
    if lesson is None:
        return
    if lesson.screen == screen + 1:
        st.success(f"**The point is on this screen:** {lit(lesson.look_for)}",
                   icon=":material/my_location:")
    elif screen > 0:
        st.caption(f"This example's point appears on screen {lesson.screen:d}.")


def forecast_for(lesson, current: Current, screen: int) -> Question | None:
    """The chapter's Forecast box on the screen of its point, else one made from the live state."""
    if lesson is not None and lesson.forecast and lesson.screen == screen + 1:
        return Question(kind="chapter", prompt=lesson.forecast, answer=lesson.forecast_answer,
                        step=SCREENS[screen].step, explanation="The chapter's own forecast.")
    if screen in (0, 8):
        return None
    return forecast(current.setup, current.result, SCREENS[screen].step, seed=screen)


def drawings(current: Current, question: Question | None, screen: int) -> tuple:
    """The forecasts the room can draw on this screen: (one head's row, its whole grid or None)."""
    if screen != SOFTMAX_SCREEN:
        return None, None
    selections = st.session_state.selections
    head, query = (question.cell[:2] if question is not None and question.cell is not None
                   else (selections.get("shown_head", 0), selections.get("focus_query", 0)))
    return (drawn_forecast(current.setup, current.result, head, query),
            drawn_forecast(current.setup, current.result, head))


def ask(screen: int, question: Question, drawn: tuple[DrawnForecast | None, DrawnForecast | None]) -> bool:
    """The forecast box; True once the room has seen the answer (then the result is drawn).
    The teacher of a room can ask it to the room, or have the room draw a head's row (drawn)."""
    led = widgets.following()  # the teacher's Reveal reveals it here too (app/live.py)
    revealed = st.session_state.get(REVEALED) == (screen, question.prompt) or (
        led and st.session_state.get("room_revealed") == screen)
    with st.container(border=True):
        st.markdown(f"**Forecast.** {lit(question.prompt)}")
        if question.choices and not revealed:
            options = (f"**{lit(chr(65 + i))}** {lit(choice)}" for i, choice in enumerate(question.choices))
            st.markdown("  ·  ".join(options))
        if revealed:
            st.markdown(f"**Answer:** {lit(question.answer_text)}")
            if question.explanation:
                st.caption(question.explanation)
        else:
            st.button("Reveal", key="present_reveal", on_click=reveal, args=(screen, question),
                      type="primary", disabled=led)
            if question.kind != "chapter":  # generated from the live state: it can be marked
                questions.ask_button(question, key="present_ask", screen=screen)
            questions.draw_button(*drawn, screen=screen)
    return revealed



SPLIT_WHY = ("Attention's cost grows like n² · d: h thin heads of width d_k cost what one head of width "
             "h · d_k costs, but give h viewpoints. Different W_i per head force different questions.")
COST_WHY = ("Each head has its own W_Q, W_K and W_V of d_model × d_k numbers; W_O maps the concatenation "
            "back to d_model. With h · d_k = d_model, that is 4 · d_model² whatever h is.")


class Draw:
    """Each screen's charts, large, for one head and one query at a time."""

    def __init__(self, current: Current, inputs: Inputs):
        self.setup, self.r = current.setup, current.result
        self.sizes = inputs.sizes
        self.q_tokens, self.k_tokens = inputs.tokens, inputs.kv_tokens
        self.heads = [f"head {i + 1}" for i in range(self.sizes.n_heads)]

    def screen(self, screen: int) -> None:
        (self.arrows, self.qkv, self.dot_product, self.softmax, self.weighted_sum, self.split,
         self.disagreement, self.concatenate, self.cost)[screen]()

    def formula(self, screen: int) -> None:
        """The screen's formula, across the page (the cost screen's formula is its result)."""
        step = SCREENS[screen].step
        if screen == 3:
            st.latex(r"A_i = \operatorname{softmax}\!\left(" + self.setup.scaling.latex(self.sizes.d_k)
                     + r"\right)")
        elif screen == 5:
            sz = self.sizes
            st.latex(rf"d_k = {sz.d_k:d},\quad h = {sz.n_heads:d},\quad "
                     rf"h \times d_k = {sz.n_heads * sz.d_k:d}")
        elif screen != 8:
            st.latex(STEPS[step].formula)

    def why(self, screen: int) -> None:
        step = SCREENS[screen].step
        why = SPLIT_WHY if screen == 5 else COST_WHY if screen == 8 else STEPS[step].why
        st.markdown(f"**Why.** {why}")

    def head(self) -> int:
        return widgets.choice_ui(st, "head", self.heads, "shown_head", segmented=True)

    def query(self) -> int:
        scenario = state.presets().get(self.setup.origin)
        default = min(getattr(scenario, "focus_query", 0), len(self.q_tokens) - 1)
        return widgets.choice_ui(st, "query token", state.row_labels(self.q_tokens), "focus_query",
                                 default=default)

    def one_head(self, values, head: int, kind: str, symbol: str, key: str, width: int = CHART_WIDTH) -> None:
        chart(figure("head_grids", values[head:head + 1], self.q_tokens, self.k_tokens, kind=kind,
                     mask=self.r.mask, large=True, width=width,
                     head_names=[figures.shape_title(f"{symbol} of head {head + 1}", values.shape[1:])]),
              key=key)

    def arrows(self):
        x = self.setup.x
        chart(figure("matrix_heatmap", x, self.q_tokens, figures.dims("d", self.sizes.d_model),
                     title=figures.shape_title("X", x.shape), large=True, width=CHART_WIDTH),
              key="present_x")

    def qkv(self):
        head = self.head()
        r = self.r
        titles = [figures.shape_title(f"{name} of head {head + 1}", a[head].shape)
                  for name, a in (("Q", r.q), ("K", r.k), ("V", r.v))]
        chart(figure("qkv_panels", r.q[head], r.k[head], r.v[head], self.q_tokens, self.k_tokens,
                     titles=titles, large=True, width=CHART_WIDTH), key="present_qkv")

    def dot_product(self):
        head, query = self.head(), self.query()
        key = int(np.argmax(self.r.scores[head, query]))  # the best-aligned key: a bright beam
        st.latex(drill_lines(self.r, head, query, key)[0])
        st.caption(f"Query {query + 1} · {lit(self.q_tokens[query])} against key {key + 1} · "
                   f"{lit(self.k_tokens[key])}, its highest score in head {head + 1}.")
        self.one_head(self.r.scores, head, "scores", "S", "present_scores")

    def softmax(self):
        head, query = self.head(), self.query()
        key = int(np.argmax(self.r.weights[head, query]))
        st.latex(drill_lines(self.r, head, query, key)[-1])
        self.one_head(self.r.scaled, head, "scores", "scaled", "present_scaled")
        self.one_head(self.r.weights, head, "weights", "A", "present_weights")

    def weighted_sum(self):
        head, query = self.head(), self.query()
        weights, values = self.r.weights[head, query], self.r.v[head]  # [n_k], [n_k, d_v]
        shown = np.argsort(-weights, kind="stable")[:SHOWN_TERMS]
        terms = " + ".join(rf"{_tex_number(weights[k])}\,v_{{{k + 1}}}" for k in sorted(shown))
        more = r" + \dots" if len(weights) > len(shown) else ""
        st.latex(rf"\text{{head}}_{{{head + 1}}}[{query + 1}] = {terms}{more}")
        shown_words = "the largest shown" if more else "all shown"
        st.caption(f"Row {query + 1} · {lit(self.q_tokens[query])} of head {head + 1} blends the "
                   f"value rows by its weights ({shown_words}); V has {values.shape[0]:d} rows of "
                   f"{values.shape[1]:d}.")
        outputs = self.r.head_outputs
        chart(figure("head_grids", outputs[head:head + 1], self.q_tokens, figures.dims("v", self.sizes.d_v),
                     kind="signed", cols_are_tokens=False, large=True, width=CHART_WIDTH,
                     head_names=[figures.shape_title(f"head {head + 1}'s output", outputs.shape[1:])]),
              key="present_head_output")

    def split(self):
        sz = self.sizes
        flops = attention_flops(sz.n_q, sz.n_k, sz.n_heads, sz.d_k, sz.d_v)
        wide = attention_flops(sz.n_q, sz.n_k, 1, sz.n_heads * sz.d_k, sz.n_heads * sz.d_v)
        if sz.n_heads == 1:
            st.markdown(f"**One head** of width {sz.d_k:d}: {flops:,} FLOPs. With h heads of width d_k / h "
                        "the work would stay the same, with h viewpoints.")
        else:
            st.markdown(f"**Why narrow slices?** {sz.n_heads:d} heads of width {sz.d_k:d} cost {flops:,} "
                        f"FLOPs; one head of width {sz.n_heads * sz.d_k:d} would cost {wide:,}. Same work, "
                        f"{sz.n_heads:d} viewpoints.")
        names = [figures.shape_title(f"A{_sub(i + 1)}", self.r.weights.shape[1:]) for i in range(sz.n_heads)]
        chart(figure("head_grids", self.r.weights, self.q_tokens, self.k_tokens, kind="weights",
                     mask=self.r.mask, large=True, width=CHART_WIDTH, head_names=names),
              key="present_all_heads")

    def disagreement(self):
        query = self.query()
        chart(figure("query_bars", self.r.weights, query, self.k_tokens, head_names=self.heads, large=True,
                     width=CHART_WIDTH),
              key="present_bars")
        if len(self.heads) == 1 or len(self.k_tokens) == 1:
            st.markdown("With one head, or one key, there is nothing to disagree about.")
            return
        distances = pairwise_disagreement(self.r.weights, query, "l2")  # [h, h]
        a, b, value = most_disagreeing_pair(distances)
        entropy = normalised_entropy(self.r.weights[:, query, :])  # [h]
        flat = [self.heads[i] for i in np.flatnonzero(entropy >= FLAT_AT)]
        st.markdown(f"Most apart for this query: **{lit(self.heads[a])}** and **{lit(self.heads[b])}**, L2 "
                    f"distance **{value:.3f}**." + (f" Flat (nothing to say): {lit(', '.join(flat))}." if flat
                                                    else ""))

    def concatenate(self):
        sz, r = self.sizes, self.r
        chart(figure("concat_bands", r.concat, self.q_tokens, sz.n_heads, sz.d_v, large=True,
                     width=CHART_WIDTH,
                     title=f"Concat {figures.shape_title('', r.concat.shape).strip()}: one band per head"),
              key="present_concat")
        columns = figures.dims("d", sz.d_model)
        shown = (("output", r.output, "present_output"), ("input X", self.setup.x, "present_in"))
        for name, values, key in shown:
            chart(figure("matrix_heatmap", values, self.q_tokens, columns, large=True, width=CHART_WIDTH,
                         title=figures.shape_title(name, values.shape)), key=key)

    def cost(self):
        sz = self.sizes
        h, d, d_k, d_v = sz.n_heads, sz.d_model, sz.d_k, sz.d_v
        total = count_parameters(d, h, d_k, d_v)
        st.latex(rf"\underbrace{{2 \cdot {h:d} \cdot {d:d} \cdot {d_k:d}}}_{{W^Q,\,W^K}} + "
                 rf"\underbrace{{{h:d} \cdot {d:d} \cdot {d_v:d}}}_{{W^V}} + "
                 rf"\underbrace{{{h * d_v:d} \cdot {d:d}}}_{{W^O}}"
                 rf" = {total:,}".replace(f"{total:,}", f"{total:,}".replace(",", "{,}")))
        if h * d_k == d == h * d_v:
            st.markdown(f"With h · d_k = d_model that is **4 · {d:d}² = {4 * d * d:,}**, whatever h is: more "
                        "heads split the same parameters into more viewpoints.")
        st.markdown(sizes_line(sz))
        flops = attention_flops(sz.n_q, sz.n_k, h, d_k, d_v)
        st.markdown(f"**Work of attention** for {sz.n_q:d} × {sz.n_k:d} tokens: {flops:,} FLOPs (scores and "
                    "blends of all heads); it grows with n², so long sentences cost most here.")


def _tex_number(value: float) -> str:
    """A weight for LaTeX: '0.67', '2.1e-9', '(1 - 4.1e-9)' (bracketed: it multiplies a value)."""
    text = figures.format_number(float(value), near_one=True).replace("−", "-")
    text = text.replace("e-", r"\mathrm{e}{-}")
    return f"({text})" if " " in text else text
