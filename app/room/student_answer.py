"""A student's answer to the room's question: the answer form, sending it (kept, and sent again
every few seconds, while the store is unreachable), what this student answered, and after the reveal
the answer marked right or wrong, or the student's forecast next to the real softmax.

The question box that draws them is app/room/questions.py's student_question_ui()."""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from app import i18n
from app.adapter.fragments import fragment
from app.charts import forecast_figures
from app.room import live, refusals
from app.room.room_answers import OWN_FORECAST, REAL_SOFTMAX, distribution, forecast_words
from app.safe import lit, md
from app.session import session_keys
from app.widgets import chart
from classroom.store import (
    ANSWER_CHARS,
    NICKNAME_CHARS,
    NameTaken,
    QuestionClosed,
    StoreError,
    StoreUnavailable,
    is_right,
)
from course import answers
from course.i18n import N_
from course.quiz import read_grid

RESEND_SECONDS = 2.0  # an answer pressed while the store was away is tried again this often
PHONE_WIDTH = 360  # px: a student's own forecast grid is planned for a phone's column (wider ones stretch it)
YOUR_FORECAST = N_("Your forecast")
NICKNAME = N_("Nickname (optional; only your teacher sees it)")
NAME_REFUSAL = "live_name_refusal"  # (question id, the store's refusal of the nickname sent with it)

ANSWERED = "answered"  # the id of the question this session answered last
PENDING_ANSWER = "pending_answer"  # an answer not sent yet (the connection was lost): (question id, value)
ROOM_QUESTION = "room_question"  # the room's question as last read, and its status
SENT_ANSWERS = "sent_answers"  # question id -> the value this session sent
session_keys.register(*(session_keys.Key(name, __name__) for name in (
    NAME_REFUSAL, ANSWERED, PENDING_ANSWER, ROOM_QUESTION, SENT_ANSWERS)))


def my_value(question_id: str) -> str | None:
    """What this student answered: sent from this session, or (reconnected, another tab) as the store
    has it; None if not answered. The store is asked once per question and session."""
    ss = st.session_state
    sent = ss.setdefault("sent_answers", {})
    if question_id not in sent:
        try:
            answer = live.store().my_answer(ss[live.ROOM], question_id, ss[live.STUDENT_ID])
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
            value = st.text_input(i18n.t("Your answer"), key="live_value", max_chars=ANSWER_CHARS)
        nickname, refusal = room_nickname(), st  # given at the door: not asked again
        if not nickname or name_refused(question.id):  # none yet, or the one sent was refused
            nickname = nickname_ui()
            refusal = st.empty()  # under the nickname box: the store's refusal of it, if any
        sent = st.form_submit_button(i18n.t("Send"), type="primary")
    if sent:
        send_answer(question, value, nickname)
    name_refusal_ui(question.id, refusal)


def room_nickname() -> str:
    """The nickname this student has in the room (given at the door, or with an earlier answer)."""
    return st.session_state.get(live.NICKNAME, "")


def nickname_ui() -> str:
    """The nickname box of an answer (what it holds stays after a refusal: the student edits it)."""
    return st.text_input(i18n.t(NICKNAME), key="live_nickname", max_chars=NICKNAME_CHARS)


def name_refused(question_id: str) -> bool:
    return st.session_state.get(NAME_REFUSAL, (None,))[0] == question_id


def name_refusal_ui(question_id: str, where) -> None:
    """The store's refusal of the nickname sent with this question's answer (another student's reads
    the same; it suggests a free one), drawn in ``where``, next to the nickname box."""
    if name_refused(question_id):
        where.warning(lit(st.session_state[NAME_REFUSAL][1]), icon=":material/badge:")


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
    st.session_state.pop(NAME_REFUSAL, None)
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
        counted = live.store().answer(ss[live.ROOM], question_id, ss[live.STUDENT_ID], value, nickname)
    except StoreUnavailable:
        return False  # kept: the form says so and sends it again
    except QuestionClosed:  # said here, next to the form: the room's box is drawn before this
        ss.pop("pending_answer", None)
        st.warning(i18n.t("Answers closed before your answer reached the room: it was not counted."),
                   icon=":material/lock:")
        return False
    except NameTaken as error:  # said next to the nickname box (name_refusal_ui); the form keeps both
        ss.pop("pending_answer", None)
        ss[NAME_REFUSAL] = (question_id, refusals.text(error))
        return False
    except StoreError as error:
        ss.pop("pending_answer", None)
        st.warning(md(i18n.t("Your answer could not be taken: {error}"), error=refusals.text(error)))
        return False
    ss.pop("pending_answer", None)
    ss.answered = question_id
    if nickname:  # the room knows the student by it now: the next answer does not ask again
        ss[live.NICKNAME] = nickname
    ss.setdefault("sent_answers", {})[question_id] = value
    if not counted:  # this student answered before (say, before the server restarted)
        ss.sent_answers.pop(question_id)  # the store's is the one counted: read it when needed
        ss[live.LIVE_MESSAGE] = i18n.t("You had already answered this question: your first answer is the one "
                                 "counted.")
    return True


@fragment(run_every=RESEND_SECONDS)
def resend() -> None:
    """Tries the kept answer again every few seconds; the page shows 'Your answer is in' once sent."""
    question = st.session_state.get("room_question", (None,))[0]
    if question is not None and (send_pending(question.id) or name_refused(question.id)):
        st.rerun(scope="app")  # the answer is in, or its nickname was refused: the form says which


# --- After the reveal ------------------------------------------------------------------------------


def revealed_view(question, current) -> None:
    """The student's own answer marked right or wrong, the right one, the explanation and the
    room's answers; for a forecast, the student's next to the real softmax."""
    mine = my_value(question.id)
    if answers.drawn(question.kind):
        own_forecast_view(question, mine)
        return
    if not question.correct:  # a poll: no right answer, so no verdict either
        poll_view(question, mine)
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
        tally = room_tally(st.session_state[live.ROOM], question.id)
    except StoreError:
        return
    distribution("student", tally, large=False, marked=True)


def poll_view(question, mine: str | None) -> None:
    """A revealed poll: what this student answered (nothing marks it), the teacher's answer and
    explanation if any, and the room's answers unmarked."""
    if mine is None:
        st.info(i18n.t("You did not answer this one."), icon=":material/info:")
    else:
        st.info(md(i18n.t("You answered **{answer}**."), answer=shown(question.kind, mine)),
                icon=":material/how_to_reg:")
    if question.solution:
        st.markdown(question.solution)  # Markdown written by the app (app/room/questions.py, solution_of)
    try:
        tally = room_tally(st.session_state[live.ROOM], question.id)
    except StoreError:
        return
    distribution("student", tally, large=False, marked=False)


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
