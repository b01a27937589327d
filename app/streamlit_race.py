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
handled, then starts it; requests that arrive meanwhile join it, as they would join a runner.

A second fault, met once that one was fixed: a click counted twice. Streamlit's page sends a click
on the next turn of its event loop (a ``setTimeout(0)``); a ``run_every`` tick already waiting in
the queue (input goes before timers, so a busy page has one there) goes first and sends the widget
states with the click's trigger in them, then the click's own rerun follows (logged in Chromium:
both in the same millisecond). Each run dispatched the button's ``on_click``: a student's chip tap
gave two chips (CI's forecast class failed so once), and a Next could skip a screen on the
teacher's page, whose heartbeat ticks.
``install()`` also skips a trigger's callback in a fragment run that does not run the fragment the
button lives in (a button outside every fragment clicks with a whole-page rerun); the click's own
run dispatches it. tests/app/test_taps.py clicks in a real browser beside a fast timer.

Only for the pinned streamlit==1.67.0, whose private names (``_create_scriptrunner``,
``_handle_scriptrunner_event_on_event_loop``, ``_scriptrunner``, ``_state``,
``WStates.call_callback``, ``WidgetMetadata.fragment_id`` and ``.value_type``) it wraps or reads;
under any other version it does nothing and tests/classroom/test_race.py fails.
"""

from __future__ import annotations

import streamlit
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.scriptrunner import ScriptRunnerEvent, get_script_run_ctx
from streamlit.runtime.state.session_state import WStates

PINNED = "1.67.0"
WAITING = "_mha_waiting_reruns"  # on an AppSession: RerunData held until its finished runner is gone
TRIGGERS = frozenset({"trigger_value", "string_trigger_value", "json_trigger_value"})  # a click, not a value


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

    call_callback = WStates.call_callback

    def call_unless_carried(states: WStates, widget_id: str) -> None:
        metadata = states.widget_metadata.get(widget_id)
        if metadata is None or not carried_by_another_fragment(metadata.value_type, metadata.fragment_id):
            call_callback(states, widget_id)

    AppSession._create_scriptrunner = create_when_free
    AppSession._handle_scriptrunner_event_on_event_loop = handle_then_start
    WStates.call_callback = call_unless_carried
    AppSession._mha_race_fixed = True


def carried_by_another_fragment(value_type: str, fragment_id: str | None) -> bool:
    """A button's click in a run of other fragments: a timer's rerun that carried it. The click's own
    rerun runs the button's fragment (or the whole page)."""
    if value_type not in TRIGGERS:
        return False
    ctx = get_script_run_ctx()
    ran = ctx.fragment_ids_this_run if ctx is not None else None  # None or [] for a whole run
    return bool(ran) and fragment_id not in ran
