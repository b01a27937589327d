"""Labs: the score lab, the scaling lab, size and cost (chapter 001 examples C to I, chapter 004 step 6;
grouped-query attention, the KV cache, and attention's cost against sequence length).

Thin: widgets in, course.labs computes, app.charts.lab_figures draws. Every widget key starts with
``lab_``; the values are also kept in ``lab_saved``, because Streamlit forgets a widget's state
on a run that does not draw it (another page), and nothing typed here should be lost.

This page keeps the labs' inputs and draws the three tabs: app/labs/score_lab.py, app/labs/scaling_lab.py
and app/labs/size_and_cost_lab.py.
"""

from __future__ import annotations

import math

import streamlit as st

from app import i18n
from app.labs.scaling_lab import INPUT_KEYS as SCALING_KEYS
from app.labs.scaling_lab import scaling_lab
from app.labs.score_lab import INPUT_KEYS as SCORE_KEYS
from app.labs.score_lab import TEXT_CHARS, score_lab
from app.labs.size_and_cost_lab import INPUT_KEYS as SIZE_KEYS
from app.labs.size_and_cost_lab import LAB_VALUE_BYTES, size_and_cost
from app.session import session_keys
from course.labs import VALUE_BYTES

SAVED = "lab_saved"  # a plain session key (no widget): the labs' inputs across pages
REACH = 10**12  # no lab input goes near this; a kept value past it is not one a person typed


# The labs' inputs, registered by each tab's module: a class following the teacher sees them as the
# teacher set them (app/room/following.py).
DEFAULTS = session_keys.defaults(SCORE_KEYS + SCALING_KEYS + SIZE_KEYS)


def _restore() -> None:
    """The inputs kept, and any value a room or a crafted session sent that no input of the page could
    hold (another type, a number past any input's reach, a box longer than a person types, a choice the
    page does not offer) back to its default, before a widget or a number formatter sees it."""
    ss = st.session_state
    session_keys.restore(ss, SAVED, DEFAULTS)
    for key, default in DEFAULTS.items():
        if not _holdable(ss[key], default) or (key == LAB_VALUE_BYTES and ss[key] not in VALUE_BYTES):
            ss[key] = default


def _holdable(value, default) -> bool:
    if type(value) is not type(default):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and abs(value) <= REACH
    return not isinstance(value, str) or len(value) <= 10 * TEXT_CHARS


def _save() -> None:
    session_keys.save(st.session_state, SAVED, DEFAULTS)


def render() -> None:
    _restore()
    st.title(i18n.t("Labs"))
    st.caption(i18n.t("Three small experiments from the course text; each control changes one thing."))
    score_tab, scaling_tab, size_tab = st.tabs([i18n.t("Score lab"),
                                                i18n.t("Scaling lab: why divide by √d_k"),
                                                i18n.t("Size and cost")])
    with score_tab:
        score_lab()
    with scaling_tab:
        scaling_lab()
    with size_tab:
        size_and_cost()
    _save()
