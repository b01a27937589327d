"""A live class, the session's side: the hub its parts share, that is the store, the server's watch of
its followers, the clock of this session's wrong-code limit, a follower's turn to run, this session's
room and role, and the session keys. The parts: who is asking (app/room/identity.py), the door (start,
join, lead from a link: app/room/door.py), follow the teacher's page and publish the teacher's
(app/room/following.py), the room's box in the sidebar (app/room/room_box.py). The store itself is
classroom/, UI-free; asking the room is app/room/questions.py.

Who may do what (docs/deploy.md, "Threat model"): starting a room needs the deployer's teacher key
when MHA_TEACHER_KEY (or MHA_TEACHER_KEY_FILE) is set; the store's join() is the only way into a
room, and it limits wrong codes and join rates per client address (identity.client_address(): one
shared address for every request the server cannot tell apart, app/room/proxy.py for a proxy); a
student is the browser holding the ``mha_student`` cookie, whose secret never leaves that browser and
this process (the store sees only its hash, identity.student_id_of()).

Session keys: registered below (LIVE_KEYS, app/session/session_keys.py), for the parts too.
"""

from __future__ import annotations

import contextlib
import threading
import time

import streamlit as st

from app import widgets
from app.room import proxy
from app.session import session_keys
from classroom.backends import open_store
from classroom.watch import RoomWatch

# This module's session keys (its parts' too: they name them by these constants). A follower receives
# what pages register as followed, never these.
ROOM = "room"  # the room's code
TEACHER_SECRET = "teacher_secret"  # the teacher's session only
STUDENT_SECRET = "student_secret"  # the browser's cookie, or a fresh one this session sets
STUDENT_ID = "student_id"  # its hash, the store's id
APPLIED_VERSION = "applied_version"  # the room version shown
ROOM_INPUTS = "room_inputs"  # the sidebar's values while they are not drawn
ROOM_REVEALED = "room_revealed"  # the presenter screen the teacher revealed
PUBLISHED = "published"  # what the teacher last sent
WRONG_CODES = "wrong_codes"  # when this session tried a wrong room code or teacher link
JOINED_FROM_LINK, LIVE_MESSAGE = "joined_from_link", "live_message"
DOOR_WAIT = "door_wait"  # a student the join rate turned away, waiting for their turn: DoorWait
ASKED = "asked"  # the question the teacher asked the room: (id, question); app/room/questions.py asks it
JOIN_ERROR = "live_join_error"  # why the door refused a join (shown on the Class page)
CONFIRM_REMOVE = "live_confirm_remove"  # the student the teacher is asked to confirm removing
NICKNAME, ROOM_PAGE = "nickname", "room_page"
ROOM_ENDED = "room_ended"  # the code of the room this student was in when it ended (said on the page)
LEAD_PAGE = "lead_page"  # the room's page, opened once by a teacher who took the lead again
FORGET_TEACHER_COOKIE = "forget_teacher_cookie"  # the room whose teacher cookie this browser should drop
RESUMED = "resumed_question"  # the room's last question (the store's), for a teacher who took the lead again
LIVE_KEYS = session_keys.register(*(session_keys.Key(name, __name__) for name in (
    ROOM, TEACHER_SECRET, STUDENT_SECRET, STUDENT_ID, APPLIED_VERSION, ROOM_INPUTS, ROOM_REVEALED, PUBLISHED,
    WRONG_CODES, JOINED_FROM_LINK, LIVE_MESSAGE, DOOR_WAIT, ASKED, JOIN_ERROR, CONFIRM_REMOVE,
    ROOM_ENDED, LEAD_PAGE, FORGET_TEACHER_COOKIE, RESUMED,
)))

# Seconds for this session's wrong-code limit (tests/app/test_stateful.py moves its own clock).
clock = time.monotonic


# The session keys this module owns (app/session/session_keys.py).
session_keys.register(*(session_keys.Key(name, __name__) for name in (NICKNAME, ROOM_PAGE)))


@st.cache_resource
def store():
    """One store per server process (SQLite under MHA_DATA_DIR, or Redis at REDIS_URL)."""
    return open_store()


FOLLOWER_RUNS_AT_ONCE = 2
_follower_runs = threading.BoundedSemaphore(FOLLOWER_RUNS_AT_ONCE)


@contextlib.contextmanager
def follower_turn():
    """A following student's page run waits for its turn: when the teacher changes something the
    whole class reruns at once, and two at a time share the server's one core (the GIL) with less
    switching than a hundred threads would (p95 3.05 s against 3.21 s at 100 students,
    docs/performance.md), leaving room for the teacher's own runs. Every run passes here, so it is
    also where the first request through an unnamed proxy is logged (proxy.notice)."""
    proxy.notice()
    if not widgets.following():
        yield
        return
    with _follower_runs:
        yield


@st.cache_resource
def watch() -> RoomWatch:
    """The polls and heartbeats of every follower on this server, sent to the store together."""
    return RoomWatch(store())


def is_teacher() -> bool:
    return bool(st.session_state.get(TEACHER_SECRET))


def in_room() -> str | None:
    return st.session_state.get(ROOM)

