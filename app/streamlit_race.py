"""A race in Streamlit 1.67's sessions that loses a whole run's output, worked around.

When a fragment's rerun (a ``run_every`` tick, a tap inside a fragment) reaches a session whose
last run has finished its script but whose messages the server's event loop has not handled yet
(on a busy server they wait behind other sessions' work), ``AppSession.request_rerun`` finds that
run's ScriptRunner stopped, starts a new one, and from then on ignores every event of the old one:
none of that run's messages reach the browser. A student's chip tap, run on the server, never
showed; a follower's page kept the teacher's previous screen, because the poll had already
recorded the version as shown. Streamlit's own comment in ``request_rerun`` names the case (its
issue 9921); only dialogs are handled there. Seen in Chromium: the forecast class test
(tests/app/test_browser.py) lost a tap or a page in 5 of 8 runs on a loaded machine; over
Streamlit's protocol, tests/classroom/test_race.py loses follower pages without it.

``install()`` makes such a request wait until the finished runner's last event (SHUTDOWN) has been
handled, then starts it; requests that arrive meanwhile join it, as they would join a runner. Only
for the pinned streamlit==1.67.0, whose private names (``_create_scriptrunner``,
``_handle_scriptrunner_event_on_event_loop``, ``_scriptrunner``, ``_state``) it wraps; under any
other version it does nothing and tests/classroom/test_race.py fails.
"""

from __future__ import annotations

import streamlit
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.scriptrunner import ScriptRunnerEvent

PINNED = "1.67.0"
WAITING = "_mha_waiting_reruns"  # on an AppSession: RerunData held until its finished runner is gone


def installed() -> bool:
    return getattr(AppSession, "_mha_race_fixed", False)


def install() -> None:
    """Wrap AppSession once per process (only under the pinned Streamlit)."""
    if installed() or streamlit.__version__ != PINNED:
        return
    create, handle = AppSession._create_scriptrunner, AppSession._handle_scriptrunner_event_on_event_loop

    def create_when_free(session: AppSession, initial_rerun_data) -> None:
        if session._scriptrunner is not None:  # refused by a runner that has finished: wait for its end
            session.__dict__.setdefault(WAITING, []).append(initial_rerun_data)
            return
        create(session, initial_rerun_data)
        start_waiting(session)

    def start_waiting(session: AppSession) -> None:
        """The held requests join the session's new runner (a whole run includes every fragment)."""
        for rerun_data in session.__dict__.pop(WAITING, []):
            session._scriptrunner.request_rerun(rerun_data)

    def handle_then_start(session: AppSession, sender, event, *args, **kwargs) -> None:
        handle(session, sender, event, *args, **kwargs)
        waiting = session.__dict__.get(WAITING)
        if (event == ScriptRunnerEvent.SHUTDOWN and waiting and session._scriptrunner is None
                and session._state != AppSessionState.SHUTDOWN_REQUESTED):
            create(session, waiting.pop(0))
            start_waiting(session)

    AppSession._create_scriptrunner = create_when_free
    AppSession._handle_scriptrunner_event_on_event_loop = handle_then_start
    AppSession._mha_race_fixed = True
