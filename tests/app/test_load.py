"""Ten concurrent sessions on one real server, through Streamlit's websocket protocol.

Each session makes its own edit of X row 2 ('sat'), column 0 and must get back the weights of
its own edit, on the edit's run and on a later plain rerun: no state leaks between sessions,
and no exception or st.error anywhere. The bench with timings is bench/load.py.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from app.grids.editors import editor_key
from tests.live_server import streamlit_server
from tests.st_protocol import SAT, Run, Session, drawn_weights, expected_weights

pytestmark = pytest.mark.server  # tests/conftest.py: make test-fast leaves these out

SESSIONS = 10


def own_weights(run: Run) -> np.ndarray:  # [h, n_q, n_k]
    assert run.status == "ok" and not run.errors, (run.status, run.errors)
    return drawn_weights(run)


async def one_session(url: str, i: int, start_edits: asyncio.Barrier) -> list[tuple[float | None, Run]]:
    session = Session(url)
    try:
        runs = [(None, await session.open())]
        await start_edits.wait()  # every session is open: the edits' runs overlap
        value = 1.25 + 0.25 * i  # the example has 1.0 there: every session really changes it
        runs.append((value, await session.edit_cell(editor_key("x", 1), SAT, 0, str(value))))
        runs.append((value, await session.rerun()))
        return runs
    finally:
        await session.close()


async def load(url: str) -> tuple[list, Run]:
    barrier = asyncio.Barrier(SESSIONS)
    results = await asyncio.gather(*(one_session(url, i, barrier) for i in range(SESSIONS)))
    latecomer = Session(url)  # a fresh session after all the edits still gets the example
    try:
        fresh = await latecomer.open()
    finally:
        await latecomer.close()
    return results, fresh


def test_concurrent_sessions_each_see_their_own_edit():
    with streamlit_server() as (url, _):
        results, fresh = asyncio.run(asyncio.wait_for(load(url), timeout=45))
    sat_rows = set()
    for i, runs in enumerate(results):
        for value, run in runs:
            np.testing.assert_allclose(own_weights(run), expected_weights(value), atol=1e-5,
                                       err_msg=f"session {i}, edit {value}")
        sat_rows.add(tuple(np.round(own_weights(runs[-1][1])[0, SAT], 6)))
    assert len(sat_rows) == SESSIONS  # ten edits, ten different answers for 'sat' in head 1
    np.testing.assert_allclose(own_weights(fresh), expected_weights(None), atol=1e-5)
