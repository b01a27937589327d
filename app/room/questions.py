"""Asking the room: the teacher asks a quiz question or a drawn forecast, students answer it on
whatever page they are shown, and the teacher watches the answers arrive, closes and reveals them
without leaving the presenter.

Every text from outside (prompts hold tokens, answers and labels are typed by students or read from
a link) reaches the page through app/safe.py. A question's explanation is Markdown that
course.quiz wrote (tokens escaped there) and travels as the store's ``solution``; a drawn
forecast's ``solution`` is JSON instead: the real rows and their labels, shown after reveal.

Here: the teacher's Ask buttons and answer panels, and the room's question on a student's page
with its forecast form; the answers drawn are app/room/room_answers.py, a student's answer sent and
revealed is app/room/student_answer.py.

Session keys: the teacher's ``asked`` (question id, the course.quiz question asked) and
``asked_screen`` (the presenter screen it was asked on, or None); the student's ``answered`` (the id
of the question answered), ``sent_answers`` ({question id: the value sent}), ``pending_answer``
(question id, value, nickname: pressed Send while the store was unreachable), ``room_question``
(the last question read, so the form stays while the store is away), ``live_value``,
``live_nickname``, ``forecast_chips_<id>`` and ``forecast_row_<id>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import streamlit as st

from app import i18n
from app.adapter.fragments import fragment
from app.charts.figures import head_grids
from app.room import live, student_answer
from app.room.live import in_room, is_teacher
from app.room.room_answers import answers_file, answers_view
from app.room.student_answer import (
    PHONE_WIDTH,
    YOUR_FORECAST,
    answer_form,
    my_value,
    name_refusal_ui,
    name_refused,
    nickname_ui,
    resend,
    revealed_view,
    send_answer,
    send_pending,
)
from app.safe import lit, md
from app.session import session_keys
from app.widgets import chart
from classroom.store import MAX_TEXT_CHARS, StoreError
from course import answers
from course.i18n import N_
from course.quiz import DrawnForecast, chips_to_weights, grid_json, read_grid, room_correct

FORECAST = answers.FORECAST  # the store's kind of a drawn forecast
CHIPS = 10  # chips a student shares out over one row's keys: each is 0.1 of the weight
BUTTON_CHARS = 22  # a key's label on its button (with its chips it fits a 390-px phone)
PANEL_SECONDS = 1.0  # the teacher's answer panel reads the tally this often
SOLUTION_CHARS = MAX_TEXT_CHARS["solution"]  # the store's limit on a question's solution
LABEL_CHARS = 40  # a label kept in a forecast's solution
CHAPTER = "chapter"  # the kind of a chapter's own forecast (app/views/present.py): asked as a poll
LOST = N_("The class connection is lost: your answer was **not sent yet**. Press Send again, or leave "
           "this page open: it is sent by itself when the connection is back.")


# --- The teacher asks ------------------------------------------------------------------------------


# The session keys this module owns (app/session/session_keys.py).
ASKED_SCREEN = "asked_screen"  # where the question asked (live.ASKED) was asked from
session_keys.register(session_keys.Key(ASKED_SCREEN, __name__))


def solution_of(question) -> str:
    """What students see after reveal besides the right answer: the explanation (Markdown written
    by course.quiz), a forecast's real rows and labels as JSON, or a poll's answer (a chapter's own
    forecast: words, so nothing marks it) before its explanation."""
    if isinstance(question, DrawnForecast):
        return json.dumps({"real": json.loads(grid_json(question.weights)),
                           "queries": [label[:LABEL_CHARS] for label in question.query_labels],
                           "keys": [label[:LABEL_CHARS] for label in question.key_labels],
                           "head": question.head}, ensure_ascii=False)
    explanation = question.explanation
    if is_poll(question):
        explanation = md(i18n.t("**Answer:** {answer}"), answer=question.answer_text) + "\n\n" + explanation
    return explanation if len(explanation) <= SOLUTION_CHARS else ""


def is_poll(question) -> bool:
    """A question asked with no right answer the store can mark: a chapter's own forecast (its answer
    is a sentence); the room's answers are a poll, shown without right or wrong."""
    return getattr(question, "kind", "") == CHAPTER


def correct_of(question) -> str:
    """The right answer as the store marks it; "" for a drawn forecast or a poll (nothing marked)."""
    return "" if isinstance(question, DrawnForecast) or is_poll(question) else room_correct(question)


def ask(question, screen: int | None = None) -> None:
    """Send a quiz question (course.quiz.Question) or a drawn forecast (DrawnForecast) to the
    room; the teacher keeps it to draw the answers and the real softmax."""
    ss = st.session_state
    forecast = isinstance(question, DrawnForecast)
    try:
        asked = live.store().ask(
            ss[live.ROOM], ss[live.TEACHER_SECRET], question.prompt, question.choices, question.kind,
            solution=solution_of(question), correct=correct_of(question),
            tolerance=question.tolerance, grid=question.grid if forecast else (0, 0))
    except StoreError as error:  # said in the room's box, and here (the presenter hides the sidebar)
        ss[live.LIVE_MESSAGE] = i18n.t("Could not ask the room: {error}").format(error=error)
        st.toast(md(i18n.t("Could not ask the room: {error}"), error=error), icon=":material/wifi_off:")
        return
    ss[live.ASKED], ss.asked_screen = (asked.id, question), screen
    st.toast(i18n.t("Asked the room: the answers arrive next to the question."), icon=":material/groups:")


def resume(screen, *candidates) -> bool:
    """A teacher who took the lead again (a reload, another device) gets back the question the room
    was asked from this screen: the one of ``candidates`` (the screen's question, its drawn
    forecasts) with the store's prompt and kind. True when one was taken back."""
    ss = st.session_state
    asked = ss.get(live.RESUMED)
    if asked is None or not (in_room() and is_teacher()):
        return False
    for question in candidates:
        if question is not None and question.prompt == asked.prompt and question.kind == asked.kind:
            ss[live.ASKED], ss[ASKED_SCREEN] = (asked.id, question), screen
            ss.pop(live.RESUMED)
            return True
    return False


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
    return in_room() and is_teacher() and ss.get(live.ASKED) is not None and ss.get("asked_screen") == screen


def reveal_asked(screen: int) -> None:
    """The presenter's Reveal of a screen also reveals the room's question asked from it."""
    ss = st.session_state
    if not (in_room() and is_teacher()) or ss.get(live.ASKED) is None or ss.get("asked_screen") != screen:
        return
    try:
        live.store().reveal(ss[live.ROOM], ss[live.TEACHER_SECRET], ss[live.ASKED][0])
    except StoreError as error:
        ss[live.LIVE_MESSAGE] = i18n.t("Could not reveal the answers to the room: {error}").format(
            error=error)
        st.toast(md(i18n.t("Could not reveal the answers to the room: {error}"), error=error),
                 icon=":material/wifi_off:")


@fragment(run_every=PANEL_SECONDS)
def presenter_panel(on_reveal=None, *, reveal_button: bool = True) -> None:
    """Next to the presenter's question: the live count, the answers on demand, Close and Reveal
    (unless the question's own box has one: ``reveal_button`` False). on_reveal() also reveals the
    screen's result (then the whole page reruns)."""
    answers_view("room", large=True, on_reveal=on_reveal, reveal_button=reveal_button)


@fragment(run_every=PANEL_SECONDS)
def answers_panel() -> None:
    """The Class page's panel: the open question's answers as they arrive; Close, Reveal; the CSV."""
    ss = st.session_state
    if ss.get(live.ASKED) is None:
        st.caption(i18n.t("Ask the room from a forecast on the Present page or from a question on the Quiz "
                          "page."))
    else:
        answers_view("live", large=False)
    answers_download("live_csv")


def answers_download(key: str, where=st) -> None:
    """The room's answers as a CSV file (app/room/room_answers.py, answers_file), for the teacher."""
    ss = st.session_state
    try:
        data = answers_file(live.store().answers(ss[live.ROOM], ss[live.TEACHER_SECRET]))
    except StoreError:
        return
    where.download_button(i18n.t("Download the room's answers (CSV)"), data=data, mime="text/csv",
                          key=key, file_name=f"room-{ss[live.ROOM]}-answers.csv", on_click="ignore",
                          icon=":material/download:")


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
        room = live.watch().state(ss[live.ROOM])
    except StoreError:
        kept = ss.get(student_answer.ROOM_QUESTION)
        return (*kept, True) if kept else (None, "", True)
    status = room.status or ("revealed" if room.revealed else "open")
    ss[student_answer.ROOM_QUESTION] = (room.question, status)
    return room.question, status, False


def student_question_ui(current=None) -> None:
    """A student in a room answers the open question here, above whatever page the teacher shows;
    once answered, closed or revealed, it is past business: student_result_ui() draws it below the
    page, so a phone's first screenful is always the teacher's current screen."""
    if not in_room() or is_teacher():
        return
    question, status, stale = room_question()
    if question is None:
        return
    ss = st.session_state
    # the teacher moved on meanwhile
    if ss.get(student_answer.PENDING_ANSWER, (question.id,))[0] != question.id:
        ss.pop(student_answer.PENDING_ANSWER)
        st.warning(i18n.t("Your answer to the previous question never reached the room: it was not counted."),
                   icon=":material/wifi_off:")
    send_pending(question.id)
    if not awaiting(question, status, stale):
        return
    with st.container(border=True):
        st.markdown(md(i18n.t("**Your teacher asks:** {}"), question.prompt))
        if answers.drawn(question.kind):
            forecast_form(question, forecast_labels(question.grid, current))
        else:
            answer_form(question)
        if ss.get(student_answer.PENDING_ANSWER, (None,))[0] == question.id:
            st.warning(i18n.t(LOST), icon=":material/wifi_off:")
            resend()


def awaiting(question, status: str, stale: bool) -> bool:
    """Whether the room's question waits for this student's answer (open, or thought open while the
    store is away, and not answered yet): then it goes above the page."""
    ss = st.session_state
    if status == "revealed" and not stale:
        return False
    answered = ss.get(student_answer.ANSWERED) == question.id or my_value(question.id) is not None
    return not answered and status != "closed"


def student_result_ui(current=None) -> None:
    """Below the page: the room's question once it needs nothing from this student: 'your answer is
    in' (and the forecast sent), 'answers are closed', or after the reveal the answer marked and the
    room's answers."""
    if not in_room() or is_teacher():
        return
    question, status, stale = room_question()
    if question is None or awaiting(question, status, stale):
        return
    with st.container(border=True):
        st.markdown(md(i18n.t("**Your teacher asks:** {}"), question.prompt))
        if status == "revealed" and not stale:
            revealed_view(question, current)
        elif (st.session_state.get(student_answer.ANSWERED) == question.id
              or my_value(question.id) is not None):
            st.info(i18n.t("Your answer is in. The answer appears here when your teacher reveals it."),
                    icon=":material/how_to_reg:")
            if answers.drawn(question.kind):
                sent_forecast_view(question, current)
        else:
            st.info(i18n.t("Answers are closed: the answer appears here when your teacher reveals it."),
                    icon=":material/lock:")


# --- Drawing a forecast ----------------------------------------------------------------------------


def short(label: str) -> str:
    """A key's label on a phone-wide button: at most BUTTON_CHARS characters."""
    return label if len(label) <= BUTTON_CHARS else label[:BUTTON_CHARS - 1] + "…"


def chip_label(key_label: str, chips: int, share: float) -> str:
    """A key's button: its label, its chips as dots (the bar) and its share of 1.0, e.g.
    '2 · cat · ●●● 0.60'; '○' before the first chip. Markdown-safe."""
    return f"{lit(short(key_label))} · {'●' * chips or '○'} {i18n.number(share, 2)}"  # 0,70 in German


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
    nickname, refusal = ss.get(live.NICKNAME, ""), st  # given at the door: not asked again
    if (not nickname and (len(empty) < rows or ss.get("live_nickname"))  # drawing, or typed (then kept)
            or name_refused(question.id)):  # or the name sent was refused: another one is asked for
        nickname = nickname_ui()
        refusal = st.empty()  # under the nickname box: the store's refusal of it, if any
    if empty and rows > 1:
        st.caption(md(i18n.t("Rows without a chip yet: {rows}"), rows=", ".join(empty)))
    if st.button(i18n.t("Send"), key=f"forecast_send_{question.id}", type="primary", disabled=bool(empty)):
        send_answer(question, grid_json(shares), nickname)
    name_refusal_ui(question.id, refusal)
    if ss.get(student_answer.PENDING_ANSWER, (None,))[0] == question.id:
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
