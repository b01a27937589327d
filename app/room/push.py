"""The app's side of classroom/push.py: a follower's page is rerun by the server when its room moves.

The session is asked for a whole run the way Streamlit's own "run on save" does
(``streamlit_door.rerun_when_idle``: Streamlit has no public call for it), so the browser draws it
like any run. A session in the middle of a run is left alone (its run may be a student's Send,
which a whole rerun would stop); the pusher looks again a quarter second later.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app.adapter import streamlit_door
from classroom.push import Pusher
from classroom.watch import RoomWatch

rerun_session = streamlit_door.rerun_when_idle  # RERUN_ASKED, SESSION_BUSY or SESSION_GONE


@st.cache_resource
def pusher(_watch: Callable[[], RoomWatch]) -> Pusher:
    """The server's one pusher, reading versions through the followers' shared watch (app/room/live.py's
    ``watch``, asked each time: a cleared cache makes a new one; the leading underscore: Streamlit keeps
    one pusher whatever the argument)."""
    started = Pusher(lambda code: _watch().version(code), rerun_session)
    started.start()
    return started


def shown(watch: Callable[[], RoomWatch], code: str, version: int) -> None:
    """This follower's page now shows the room's version. Only a session the real server knows is
    kept: AppTest's pages have no session to push to (they poll), and a thread reading the store for
    them would outlive the test that opened it."""
    session_id = this_server_session()
    if session_id is not None:
        pusher(watch).shown(session_id, code, version)


def moved(watch: Callable[[], RoomWatch], code: str, version: int) -> None:
    """The teacher's page on this server just sent the room its new version: this server's
    followers are asked to rerun now, not at the push's next look (up to a quarter second later)."""
    watch().moved(code, version)
    if this_server_session() is not None:
        pusher(watch).nudge()


def forget(watch: Callable[[], RoomWatch]) -> None:
    session_id = this_server_session()
    if session_id is not None:
        pusher(watch).forget(session_id)


def this_server_session() -> str | None:
    session_id = streamlit_door.session_id()
    return session_id if session_id is not None and streamlit_door.server_session(session_id) else None
