"""What the page's frame does around a page, shared by a whole run and the workbench's steps rerun alone.

The frame (app/streamlit_app.py) draws the sidebar and builds the run's Setup before the page, and
after it writes the address, keeps what Undo would bring back and sends a teacher's page to the room
(``finish``). The workbench's steps are a fragment (app/views/workbench.py): an edit of a grid, a
head picked or a table opened reruns only them, and they call ``finish`` themselves. ``Mark`` is
what the frame drew from a run's result; when a fragment's run would change it, the whole page runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app import i18n, setup_ui, sidebar_inputs, widgets
from app.room import following, live
from app.safe import lit
from app.session import address, opening, session_keys, state, this_run


def link_notes() -> None:
    """What a link asked for that the page could not take, said once at the top of the page."""
    for message in st.session_state.get(state.LINK_NOTES, []):
        st.warning(i18n.t("Ignored from the link: {what}").format(what=lit(message)),
                   icon=":material/warning:")


HANDED = "frame_current"  # this whole run's Current, handed by the frame to the workbench's steps
# The session keys this module owns (app/session/session_keys.py); last_page: the page the last run drew.
LAST_PAGE = "last_page"
session_keys.register(session_keys.Key(HANDED, __name__), session_keys.Key(LAST_PAGE, __name__))


@dataclass(frozen=True)
class Mark:
    """What the frame drew from a run: the sidebar's inputs and example (a button among the steps may
    load another: the steps must not go on with the old inputs), whether the page is edited (the
    picker's label, Reset, Undo) and valid, whether its link is whole (the sidebar's note), and
    whether it follows a room."""

    sidebar: str  # repr of the sidebar's values, the example and its seed
    edited: bool
    valid: bool
    whole_link: bool
    following: bool


def mark(current: this_run.Current) -> Mark:
    ss = st.session_state
    inputs = tuple(sorted(sidebar_inputs.sidebar_values().items()))
    sidebar = (inputs, ss.get(state.ORIGIN), ss.get(state.ORIGIN_SEED), ss.get(sidebar_inputs.KV_HEADS_FOR))
    whole = current.result is None or address.link_params(current)[1]
    return Mark(repr(sidebar), current.edited, current.result is not None, whole, widgets.following())


def hand_over(current: this_run.Current) -> None:
    """The frame's Current for the steps drawn in this whole run (taken at once: never kept)."""
    st.session_state[HANDED] = current


def taken() -> this_run.Current | None:
    """The Current the frame handed over in this whole run; None in a run of the steps alone."""
    return st.session_state.pop(HANDED, None)


def finish(current: this_run.Current, page_path: str, *, whole: bool = True) -> None:
    """After the page: the address, what an opening would replace, the teacher's room. In a run of the
    steps alone (``whole=False``) the sidebar is not drawn: its note on a link too large for the
    address stays as the whole run drew it (the Mark holds whether there is one)."""
    address.sync_url(current, sidebar_drawn=whole)  # after the page: its pickers may have settled a selection
    opening.remember_shown(current, setup_ui.shown_label(current))  # what a deliberate opening would replace
    following.publish(current, page_path)  # the room gets what the address says
    st.session_state[state.LINK_NOTES] = []  # shown once; gone after the next change
    st.session_state.pop(live.LIVE_MESSAGE, None)
