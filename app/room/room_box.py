"""A live class, the room's box at the top of the sidebar: the teacher's (which tells the store the
teacher's page is open), a student's (following the teacher or exploring alone, with the poll that
reruns the page when the room moves), and a waiting student's.

The store, the watch and the session keys are the hub's (app/room/live.py).
"""

from __future__ import annotations

import streamlit as st

from app import i18n, setup_ui, widgets
from app.adapter.fragments import fragment
from app.room import live
from app.room.door import door_wait_ui, enter_room, waiting_at_the_door
from app.room.following import leave, room_gone, stop_following
from app.room.identity import cookie_ui, teacher_cookie_ui
from app.room.live import in_room, is_teacher
from app.safe import lit, md
from classroom.store import (
    NameTaken,
    NoSuchRoom,
    NotInRoom,
    NotTheTeacher,
    Removed,
    StoreError,
    StoreUnavailable,
)
from course.i18n import N_

POLL_SECONDS = 2.0  # a follower's heartbeat, and its check of the room's version should the server's push
# (app/room/push.py, a quarter second) be lost; two heartbeats fall in every FOLLOWER_TTL_SECONDS
TEACHER_BEAT_SECONDS = 5.0  # the teacher's page says it is open this often (the room ends 15 min after)
ROOM_ENDED = N_("Room {room} has ended: your teacher ended it (or was away for 15 minutes). This page is "
                "yours to explore now; to follow a class again, join its room on the Class page.")


def sidebar_ui(slot, current) -> None:
    """The room's box, in a slot at the top of the sidebar (filled once the page's setup is known)."""
    ss = st.session_state
    message = ss.get(live.LIVE_MESSAGE)  # cleared at the end of a run that got to draw the page
    if in_room() and not is_teacher() and not still_a_member():
        message = ss.get(live.LIVE_MESSAGE)  # why not (removed, the room ended), said below and on the page
    if message:
        slot.warning(lit(message), icon=":material/groups:")
    teacher_cookie_ui(slot)
    if not in_room():
        ended_ui()
        if waiting_at_the_door():
            with slot:
                door_wait_ui()
        return
    if is_teacher():
        with slot:
            teacher_box()
        return
    cookie_ui(slot)
    box = slot.container(border=True)
    if widgets.following():
        shown = lit(setup_ui.shown_label(current))
        box.markdown(i18n.t("**Room {room}** · following the teacher: {shown}").format(
            room=lit(ss[live.ROOM]), shown=shown))
        box.caption(i18n.t("To change anything yourself, explore on your own; the teacher's state is kept."))
        box.button(i18n.t("Explore on my own"), key="live_explore", on_click=explore)
        poll()
    else:
        box.markdown(i18n.t("**Room {room}** · exploring on your own").format(room=lit(ss[live.ROOM])))
        box.button(i18n.t("Follow again"), key="live_follow", on_click=follow_again)


@fragment(run_every=TEACHER_BEAT_SECONDS)
def teacher_box() -> None:
    """The teacher's room box, which also tells the store every few seconds that the teacher's page
    is open (a room ends TEACHER_GONE_SECONDS after its teacher's last act). When the store no longer
    knows the room, the page says so and stops showing 'you lead it'."""
    ss = st.session_state
    if not is_teacher():
        return
    try:
        live.store().teacher_heartbeat(ss[live.ROOM], ss[live.TEACHER_SECRET])
        count = live.store().followers(ss[live.ROOM])
    except (NoSuchRoom, NotTheTeacher):
        room_gone()
        st.rerun(scope="app")
    except StoreError:
        with st.container(border=True):
            st.markdown(i18n.t("**Room {room}** · you lead it").format(room=lit(ss[live.ROOM])))
            st.caption(i18n.t("The class connection is lost; the room goes on when it is back."))
        return
    with st.container(border=True):
        st.markdown(i18n.t("**Room {room}** · you lead it · {count} following").format(
            room=lit(ss[live.ROOM]), count=int(count)))


def still_a_member() -> bool:
    """A student's page asks the store on each of its runs whether they are still in the room: one
    exploring on their own sends no heartbeat, so a removal or the room's end would otherwise reach
    their page only when the room ends (every new question, its answer and the bars meanwhile). False
    once the page has left the room (the door's word, or the room's end, in live_message)."""
    ss = st.session_state
    ss.pop(live.ROOM_ENDED, None)
    try:
        live.store().check_member(ss[live.ROOM], ss.get(live.STUDENT_ID, ""))
    except NoSuchRoom:
        leave_ended_room()
    except (Removed, NotInRoom):
        rejoin()  # the door says which, and lets back in a student whose store forgot them
    except StoreError:
        return True  # the poll says the connection is lost; the page keeps what it had
    return in_room() is not None


def leave_ended_room() -> None:
    """A student's room is not in the store any more: their page says so where they look (the main
    area: a phone's sidebar is closed), until they are in a room again or dismiss it."""
    ss = st.session_state
    code = ss[live.ROOM]
    leave(i18n.t("The room has ended."))
    ss[live.ROOM_ENDED] = code


def ended_ui() -> None:
    """'Room ABCD has ended …' at the top of a former student's page, with OK to dismiss it."""
    code = st.session_state.get(live.ROOM_ENDED)
    if not code:
        return
    with st.container(border=True, key="room_ended_notice"):
        st.warning(md(i18n.t(ROOM_ENDED), room=code), icon=":material/event_busy:")
        st.button(i18n.t("OK"), key="room_ended_ok", on_click=dismiss_ended)


def dismiss_ended() -> None:
    st.session_state.pop(live.ROOM_ENDED, None)


def followers() -> int:
    try:
        return live.store().followers(st.session_state[live.ROOM])
    except StoreError:
        return 0


def explore() -> None:
    stop_following()  # the teacher's state stays, now the student's own


def follow_again() -> None:
    st.session_state.update(following=True, applied_version=-1)


@fragment(run_every=POLL_SECONDS)
def poll() -> None:
    """Cheap: the room's version and a heartbeat, both answered by the server's watch (one store read
    per room every quarter second, one write of every follower's heartbeat every few seconds); the
    page reruns only when the version moved past the one shown."""
    ss = st.session_state
    if not widgets.following():
        return
    try:
        live.watch().heartbeat(ss[live.ROOM], ss[live.STUDENT_ID])
        changed = live.watch().version(ss[live.ROOM]) > ss.get(live.APPLIED_VERSION, -1)
    except NoSuchRoom:
        changed = True  # the next run says the room has ended
    except NotInRoom:  # removed, or a store that forgot the room's members: the door says which
        changed = rejoin()
    except StoreUnavailable:
        st.warning(i18n.t("The class connection is lost; this page follows again by itself when it is back."),
                   icon=":material/wifi_off:")
        return
    if changed:
        st.rerun(scope="app")


def rejoin() -> bool:
    """Heartbeats admit nobody: a follower the store does not count as a member goes through the door
    again, and leaves with the door's message (removed, locked, gone) if it says no. True when the
    page must rerun."""
    ss = st.session_state
    try:
        try:
            enter_room(ss[live.ROOM], ss.get(live.NICKNAME, ""))
        except NameTaken:  # another student took the name meanwhile: back in without one
            ss[live.NICKNAME] = ""
            enter_room(ss[live.ROOM])
    except StoreUnavailable:
        return False
    except StoreError as error:
        leave(str(error))
    return True

