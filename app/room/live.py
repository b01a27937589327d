"""A live class, the session's side: the door (start, join, lead from a link), follow the teacher's
page, publish the teacher's (the store itself is classroom/, UI-free; asking the room is
app/room/questions.py).

Who may do what (docs/deploy.md, "Threat model"): starting a room needs the deployer's teacher key
when MHA_TEACHER_KEY (or MHA_TEACHER_KEY_FILE) is set; the store's join() is the only way into a
room, and it limits wrong codes and join rates per client address (client_address()); a student is
the browser holding the ``mha_student`` cookie, whose secret never leaves that browser and this
process (the store sees only its hash, student_id_of()).

Session keys: registered below (LIVE_KEYS, app/session_keys.py).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from app import address, i18n, session_keys, state, widgets
from app.adapter import page_scripts, streamlit_door
from app.adapter.fragments import fragment
from app.room import push
from app.safe import lit
from classroom.backends import open_store
from classroom.store import (
    TOO_MANY_JOINS,
    NoSuchRoom,
    NotInRoom,
    NotTheTeacher,
    StoreError,
    StoreUnavailable,
    TooSoon,
    normalise_code,
)
from classroom.watch import RoomWatch
from course.i18n import N_
from course.steps import screen_position
from mha_core.codec import current_names

# This module's session keys. A follower receives what pages register as followed, never these.
LIVE_KEYS = session_keys.register(*(session_keys.Key(name, "live") for name in (
    "room",  # the room's code
    "teacher_secret",  # the teacher's session only
    "student_secret",  # the browser's cookie, or a fresh one this session sets
    "student_id",  # its hash, the store's id
    "following",  # a student shows the teacher's page
    "applied_version",  # the room version shown
    "room_inputs",  # the sidebar's values while they are not drawn
    "room_revealed",  # the presenter screen the teacher revealed
    "published",  # what the teacher last sent
    "wrong_codes",  # when this session tried a wrong room code or teacher link
    "joined_from_link", "live_message",
    "door_wait",  # a student the join rate turned away, waiting for their turn: DoorWait
)))

POLL_SECONDS = 2.0  # a follower's heartbeat, and its check of the room's version should the server's push
# (app/room/push.py, a quarter second) be lost; two heartbeats fall in every FOLLOWER_TTL_SECONDS
TEACHER_BEAT_SECONDS = 5.0  # the teacher's page says it is open this often (the room ends 15 min after)
TOO_LARGE_FOR_THE_ROOM = N_("The teacher's setup is too large to send to the class: this page shows the "
                            "default example until the teacher shows a smaller one.")
# {refused}: what address.apply_room_state refused
ROOM_STATE_REFUSED = N_("The teacher's setup could not be shown: {refused}.")
ROOM_PARAMS = ("room", "teacher", "me")  # link parameters of a live class; "me" is read no more, only dropped

TEACHER_KEY_ENV, TEACHER_KEY_FILE_ENV = "MHA_TEACHER_KEY", "MHA_TEACHER_KEY_FILE"
CLIENT_IP_HEADER_ENV = "MHA_CLIENT_IP_HEADER"  # e.g. X-Forwarded-For behind a proxy that sets it
MAX_CLIENT_CHARS = 64  # an IPv6 address with a zone fits; a longer header value is cut

STUDENT_COOKIE = "mha_student"
STUDENT_COOKIE_MAX_AGE = 365 * 24 * 3600  # a year: the same student all school year on one browser
STUDENT_SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)
STUDENT_ID_CHARS = 16

WRONG_CODES_PER_SESSION = 10  # wrong room codes or teacher links one session may try ...
WRONG_CODES_WINDOW = 60.0  # ... in this many seconds (the store also limits the client address)
# Seconds for this session's wrong-code limit (tests/app/test_stateful.py moves its own clock).
clock = time.monotonic

DOOR_WAIT_SECONDS = 120.0  # a student the join rate turned away tries again by themselves this long
DOOR_TICK_SECONDS = 1.0  # the waiting page looks this often whether its turn has come (a clock read)
WAITING_AT_THE_DOOR = N_("Many students are joining from your network: you are let in in a few seconds…")
DOOR_WAIT_OVER = N_("Many students are joining from your network and your turn did not come within two "
                    "minutes: join with the box on the Class page.")
CONNECTION_FAILED = N_("The class connection failed: {error}")


# The session keys this module owns (app/session_keys.py).
session_keys.register(*(session_keys.Key(name, "live") for name in ("nickname", "room_page")))


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


# --- Who is asking: the client address, the teacher key, the student's identity ---------------------


def client_address() -> str:
    """The address the store's per-client limits count: the first address of the header named by
    MHA_CLIENT_IP_HEADER when the deployer set it (a proxy in front rewrites it; without such a proxy
    any client could write it), else the websocket's peer address, else (localhost, where Streamlit
    gives none) this session's own id, so that local sessions never share a limit."""
    header = os.environ.get(CLIENT_IP_HEADER_ENV, "").strip()
    if header:
        values = st.context.headers.get_all(header)
        first = text_or_empty(values[0] if isinstance(values, list) and values else "").split(",")[0].strip()
        if first:
            return first[:MAX_CLIENT_CHARS]
    if text_or_empty(st.context.ip_address):
        return st.context.ip_address[:MAX_CLIENT_CHARS]
    return f"session:{streamlit_door.session_id() or 'none'}"


def text_or_empty(value) -> str:
    """A value from the browser's request as text ("" when absent; AppTest's stand-in runtime gives
    other objects)."""
    return value if isinstance(value, str) else ""


def browser_cookie() -> str:
    return text_or_empty(st.context.cookies.get(STUDENT_COOKIE))


class TeacherKeyError(StoreError):
    """The teacher key typed is wrong, or this server's key cannot be read; the message says which."""


def teacher_key() -> str | None:
    """The deployer's teacher key: MHA_TEACHER_KEY, else the contents of the file MHA_TEACHER_KEY_FILE
    names (a mounted Secret); None when neither is set (then anyone may start a room, as on a
    laptop). A named file that cannot be read, or is empty, refuses every start rather than none."""
    key = os.environ.get(TEACHER_KEY_ENV, "")
    if key:
        return key
    path = os.environ.get(TEACHER_KEY_FILE_ENV, "")
    if not path:
        return None
    try:
        key = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeError):
        key = ""
    if not key:
        raise TeacherKeyError(i18n.t("This server's teacher key cannot be read, so no room can be started: "
                                     "tell whoever runs it (MHA_TEACHER_KEY_FILE)."))
    return key


def check_teacher_key(typed: str) -> None:
    """Nothing when no key is set or typed is the key. A wrong key takes one of the client's wrong-code
    tokens in the store (shared with room codes and teacher links); with none left every key is
    refused (TooSoon) before it is compared, so the key cannot be found by trying."""
    key = teacher_key()
    if key is None:
        return
    if not typed.strip():  # nothing tried, nothing counted
        raise TeacherKeyError(i18n.t("Type the teacher key first: this server asks for it to start a room."))
    client = client_address()
    store().refuse_if_guessing(client=client)
    if not hmac.compare_digest(typed.strip().encode(), key.encode()):
        store().wrong_guess(client=client)
        raise TeacherKeyError(i18n.t("That is not this server's teacher key."))


def new_student_secret() -> str:
    return secrets.token_urlsafe(24)


def student_id_of(secret: str) -> str:
    """The store's id for the browser holding secret: a hash, so the secret reaches no store, CSV,
    roster or screen, and the id (which may be shown) cannot be turned back into the secret."""
    digest = hashlib.sha256(b"mha-student:" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()[:STUDENT_ID_CHARS]


def student_secret() -> str:
    """This browser's secret: the ``mha_student`` cookie sent with the websocket's handshake (so a
    second tab, or the same tab after a server restart, is the same student), else a fresh one that
    cookie_ui() stores in the browser."""
    ss = st.session_state
    if "student_secret" not in ss:
        kept = browser_cookie()
        ss.student_secret = kept if STUDENT_SECRET.fullmatch(kept) else new_student_secret()
    return ss.student_secret


def cookie_ui(slot) -> None:
    """Store this session's student secret in the browser, unless the browser sent it already
    (app/adapter/page_scripts.py; the secret is [A-Za-z0-9_-] only)."""
    secret = st.session_state.get("student_secret")
    if not secret or browser_cookie() == secret:
        return
    with slot:
        page_scripts.keep_cookie(STUDENT_COOKIE, secret, STUDENT_COOKIE_MAX_AGE)


# --- The door --------------------------------------------------------------------------------------


def wrong_code_wait() -> float:
    """Seconds until this session may try another code (0 if it may now): WRONG_CODES_PER_SESSION a
    minute, kept in the session whatever address the store sees."""
    now = clock()
    recent = [t for t in st.session_state.get("wrong_codes", []) if now - t < WRONG_CODES_WINDOW]
    st.session_state.wrong_codes = recent
    return 0.0 if len(recent) < WRONG_CODES_PER_SESSION else WRONG_CODES_WINDOW - (now - recent[0])


def note_wrong_code() -> None:
    st.session_state.setdefault("wrong_codes", []).append(clock())


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
    never-existing code get the same refusal. via: "link" or "box", where a later message goes."""
    refusal = session_too_soon()
    if refusal:
        return refusal
    st.session_state.pop("door_wait", None)
    try:
        enter_room(code, nickname)
    except StoreUnavailable as error:
        return i18n.t(CONNECTION_FAILED).format(error=error)
    except StoreError as error:  # NoSuchRoom, TooSoon, Removed, RoomLocked, LimitReached (full), InvalidInput
        if not is_join_rate(error):
            return str(error)
        start_waiting(DoorWait(code, nickname, via, clock() + error.retry_after, clock() + DOOR_WAIT_SECONDS))
    return None


@dataclass
class DoorWait:
    """A student the join rate turned away: what they asked for, where they asked (the message goes
    there), when to knock again and when to stop (clock() seconds)."""

    code: str
    nickname: str
    via: str  # "link" (?room=CODE: the sidebar) or "box" (the Class page's join box)
    knock_at: float
    give_up_at: float


def is_join_rate(error: StoreError) -> bool:
    """The store's refusal for too many joins from one network just now (not for too many codes tried)."""
    return isinstance(error, TooSoon) and str(error).startswith(TOO_MANY_JOINS)


def start_waiting(wait: DoorWait) -> None:
    st.session_state.door_wait = wait


def waiting_at_the_door(via: str | None = None) -> DoorWait | None:
    """This session's wait at the door (only one asked via there, when via is given)."""
    wait = st.session_state.get("door_wait")
    return wait if isinstance(wait, DoorWait) and via in (None, wait.via) else None


def knock(wait: DoorWait) -> bool:
    """Try the door again for a waiting student. True when the wait is over (in the room, or told
    why not: another refusal, or two minutes without a turn), False to keep waiting."""
    ss = st.session_state
    try:
        enter_room(wait.code, wait.nickname)
    except StoreUnavailable:
        wait.knock_at = clock() + DOOR_TICK_SECONDS  # keep waiting for the store too
        return stop_waiting(wait, i18n.t(DOOR_WAIT_OVER)) if clock() >= wait.give_up_at else False
    except StoreError as error:
        if not is_join_rate(error):
            return stop_waiting(wait, str(error))
        if clock() + error.retry_after > wait.give_up_at:
            return stop_waiting(wait, i18n.t(DOOR_WAIT_OVER))
        wait.knock_at = clock() + error.retry_after
        return False
    ss.pop("door_wait", None)
    if wait.via == "box":
        ss.nickname = wait.nickname
        ss.joined_from_link = (ss.room, None)  # as join_by_code does: the address's ?room= is this room
    return True


def stop_waiting(wait: DoorWait, message: str) -> bool:
    """The wait is over without the room: the message goes where the student asked."""
    ss = st.session_state
    ss.pop("door_wait", None)
    if wait.via == "box":
        ss.live_join_error = message
    else:
        ss.live_message = message
    return True


@fragment(run_every=DOOR_TICK_SECONDS)
def door_wait_ui() -> None:
    """A waiting student's page: says so (a link's wait in the sidebar; the join box says it for its
    own) and, every tick, knocks once its turn is due (a clock read otherwise); the whole page runs
    again when the wait is over, in the room or told why not."""
    wait = waiting_at_the_door()
    if wait is None or in_room():
        return
    if clock() >= wait.knock_at and knock(wait):
        st.rerun(scope="app")
    if wait.via == "link":
        st.info(lit(i18n.t(WAITING_AT_THE_DOOR)), icon=":material/hourglass_top:")


def enter_room(code: str, nickname: str = "") -> None:
    """store.join for this browser's student, then follow the room; raises what the store raised (a
    wrong code also counts against this session)."""
    ss = st.session_state
    ss.student_id = student_id_of(student_secret())
    with contextlib.suppress(NoSuchRoom):  # a code that cannot be one: join() says so and counts it
        code = normalise_code(code)
    try:
        watch().join(code, ss.student_id, nickname=nickname, client=client_address())
    except NoSuchRoom:
        note_wrong_code()
        raise
    if ss.get("room") != code or is_teacher():
        ss.update(room=code, teacher_secret=None, following=True, applied_version=-1)


def lead_from_link(code: str, secret: str) -> str | None:
    """?room=CODE&teacher=SECRET: lead the room again (another device, a reload). A wrong secret
    counts as a wrong code (here and in the store) and joins as a student instead."""
    ss = st.session_state
    refusal = session_too_soon()
    if refusal:
        return refusal
    try:
        store().check_teacher(code, secret, client=client_address())
    except NotTheTeacher:
        note_wrong_code()
        return join_room(code) or i18n.t("That teacher link is not valid for this room: you joined as a "
                                         "student.")
    except NoSuchRoom as error:
        note_wrong_code()
        return str(error)
    except StoreUnavailable as error:
        return i18n.t(CONNECTION_FAILED).format(error=error)
    except StoreError as error:  # TooSoon
        return str(error)
    stop_following()
    ss.update(room=normalise_code(code), teacher_secret=secret, following=False)
    for key in ("published", "asked", "live_confirm_remove"):
        ss.pop(key, None)
    return None


def join_from_link() -> None:
    """?room=CODE joins as a student; ?room=CODE&teacher=SECRET leads the room. Once per link. A
    ``me=`` parameter (addresses carried the student's id until issue 15) is ignored and dropped."""
    ss = st.session_state
    params = st.query_params
    params.pop("me", None)
    code, secret = params.get("room"), params.get("teacher")
    if not code or ss.get("joined_from_link") == (code, secret):
        return
    ss.joined_from_link = (code, secret)
    if in_room() and ss.room == code.strip().upper() and not secret:
        return  # the room's own code in this session's address: already in it
    message = lead_from_link(code, secret) if secret else join_room(code)
    if message:
        ss.live_message = message
    params.pop("teacher", None)  # the secret never stays in a projected address bar


def follow_before_build() -> None:
    """A follower's session takes the room's newest state before any widget is drawn."""
    ss = st.session_state
    if not widgets.following():
        push.forget(watch)
        return
    try:
        if watch().version(ss.room) <= ss.get("applied_version", -1):
            push.shown(watch, ss.room, ss.applied_version)
            return  # versions only grow; the state read below may be newer than the watch's version
        room = watch().state(ss.room)
    except NoSuchRoom:
        leave(i18n.t("The room has ended."))
        return
    except StoreUnavailable:
        ss.live_message = i18n.t("The class connection is lost; this page will follow again when it is back.")
        return
    ss.applied_version = room.version
    ss.room_page = room.page  # "" is the default page (the workbench)
    selections = dict(room.selections)
    ss.room_revealed = room.step if selections.pop("revealed", None) else None  # the presenter's Reveal
    inputs = selections.pop("inputs", {})
    if room.setup_json:
        params = current_names({**json.loads(room.setup_json), **{k: str(v) for k, v in selections.items()}})
        refused = address.apply_room_state(params)  # the whole state, as a fresh page would take it
        if not {"s", "example", "setup"} & set(params):
            ss.live_message = i18n.t(TOO_LARGE_FOR_THE_ROOM)
        elif refused:
            ss.live_message = i18n.t(ROOM_STATE_REFUSED).format(refused="; ".join(refused))
    take_page_inputs(inputs)
    ss.room_inputs = widgets.sidebar_values()
    push.shown(watch, ss.room, room.version)  # the server reruns this page when the room moves past it


def page_inputs() -> dict:
    """The teacher's inputs outside the setup (a lab's scores, the model's text and layer), for the
    room. Widget values: a run has them from its start, before the page draws anything."""
    ss = st.session_state
    plain = (str, int, float, bool)
    return {key: ss[key] for key in session_keys.followed() if isinstance(ss.get(key), plain)}


def take_page_inputs(inputs: dict) -> None:
    """A follower's widgets take the teacher's values (only known keys, only plain values)."""
    for key, value in (inputs.items() if isinstance(inputs, dict) else ()):
        if key in session_keys.followed() and isinstance(value, (str, int, float, bool)):
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
    for key in ("room", "teacher_secret", "following", "applied_version", "room_page", "published", "asked"):
        ss.pop(key, None)


def room_gone() -> None:
    """The teacher's room is not in the store any more (ended elsewhere, left without its teacher for
    15 minutes, or a Redis that came back empty): say so instead of 'you lead it'."""
    leave(i18n.t("Room {room} no longer exists (it was ended, its teacher was away for 15 minutes, or the "
                 "class store lost it). Start a new room on the Class page.").format(
        room=st.session_state.room))


def publish(current, page_path: str) -> None:
    """The teacher's page, its state link and selections, sent to the room when they change."""
    if not is_teacher() or current.result is None:
        return
    params = address.publish_params(current)
    for name in ROOM_PARAMS:
        params.pop(name, None)
    selections = {name: params.pop(name) for name in list(params) if name in address.SELECTION_PARAMS}
    send(page_path, json.dumps(params, sort_keys=True), selections)


def sync_selection_params() -> None:
    """From a fragment: the selections to the address bar, and to the room for its teacher (the room
    is the address's other copy)."""
    address.sync_selection_address()
    publish_selections()


def publish_selections() -> None:
    """From a fragment (a head, query or cell picked without a whole run): the room gets the
    teacher's selections now, with the page and setup last sent."""
    ss = st.session_state
    if not is_teacher() or "published" not in ss or not streamlit_door.fragments_run():
        return  # a whole run publishes at its end
    page_path, setup_json, _ = ss.published
    send(page_path, setup_json, dict(address.selection_params()))


def send(page_path: str, setup_json: str, selections: dict) -> None:
    """One room state to the store, unless it is the one sent last."""
    ss = st.session_state
    step = screen_position(str(selections.get("step", ""))) or 0  # the presenter's screen, from its name
    if page_path == "present" and ss.get(state.REVEALED, (None,))[0] == step:
        selections["revealed"] = 1  # the class sees the answer when the teacher does
    selections["inputs"] = page_inputs()
    sent = (page_path, setup_json, json.dumps(selections, sort_keys=True))
    if ss.get("published") == sent:
        return
    try:
        store().set_state(ss.room, ss.teacher_secret, page=page_path, step=max(step, 0),
                          setup_json=setup_json, selections=selections)
        ss.published = sent
    except (NoSuchRoom, NotTheTeacher):  # NotTheTeacher: the code now belongs to another room
        room_gone()
    except StoreError as error:
        st.sidebar.warning(i18n.t("Could not update the room: {error}").format(error=lit(error)),
                           icon=":material/wifi_off:")


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
        slot.warning(lit(message), icon=":material/groups:")
    if not in_room():
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
        shown = lit(widgets.shown_label(current))
        box.markdown(i18n.t("**Room {room}** · following the teacher: {shown}").format(room=lit(ss.room),
                                                                                      shown=shown))
        box.caption(i18n.t("To change anything yourself, explore on your own; the teacher's state is kept."))
        box.button(i18n.t("Explore on my own"), key="live_explore", on_click=explore)
        poll()
    else:
        box.markdown(i18n.t("**Room {room}** · exploring on your own").format(room=lit(ss.room)))
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
        store().teacher_heartbeat(ss.room, ss.teacher_secret)
        count = store().followers(ss.room)
    except (NoSuchRoom, NotTheTeacher):
        room_gone()
        st.rerun(scope="app")
    except StoreError:
        with st.container(border=True):
            st.markdown(i18n.t("**Room {room}** · you lead it").format(room=lit(ss.room)))
            st.caption(i18n.t("The class connection is lost; the room goes on when it is back."))
        return
    with st.container(border=True):
        st.markdown(i18n.t("**Room {room}** · you lead it · {count} following").format(room=lit(ss.room),
                                                                                      count=int(count)))


def followers() -> int:
    try:
        return store().followers(st.session_state.room)
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
        watch().heartbeat(ss.room, ss.student_id)
        changed = watch().version(ss.room) > ss.get("applied_version", -1)
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
        enter_room(ss.room, ss.get("nickname", ""))
    except StoreUnavailable:
        return False
    except StoreError as error:
        leave(str(error))
    return True

