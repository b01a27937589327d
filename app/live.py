"""A live class, the session's side: join a room from its link, follow the teacher's page, publish
the teacher's, ask the room and answer (the store itself is classroom/, UI-free).

Session keys: ``room`` (code), ``teacher_secret`` (the teacher's session only), ``student_id`` (also
in the student's address as ``me``), ``following`` (a student shows the teacher's page),
``applied_version`` (the room version shown), ``room_inputs`` (the sidebar's values while they are
not drawn), ``room_revealed`` (the presenter screen the teacher revealed), ``published`` (what the
teacher last sent).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading

import streamlit as st

from app import state, widgets
from app.views import labs, model
from app.widgets import md_literal
from classroom.store import (
    LimitReached,
    NoSuchRoom,
    NotTheTeacher,
    StoreError,
    StoreUnavailable,
    new_student_id,
    open_store,
)
from classroom.watch import RoomWatch

STUDENT_ID = re.compile(r"[A-Za-z0-9_-]{16}")  # classroom.store.new_student_id's form
FOLLOWED_INPUTS = (*labs.FOLLOWED, *model.FOLLOWED)  # page inputs outside the setup, sent with it
POLL_SECONDS = 1.0  # a follower checks the room's version this often (the page shows a change within 2 s)
ROOM_PARAMS = ("room", "teacher", "me")  # link parameters of a live class (the secret only in a teacher link)


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
    docs/performance.md), leaving room for the teacher's own runs."""
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
    return bool(st.session_state.get("teacher_secret"))


def in_room() -> str | None:
    return st.session_state.get("room")


def join_from_link() -> None:
    """?room=CODE joins as a student; ?room=CODE&teacher=SECRET reconnects the teacher. Once per code."""
    ss = st.session_state
    params = st.query_params
    code, secret = params.get("room"), params.get("teacher")
    if not code or ss.get("joined_from_link") == (code, secret):
        return
    ss.joined_from_link = (code, secret)
    if ss.get("room") == code.upper() and not secret:
        return  # the room's own code in this session's address: already in it
    try:
        if not store().room_exists(code):
            ss.live_message = f"No such room: {code[:12]}. Check the code with your teacher."
            return
        if secret:
            store().version(code)
            check_teacher(code, secret)
            ss.update(room=code.upper(), teacher_secret=secret, following=False)
        else:
            ss.setdefault("student_id", student_id_from_link(params.get("me")))
            watch().heartbeat(code.upper(), ss.student_id)  # joins now: a full room says so at once
            ss.update(room=code.upper(), teacher_secret=None, following=True, applied_version=-1)
    except LimitReached as error:
        ss.live_message = str(error)
    except NotTheTeacher:
        ss.live_message = "That teacher link is not valid for this room: you joined as a student."
        ss.update(room=code.upper(), teacher_secret=None, following=True, applied_version=-1)
        ss.setdefault("student_id", student_id_from_link(params.get("me")))
    except StoreError as error:
        ss.live_message = f"The class connection failed: {error}"
    st.query_params.pop("teacher", None)  # the secret never stays in a projected address bar


def student_id_from_link(linked: str | None) -> str:
    """The id a student's address carries (?me=..., kept there by state.link_params): a browser that
    reconnects after a server restart is then the same student, whose answer already counts. Anything
    that is not such an id gets a new one."""
    if linked and STUDENT_ID.fullmatch(linked):
        return linked
    return new_student_id()


def check_teacher(code: str, secret: str) -> None:
    """NotTheTeacher unless secret is this room's (answers() checks it without changing anything)."""
    store().answers(code, secret)


def follow_before_build() -> None:
    """A follower's session takes the room's newest state before any widget is drawn."""
    ss = st.session_state
    if not widgets.following():
        return
    try:
        if watch().version(ss.room) <= ss.get("applied_version", -1):
            return  # versions only grow; the state read below may be newer than the watch's version
        room = watch().state(ss.room)
    except NoSuchRoom:
        leave("The room has ended.")
        return
    except StoreUnavailable:
        ss.live_message = "The class connection is lost; this page will follow again when it is back."
        return
    ss.applied_version = room.version
    ss.room_page = room.page  # "" is the default page (the workbench)
    selections = dict(room.selections)
    ss.room_revealed = room.step if selections.pop("revealed", None) else None  # the presenter's Reveal
    inputs = selections.pop("inputs", {})
    if room.setup_json:
        params = {**json.loads(room.setup_json), **{k: str(v) for k, v in selections.items()}}
        state.apply_link(params)
    take_page_inputs(inputs)
    ss.room_inputs = widgets.sidebar_values()


def page_inputs() -> dict:
    """The teacher's inputs outside the setup (a lab's scores, the model's text and layer), for the
    room. Widget values: a run has them from its start, before the page draws anything."""
    ss = st.session_state
    return {key: ss[key] for key in FOLLOWED_INPUTS if isinstance(ss.get(key), (str, int, float, bool))}


def take_page_inputs(inputs: dict) -> None:
    """A follower's widgets take the teacher's values (only known keys, only plain values)."""
    for key, value in (inputs.items() if isinstance(inputs, dict) else ()):
        if key in FOLLOWED_INPUTS and isinstance(value, (str, int, float, bool)):
            st.session_state[key] = value


def unseen_sidebar() -> widgets.Unseen | None:
    """A following student's sidebar inputs: the teacher's, read without drawing them."""
    ss = st.session_state
    if not widgets.following():
        return None
    return widgets.Unseen(ss.setdefault("room_inputs", widgets.sidebar_values()))


def stop_following() -> None:
    """The sidebar's inputs are drawn again, holding what the student was shown."""
    ss = st.session_state
    widgets.restore_sidebar(ss.pop("room_inputs", {}))
    ss.following = False


def leave(message: str) -> None:
    ss = st.session_state
    ss.live_message = message
    stop_following()
    for key in ("room", "teacher_secret", "following", "applied_version", "room_page", "published"):
        ss.pop(key, None)


def publish(current, page_path: str) -> None:
    """The teacher's page, its state link and selections, sent to the room when they change."""
    ss = st.session_state
    if not is_teacher() or current.result is None:
        return
    params, _ = state.link_params(current)
    for name in ROOM_PARAMS:
        params.pop(name, None)
    selections = {name: params.pop(name) for name in list(params) if name in state.SELECTION_PARAMS}
    step = int(selections.get("step", 1)) - 1
    if page_path == "present" and ss.get(state.REVEALED, (None,))[0] == step:
        selections["revealed"] = 1  # the class sees the answer when the teacher does
    selections["inputs"] = page_inputs()
    sent = (page_path, json.dumps(params, sort_keys=True), json.dumps(selections, sort_keys=True))
    if ss.get("published") == sent:
        return
    try:
        store().set_state(ss.room, ss.teacher_secret, page=page_path, step=max(step, 0), setup_json=sent[1],
                          selections=selections)
        ss.published = sent
    except NoSuchRoom:
        leave("The room has ended (or was idle for hours).")
    except StoreError as error:
        st.sidebar.warning(f"Could not update the room: {md_literal(error)}", icon=":material/wifi_off:")


def go_to_room_page(pages: dict, shown: str) -> None:
    """A follower is shown the page the teacher shows (pages by url_path; shown: this run's)."""
    target = st.session_state.get("room_page")
    if widgets.following() and target is not None and target in pages and target != shown:
        st.switch_page(pages[target])


def sidebar_ui(slot, current) -> None:
    """The room's box, in a slot at the top of the sidebar (filled once the page's setup is known)."""
    ss = st.session_state
    message = ss.get("live_message")  # cleared at the end of a run that got to draw the page
    if message:
        slot.warning(md_literal(message), icon=":material/groups:")
    if not in_room():
        return
    box = slot.container(border=True)
    if is_teacher():
        box.markdown(f"**Room {ss.room}** · you lead it · {followers()} following")
        return
    if widgets.following():
        shown = md_literal(widgets.shown_label(current))
        box.markdown(f"**Room {ss.room}** · following the teacher: {shown}")
        box.caption("To change anything yourself, explore on your own; the teacher's state is kept.")
        box.button("Explore on my own", key="live_explore", on_click=explore)
        poll()
    else:
        box.markdown(f"**Room {ss.room}** · exploring on your own")
        box.button("Follow again", key="live_follow", on_click=follow_again)


def followers() -> int:
    try:
        return store().followers(st.session_state.room)
    except StoreError:
        return 0


def explore() -> None:
    stop_following()  # the teacher's state stays, now the student's own


def follow_again() -> None:
    st.session_state.update(following=True, applied_version=-1)


@st.fragment(run_every=POLL_SECONDS)
def poll() -> None:
    """Cheap: the room's version and a heartbeat, both answered by the server's watch (one store read
    per room every quarter second, one write of every follower's heartbeat every few seconds); the
    page reruns only when the version moved past the one shown."""
    ss = st.session_state
    if not widgets.following():
        return
    try:
        watch().heartbeat(ss.room, ss.student_id)
        changed = watch().version(ss.room) > ss.get("applied_version", -1)
    except NoSuchRoom:
        changed = True  # the next run says the room has ended
    except LimitReached as error:  # the room filled up while this student's server forgot it
        leave(str(error))
        changed = True
    except StoreUnavailable:
        st.warning("The class connection is lost; this page follows again by itself when it is back.",
                   icon=":material/wifi_off:")
        return
    if changed:
        st.rerun(scope="app")

