"""The workbench's steps rerun alone (app/views/workbench.py ``steps``), over Streamlit's own protocol
against a real server: AppTest always runs the whole script, so only a real session's rerun of a
fragment shows what a browser gets when a grid is edited.

What must hold: an edit after the first reruns the steps only (no sidebar input is drawn again) and
every chart shows the edited numbers; the address still follows each edit; a change the frame draws
(the page becoming edited, another example opened by a button among the steps) runs the whole page.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs

import numpy as np

from app.editors import editor_key
from app.widgets import SIDEBAR_KEYS
from tests.live_server import streamlit_server
from tests.st_protocol import SAT, FollowerSession, drawn_weights, expected_weights

X = editor_key("x", 1)


def sidebar_inputs(run) -> int:
    """The sidebar's inputs (tokens, sizes, scaling...) that the run drew."""
    return sum(key in run.widget_ids for key in SIDEBAR_KEYS)


async def edits(url: str) -> None:
    tab = FollowerSession(url)  # keeps the address bar's query string, as the frontend does
    try:
        opened = await tab.open()
        assert tab.fragment_of[X], "the X grid is drawn inside the steps' fragment"
        first = await tab.edit_cell(X, SAT, 0, "1.5")
        assert first.status == "ok", "the first edit makes the example 'edited': the whole page runs"
        assert sidebar_inputs(first) == sidebar_inputs(opened) > 0
        assert any("(edited" in said for said in tab.said), "the picker's caption says the page is edited"
        address = tab.query_string

        for value in (1.25, -0.5):
            again = await tab.edit_cell(X, SAT, 0, repr(value))
            assert again.status == "fragment ok", "a further edit reruns the steps alone"
            assert sidebar_inputs(again) == 0, "nothing of the sidebar is drawn again"
            assert len(again.charts) == len(opened.charts), "every step's chart is drawn anew"
            np.testing.assert_allclose(drawn_weights(again), expected_weights(value), atol=1e-5)
            assert tab.query_string != address, "the address follows the steps' run"
            address = tab.query_string
        assert parse_qs(address), address
    finally:
        await tab.close()


async def partner(url: str) -> None:
    """Example F's 'Compare with' button, drawn among the steps, opens the other example: new
    inputs for the sidebar, so the steps' run gives way to the whole page's."""
    tab = FollowerSession(url)
    try:
        await tab.open("example=ex_f_unscaled")
        assert tab.fragment_of["compare_partner"], "drawn among the steps"
        pressed = await tab.press("compare_partner")
        assert pressed.status == "ok" and sidebar_inputs(pressed) > 0
        assert parse_qs(tab.query_string)["example"] == ["ex_f_scaled"]
        assert "compare_unpin" in pressed.widget_ids, "A is pinned, B is the scaled example"
    finally:
        await tab.close()


def test_an_edit_reruns_the_steps_alone_and_the_frame_runs_when_it_must():
    with streamlit_server() as (url, _process):
        asyncio.run(edits(url))
        asyncio.run(partner(url))
