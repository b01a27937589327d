"""The workbench's steps rerun alone (app/views/workbench.py ``steps``), over Streamlit's own protocol
against a real server: AppTest always runs the whole script, so only a real session's rerun of a
fragment shows what a browser gets when a grid is edited.

What must hold: an edit after the first reruns the steps only (no sidebar input is drawn again) and
every chart shows the edited numbers; the address still follows each edit; a change the frame draws
(the page becoming edited, another example opened by a button among the steps) runs the whole page.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs

import numpy as np
import pytest

from app.grids.editors import editor_key
from app.sidebar_inputs import SIDEBAR_KEYS
from mha_core import LIMITS
from tests.live_server import class_store, streamlit_server
from tests.st_protocol import SAT, FollowerSession, drawn_weights, expected_weights

pytestmark = pytest.mark.server  # tests/conftest.py: make test-fast leaves these out

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


async def smuggled(url: str) -> None:
    """A scripted client claims a run of the steps alone but carries a sidebar value with it (an
    overlong token box): the steps' inputs are the last whole run's, so the Mark sees the sidebar
    changed and the whole page runs, where the box's limit refuses it before anything is computed."""
    tab = FollowerSession(url)
    try:
        await tab.open()
        await tab.edit_cell(X, SAT, 0, "1.5")
        tab.set_string("tokens_text", " ".join(["x" * 83_000] * 12))
        tab.changed_in = tab.fragment_of[X]  # sent as the grid's fragment's rerun
        run = await tab.rerun()
        assert run.status == "ok", "not the steps alone: the whole page, with the sidebar's checks"
        assert not run.charts and any(f"the limit is {LIMITS.token_chars}" in e.replace("\\", "")
                                      for e in run.errors), run.errors
    finally:
        await tab.close()


async def follower(url: str, store) -> None:
    """A student following a room picks another head: the steps alone rerun on the teacher's setup."""
    room = store.create_room(client="127.0.0.10")
    store.set_state(room.code, room.teacher_secret, page="", step=0,
                    setup_json=json.dumps({"example": "the_cat_sat_two_heads"}), selections={})
    tab = FollowerSession(url, headers={"X-Forwarded-For": "127.0.0.20"})
    try:
        opened = await tab.open(f"room={room.code}")
        assert opened.following and "sat" in opened.following
        for head in ("head 2", "head 1"):
            tab.set_strings("pick_shown_head", [head])
            picked = await tab.rerun()
            assert picked.status == "fragment ok" and not picked.errors, (picked.status, picked.errors)
            assert len(picked.charts) == len(opened.charts)
    finally:
        await tab.close()


def test_a_steps_run_that_carries_a_sidebar_value_runs_the_whole_page_and_its_limits():
    with streamlit_server() as (url, _process):
        asyncio.run(smuggled(url))


def test_a_following_student_picking_a_head_reruns_the_steps_alone(tmp_path):
    with class_store(tmp_path) as (_, store), streamlit_server() as (url, _process):
        asyncio.run(follower(url, store))


def test_an_edit_reruns_the_steps_alone_and_the_frame_runs_when_it_must():
    with streamlit_server() as (url, _process):
        asyncio.run(edits(url))
        asyncio.run(partner(url))
