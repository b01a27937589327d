"""Class: start a room, show its code, link and QR code, see who follows, the answers arriving,
reveal them and take them home as CSV. A student sees the room they are in and can join one."""

from __future__ import annotations

import io

import segno
import streamlit as st

from app import live, questions
from app.widgets import md_literal
from classroom.store import NoSuchRoom, StoreError

QR_SCALE = 12  # px per QR module: about 400 px, readable from the back of a room on a projector


def start_room() -> None:
    ss = st.session_state
    try:
        room = live.store().create_room()
    except StoreError as error:
        ss.live_message = f"Could not start a room: {error}"
        return
    ss.update(room=room.code, teacher_secret=room.teacher_secret, following=False)
    ss.pop("published", None)
    ss.pop("asked", None)


def end_room() -> None:
    ss = st.session_state
    try:
        live.store().end_room(ss.room, ss.teacher_secret)
    except NoSuchRoom:
        pass  # gone already
    except StoreError as error:  # the room is still there: say so, and keep leading it
        ss.live_message = f"Could not end the room: {error}"
        return
    live.leave("The room has ended.")


def join_by_code() -> None:
    code = st.session_state.get("live_join_code", "").strip()
    st.query_params["room"] = code
    st.session_state.pop("joined_from_link", None)


def render() -> None:
    st.title("Class")
    if not live.in_room():
        st.markdown("Start a room and every student who opens its link follows your screen: the page, the "
                    "presenter's step, the setup and the selections. You can ask the room a question and see "
                    "the answers arrive.")
        st.button("Start a room", key="live_start", on_click=start_room, type="primary",
                  icon=":material/groups:")
        st.text_input("Or join a room with its code", key="live_join_code", max_chars=12,
                      on_change=join_by_code)
        return
    if live.is_teacher():
        teacher_panel()
    else:
        st.markdown(f"You are in room **{st.session_state.room}**. Your screen follows your teacher's; "
                    "'Explore on my own' in the sidebar lets you try things, 'Follow again' comes back.")


def join_link(code: str) -> str:
    base = (st.context.url or "").split("?")[0].rsplit("/", 1)[0] if st.context.url else ""
    return f"{base}/?room={code}"


def teacher_panel() -> None:
    ss = st.session_state
    link = join_link(ss.room)
    left, right = st.columns([3, 2])
    with left:
        st.markdown(f"<div style='font-size:5rem;font-weight:700;letter-spacing:0.3em'>{ss.room}</div>",
                    unsafe_allow_html=True)
        st.markdown(f"Students open **{md_literal(link)}** (or scan the code).")
        following()
        with st.expander("Lead from another device (keep this link to yourself)"):
            st.code(f"{link}&teacher={ss.teacher_secret}", language=None)
        st.button("End the room", key="live_end", on_click=end_room)
    with right:
        st.image(qr_png(link), caption="Scan to follow", width=400)
    questions.answers_panel()


def qr_png(text: str) -> bytes:
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="png", scale=QR_SCALE, border=2)
    return buffer.getvalue()


@st.fragment(run_every=2.0)
def following() -> None:
    st.markdown(f"**{live.followers()}** following right now.")
