"""The page's address: a link opened (?s=<state>, older ?example=&tokens=..., the selections), the
address written back after every run so that it reopens the page exactly, Back and Forward, and a
room's state as a follower takes it. Built on app/session/state.py (the session's arrays and their loading);
the frame (app/streamlit_app.py, app/frame.py) and the live class call it."""

from __future__ import annotations

import streamlit as st

from app import i18n, widgets
from app.adapter import streamlit_door
from app.room import live
from app.session import opening, session_keys, state
from app.session.state import (
    examples,
    init_state,
    load_example,
    load_setup,
)
from app.session.this_run import Current
from course import steps as course_steps
from course.examples import DEFAULT_EXAMPLE, GENERATED
from course.i18n import N_
from mha_core import LIMITS
from mha_core.codec import (
    ConfigError,
    current_names,
    settings_from_link,
    setup_from_json,
    setup_from_link,
    setup_to_json,
)

SELECTION_PARAMS = {  # link parameter -> the selections it holds, counted from 1 in the link
    "head": ("shown_head",), "query": ("focus_query",), "drill": ("drill_head", "drill_query", "drill_key"),
    "step": ("present_step",),  # the presenter's screen, by its name in a link (course.steps.screen_position)
    "quiz": ("quiz_seed",),  # the quiz's draw: one link, the same questions for everyone
}

# The session keys this module owns (app/session/session_keys.py).
ADDRESS = "address"
session_keys.register(session_keys.Key(ADDRESS, __name__))


def open_session() -> None:
    """Once per session: state's defaults, then whatever the link says (said at the top of the page)."""
    if init_state():
        st.session_state[state.LINK_NOTES] = apply_link_afresh(st.query_params.to_dict())


def apply_link_afresh(params: dict) -> list[str]:
    """Open what a link says as a fresh session does: from the default example, so that nothing shown
    before survives that the link does not say (a follower takes every room state this way). The seed
    too: a follower's sidebar is not drawn, so Streamlit has dropped the seed input's own state."""
    st.session_state[state.SEED] = 0
    load_setup(examples()[DEFAULT_EXAMPLE])
    return apply_link(params)


def apply_room_state(params: dict) -> list[str]:
    """A follower takes the room's state: its link parameters, and the whole setup as a saved
    setup's JSON ("setup") when it is too large for a link (publish_params). Never from an address."""
    params = dict(params)
    document = params.pop("setup", None)
    notes = apply_link_afresh(params)
    if isinstance(document, str):
        try:
            setup = setup_from_json(document)
        except ConfigError as error:
            return [*notes, i18n.t("the room's setup ({error})").format(error=error)]
        known = setup.origin in examples() or setup.origin in GENERATED
        load_setup(setup if known else setup.with_origin("link"))
    return notes


def publish_params(current: Current) -> dict[str, str]:
    """The teacher's page for the room: the link's parameters, and the whole setup as a saved
    setup's JSON when the link cannot hold it (a long sequence), as long as a file could."""
    params, complete = link_params(current)
    if not complete and current.setup is not None and current.setup.number_count() <= LIMITS.save_numbers:
        params["setup"] = setup_to_json(current.setup)
    return params


def apply_link(params: dict) -> list[str]:
    """Open what a link says: ?s=<state> (the state link), or the older ?example=&tokens=&d_model=
    &heads=&seed=, plus the selections (older names too: codec.OLD_LINK_NAMES). Returns one message
    for what was refused, if anything."""
    params = current_names(params)
    refused: list[str] = []
    seed = _last(params.get("seed", ""))
    if isinstance(seed, str) and seed.isascii() and seed.isdigit() and len(seed) <= 7:
        st.session_state[state.SEED] = int(seed)  # before any example: a random one is drawn with it
    if "s" in params:
        try:
            setup = setup_from_link(_last(params["s"]), examples())
            load_setup(setup if setup.origin in examples() or setup.origin in GENERATED
                       else setup.with_origin("link"))
        except ConfigError as error:
            refused.append(i18n.t("the page's state ({error}); the default example is shown instead")
                           .format(error=error))
    else:
        refused += _apply_legacy_link(params)
    refused += _apply_selections(params)
    unread = [name for name in params if name not in ("s", *SELECTION_PARAMS, "example", "tokens", "d_model",
                                                      "heads", "seed", "room", "teacher", "me", "lang")]
    if unread:
        names = ", ".join(repr(name[:20]) for name in unread[:5]) + (", …" if len(unread) > 5 else "")
        refused.append(i18n.t("1 parameter this app does not read ({names})").format(names=names)
                       if len(unread) == 1 else
                       i18n.t("{count} parameters this app does not read ({names})").format(
                           count=f"{len(unread):d}", names=names))
    return refused


def _last(value):
    return value[-1] if isinstance(value, list) and value else value


def _apply_legacy_link(params: dict) -> list[str]:
    ss = st.session_state
    settings, refused = settings_from_link(params, LIMITS, tuple(examples()))
    if "seed" in settings:
        ss[state.SEED] = settings["seed"]
    if "example" in settings:
        load_example(settings["example"])
    if "tokens" in settings:
        ss[state.TOKENS_TEXT] = " ".join(settings["tokens"])
    for name, key in (("d_model", "d_model"), ("heads", "n_heads")):
        if name in settings:
            ss[key] = settings[name]
    if {"tokens", "d_model", "heads"} & set(settings):
        ss[state.ORIGIN] = "link"
    return refused


def _apply_selections(params: dict) -> list[str]:
    refused = []
    for param, keys in SELECTION_PARAMS.items():
        if param not in params:
            continue
        if param == "step":  # the presenter's screen, by its name (or an old link's number)
            position = course_steps.screen_position(str(_last(params[param])))
            if position is None:
                refused.append(i18n.t("link parameter step: expected a screen's name ({names}) or number")
                               .format(names=", ".join(screen.key for screen in course_steps.SCREENS)))
            else:
                st.session_state[state.SELECTIONS][keys[0]] = position
                st.session_state.pop(f"pick_{keys[0]}", None)
            continue
        parts = str(_last(params[param])).split(".")
        if len(parts) != len(keys) or not all(p.isascii() and p.isdigit() and len(p) < 4 for p in parts):
            refused.append(i18n.t("link parameter {param}: expected {count} whole number(s)").format(
                param=param, count=f"{len(keys):d}"))
            continue
        for key, part in zip(keys, parts, strict=True):
            st.session_state[state.SELECTIONS][key] = int(part) - 1  # the link counts from 1
            st.session_state.pop(f"pick_{key}", None)  # a picker's own earlier value would win (choice_ui)
    st.session_state.drill_open = "drill" in params  # a link to a cell opens the drill-down on it
    return refused


def link_params(current: Current) -> tuple[dict[str, str], bool]:
    """The query parameters that reopen this page exactly, and whether the state fits in them."""
    ss = st.session_state
    base = current.base if ss[state.ORIGIN] in examples() else None  # generated examples travel in full
    params, complete = ({}, True) if current.setup is None else current.setup_link(base)
    if ss[state.ORIGIN] in GENERATED:
        params["seed"] = str(ss[state.ORIGIN_SEED])  # so that the reopened page knows its example unchanged
    params.update(selection_params())
    params.update(i18n.address_params())  # the reader's chosen language, never a room's
    if ss.get(live.ROOM):
        # a live class's code stays in the address (never the teacher's secret,
        params["room"] = ss[live.ROOM]
        # never the student's identity: that is a cookie, app/room/identity.py student_secret)
    return params, complete


def selection_params() -> dict[str, str]:
    """The selections as link parameters, counting from 1 (the drill-down's only while it is open); the
    presenter's screen by its name."""
    sel, params = st.session_state[state.SELECTIONS], {}
    for param, keys in SELECTION_PARAMS.items():
        drill_closed = param == "drill" and not st.session_state.get("drill_open")
        if drill_closed or not all(key in sel for key in keys):
            continue
        if param == "step" and 0 <= sel[keys[0]] < len(course_steps.SCREENS):
            params[param] = course_steps.screen_name(sel[keys[0]])  # ?step=softmax: kept when steps are added
        else:
            params[param] = ".".join(str(sel[key] + 1) for key in keys)
    return params


def sync_url(current: Current, sidebar_drawn: bool = True) -> None:
    """Make the address bar open exactly this page; note in the sidebar (when this run draws it) that
    the state is too big for a link."""
    if current.result is None:
        return  # an input is at fault: the address keeps the last good state
    params, complete = link_params(current)
    if not complete and sidebar_drawn:
        note = TOO_LARGE_FOR_A_LINK["example" in params]
        st.sidebar.caption(i18n.t(note))
    _set_address(params)


TOO_LARGE_FOR_A_LINK = {  # does the link name the example?
    True: N_("This setup is too large for a link: the address opens its example. Use 'Save or load this "
             "setup' to keep all of it."),
    False: N_("This setup is too large for a link: the address opens the default example. Use 'Save or load "
              "this setup' to keep all of it."),
}


def _set_address(params: dict[str, str]) -> None:
    """The address, in one message when it changed: the browser records it as one entry of the tab's
    history, so Back and Forward walk through the page's changes (follow_history)."""
    st.session_state.address = dict(params)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)


def sync_selection_address() -> None:
    """From a fragment: update only the selections in the address bar (app/room/following.py's
    sync_selection_params also sends them to the room)."""
    now = st.query_params.to_dict()
    changed = {param: value for param, value in selection_params().items() if now.get(param) != value}
    if changed:
        st.query_params.update(changed)  # one message, one history entry
        st.session_state.setdefault("address", {}).update(changed)


def switch_page(page) -> None:
    """st.switch_page, the address kept as this page last wrote it: Streamlit would empty it, and Back
    would then land on an address that names no setup rather than on the one the click replaced."""
    st.switch_page(page, query_params=st.session_state.get("address"))


def follow_history() -> None:
    """Back or Forward: the browser reran the page with an address this session wrote before (or one
    typed into the bar); open it as its link says, setup and selections. A follower's page is the
    room's, whatever its address."""
    ss = st.session_state
    now = st.query_params.to_dict()
    if not streamlit_door.history_navigation() or ss.get(widgets.FOLLOWING) or "address" not in ss:
        return
    if now != ss.address:
        ss[state.LINK_NOTES] = apply_link_afresh(now)
        ss.address = now
        ss.pop(opening.UNDO, None)  # the history holds the edits now
