"""A live class, the room's state both ways: the teacher's page, setup and selections published
to the room; a follower's page taking the room's newest state before it draws, and showing the page
the teacher shows; a teacher taking the lead again (a reload, another device) on the room's screen;
leaving the room.

The store, the watch and the session keys are the hub's (app/room/live.py).
"""

from __future__ import annotations

import json

import streamlit as st

from app import i18n, sidebar_inputs, widgets
from app.adapter import streamlit_door
from app.room import live, push
from app.room.live import is_teacher
from app.safe import lit
from app.session import address, session_keys, state
from classroom.store import NoSuchRoom, NotTheTeacher, StoreError, StoreUnavailable
from course.i18n import N_
from course.steps import screen_position
from mha_core.codec import current_names

TOO_LARGE_FOR_THE_ROOM = N_("The teacher's setup is too large to send to the class: this page shows the "
                            "default example until the teacher shows a smaller one.")
# {refused}: what address.apply_room_state refused
ROOM_STATE_REFUSED = N_("The teacher's setup could not be shown: {refused}.")
ROOM_PARAMS = ("room", "teacher", "me")  # link parameters of a live class; "me" is read no more, only dropped


def follow_before_build() -> None:
    """A follower's session takes the room's newest state before any widget is drawn."""
    ss = st.session_state
    if not widgets.following():
        push.forget(live.watch)
        return
    try:
        if live.watch().version(ss[live.ROOM]) <= ss.get(live.APPLIED_VERSION, -1):
            push.shown(live.watch, ss[live.ROOM], ss[live.APPLIED_VERSION])
            return  # versions only grow; the state read below may be newer than the watch's version
        room = live.watch().state(ss[live.ROOM])
    except NoSuchRoom:
        ended = ss[live.ROOM]
        leave(i18n.t("The room has ended."))
        ss[live.ROOM_ENDED] = ended  # said on the page too (app/room/room_box.py's ended_ui)
        return
    except StoreUnavailable:
        ss[live.LIVE_MESSAGE] = i18n.t(
            "The class connection is lost; this page will follow again when it is back.")
        return
    take_room_state(room)
    ss[live.ROOM_INPUTS] = sidebar_inputs.sidebar_values()
    # the server reruns this page when the room moves past it
    push.shown(live.watch, ss[live.ROOM], room.version)


def take_room_state(room) -> None:
    """The room's page, setup, selections and page inputs, taken as a fresh page takes a link: by a
    follower each time the room moves, by a teacher once, on taking the lead again."""
    ss = st.session_state
    ss[live.APPLIED_VERSION] = room.version
    ss[live.ROOM_PAGE] = room.page  # "" is the default page (the workbench)
    selections = dict(room.selections)
    ss[live.ROOM_REVEALED] = room.step if selections.pop("revealed", None) else None  # the presenter's Reveal
    inputs = selections.pop("inputs", {})
    if room.setup_json:
        params = current_names({**json.loads(room.setup_json), **{k: str(v) for k, v in selections.items()}})
        refused = address.apply_room_state(params)  # the whole state, as a fresh page would take it
        if not {"s", "example", "setup"} & set(params):
            ss[live.LIVE_MESSAGE] = i18n.t(TOO_LARGE_FOR_THE_ROOM)
        elif refused:
            ss[live.LIVE_MESSAGE] = i18n.t(ROOM_STATE_REFUSED).format(refused="; ".join(refused))
    take_page_inputs(inputs)


def take_the_lead(code: str, secret: str) -> None:
    """This session leads room code (its secret just checked): it stops following, and starts on the
    screen the room is on, so that leading again (a reload, the teacher link on another device) does
    not pull the class to another page or setup. Before any widget is drawn."""
    ss = st.session_state
    stop_following()
    ss.update(room=code, teacher_secret=secret, following=False)
    for key in (live.PUBLISHED, live.ASKED, live.CONFIRM_REMOVE, live.FORGET_TEACHER_COOKIE, live.RESUMED):
        ss.pop(key, None)
    push.forget(live.watch)
    try:
        room = live.store().state(code)
    except StoreError:
        return  # the page the address names; the room box says when the store is back
    take_room_state(room)
    ss[live.LEAD_PAGE] = room.page  # go_to_room_page opens it once
    ss[live.RESUMED] = room.question  # its screen takes it back (questions.resume)


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


def unseen_sidebar() -> sidebar_inputs.Unseen | None:
    """A following student's sidebar inputs: the teacher's, read without drawing them."""
    ss = st.session_state
    if not widgets.following():
        return None
    return sidebar_inputs.Unseen(ss.setdefault(live.ROOM_INPUTS, sidebar_inputs.sidebar_values()))


def stop_following() -> None:
    """The sidebar's inputs are drawn again, holding what the student was shown."""
    ss = st.session_state
    sidebar_inputs.restore_sidebar(ss.pop(live.ROOM_INPUTS, {}))
    ss[widgets.FOLLOWING] = False


def leave(message: str) -> None:
    ss = st.session_state
    if ss.get(live.TEACHER_SECRET) and ss.get(live.ROOM):
        ss[live.FORGET_TEACHER_COOKIE] = ss[live.ROOM]  # the browser's teacher cookie for it (identity.py)
    ss[live.LIVE_MESSAGE] = message
    stop_following()
    for key in (live.ROOM, live.TEACHER_SECRET, widgets.FOLLOWING, live.APPLIED_VERSION, live.ROOM_PAGE,
                live.PUBLISHED, live.ASKED):
        ss.pop(key, None)


def room_gone() -> None:
    """The teacher's room is not in the store any more (ended elsewhere, left without its teacher for
    15 minutes, or a Redis that came back empty): say so instead of 'you lead it'."""
    leave(i18n.t("Room {room} no longer exists (it was ended, its teacher was away for 15 minutes, or the "
                 "class store lost it). Start a new room on the Class page.").format(
        room=st.session_state[live.ROOM]))


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
    if not is_teacher() or live.PUBLISHED not in ss or not streamlit_door.fragments_run():
        return  # a whole run publishes at its end
    page_path, setup_json, _ = ss[live.PUBLISHED]
    send(page_path, setup_json, dict(address.selection_params()))


def send(page_path: str, setup_json: str, selections: dict) -> None:
    """One room state to the store, unless it is the one sent last."""
    ss = st.session_state
    step = screen_position(str(selections.get("step", ""))) or 0  # the presenter's screen, from its name
    if page_path == "present" and ss.get(state.REVEALED, (None,))[0] == step:
        selections["revealed"] = 1  # the class sees the answer when the teacher does
    selections["inputs"] = page_inputs()
    sent = (page_path, setup_json, json.dumps(selections, sort_keys=True))
    if ss.get(live.PUBLISHED) == sent:
        return
    try:
        version = live.store().set_state(ss[live.ROOM], ss[live.TEACHER_SECRET], page=page_path,
                                         step=max(step, 0), setup_json=setup_json, selections=selections)
        push.moved(live.watch, ss[live.ROOM], version)
        ss[live.PUBLISHED] = sent
    except (NoSuchRoom, NotTheTeacher):  # NotTheTeacher: the code now belongs to another room
        room_gone()
    except StoreError as error:
        st.sidebar.warning(i18n.t("Could not update the room: {error}").format(error=lit(error)),
                           icon=":material/wifi_off:")


def go_to_room_page(pages: dict, shown: str) -> None:
    """A follower is shown the page the teacher shows, and a teacher who took the lead again the page
    the room was on, once (pages by url_path; shown: this run's)."""
    ss = st.session_state
    if widgets.following():
        target = ss.get(live.ROOM_PAGE)
    else:
        target = ss.pop(live.LEAD_PAGE, None) if is_teacher() else None
    if target is not None and target in pages and target != shown:
        st.switch_page(pages[target])
