"""The app's side of classroom/push.py: a follower's page is rerun by the server when its room moves.

``rerun_session`` asks a Streamlit session for a whole run the way Streamlit's own "run on save"
does (``AppSession.request_rerun`` with the session's last client state, on the session's event
loop), so the browser draws it like any run. Streamlit has no public call for this: the four
private names it touches (``Runtime._session_mgr``, ``AppSession._scriptrunner``, ``._event_loop``,
``._client_state``) are those of the pinned streamlit==1.67.0: tests/classroom/test_push.py's server
tests fail if they change, and tests/classroom/test_race.py holds the pin. A session in the middle
of a run is left alone (its run may be a student's Send, which a whole rerun would stop); the pusher
looks again a quarter second later.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner import get_script_run_ctx

from classroom.push import RERUN_ASKED, SESSION_BUSY, SESSION_GONE, Pusher


def server_session(session_id: str) -> AppSession | None:
    """The real server's AppSession of this id, or None: gone, or no real server (AppTest runs its
    script under a ``MagicMock(spec=Runtime)``, which has no ``_session_mgr``)."""
    if not Runtime.exists():
        return None
    manager = getattr(Runtime.instance(), "_session_mgr", None)
    info = manager.get_active_session_info(session_id) if manager is not None else None
    return info.session if info is not None else None


def rerun_session(session_id: str) -> str:
    """Ask the session for a whole run if it is idle. RERUN_ASKED, SESSION_BUSY or SESSION_GONE."""
    session = server_session(session_id)
    if session is None:
        return SESSION_GONE
    if session._scriptrunner is not None:
        return SESSION_BUSY

    def on_the_event_loop() -> None:
        if session._scriptrunner is None:  # still idle: a rerun the browser sent wins
            session.request_rerun(session._client_state)

    session._event_loop.call_soon_threadsafe(on_the_event_loop)
    return RERUN_ASKED


@st.cache_resource
def pusher() -> Pusher:
    """The server's one pusher, reading versions through the followers' shared watch."""
    from app.live import watch

    started = Pusher(lambda code: watch().version(code), rerun_session)
    started.start()
    return started


def shown(code: str, version: int) -> None:
    """This follower's page now shows the room's version. Only a session the real server knows is
    kept: AppTest's pages have no session to push to (they poll), and a thread reading the store for
    them would outlive the test that opened it."""
    session_id = this_server_session()
    if session_id is not None:
        pusher().shown(session_id, code, version)


def forget() -> None:
    session_id = this_server_session()
    if session_id is not None:
        pusher().forget(session_id)


def this_server_session() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None and server_session(ctx.session_id) is not None else None
