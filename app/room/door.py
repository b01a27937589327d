"""A live class, the door: join a room by its code (this session's wrong-code limit, a wait for
its turn when the join rate from its network turns it away), enter it, lead it again from a teacher
link or the browser's teacher cookie (a reload, a new tab, a server restart), and the ``?room=`` link
that does either. Whoever leads again starts on the screen the room is on (its page, step, setup and
selections), so the class is not pulled elsewhere.

The store, the clock and the session keys are the hub's (app/room/live.py); who is asking is
app/room/identity.py.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import streamlit as st

from app import i18n
from app.adapter.fragments import fragment
from app.room import identity, live, refusals
from app.room.following import take_the_lead
from app.room.live import in_room, is_teacher
from app.safe import lit
from classroom.store import (
    TOO_MANY_JOINS,
    NameTaken,
    NoSuchRoom,
    NotTheTeacher,
    StoreError,
    StoreUnavailable,
    TooLong,
    TooSoon,
    normalise_code,
)
from course.i18n import N_

WRONG_CODES_PER_SESSION = 10  # wrong room codes or teacher links one session may try ...
WRONG_CODES_WINDOW = 60.0  # ... in this many seconds (the store also limits the client address)

DOOR_WAIT_SECONDS = 120.0  # a student the join rate turned away tries again by themselves this long
DOOR_TICK_SECONDS = 1.0  # the waiting page looks this often whether its turn has come (a clock read)
WAITING_AT_THE_DOOR = N_("Many students are joining from your network: you are let in in a few seconds…")
DOOR_WAIT_OVER = N_("Many students are joining from your network and your turn did not come within two "
                    "minutes: join with the box on the Class page.")
CONNECTION_FAILED = N_("The class connection failed: {error}")


def wrong_code_wait() -> float:
    """Seconds until this session may try another code (0 if it may now): WRONG_CODES_PER_SESSION a
    minute, kept in the session whatever address the store sees."""
    now = live.clock()
    recent = [t for t in st.session_state.get(live.WRONG_CODES, []) if now - t < WRONG_CODES_WINDOW]
    st.session_state[live.WRONG_CODES] = recent
    return 0.0 if len(recent) < WRONG_CODES_PER_SESSION else WRONG_CODES_WINDOW - (now - recent[0])


def note_wrong_code() -> None:
    st.session_state.setdefault(live.WRONG_CODES, []).append(live.clock())


def session_too_soon() -> str | None:
    """The refusal after too many codes in this tab, worded as the store's TooSoon words it."""
    wait = wrong_code_wait()
    if wait <= 0:
        return None
    seconds = max(1, math.ceil(wait - 1e-6))  # as TooSoon rounds: 12.000000000000002 s is "12 s"
    return i18n.t("Too many room codes tried in this tab: try again in {seconds} s.").format(seconds=seconds)


def join_room(code: str, nickname: str = "", *, via: str = "link") -> str | None:
    """Enter room code as this browser's student, through store.join only (which says no for a wrong
    code, a locked room, a removed student, too many tries or joins, a full room). Returns the
    refusal to show, or None once in the room or waiting for its turn (the join rate from this
    network: waiting_at_the_door(), and the page lets the student in by itself). An ended room and a
    never-existing code get the same refusal, a taken nickname the store's free suggestion (the page
    shows it next to the nickname box, which keeps what was typed). via: "link" or "box", where a
    later message goes."""
    refusal = session_too_soon()
    if refusal:
        return refusal
    st.session_state.pop(live.DOOR_WAIT, None)
    try:
        enter_room(code, nickname)
    except StoreUnavailable as error:
        return i18n.t(CONNECTION_FAILED).format(error=error)
    except StoreError as error:  # NoSuchRoom, TooSoon, Removed, RoomLocked, LimitReached (full),
        if not is_join_rate(error):  # InvalidInput, NameTaken (in the reader's language: enter_room)
            return str(error)
        start_waiting(DoorWait(code, nickname, via, live.clock() + error.retry_after,
                               live.clock() + DOOR_WAIT_SECONDS))
    return None


@dataclass
class DoorWait:
    """A student the join rate turned away: what they asked for, where they asked (the message goes
    there), when to knock again and when to stop (live.clock() seconds)."""

    code: str
    nickname: str
    via: str  # "link" (?room=CODE: the sidebar) or "box" (the Class page's join box)
    knock_at: float
    give_up_at: float


def is_join_rate(error: StoreError) -> bool:
    """The store's refusal for too many joins from one network just now (not for too many codes tried)."""
    return isinstance(error, TooSoon) and str(error).startswith(TOO_MANY_JOINS)


def start_waiting(wait: DoorWait) -> None:
    st.session_state[live.DOOR_WAIT] = wait


def waiting_at_the_door(via: str | None = None) -> DoorWait | None:
    """This session's wait at the door (only one asked via there, when via is given)."""
    wait = st.session_state.get(live.DOOR_WAIT)
    return wait if isinstance(wait, DoorWait) and via in (None, wait.via) else None


def knock(wait: DoorWait) -> bool:
    """Try the door again for a waiting student. True when the wait is over (in the room, or told
    why not: another refusal, or two minutes without a turn), False to keep waiting."""
    ss = st.session_state
    try:
        enter_room(wait.code, wait.nickname)
    except StoreUnavailable:
        wait.knock_at = live.clock() + DOOR_TICK_SECONDS  # keep waiting for the store too
        return stop_waiting(wait, i18n.t(DOOR_WAIT_OVER)) if live.clock() >= wait.give_up_at else False
    except StoreError as error:
        if not is_join_rate(error):
            return stop_waiting(wait, str(error))
        if live.clock() + error.retry_after > wait.give_up_at:
            return stop_waiting(wait, i18n.t(DOOR_WAIT_OVER))
        wait.knock_at = live.clock() + error.retry_after
        return False
    ss.pop(live.DOOR_WAIT, None)
    if wait.via == "box":
        ss[live.NICKNAME] = wait.nickname
        ss[live.JOINED_FROM_LINK] = (ss[live.ROOM], None)  # as join_by_code: the address names this room
    return True


def stop_waiting(wait: DoorWait, message: str) -> bool:
    """The wait is over without the room: the message goes where the student asked."""
    ss = st.session_state
    ss.pop(live.DOOR_WAIT, None)
    if wait.via == "box":
        ss[live.JOIN_ERROR] = message
    else:
        ss[live.LIVE_MESSAGE] = message
    return True


@fragment(run_every=DOOR_TICK_SECONDS)
def door_wait_ui() -> None:
    """A waiting student's page: says so (a link's wait in the sidebar; the join box says it for its
    own) and, every tick, knocks once its turn is due (a clock read otherwise); the whole page runs
    again when the wait is over, in the room or told why not."""
    wait = waiting_at_the_door()
    if wait is None or in_room():
        return
    if live.clock() >= wait.knock_at and knock(wait):
        st.rerun(scope="app")
    if wait.via == "link":
        st.info(lit(i18n.t(WAITING_AT_THE_DOOR)), icon=":material/hourglass_top:")


def enter_room(code: str, nickname: str = "") -> None:
    """store.join for this browser's student, then follow the room; raises what the store raised (a
    wrong code also counts against this session; a taken or too long nickname in the reader's
    language, for whichever page shows it)."""
    ss = st.session_state
    ss[live.STUDENT_ID] = identity.student_id_of(identity.student_secret())
    with contextlib.suppress(NoSuchRoom):  # a code that cannot be one: join() says so and counts it
        code = normalise_code(code)
    try:
        live.watch().join(code, ss[live.STUDENT_ID], nickname=nickname, client=identity.client_address())
    except NoSuchRoom:
        note_wrong_code()
        raise
    except (NameTaken, TooLong) as error:
        raise refusals.in_language(error) from error
    if ss.get(live.ROOM) != code or is_teacher():
        ss.update(room=code, teacher_secret=None, following=True, applied_version=-1)


def lead_from_link(code: str, secret: str, *, kept: bool = False) -> str | None:
    """?room=CODE&teacher=SECRET (another device), or ?room=CODE with the browser's teacher cookie for
    CODE (kept: a reload, a new tab, a server restart): lead the room again, on the screen it is on.
    A wrong secret counts as a wrong code (here and in the store) and joins as a student instead (a
    kept one that no longer holds, silently: the cookie is dropped)."""
    refusal = session_too_soon()
    if refusal:
        return refusal
    try:
        live.store().check_teacher(code, secret, client=identity.client_address())
    except NotTheTeacher:
        note_wrong_code()
        if kept:
            identity.forget_teacher_cookie(code.strip().upper())
            return join_room(code)
        return join_room(code) or i18n.t("That teacher link is not valid for this room: you joined as a "
                                         "student.")
    except NoSuchRoom as error:
        note_wrong_code()
        if kept:
            identity.forget_teacher_cookie(code.strip().upper())
        return str(error)
    except StoreUnavailable as error:
        return i18n.t(CONNECTION_FAILED).format(error=error)
    except StoreError as error:  # TooSoon
        return str(error)
    take_the_lead(normalise_code(code), secret)
    return None


def join_from_link() -> None:
    """?room=CODE joins as a student, or leads the room when this browser keeps its teacher secret
    (the teacher's own address carries ?room=CODE: a reload is the teacher again, never a student);
    ?room=CODE&teacher=SECRET leads the room. Once per link. A ``me=`` parameter (addresses carried
    the student's id until issue 15) is ignored and dropped."""
    ss = st.session_state
    params = st.query_params
    params.pop("me", None)
    code, secret = params.get("room"), params.get("teacher")
    if not code or ss.get(live.JOINED_FROM_LINK) == (code, secret):
        return
    ss[live.JOINED_FROM_LINK] = (code, secret)
    if in_room() and ss[live.ROOM] == code.strip().upper() and not secret:
        return  # the room's own code in this session's address: already in it
    kept = None if secret else identity.kept_teacher_secret(code)
    if kept:
        message = lead_from_link(code, kept, kept=True)
    else:
        message = lead_from_link(code, secret) if secret else join_room(code)
    if message:
        ss[live.LIVE_MESSAGE] = message
    params.pop("teacher", None)  # the secret never stays in a projected address bar
