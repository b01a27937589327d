"""Streamlit's internals behind one door: every private name of Streamlit this app reads or patches.

Streamlit has no public call for what this module does: a session's own id, the fragments a run
runs, whether a run came from Back or Forward, asking an idle session for a run (the live class's
push, app/room/push.py), dropping a disconnected session's download callables (app/result_cache.py), and
the two races below, worked around by wrapping Streamlit's own methods. Each name it touches is in
``PRIVATE_NAMES`` (and the frontend's element names its stylesheets select, ``FRONTEND_TEST_IDS``);
tests/test_streamlit_door.py checks that each still exists in the installed Streamlit, and
``announce_version`` says at start, in the log and on the Class page, when the installed Streamlit is
not the one these were read against (``PINNED``, requirements.txt's pin).
Nothing outside this module imports from ``streamlit.runtime``.

The widget guard (``install_widget_guard``)
--------------------------------------------
A widget's value arrives from the browser serialised and Streamlit reads it back (its deserialiser)
before the script runs, on the first look at it: an integer number_input sent NaN or infinity
(``int(nan)``), or a string, raised there, and the sender's page was an exception only; a number
outside the box's bounds silently became the box's default (d_model 10^18 read as 1); a value in
another field than the widget's own raised too (NaN or a number sent to a select box or a radio:
its options are looked up as text) or was read as something else (``true`` sent to d_model read as
1: a bool is no number). The guard refuses such a value (the widget keeps what it held, as if
nothing had been sent) and keeps what was sent for the page to say (``refused_values``), next to
the input at fault.

The races (``install_race_fixes``)
-----------------------------------
A race in Streamlit 1.67's sessions that loses a whole run's output, worked around.

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
"""

from __future__ import annotations

import logging
import os
import threading

import streamlit
from streamlit import runtime
from streamlit.elements.widgets.number_input import NumberInputSerde
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.scriptrunner import ScriptRunContext, ScriptRunnerEvent, get_script_run_ctx
from streamlit.runtime.state.common import unpack_widget_state_value
from streamlit.runtime.state.session_state import Serialized, WStates

from classroom.push import RERUN_ASKED, SESSION_BUSY, SESSION_GONE

PINNED = "1.67.0"  # requirements.txt's streamlit==, the version these names were read against
# (where it lives, the name, what reads or patches it): tests/test_streamlit_door.py checks each exists.
PRIVATE_NAMES = (
    ("streamlit.runtime.scriptrunner", "get_script_run_ctx", "run_context: the run's own context"),
    ("streamlit.runtime.scriptrunner.ScriptRunContext", "session_id", "session_id"),
    ("streamlit.runtime.scriptrunner.ScriptRunContext", "fragment_ids_this_run", "fragments_run"),
    ("streamlit.runtime.scriptrunner.ScriptRunContext", "is_history_navigation", "history_navigation"),
    ("streamlit.runtime.Runtime", "_session_mgr", "server_session"),
    ("streamlit.runtime.app_session.AppSession", "_scriptrunner", "rerun_when_idle, the races"),
    ("streamlit.runtime.app_session.AppSession", "_event_loop", "rerun_when_idle"),
    ("streamlit.runtime.app_session.AppSession", "_client_state", "rerun_when_idle"),
    ("streamlit.runtime.app_session.AppSession", "_state", "the runner race"),
    ("streamlit.runtime.app_session.AppSession", "_create_scriptrunner", "the runner race (wrapped)"),
    ("streamlit.runtime.app_session.AppSession", "_handle_scriptrunner_event_on_event_loop",
     "the runner race (wrapped)"),
    ("streamlit.runtime.state.session_state.WStates", "call_callback", "the double click (wrapped)"),
    ("streamlit.runtime.state.session_state.WidgetMetadata", "fragment_id", "the double click"),
    ("streamlit.runtime.state.session_state.WidgetMetadata", "value_type",
     "the double click; the widget guard: the field a widget's value comes in"),
    ("streamlit.runtime.Runtime", "media_file_mgr", "clear_session_media"),
    ("streamlit.runtime.app_session.AppSession", "_on_scriptrunner_event", "one wake-up per batch (wrapped)"),
    ("streamlit.runtime.app_session.AppSession", "_call_soon_on_event_loop", "one wake-up per batch"),
    ("streamlit.runtime.app_session.AppSession", "_browser_queue", "one wake-up per batch"),
    ("streamlit.runtime.app_session.AppSession", "_message_enqueued_callback", "one wake-up per batch"),
    ("streamlit.runtime.state.session_state.WStates", "__getitem__", "the widget guard (wrapped)"),
    ("streamlit.runtime.state.session_state.WStates", "set_widget_from_proto", "the widget guard (wrapped)"),
    ("streamlit.runtime.state.common", "unpack_widget_state_value", "the widget guard"),
    ("streamlit.elements.widgets.number_input", "NumberInputSerde", "the widget guard: a box's bounds"),
    ("streamlit.elements.widgets.number_input.NumberInputSerde", "min_value", "the widget guard"),
    ("streamlit.elements.widgets.number_input.NumberInputSerde", "max_value", "the widget guard"),
    ("streamlit.runtime.state.session_state.WidgetMetadata", "deserializer", "the widget guard"),
    ("streamlit.runtime.state.session_state.WStates", "states", "the widget guard"),
    ("streamlit.runtime.state.session_state.WStates", "widget_metadata", "the widget guard"),
    ("streamlit.runtime.state.session_state", "Serialized", "the widget guard"),
    ("streamlit.runtime.state.session_state.Serialized", "value", "the widget guard"),
)
# The frontend's element names (data-testid) the app's stylesheets and page scripts select: Streamlit's
# own frame and element types, which no key of ours reaches (a keyed container's .st-key-* class does
# for our own elements, and is used wherever it can be). Private like the names above:
# tests/test_streamlit_door.py checks that every one the app's sources select is listed here and is
# still in the installed Streamlit's frontend.
FRONTEND_TEST_IDS = (
    ("InputInstructions", "style: the text boxes' 'Press Enter' hint hidden where Enter does nothing"),
    ("stAlert", "present: alerts' padding on a projector"),
    ("stApp", "phone_css: the page's width on a phone"),
    ("stBottom", "phone_css: the bottom bar on a phone"),
    ("stButtonGroup", "style: the chosen segment's contrast"),
    ("stCaptionContainer", "style, present: captions' contrast and size"),
    ("stCheckbox", "phone_css: touch targets"),
    ("stCode", "phone_css: code that wraps on a phone"),
    ("stDataFrame", "phone_css: tables that scroll inside themselves"),
    ("stDownloadButton", "phone_css: touch targets"),
    ("stElementContainer", "phone_css: elements within the phone's column"),
    ("stElementToolbar", "style: the charts' toolbar reached from the keyboard"),
    ("stExpandSidebarButton", "phone_css: touch targets"),
    ("stExpander", "style, phone_css: summaries' contrast, touch targets"),
    ("stFullScreenFrame", "phone_css: charts within the phone's column"),
    ("stHeader", "phone_css: the header on a phone"),
    ("stHeaderActionElements", "phone_css: headings' link icons"),
    ("stLayoutWrapper", "style, phone_css: the wrappers of the hidden containers, which took a gap each"),
    ("stLinkButton", "phone_css: touch targets"),
    ("stMain", "style, present, phone_css, page_scripts: the page's main area (not the sidebar)"),
    ("stMainMenuButton", "phone_css: touch targets"),
    ("stMarkdownContainer", "style, present, phone_css: text sizes"),
    ("stNumberInputContainer", "phone_css: touch targets"),
    ("stPageLink", "phone_css: touch targets"),
    ("stRadio", "phone_css: touch targets"),
    ("stSelectbox", "present: the chosen query legible on a projector"),
    ("stSidebar", "phone_css: the sidebar on a phone"),
    ("stSidebarNav", "style: the navigation's focus ring"),
    ("stSidebarNavLink", "phone_css: touch targets"),
    ("stTab", "phone_css: touch targets"),
    ("stTextInputRootElement", "phone_css: touch targets"),
    ("stTooltipHoverTarget", "phone_css: help icons' touch targets"),
    ("stVerticalBlock", "present: the gap between a screen's elements"),
    ("stWidgetLabel", "style: labels' contrast"),
)
BATCH_ENV = "MHA_STREAMLIT_BATCH"  # "0": one event-loop wake-up per message again, as Streamlit does
FIXES_ENV = "MHA_STREAMLIT_RACE_FIXES"  # "0": the races' workarounds off, to reproduce them upstream
WAITING = "_mha_waiting_reruns"  # on an AppSession: RerunData held until its finished runner is gone
TRIGGERS = frozenset({"trigger_value", "string_trigger_value", "json_trigger_value"})  # a click, not a value
_log = logging.getLogger(__name__)


# --- the version ------------------------------------------------------------------------------------


def installed_version() -> str:
    return streamlit.__version__


def version_note() -> str | None:
    """What an installed Streamlit other than PINNED means here, or None (English: the log's words;
    the Class page translates its own)."""
    if streamlit.__version__ == PINNED:
        return None
    return (f"Streamlit {streamlit.__version__} is installed, but this app was read against {PINNED}: "
            "the fixes of its races are off and a live class's pages are pushed by polling only.")


def announce_version() -> None:
    """Once per process, at start: a warning in the server's log when the version is not PINNED."""
    note = version_note()
    if note is not None and not getattr(announce_version, "said", False):
        announce_version.said = True
        _log.warning("%s", note)


# --- this run -----------------------------------------------------------------------------------------


def run_context() -> ScriptRunContext | None:
    """The running script's context, or None outside a run."""
    return get_script_run_ctx()


def session_id() -> str | None:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def fragments_run() -> list[str]:
    """The fragments this run runs: [] for a whole run (or outside a run)."""
    ctx = get_script_run_ctx()
    return list(ctx.fragment_ids_this_run or []) if ctx is not None else []


def history_navigation() -> bool:
    """This run came from the browser's Back or Forward."""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.is_history_navigation)


# --- other sessions ---------------------------------------------------------------------------------


def server_session(session_id: str) -> AppSession | None:
    """The real server's AppSession of this id, or None: gone, or no real server (AppTest runs its
    script under a ``MagicMock(spec=Runtime)``, which has no ``_session_mgr``)."""
    if not Runtime.exists():
        return None
    manager = getattr(Runtime.instance(), "_session_mgr", None)
    info = manager.get_active_session_info(session_id) if manager is not None else None
    return info.session if info is not None else None


def rerun_when_idle(session_id: str) -> str:
    """Ask the session for a whole run as Streamlit's "run on save" does (``request_rerun`` with its
    last client state, on its event loop), if it is idle: RERUN_ASKED, SESSION_BUSY or SESSION_GONE."""
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


def clear_session_media(session_id: str | None) -> None:
    """Drop what a session's download buttons left with Streamlit's media manager."""
    if session_id and runtime.exists():
        media = runtime.get_instance().media_file_mgr
        media.clear_session_refs(session_id)
        media.remove_orphaned_files()


# --- the races -------------------------------------------------------------------------------------


def race_fixes_installed() -> bool:
    return getattr(AppSession, "_mha_race_fixed", False)


def install_race_fixes() -> None:
    """Wrap AppSession and WStates once per process (only under the pinned Streamlit, and unless
    ``MHA_STREAMLIT_RACE_FIXES=0``: docs/streamlit-races.md reproduces each race with them off)."""
    if race_fixes_installed() or streamlit.__version__ != PINNED or os.environ.get(FIXES_ENV) == "0":
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
    ran = fragments_run()  # [] for a whole run
    return bool(ran) and fragment_id not in ran


# --- the widget guard -------------------------------------------------------------------------------


REFUSED_CHARS = 40  # of a refused value, as the page quotes it
_refused: dict[str | None, dict[str, str]] = {}  # session id -> widget key -> the refused value, as text
_refused_lock = threading.Lock()


def widget_guard_installed() -> bool:
    return getattr(WStates, "_mha_guarded", False)


# The fields a plain widget's value comes in (WidgetMetadata.value_type, and for a number box the
# integer field too: an integer box's value comes as int_value). A component's JSON, a file, a button's
# trigger and a chat message are left to their own readers.
PLAIN_FIELDS = {"string_value": ("string_value",), "bool_value": ("bool_value",),
                "double_value": ("double_value", "int_value"), "int_value": ("int_value",),
                "string_array_value": ("string_array_value",), "double_array_value": ("double_array_value",)}


def wrong_field(expected: str, sent: str | None) -> bool:
    """A value sent in another field than the widget's own: a number (NaN) to a select box or a radio,
    whose options are text; ``true`` to a number box (a bool is no number, though Python reads it as 1).
    Nothing sent (None: a cleared value) is no value of the wrong kind."""
    return sent is not None and expected in PLAIN_FIELDS and sent not in PLAIN_FIELDS[expected]


def install_widget_guard() -> None:
    """Once per process: a widget value Streamlit cannot read back is refused and noted, not raised.

    Where it arrives (``set_widget_from_proto``, the widget known from an earlier run): not kept, so the
    widget keeps what it held. Where it is first read (a widget not drawn yet when the value came, as
    in a new session's first message): read as if nothing had been sent, the widget's default."""
    if widget_guard_installed():
        return
    getitem, set_from_proto = WStates.__getitem__, WStates.set_widget_from_proto

    def unreadable(states: WStates, widget_id: str, state) -> bool:
        metadata = states.widget_metadata.get(widget_id)
        if metadata is None:
            return False
        if wrong_field(metadata.value_type, state.WhichOneof("value")):
            return True
        sent = unpack_widget_state_value(state)
        try:
            metadata.deserializer(sent)
        except (ValueError, TypeError, OverflowError, ArithmeticError):
            return True
        serde = getattr(metadata.deserializer, "__self__", None)  # a number box's bounds: Streamlit would
        if isinstance(serde, NumberInputSerde) and isinstance(sent, (int, float)):  # reset it to its default
            return not serde.min_value <= sent <= serde.max_value
        return False

    def set_unless_unreadable(states: WStates, widget_state) -> None:
        if unreadable(states, widget_state.id, widget_state):
            _note_refused(widget_state.id, widget_state)
            return
        set_from_proto(states, widget_state)

    def read_or_default(states: WStates, widget_id: str):
        sent = states.states.get(widget_id)
        if isinstance(sent, Serialized) and unreadable(states, widget_id, sent.value):
            _note_refused(widget_id, sent.value)
            states.states[widget_id] = Serialized(type(sent.value)(id=widget_id))  # nothing sent
        return getitem(states, widget_id)

    WStates.__getitem__ = read_or_default
    WStates.set_widget_from_proto = set_unless_unreadable
    WStates._mha_guarded = True


def _note_refused(widget_id: str, state) -> None:
    """Keep what was sent (its text, cut) under the widget's key for this session's page."""
    field = state.WhichOneof("value")
    text = str(getattr(state, field) if field else "")[:REFUSED_CHARS]
    parts = widget_id.split("-", 2)  # $$ID-<hash>-<user key>
    key = parts[2] if widget_id.startswith("$$ID-") and len(parts) == 3 else widget_id
    with _refused_lock:
        _refused.setdefault(session_id(), {})[key] = text
        while len(_refused) > 256:  # sessions that never ran to read theirs
            _refused.pop(next(iter(_refused)))


def refused_values() -> dict[str, str]:
    """The widget values this session sent that Streamlit could not read, by widget key (then forgotten)."""
    with _refused_lock:
        return _refused.pop(session_id(), {})


# --- one wake-up per batch of a run's messages ----------------------------------------------------------


BATCH = "_mha_event_batch"  # on an AppSession: (lock, events waiting for the event loop, wake-up asked)


def batching_installed() -> bool:
    return getattr(AppSession, "_mha_batched", False)


def install_event_batching() -> None:
    """Hand a script's events to the server's event loop in batches: one wake-up for all that wait.

    Streamlit 1.67 schedules every message a script sends (each element and container) as its own
    callback on the event loop (``call_soon_threadsafe``): a write to the loop's pipe, a wake-up and a
    turn of the loop each, about half of what the loop spends on a run of 88 messages. Here the events
    join a per-session list in the order they were sent, and the loop is woken only when the list was
    empty; it then handles every event waiting, in that order: a message of the session's current run
    joins its browser queue as Streamlit's handler would put it there, and the server is told once per
    batch that messages wait (Streamlit tells it per message, by another wake-up); any other event goes
    to Streamlit's own handler. The order of one session's events is unchanged; another callback
    scheduled meanwhile (a rerun the browser asked for) runs as if it had arrived a moment later. Off
    with ``MHA_STREAMLIT_BATCH=0`` (bench/load.py run with and without it compares the two, as
    docs/performance.md does) or under another Streamlit."""
    if batching_installed() or streamlit.__version__ != PINNED or os.environ.get(BATCH_ENV) == "0":
        return

    def send_in_batch(session: AppSession, sender, event, **kwargs) -> None:
        lock, waiting, asked = session.__dict__.get(BATCH) or session.__dict__.setdefault(
            BATCH, (threading.Lock(), [], [False]))
        with lock:
            waiting.append((sender, event, kwargs))
            if asked[0]:
                return
            asked[0] = True
        session._call_soon_on_event_loop(lambda: handle_waiting(session))

    def handle_waiting(session: AppSession) -> None:
        lock, waiting, asked = session.__dict__[BATCH]
        while True:
            with lock:
                if not waiting:
                    asked[0] = False
                    return
                batch = waiting[:]
                waiting.clear()
            enqueued = False
            for sender, event, kwargs in batch:
                try:
                    if event is ScriptRunnerEvent.ENQUEUE_FORWARD_MSG and sender is session._scriptrunner:
                        session._browser_queue.enqueue(kwargs["forward_msg"])  # as its handler does
                        enqueued = True
                    else:
                        session._handle_scriptrunner_event_on_event_loop(sender, event, **kwargs)
                except Exception:  # as the event loop logs a failed callback, and goes on with the next
                    _log.exception("A script runner event failed on the event loop")
            if enqueued and session._message_enqueued_callback is not None:
                session._message_enqueued_callback()  # the server sends what waits: once, not per message

    # A running ScriptRunner holds its session's receiver weakly, the function included: the original
    # must stay alive, or the run that installs this (a server's first) loses its receiver mid-run.
    AppSession._mha_unbatched_on_event = AppSession._on_scriptrunner_event
    AppSession._on_scriptrunner_event = send_in_batch
    AppSession._mha_batched = True
