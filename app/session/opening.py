"""A deliberate opening over edits, and its Undo: the edited setup on screen is kept when an example,
Reset or a model's layer replaces it, so that the page can bring it back."""

from __future__ import annotations

import streamlit as st

from app import result_cache
from app.session import session_keys, state, this_run

# The session keys this module owns (app/session/session_keys.py).
SHOWN_EDITS, UNDO = "shown_edits", "undo"
session_keys.register(*(session_keys.Key(name, __name__) for name in (SHOWN_EDITS, UNDO)))


UNDO_MAX_BYTES = 2 * 2**20  # an edited setup kept for Undo; a bigger one is saved as a file or walked back to


def remember_shown(current: this_run.Current, label: str) -> None:
    """At the end of a run: an edited setup on screen is what a deliberate opening would replace. Kept
    only up to UNDO_MAX_BYTES of arrays: the session's memory budget counts every copy."""
    setup = current.setup
    small = setup is not None and result_cache.numpy_bytes(setup.arrays()) <= UNDO_MAX_BYTES
    st.session_state.shown_edits = (setup, label) if current.edited and small else None


def open_over_edits(load, *args) -> None:
    """A deliberate opening (the picker, Reset, "Open in the workbench", a file): an edited setup on
    screen is kept first, so that the page can offer to bring it back."""
    ss = st.session_state
    ss.undo = ss.get("shown_edits")
    load(*args)


def undo_opening() -> None:
    """Undo: the edited setup that the last opening replaced comes back."""
    setup, _ = st.session_state.pop("undo")
    state.load_setup(setup)
