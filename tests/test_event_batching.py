"""One wake-up of the server's event loop per batch of a run's messages (app/adapter/streamlit_door.py,
``install_event_batching``; issue 27): a browser tab receives exactly what it received with one
wake-up per message, in the same order, run after run, over Streamlit's own protocol against two
real servers, one with the batching and one without (``MHA_STREAMLIT_BATCH=0``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.util import calc_hash

from app.adapter import streamlit_door
from app.grids.editors import editor_key
from tests.live_server import ROOT, streamlit_server
from tests.st_protocol import SAT, Run, Session

pytestmark = pytest.mark.server  # tests/conftest.py: make test-fast leaves these out


class RecordingSession(Session):
    """A tab that keeps, for every run, what each message was: its kind, and for a delta its place on
    the page, what it adds and the element's own bytes. A run stopped for another (the first edit's run
    of the steps, for the whole page's) is left out, as tests/page_budget.py leaves it out."""

    def __init__(self, url: str):
        super().__init__(url)
        self.sequence: list[tuple] = []

    def _read(self, msg, run: Run) -> None:
        kind = msg.WhichOneof("type")
        if kind == "delta":
            delta = msg.delta
            added = delta.WhichOneof("type")
            inner = delta.new_element if added == "new_element" else delta.add_block
            what = inner.WhichOneof("type") if added in ("new_element", "add_block") else added
            self.sequence.append((kind, tuple(msg.metadata.delta_path), what,
                                  len(inner.SerializeToString()) if added == "new_element" else 0))
        elif kind == "ref_hash":
            self.sequence.append((kind, tuple(msg.metadata.delta_path)))
        elif kind == "script_finished" and msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            self.sequence = []  # a run stopped for another: how much of it reached the tab is a race
        else:
            self.sequence.append((kind,))
        super()._read(msg, run)


async def tab_through(url: str) -> list[list[tuple]]:
    """Open the workbench, edit X twice (a whole run, then the steps alone), rerun; then the
    presenter's softmax screen and its Reveal: each run's messages."""
    runs = []
    tab = RecordingSession(url)
    try:
        for act in (tab.open, lambda: tab.edit_cell(editor_key("x", 1), SAT, 0, "1.5"),
                    lambda: tab.edit_cell(editor_key("x", 1), SAT, 0, "1.25"), tab.rerun):
            tab.sequence = []
            run = await act()
            assert run.status in ("ok", "fragment ok") and not run.errors, (run.status, run.errors)
            runs.append(tab.sequence)
    finally:
        await tab.close()
    presenter = RecordingSession(url)
    presenter.page_hash = calc_hash("present")
    try:
        for act in (lambda: presenter.open("step=softmax"), lambda: presenter.press("present_reveal")):
            presenter.sequence = []
            await act()
            runs.append(presenter.sequence)
    finally:
        await presenter.close()
    return runs


def test_a_tab_receives_the_same_messages_in_the_same_order_with_and_without_batches(monkeypatch):
    received = {}
    for batching in ("1", "0"):
        monkeypatch.setenv(streamlit_door.BATCH_ENV, batching)
        with streamlit_server() as (url, _process):
            received[batching] = asyncio.run(tab_through(url))
    assert [len(run) for run in received["1"]] == [len(run) for run in received["0"]]
    assert min(len(run) for run in received["1"]) > 20  # whole runs: the page, not an empty answer
    for batched, one_by_one in zip(received["1"], received["0"], strict=True):
        assert batched == one_by_one


INSTALLED_AFTER_ONE_RUN = """
from streamlit.testing.v1 import AppTest
AppTest.from_file("app/streamlit_app.py", default_timeout=60).run()
from app.adapter import streamlit_door
print(streamlit_door.batching_installed())
"""


@pytest.mark.slow
@pytest.mark.parametrize(("switch", "installed"), [("1", "True"), ("0", "False")])
def test_the_entry_point_installs_the_batching_unless_switched_off(switch, installed):
    """A fresh process runs the app's script once: the batching is installed by it, and not with
    MHA_STREAMLIT_BATCH=0 (the pinned Streamlit only: PRIVATE_NAMES)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), streamlit_door.BATCH_ENV: switch}
    done = subprocess.run([sys.executable, "-c", INSTALLED_AFTER_ONE_RUN], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == installed
