"""Asking the room: the teacher asks a quiz question or a drawn forecast, students answer it on
whatever page they are shown, and the teacher watches the answers arrive, closes and reveals them
without leaving the presenter.

Every text from outside (prompts hold tokens, answers and labels are typed by students or read from
a link) reaches the page through app/safe.py. A question's explanation is Markdown that
course.quiz wrote (tokens escaped there) and travels as the store's ``solution``; a drawn
forecast's ``solution`` is JSON instead: the real rows and their labels, shown after reveal.

Session keys: the teacher's ``asked`` (question id, the course.quiz question asked) and
``asked_screen`` (the presenter screen it was asked on, or None); the student's ``answered`` (the id
of the question answered), ``sent_answers`` ({question id: the value sent}), ``pending_answer``
(question id, value, nickname: pressed Send while the store was unreachable), ``room_question``
(the last question read, so the form stays while the store is away), ``live_value``,
``live_nickname``, ``forecast_chips_<id>`` and ``forecast_row_<id>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from app import forecast_figures, i18n, live, session_keys
from app.figure_layout import LARGE, tallest_cells_within
from app.figures import head_grids
from app.fragments import fragment
from app.live import in_room, is_teacher
from app.safe import lit, md
from app.widgets import chart
from classroom.store import QuestionClosed, StoreError, StoreUnavailable, is_right
from course import answers
from course.i18n import N_, localized_number_text
from course.quiz import (
    DrawnForecast,
    chips_to_weights,
    distance_words,
    forecast_distance,
    grid_json,
    most_wrong_cell,
    read_grid,
    room_correct,
)

FORECAST = answers.FORECAST  # the store's kind of a drawn forecast
CHIPS = 10  # chips a student shares out over one row's keys: each is 0.1 of the weight
BUTTON_CHARS = 22  # a key's label on its button (with its chips it fits a 390-px phone)
PANEL_SECONDS = 1.0  # the teacher's answer panel reads the tally this often
RESEND_SECONDS = 2.0  # an answer pressed while the store was away is tried again this often
SOLUTION_CHARS = 2_000  # classroom.store's limit on a question's solution
LABEL_CHARS = 40  # a label kept in a forecast's solution
PHONE_WIDTH = 360  # px: a student's own forecast grid is planned for a phone's column (wider ones stretch it)
STATUS_WORDS = {"open": N_("answers open"), "closed": N_("answers closed"),
                "revealed": N_("answers revealed")}
# course.quiz.distance_words' English, marked here: shown in the reader's language.
CLOSENESS = {"very close": N_("very close"), "close": N_("close"), "partly right": N_("partly right"),
             "far off": N_("far off")}
CLASS_FORECAST = N_("The class is **{closeness}**: total variation distance {distance} (0 is the same, 1 "
                    "nothing in common).")
OWN_FORECAST = N_("Your forecast is **{closeness}**: total variation distance {distance} (0 is the same, 1 "
                  "nothing in common).")
REAL_SOFTMAX = N_("Head {number}'s softmax")
YOUR_FORECAST = N_("Your forecast")
LOST = N_("The class connection is lost: your answer was **not sent yet**. Press Send again, or leave "
           "this page open: it is sent by itself when the connection is back.")


# --- The teacher asks ------------------------------------------------------------------------------


# The session keys this module owns (app/session_keys.py).
session_keys.register(*(session_keys.Key(name, "questions") for name in (
    "answered", "asked", "asked_screen", "pending_answer", "room_question", "sent_answers"
)))


def solution_of(question) -> str:
    """What students see after reveal besides the right answer: the explanation (Markdown written
    by course.quiz), or a forecast's real rows and labels as JSON."""
    if isinstance(question, DrawnForecast):
        return json.dumps({"real": json.loads(grid_json(question.weights)),
                           "queries": [label[:LABEL_CHARS] for label in question.query_labels],
                           "keys": [label[:LABEL_CHARS] for label in question.key_labels],
                           "head": question.head}, ensure_ascii=False)
    return question.explanation if len(question.explanation) <= SOLUTION_CHARS else ""


def ask(question, screen: int | None = None) -> None:
    """Send a quiz question (course.quiz.Question) or a drawn forecast (DrawnForecast) to the
    room; the teacher keeps it to draw the answers and the real softmax."""
    ss = st.session_state
    forecast = isinstance(question, DrawnForecast)
    try:
        asked = live.store().ask(
            ss.room, ss.teacher_secret, question.prompt, question.choices, question.kind,
            solution=solution_of(question), correct="" if forecast else room_correct(question),
            tolerance=question.tolerance, grid=question.grid if forecast else (0, 0))
    except StoreError as error:  # said in the room's box, and here (the presenter hides the sidebar)
        ss.live_message = i18n.t("Could not ask the room: {error}").format(error=error)
        st.toast(md(i18n.t("Could not ask the room: {error}"), error=error), icon=":material/wifi_off:")
        return
    ss.asked, ss.asked_screen = (asked.id, question), screen
    st.toast(i18n.t("Asked the room: the answers arrive next to the question."), icon=":material/groups:")


def ask_button(question, key: str, screen: int | None = None) -> None:
    """'Ask the room', drawn for the teacher of a room only."""
    if in_room() and is_teacher():
        st.button(i18n.t("Ask the room"), key=key, on_click=ask, args=(question, screen),
                  icon=":material/groups:")


def draw_button(forecast: DrawnForecast | None, grid: DrawnForecast | None, screen: int) -> None:
    """'Ask the room to draw a forecast' of one head's row (or, for a small setup, its whole grid)."""
    if not (in_room() and is_teacher()) or forecast is None:
        return
    whole = grid is not None and st.checkbox(
        i18n.t("The head's whole grid"), key="present_draw_grid",
        help=i18n.t("Every query's row (up to 36 cells): more to draw, for a small setup."))
    st.button(i18n.t("Ask the room to draw a forecast"), key="present_draw", on_click=ask,
              args=(grid if whole else forecast, screen), icon=":material/draw:")


def asked_here(screen: int) -> bool:
    """Whether the room's question was asked from this presenter screen (by this teacher)."""
    ss = st.session_state
    return in_room() and is_teacher() and ss.get("asked") is not None and ss.get("asked_screen") == screen


def reveal_asked(screen: int) -> None:
    """The presenter's Reveal of a screen also reveals the room's question asked from it."""
    ss = st.session_state
    if not (in_room() and is_teacher()) or ss.get("asked") is None or ss.get("asked_screen") != screen:
        return
    try:
        live.store().reveal(ss.room, ss.teacher_secret, ss.asked[0])
    except StoreError as error:
        ss.live_message = i18n.t("Could not reveal the answers to the room: {error}").format(error=error)
        st.toast(md(i18n.t("Could not reveal the answers to the room: {error}"), error=error),
                 icon=":material/wifi_off:")


@fragment(run_every=PANEL_SECONDS)
def presenter_panel(on_reveal=None) -> None:
    """Next to the presenter's question: the live count, the answers on demand, Close and Reveal.
    on_reveal() also reveals the screen's result (then the whole page reruns)."""
    answers_view("room", large=True, on_reveal=on_reveal)


@fragment(run_every=PANEL_SECONDS)
def answers_panel() -> None:
    """The Class page's panel: the open question's answers as they arrive; Close, Reveal; the CSV."""
    ss = st.session_state
    if ss.get("asked") is None:
        st.caption(i18n.t("Ask the room from a forecast on the Present page or from a question on the Quiz "
                          "page."))
    else:
        answers_view("live", large=False)
    try:
        data = live.store().answers_csv(ss.room, ss.teacher_secret)
    except StoreError:
        return
    st.download_button(i18n.t("Download the room's answers (CSV)"), data=data, mime="text/csv",
                       key="live_csv",
                       file_name=f"room-{ss.room}-answers.csv", on_click="ignore")


def answers_view(where: str, *, large: bool, on_reveal=None) -> None:
    """The count ('17 of 23 answered'), Close answers, Reveal, and the answers (on demand, or a
    forecast's class average once closed). Cheap: one tally and one follower count per second."""
    ss = st.session_state
    question_id, question = ss.asked
    try:
        tally = live.store().tally(ss.room, question_id)
        following = live.store().followers(ss.room)
    except StoreError as error:
        st.warning(md(i18n.t("The answers cannot be read now: {error}"), error=error),
                   icon=":material/wifi_off:")
        return
    status = tally.status
    status_words = i18n.t(STATUS_WORDS[status]) if status in STATUS_WORDS else status  # stored: "answers …"
    if large:  # projected: the count in large type
        st.markdown(md(i18n.t("#### {answered} of {following} answered · {status}"), answered=tally.total,
                       following=max(following, tally.total), status=status_words))
    else:  # '**17** answers (23 following), **65%** right · answers open' (the share once marked)
        if tally.right is not None and tally.total:
            count = i18n.t("**{total}** answers ({following} following), **{share}** right · "
                           "{status}").format(total=f"{tally.total:d}", following=f"{following:d}",
                                              share=f"{tally.right / tally.total:.0%}",
                                              status=lit(status_words))
        else:
            count = i18n.t("**{total}** answers ({following} following) · {status}").format(
                total=f"{tally.total:d}", following=f"{following:d}", status=lit(status_words))
        st.markdown(md(i18n.t("**Asked:** {prompt}"), prompt=question.prompt) + "  \n" + count)
    buttons = st.container(horizontal=True)
    if status == "open":
        buttons.button(i18n.t("Close answers"), key=f"{where}_close", icon=":material/lock:", on_click=act,
                       args=("close", question_id))
    if status != "revealed" and buttons.button(i18n.t("Reveal"), key=f"{where}_reveal", type="primary",
                                               icon=":material/visibility:"):
        act("reveal", question_id)
        if on_reveal is not None:
            on_reveal()
        st.rerun(scope="app")
    forecast = isinstance(question, DrawnForecast)
    automatic = forecast and status != "open"  # a forecast's average once closed; other answers on demand
    shown = buttons.toggle(i18n.t("Show the answers"), key=f"{where}_show_answers") or automatic
    if not shown:
        return
    if forecast:
        class_forecast_view(where, question, tally, large=large)
    else:
        distribution(where, tally, large=large, marked=status == "revealed")


def act(step: str, question_id: str) -> None:
    """store.close or store.reveal for the teacher; a failure is said in the room's box."""
    ss = st.session_state
    try:
        getattr(live.store(), step)(ss.room, ss.teacher_secret, question_id)
    except StoreError as error:
        ss.live_message = i18n.t("The room did not take it: {error}").format(error=error)
        st.toast(md(i18n.t("The room did not take it: {error}"), error=error), icon=":material/wifi_off:")


def distribution(where: str, tally, *, large: bool, marked: bool) -> None:
    """The answers as bars with their counts and shares; right ones green once revealed."""
    if not tally.total:
        st.caption(i18n.t("No answers yet."))
        return
    labels, counts = list(tally.counts), list(tally.counts.values())
    right = [is_right(tally.question, value) for value in labels] if marked else None
    chart(forecast_figures.answer_bars(labels, counts, right=right, large=large, language=i18n.language()),
          key=f"{where}_answers_chart")
    if marked and tally.right is not None:
        st.markdown(md(i18n.t("**{right} of {total}** right (first answers count)."), right=tally.right,
                       total=tally.total))


# The class's forecast on the presenter, under the count, the buttons and the sentence: the
# projector's numbers (20 px) on cells as tall as fit (a 3-row grid with LARGE's ran 88 px past 720).
# A grid of 4 to 6 rows needs 300 to 374 px even with 28-px cells: the teacher scrolls.
FORECAST_CHART_PX = 276
FORECAST_CELL_HEIGHTS = (72, 60, 52, 46, 40, 34, 28)


def class_forecast_view(where: str, question: DrawnForecast, tally, *, large: bool) -> None:
    """The class's average forecast as a heatmap next to the real softmax, how far apart they are,
    and the key where the class was most wrong."""
    if tally.mean is None:
        st.caption(i18n.t("No forecasts yet."))
        return
    mean = np.asarray(tally.mean, dtype=float)  # [n_rows, n_k]
    st.markdown(forecast_words(mean, question.weights, question.query_labels, question.key_labels,
                               CLASS_FORECAST))  # first: on a projector the chart may run below the fold

    def figure(style):
        return forecast_figures.forecast_vs_real(
            mean, question.weights, question.query_labels, question.key_labels,
            forecast_title=i18n.t("The class's forecast ({count})").format(count=tally.total),
            real_title=i18n.t(REAL_SOFTMAX).format(number=question.head + 1), large=style,
            language=i18n.language())

    if not large:
        chart(figure(False), key=f"{where}_forecast_chart")
        return
    chart(tallest_cells_within(  # a whole grid's rows: the tallest cells that fit FORECAST_CHART_PX
        lambda cell_max: figure(replace(LARGE, cell_min=min(LARGE.cell_min, cell_max), cell_max=cell_max)),
        FORECAST_CELL_HEIGHTS, FORECAST_CHART_PX), key=f"{where}_forecast_chart")


def forecast_words(forecast, real, query_labels, key_labels, sentence: str) -> str:
    """'The class is close: total variation 0.18 (0 is the same, 1 nothing in common). Most wrong:
    key “3 · sat” for query “2 · cat”, 0.40 where the head gives 0.05.' sentence: CLASS_FORECAST or
    OWN_FORECAST, the first sentence's message."""
    distance = forecast_distance(forecast, real)
    row, key, _ = most_wrong_cell(forecast, real)
    forecast, real = np.asarray(forecast), np.asarray(real)
    closeness = distance_words(distance)
    return (md(i18n.t(sentence), closeness=i18n.t(CLOSENESS.get(closeness, closeness)),
               distance=decimals(distance)) + " "
            + md(i18n.t("Most wrong: key **{key}** for query {query}, {given} where the head gives {real}."),
                 key=key_labels[key], query=query_labels[row], given=decimals(forecast[row, key]),
                 real=decimals(real[row, key])))


def decimals(value: float) -> str:
    """A share to two decimals as the reader's language writes it (0.40, 0,40), rounded as Python does."""
    return localized_number_text(f"{value:.2f}", i18n.language())


# --- The student answers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Labels:
    """What a student's forecast buttons are called: the queries of the rows and the keys."""

    queries: tuple[str, ...]
    keys: tuple[str, ...]


def forecast_labels(grid: tuple[int, int], current) -> Labels:
    """The labels of the page the student follows (the teacher's setup) when they fit the grid,
    else plain 'key 1', 'key 2', ... (the real ones come with the reveal)."""
    rows, cols = grid
    setup = getattr(current, "setup", None)
    if setup is not None and len(setup.key_tokens) == cols and rows in (1, len(setup.tokens)):
        keys = tuple(f"{i + 1} · {t}" for i, t in enumerate(setup.key_tokens))
        queries = tuple(f"{i + 1} · {t}" for i, t in enumerate(setup.tokens)) if rows > 1 else ("",)
        return Labels(queries, keys)
    query, key = i18n.t("query {number}"), i18n.t("key {number}")
    return Labels(tuple(query.format(number=i + 1) for i in range(rows)) if rows > 1 else ("",),
                  tuple(key.format(number=j + 1) for j in range(cols)))


def room_question():
    """(question, status) of the room now; while the store is unreachable, the last one read, and
    then whether it is that (stale) one."""
    ss = st.session_state
    try:
        room = live.watch().state(ss.room)
    except StoreError:
        kept = ss.get("room_question")
        return (*kept, True) if kept else (None, "", True)
    status = room.status or ("revealed" if room.revealed else "open")
    ss.room_question = (room.question, status)
    return room.question, status, False


def student_question_ui(current=None) -> None:
    """A student in a room answers the open question here, whatever page the teacher shows."""
    if not in_room() or is_teacher():
        return
    question, status, stale = room_question()
    if question is None:
        return
    ss = st.session_state
    if ss.get("pending_answer", (question.id,))[0] != question.id:  # the teacher moved on meanwhile
        ss.pop("pending_answer")
        st.warning(i18n.t("Your answer to the previous question never reached the room: it was not counted."),
                   icon=":material/wifi_off:")
    send_pending(question.id)
    with st.container(border=True):
        st.markdown(md(i18n.t("**Your teacher asks:** {}"), question.prompt))
        if status == "revealed" and not stale:
            revealed_view(question, current)
            return
        if ss.get("answered") == question.id or my_value(question.id) is not None:
            st.info(i18n.t("Your answer is in. The answer appears here when your teacher reveals it."),
                    icon=":material/how_to_reg:")
            if answers.drawn(question.kind):
                sent_forecast_view(question, current)
            return
        if status == "closed":
            st.info(i18n.t("Answers are closed: the answer appears here when your teacher reveals it."),
                    icon=":material/lock:")
            return
        if answers.drawn(question.kind):
            forecast_form(question, forecast_labels(question.grid, current))
        else:
            answer_form(question)
        if ss.get("pending_answer", (None,))[0] == question.id:
            st.warning(i18n.t(LOST), icon=":material/wifi_off:")
            resend()


def my_value(question_id: str) -> str | None:
    """What this student answered: sent from this session, or (reconnected, another tab) as the store
    has it; None if not answered. The store is asked once per question and session."""
    ss = st.session_state
    sent = ss.setdefault("sent_answers", {})
    if question_id not in sent:
        try:
            answer = live.store().my_answer(ss.room, question_id, ss.student_id)
        except StoreError:
            return None
        sent[question_id] = answer.value if answer is not None else None
    return sent[question_id]


def answer_form(question) -> None:
    with st.form(f"live_answer_{question.id}"):
        if question.choices:
            value = st.radio(i18n.t("Your answer"), question.choices, index=None, key="live_value",
                             format_func=lit)
        else:
            value = st.text_input(i18n.t("Your answer"), key="live_value", max_chars=60)
        nickname = st.text_input(i18n.t("Nickname (optional; only your teacher sees it)"),
                                 key="live_nickname", max_chars=40)
        sent = st.form_submit_button(i18n.t("Send"), type="primary")
    if sent:
        send_answer(question, value, nickname)


def send_answer(question, value, nickname: str) -> None:
    """Check what was typed, then send it; kept to send again if the store cannot be reached."""
    if value is None or not str(value).strip():
        st.warning(i18n.t("Choose or type an answer first."))
        return
    try:
        value = answers.kind_of(question.kind).stored(value, question.choices, language=i18n.language())
    except ValueError as error:
        st.warning(md(i18n.t("That cannot be read as an answer ({error}). Try again."), error=error),
                   icon=":material/edit:")
        return
    st.session_state.pending_answer = (question.id, value, nickname or "")
    if send_pending(question.id):
        st.rerun(scope="app")


def send_pending(question_id: str) -> bool:
    """Send the answer pressed but not yet taken; True once the store has it (or had one)."""
    ss = st.session_state
    pending = ss.get("pending_answer")
    if not pending or pending[0] != question_id:
        return False
    _, value, nickname = pending
    try:
        counted = live.store().answer(ss.room, question_id, ss.student_id, value, nickname)
    except StoreUnavailable:
        return False  # kept: the form says so and sends it again
    except QuestionClosed:  # said here, next to the form: the room's box is drawn before this
        ss.pop("pending_answer", None)
        st.warning(i18n.t("Answers closed before your answer reached the room: it was not counted."),
                   icon=":material/lock:")
        return False
    except StoreError as error:
        ss.pop("pending_answer", None)
        st.warning(md(i18n.t("Your answer could not be taken: {error}"), error=error))
        return False
    ss.pop("pending_answer", None)
    ss.answered = question_id
    ss.setdefault("sent_answers", {})[question_id] = value
    if not counted:  # this student answered before (say, before the server restarted)
        ss.sent_answers.pop(question_id)  # the store's is the one counted: read it when needed
        ss.live_message = i18n.t("You had already answered this question: your first answer is the one "
                                 "counted.")
    return True


@fragment(run_every=RESEND_SECONDS)
def resend() -> None:
    """Tries the kept answer again every few seconds; the page shows 'Your answer is in' once sent."""
    question = st.session_state.get("room_question", (None,))[0]
    if question is not None and send_pending(question.id):
        st.rerun(scope="app")


# --- Drawing a forecast ----------------------------------------------------------------------------


def short(label: str) -> str:
    """A key's label on a phone-wide button: at most BUTTON_CHARS characters."""
    return label if len(label) <= BUTTON_CHARS else label[:BUTTON_CHARS - 1] + "…"


def chip_label(key_label: str, chips: int, share: float) -> str:
    """A key's button: its label, its chips as dots (the bar) and its share of 1.0, e.g.
    '2 · cat · ●●● 0.60'; '○' before the first chip. Markdown-safe."""
    return f"{lit(short(key_label))} · {'●' * chips or '○'} {share:.2f}"


def add_chip(key: str, row: int, col: int, step: int) -> None:
    chips = st.session_state[key]
    chips[row][col] = int(np.clip(chips[row][col] + step, 0, CHIPS))


def take_chip(key: str, row: int, picker: str, keys: list[str], seen: list[int]) -> None:
    """'Take a chip back from' was tapped on the row as it was drawn (seen): one chip less on that
    key; the pills forget the tap, so the same key can be tapped again. A tap the browser sends
    again with a later click, before it drew the row that tap made, finds the row changed and takes
    nothing (a phone's quick Send after a take used to take a second chip)."""
    ss = st.session_state
    if ss.get(picker) in keys and ss[key][row] == seen:
        add_chip(key, row, keys.index(ss[picker]), -1)
    ss[picker] = None


def take_picker_key(question_id: str, row: int, chips: list[int]) -> str:
    """The pills' key names the row they were drawn for: after a take they are new pills, and the
    old ones' value, should a late click carry it again, belongs to no pills on the page."""
    return f"chip_take_{question_id}_{row}_{'-'.join(map(str, chips))}"


def clear_chips(key: str, row: int) -> None:
    st.session_state[key][row] = [0] * len(st.session_state[key][row])


@fragment
def forecast_form(question, labels: Labels) -> None:
    """One full-width button per key adds a chip (0.1 of the weight) and shows the key's chips and
    share of 1.0; once the row has a chip, one row of pills takes a chip back, Clear empties the row
    and the nickname box (unless given at the door) joins Send. A fragment: taps rerun only this box.
    Every follower redraws it on each of the teacher's changes, so it stays a few elements, fewest
    before the first tap (measured in docs/performance.md, issue 15)."""
    ss = st.session_state
    rows, cols = question.grid
    key = f"forecast_chips_{question.id}"
    chips = ss.setdefault(key, [[0] * cols for _ in range(rows)])
    row = 0
    if rows > 1:
        row = st.selectbox(i18n.t("Query"), range(rows), key=f"forecast_row_{question.id}",
                           format_func=lambda r: short(labels.queries[r]))  # labels that never change
    shares = chips_to_weights(chips)  # [rows, cols]
    left = CHIPS - sum(chips[row])
    st.markdown(md(i18n.t("Tap a key to give it a chip: {chips} chips share out 1.0. **{left}** left."),
                   chips=CHIPS, left=left))
    for col in range(cols):
        st.button(chip_label(labels.keys[col], chips[row][col], shares[row, col]),
                  key=f"chip_add_{question.id}_{row}_{col}", on_click=add_chip, args=(key, row, col, 1),
                  disabled=left == 0, width="stretch")
    if left < CHIPS:  # something to take back
        picker = take_picker_key(question.id, row, chips[row])
        keys = [short(label) for label in labels.keys]  # distinct: each starts with its position
        st.pills(i18n.t("Take a chip back from"), keys, key=picker, format_func=lit, on_change=take_chip,
                 args=(key, row, picker, keys, list(chips[row])))
        st.button(i18n.t("Clear this row"), key=f"chip_clear_{question.id}_{row}", on_click=clear_chips,
                  args=(key, row))
    empty = [labels.queries[r] for r in range(rows) if not sum(chips[r])]
    nickname = ss.get("nickname", "")  # given at the door: not asked again
    if not nickname and (len(empty) < rows or ss.get("live_nickname")):  # drawing, or typed (then kept)
        nickname = st.text_input(i18n.t("Nickname (optional; only your teacher sees it)"),
                                 key="live_nickname", max_chars=40)
    if empty and rows > 1:
        st.caption(md(i18n.t("Rows without a chip yet: {rows}"), rows=", ".join(empty)))
    if st.button(i18n.t("Send"), key=f"forecast_send_{question.id}", type="primary", disabled=bool(empty)):
        send_answer(question, grid_json(shares), nickname)
    if ss.get("pending_answer", (None,))[0] == question.id:
        st.warning(i18n.t(LOST), icon=":material/wifi_off:")


def sent_forecast_view(question, current) -> None:
    """While the reveal is awaited, the forecast as sent, as a heatmap. It is also the student's
    first chart: the browser loads its charting code now, not when the reveal should show at once."""
    mine = my_value(question.id)
    drawn = read_grid(mine, question.grid) if mine is not None else None  # [rows, cols]
    if drawn is None:
        return
    labels = forecast_labels(question.grid, current)
    query = i18n.t("query")
    chart(head_grids(drawn[None], [q or query for q in labels.queries], list(labels.keys), kind="weights",
                     width=PHONE_WIDTH, head_names=[i18n.t(YOUR_FORECAST)], language=i18n.language()),
          key="sent_forecast")


# --- After the reveal ------------------------------------------------------------------------------


def revealed_view(question, current) -> None:
    """The student's own answer marked right or wrong, the right one, the explanation and the
    room's answers; for a forecast, the student's next to the real softmax."""
    mine = my_value(question.id)
    if answers.drawn(question.kind):
        own_forecast_view(question, mine)
        return
    correct = shown(question.kind, question.correct)
    if mine is None:
        st.info(md(i18n.t("You did not answer this one. The right answer: **{correct}**"), correct=correct),
                icon=":material/info:")
    elif is_right(question, mine):
        st.success(md(i18n.t("You answered **{answer}**: right."), answer=shown(question.kind, mine)),
                   icon=":material/check_circle:")
    else:
        st.error(md(i18n.t("You answered **{answer}**: wrong. The right answer: **{correct}**"),
                    answer=shown(question.kind, mine), correct=correct), icon=":material/cancel:")
    if question.solution:
        st.markdown(question.solution)  # course.quiz's Markdown: its tokens are escaped there
    try:
        tally = room_tally(st.session_state.room, question.id)
    except StoreError:
        return
    distribution("student", tally, large=False, marked=True)


def shown(kind: str, value: str) -> str:
    """A stored answer as the page writes it (course/answers.py)."""
    return answers.kind_of(kind).shown(value)


@st.cache_data(max_entries=64, show_spinner=False)
def room_tally(code: str, question_id: str):
    """A revealed question's tally: it no longer changes, so the class reads it once per server."""
    return live.store().tally(code, question_id)


def own_forecast_view(question, mine: str | None) -> None:
    try:
        solution = json.loads(question.solution)
        real = np.asarray(solution["real"], dtype=float)  # [rows, cols]
        queries, keys = list(solution["queries"]), list(solution["keys"])
    except (ValueError, KeyError, TypeError):
        st.caption(i18n.t("The real weights did not come with the reveal."))
        return
    drawn = read_grid(mine, question.grid) if mine is not None else None
    if drawn is None:
        st.info(i18n.t("You did not draw this one. Here is the real softmax."), icon=":material/info:")
        drawn = np.full_like(real, np.nan)
    query = i18n.t("query")
    shown_queries = [q or query for q in queries]
    head = int(solution.get("head", 0)) + 1
    if mine is not None and np.isfinite(drawn).all():
        st.markdown(forecast_words(drawn, real, shown_queries, keys, OWN_FORECAST))
    yours, real_name = i18n.t(YOUR_FORECAST), i18n.t(REAL_SOFTMAX).format(number=head)
    if real.shape[0] == 1:  # one row: bars a phone shows large
        figure = forecast_figures.mine_vs_real_bars(drawn[0], real[0], keys, mine_name=yours,
                                                    real_name=real_name, language=i18n.language())
    else:
        figure = forecast_figures.forecast_vs_real(drawn, real, shown_queries, keys, forecast_title=yours,
                                                   real_title=real_name, width=PHONE_WIDTH,
                                                   language=i18n.language())
    chart(figure, key="own_forecast")
