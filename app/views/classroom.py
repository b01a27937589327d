"""Class: start a room (with the deployer's teacher key, when one is set), show its code, link and QR
code, see who follows and who is in the room, lock the door or remove a student, the answers
arriving. A student sees the room they are in and can join one with its code."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import segno
import streamlit as st

from app import i18n
from app.adapter import streamlit_door
from app.adapter.fragments import fragment
from app.room import door, identity, live, proxy, questions, room_box
from app.room.following import leave, room_gone
from app.safe import html_text, lit, md
from app.session import session_keys
from classroom.store import NICKNAME_CHARS, NoSuchRoom, NotTheTeacher, StoreError
from course.i18n import N_

QR_SCALE = 12  # px per QR module: about 400 px, readable from the back of a room on a projector
ROSTER_SECONDS = 3.0  # the teacher's roster refreshes this often
VERSION_NOTE = N_("This server runs Streamlit {installed}, but the app was checked against {pinned}: the "
                  "fixes for its two races are off, and students' pages may follow you only by their own "
                  "poll (every 2 s). Install the version requirements.txt names.")
NICKNAME = N_("Your nickname (optional; only your teacher sees it)")
PROXY_NOTE = N_("Requests reach this server through a proxy (they carry the header {header}), but "
                "`MHA_CLIENT_IP_HEADER` is not set: the limits on rooms started, room codes tried and "
                "students joining count everyone coming through it as one address. If the proxy writes the "
                "browser's address into {header}, replacing what the browser sent, whoever runs the server "
                "should set `MHA_CLIENT_IP_HEADER={header}` (docs/deploy.md).")
DIRECT_NOTE = N_("This server counts each browser by the header {header} "
                 "(`MHA_CLIENT_IP_HEADER={header}`), but requests carrying that header reach it straight "
                 "from the internet, not through a proxy on this machine or a private network: anyone can "
                 "write the header, and a script that writes a new address into it every time is never held "
                 "by the limits on rooms started, room codes tried and students joining. Unless your proxy "
                 "has a public address, whoever runs the server should let browsers reach it only through "
                 "the proxy (docs/deploy.md).")

# The session keys this module owns (app/session/session_keys.py).
DOOR_ERROR, RENAME_ERROR, START_ERROR = "live_door_error", "live_rename_error", "live_start_error"
CONFIRM_END = "live_confirm_end"  # True: the teacher pressed 'End the room…' and is asked to confirm
session_keys.register(*(session_keys.Key(name, __name__) for name in (DOOR_ERROR, RENAME_ERROR, START_ERROR,
                                                                      CONFIRM_END)))


# --- The door: start a room, or join one -------------------------------------------------------------


def start_room() -> None:
    """One room per session: a session in a room (leading or following) starts none."""
    ss = st.session_state
    ss.pop("live_start_error", None)
    if live.in_room():
        return
    try:
        identity.check_teacher_key(ss.get("live_teacher_key", ""))
        room = live.store().create_room(client=identity.client_address())
    except StoreError as error:  # a wrong key, too many tries or rooms from this address, a full server
        ss.live_start_error = str(error)
        return
    ss.live_teacher_key = ""  # not kept in the session once used
    ss.update(room=room.code, teacher_secret=room.teacher_secret, following=False)
    for key in (live.PUBLISHED, live.ASKED, live.CONFIRM_REMOVE):
        ss.pop(key, None)


def end_room() -> None:
    ss = st.session_state
    try:
        live.store().end_room(ss[live.ROOM], ss[live.TEACHER_SECRET])
    except (NoSuchRoom, NotTheTeacher):
        pass  # gone already
    except StoreError as error:  # the room is still there: say so, and keep leading it
        ss[live.LIVE_MESSAGE] = i18n.t("Could not end the room: {error}").format(error=error)
        return
    st.session_state.pop(CONFIRM_END, None)
    leave(i18n.t("The room has ended."))


def end_room_ui() -> None:
    """'End the room…' asks first, and offers the answers file before they go with the room."""
    ss = st.session_state
    if not ss.get(CONFIRM_END):
        st.button(i18n.t("End the room…"), key="live_end_ask", on_click=ss.__setitem__,
                  args=(CONFIRM_END, True))
        return
    with st.container(border=True):
        st.warning(i18n.t("Ending the room ends it for every student, and its answers go with it. Download "
                          "them first if you want to keep them."), icon=":material/warning:")
        questions.answers_download("live_csv_before_end")
        yes, no = st.columns(2)
        yes.button(i18n.t("End the room"), key="live_end", on_click=end_room, type="primary")
        no.button(i18n.t("Keep the room"), key="live_end_keep", on_click=ss.pop, args=(CONFIRM_END, None))


def join_by_code() -> None:
    """The join box: through the store's door only, the refusal shown next to the box."""
    ss = st.session_state
    code, nickname = ss.get("live_join_code", "").strip(), ss.get("live_join_nickname", "").strip()
    ss.pop(live.JOIN_ERROR, None)
    if not code:
        ss[live.JOIN_ERROR] = i18n.t("Type the room's code first.")
        return
    refusal = door.join_room(code, nickname, via="box")
    if refusal:
        ss[live.JOIN_ERROR] = refusal
        return
    if not live.in_room():
        return  # waiting for its turn (the join rate from this network): the page lets it in by itself
    ss[live.NICKNAME] = nickname
    # the address gets ?room= from this run on: already in it
    ss[live.JOINED_FROM_LINK] = (ss[live.ROOM], None)


def door_ui() -> None:
    ss = st.session_state
    st.markdown(i18n.t("Start a room and every student who opens its link follows your screen: the page, the "
                       "presenter's step, the setup and the selections. You can ask the room a question and "
                       "see the answers arrive."))
    try:
        needs_key = identity.teacher_key() is not None
    except identity.TeacherKeyError as error:
        needs_key = False
        ss.live_start_error = str(error)
    if needs_key:
        st.text_input(i18n.t("Teacher key"), key="live_teacher_key", type="password", max_chars=200,
                      help=i18n.t("This server asks teachers for a key to start a room: ask whoever runs "
                                  "it."))
    st.button(i18n.t("Start a room"), key="live_start", on_click=start_room, type="primary",
              icon=":material/groups:")
    if ss.get("live_start_error"):
        st.error(lit(ss.live_start_error), icon=":material/lock:")
    with st.form("live_join", border=True):
        st.text_input(i18n.t("Or join a room with its code"), key="live_join_code", max_chars=12)
        st.text_input(i18n.t(NICKNAME), key="live_join_nickname", max_chars=NICKNAME_CHARS)
        st.form_submit_button(i18n.t("Join"), on_click=join_by_code)
    if ss.get(live.JOIN_ERROR):
        st.warning(lit(ss[live.JOIN_ERROR]), icon=":material/door_front:")
    elif door.waiting_at_the_door("box"):
        st.info(lit(i18n.t(door.WAITING_AT_THE_DOOR)), icon=":material/hourglass_top:")


def render() -> None:
    st.title(i18n.t("Class"))
    if streamlit_door.version_note() is not None and (live.is_teacher() or not live.in_room()):
        st.warning(i18n.t(VERSION_NOTE).format(installed=lit(streamlit_door.installed_version()),
                                               pinned=lit(streamlit_door.PINNED)), icon=":material/warning:")
    proxy_header = proxy.unconfigured()
    if proxy_header is not None and (live.is_teacher() or not live.in_room()):
        st.warning(i18n.t(PROXY_NOTE).format(header=lit(proxy_header)), icon=":material/router:")
    direct_header = proxy.direct()  # the header trusted, but written by clients reaching the server straight
    if direct_header is not None and (live.is_teacher() or not live.in_room()):
        st.warning(i18n.t(DIRECT_NOTE).format(header=lit(direct_header)), icon=":material/gpp_maybe:")
    if not live.in_room():
        door_ui()
        return
    if live.is_teacher():
        teacher_panel()
    else:
        student_panel()


def student_panel() -> None:
    ss = st.session_state
    st.markdown(md(i18n.t("You are in room **{room}**. Your screen follows your teacher's; 'Explore on my "
                          "own' in the sidebar lets you try things, 'Follow again' comes back."),
                   room=ss[live.ROOM]))
    st.text_input(i18n.t(NICKNAME), key="live_my_nickname", max_chars=NICKNAME_CHARS,
                  value=ss.get(live.NICKNAME, ""),
                  on_change=rename)
    if ss.get("live_rename_error"):
        st.warning(lit(ss.live_rename_error))


def rename() -> None:
    """A member's nickname changes by joining again (the door lets a member back in freely)."""
    ss = st.session_state
    nickname = ss.get("live_my_nickname", "").strip()
    ss.pop("live_rename_error", None)
    try:
        door.enter_room(ss[live.ROOM], nickname)
        ss[live.NICKNAME] = nickname
    except StoreError as error:
        ss.live_rename_error = str(error)


# --- The teacher's panel --------------------------------------------------------------------------------


def join_link(code: str) -> str:
    base = (st.context.url or "").split("?")[0].rsplit("/", 1)[0] if st.context.url else ""
    return f"{base}/?room={code}"


def teacher_panel() -> None:
    ss = st.session_state
    link = join_link(ss[live.ROOM])
    left, right = st.columns([3, 2])
    with left:
        st.markdown(f"<div style='font-size:5rem;font-weight:700;letter-spacing:0.3em'>"
                    f"{html_text(ss[live.ROOM])}</div>",
                    unsafe_allow_html=True)
        st.markdown(i18n.t("Students open **{link}** (or scan the code).").format(link=lit(link)))
        following()
        with st.expander(i18n.t("Lead from another device (keep this link to yourself)")):
            st.code(f"{link}&teacher={ss[live.TEACHER_SECRET]}", language=None)
        end_room_ui()
    with right:
        # As wide as its column (320 px at 1280 with the sidebar open), never past it: 400 px ran off
        # the right edge of a 1280 x 720 projector.
        st.image(qr_png(link), caption=i18n.t("Scan to follow"),
                 alt=i18n.t("QR code of the join link written beside it"), width="stretch")
    roster_ui()
    questions.answers_panel()


def qr_png(text: str) -> bytes:
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="png", scale=QR_SCALE, border=2)
    return buffer.getvalue()


@fragment(run_every=2.0)
def following() -> None:
    st.markdown(i18n.t("**{count}** following right now.").format(count=f"{room_box.followers():d}"))


@fragment(run_every=ROSTER_SECONDS)
def roster_ui() -> None:
    """Who is in the room: nickname, when they joined, whether they answered the current question;
    Lock the room (nobody new gets in) and Remove a student (after a confirmation)."""
    ss = st.session_state
    if not live.is_teacher():
        return
    try:
        students = live.store().roster(ss[live.ROOM], ss[live.TEACHER_SECRET])
        locked = live.store().state(ss[live.ROOM]).locked
    except (NoSuchRoom, NotTheTeacher):
        room_gone()
        st.rerun(scope="app")
    except StoreError as error:
        st.warning(md(i18n.t("The roster cannot be read now: {error}"), error=error),
                   icon=":material/wifi_off:")
        return
    members = [student for student in students if not student.removed]
    st.subheader(i18n.t("Who is in the room"))
    left, right = st.columns([3, 2], vertical_alignment="center")
    if locked:
        left.markdown(md(i18n.t("**{count}** joined · the door is locked: nobody new gets in"),
                         count=len(members)))
    else:
        left.markdown(md(i18n.t("**{count}** joined · the door is open to anyone with the code"),
                         count=len(members)))
    right.button(i18n.t("Unlock the room") if locked else i18n.t("Lock the room"), key="live_lock",
                 on_click=set_locked,
                 args=(not locked,), icon=":material/lock_open:" if locked else ":material/lock:")
    if ss.get("live_door_error"):
        st.warning(lit(ss.live_door_error))
    if not students:
        st.caption(i18n.t("Nobody has joined yet."))
        return
    for number, student in enumerate(students, start=1):
        roster_row(number, student)


def roster_row(number: int, student) -> None:
    ss = st.session_state
    name, joined, answered, action = st.columns([3, 2, 2, 2], vertical_alignment="center")
    shown = student.nickname.strip() or i18n.t("student {number}").format(number=number)
    name.markdown(md("~~{}~~" if student.removed else "{}", shown))
    joined.caption(md(i18n.t("joined {time}"), time=clock(student.joined)))
    answered.markdown(i18n.t("removed") if student.removed else i18n.t("answered ✓") if student.answered
                      else i18n.t("not answered"))
    if student.removed:
        return
    if ss.get(live.CONFIRM_REMOVE) == student.id:
        yes, no = action.columns(2)
        yes.button(i18n.t("Remove"), key=f"live_remove_yes_{student.id}", type="primary", on_click=remove,
                   args=(student.id,), help=i18n.t("They cannot come back into this room."))
        no.button(i18n.t("Keep"), key=f"live_remove_no_{student.id}", on_click=confirm_remove, args=(None,))
    else:
        action.button(i18n.t("Remove…"), key=f"live_remove_{student.id}", on_click=confirm_remove,
                      args=(student.id,))


def confirm_remove(student_id: str | None) -> None:
    """Ask before removing (None: the teacher kept the student)."""
    st.session_state[live.CONFIRM_REMOVE] = student_id


def clock(epoch: float) -> str:
    """A time of day in the browser's time zone (UTC if the browser did not say)."""
    try:
        zone = ZoneInfo(st.context.timezone or "UTC")
    except (ValueError, KeyError, OSError):
        zone = UTC
    return datetime.fromtimestamp(epoch, zone).strftime("%H:%M:%S")


def set_locked(locked: bool) -> None:
    ss = st.session_state
    ss.pop("live_door_error", None)
    try:
        live.store().lock(ss[live.ROOM], ss[live.TEACHER_SECRET], locked)
    except StoreError as error:
        ss.live_door_error = (i18n.t("Could not lock the room: {error}") if locked
                              else i18n.t("Could not unlock the room: {error}")).format(error=error)


def remove(student_id: str) -> None:
    ss = st.session_state
    ss.pop(live.CONFIRM_REMOVE, None)
    ss.pop("live_door_error", None)
    try:
        live.store().remove(ss[live.ROOM], ss[live.TEACHER_SECRET], student_id)
    except StoreError as error:
        ss.live_door_error = i18n.t("Could not remove the student: {error}").format(error=error)
