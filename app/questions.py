"""Asking the room: the teacher asks a quiz or forecast question, students answer it on whatever page
they are shown, and the teacher sees the answers arrive and reveals them.

Session keys: ``asked`` (the teacher's: question id and the mha_core.quiz.Question asked),
``answered`` (the student's: the id of the question answered), ``live_value``, ``live_nickname``.
"""

from __future__ import annotations

import streamlit as st

from app import live
from app.live import in_room, is_teacher
from app.widgets import md_literal
from classroom.store import StoreError


def ask(question) -> None:
    """Send a quiz or forecast question (mha_core.quiz.Question) to the room; the teacher keeps it
    to mark the answers as they arrive."""
    ss = st.session_state
    solution = f"{question.answer_text}\n\n{question.explanation}".strip()
    try:
        asked = live.store().ask(ss.room, ss.teacher_secret, question.prompt, question.choices, question.kind,
                                   solution=solution)
        ss.asked = (asked.id, question)
    except StoreError as error:
        ss.live_message = f"Could not ask the room: {error}"


def ask_button(question, key: str) -> None:
    """'Ask the room', drawn for the teacher of a room only."""
    if in_room() and is_teacher():
        st.button("Ask the room", key=key, on_click=ask, args=(question,), icon=":material/groups:")


def student_question_ui() -> None:
    """A student in a room answers the open question here, whatever page the teacher shows."""
    ss = st.session_state
    if not in_room() or is_teacher():
        return
    try:
        room = live.watch().state(ss.room)
    except StoreError:
        return
    question = room.question
    if question is None:
        return
    with st.container(border=True):
        st.markdown(f"**Your teacher asks:** {md_literal(question.prompt)}")
        if room.revealed:
            st.success(f"**Answer:** {question.solution}", icon=":material/check_circle:")
            return
        if ss.get("answered") == question.id:
            st.info("Your answer is in. The answer appears here when your teacher reveals it.",
                    icon=":material/how_to_reg:")
            return
        with st.form(f"live_answer_{question.id}"):
            if question.choices:
                value = st.radio("Your answer", question.choices, index=None, key="live_value",
                                 format_func=md_literal)
            else:
                value = st.text_input("Your answer", key="live_value", max_chars=60)
            nickname = st.text_input("Nickname (optional; only your teacher sees it)", key="live_nickname",
                                     max_chars=40)
            sent = st.form_submit_button("Send", type="primary")
        if sent:
            send_answer(question.id, value, nickname)


def send_answer(question_id: str, value, nickname: str) -> None:
    ss = st.session_state
    if value is None or not str(value).strip():
        st.warning("Choose or type an answer first.")
        return
    try:
        counted = live.store().answer(ss.room, question_id, ss.student_id, str(value).strip(), nickname or "")
        ss.answered = question_id
        if not counted:  # this student answered before (say, before the server restarted)
            ss.live_message = "You had already answered this question: your first answer is the one counted."
        st.rerun()
    except StoreError as error:
        st.warning(f"Your answer could not be taken: {md_literal(error)}")


@st.fragment(run_every=1.0)
def answers_panel() -> None:
    """The open question's answers as they arrive, with the share right; Reveal; the CSV."""
    ss = st.session_state
    asked = ss.get("asked")
    if asked is None:
        st.caption("Ask the room from a forecast on the Present page or from a question on the Quiz page.")
    else:
        question_id, question = asked
        try:
            tally = live.store().tally(ss.room, question_id)
        except StoreError as error:
            st.warning(f"The answers cannot be read now: {md_literal(error)}")
            return
        right = sum(count for value, count in tally.counts.items() if question.check(value))
        share = f"{right / tally.total:.0%}" if tally.total else "–"
        st.markdown(f"**Asked:** {md_literal(question.prompt)}  \n**{tally.total}** answers, **{share}** "
                    f"right ({tally.status.lower()}).")
        if tally.counts:
            counts = {value[:30]: count for value, count in tally.counts.items()}  # shown as text
            st.bar_chart(counts, horizontal=True)
        if tally.status == "open":
            st.button("Reveal", key="live_reveal", on_click=reveal, args=(question_id,), type="primary")
        else:
            st.success(f"Revealed: {md_literal(question.answer_text)}", icon=":material/check_circle:")
    try:
        data = live.store().answers_csv(ss.room, ss.teacher_secret)
    except StoreError:
        return
    st.download_button("Download the room's answers (CSV)", data=data, mime="text/csv", key="live_csv",
                       file_name=f"room-{ss.room}-answers.csv", on_click="ignore")


def reveal(question_id: str) -> None:
    ss = st.session_state
    try:
        live.store().reveal(ss.room, ss.teacher_secret, question_id)
    except StoreError as error:
        ss.live_message = f"Could not reveal: {error}"
