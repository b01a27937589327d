"""The server reruns a follower's page when its room moves (classroom/push.py, app/push.py).

The Pusher's rules on a clock of our own (who is asked, when again, who is left alone), then a real
server over Streamlit's websocket protocol: a follower that sends nothing (no poll tick) is sent the
teacher's change by the server, and one exploring on its own is not.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from classroom.push import REPUSH_SECONDS, RERUN_ASKED, SESSION_BUSY, SESSION_GONE, Pusher
from classroom.store import NoSuchRoom, StoreUnavailable
from mha_core.scenarios import all_scenarios
from tests.live_server import class_store, streamlit_server
from tests.st_protocol import FollowerSession

# --- the Pusher's rules ----------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Sessions:
    """rerun(session_id) as Streamlit's sessions would answer it; records who was asked."""

    def __init__(self):
        self.answers: dict[str, str] = {}
        self.asked: list[str] = []

    def __call__(self, session_id: str) -> str:
        answer = self.answers.get(session_id, RERUN_ASKED)
        if answer == RERUN_ASKED:
            self.asked.append(session_id)
        return answer


def pusher_with(versions: dict) -> tuple[Pusher, Sessions, Clock]:
    def version_of(code: str) -> int:
        value = versions[code]
        if isinstance(value, Exception):
            raise value
        return value

    sessions, clock = Sessions(), Clock()
    return Pusher(version_of, sessions, clock=clock), sessions, clock


def test_only_the_followers_behind_their_room_are_asked_and_once():
    versions = {"ROOM": 3, "OTHER": 7}
    pusher, sessions, clock = pusher_with(versions)
    pusher.shown("a", "ROOM", 3)
    pusher.shown("b", "ROOM", 2)
    pusher.shown("c", "OTHER", 7)
    assert pusher.tick() == ["b"]
    clock.now += REPUSH_SECONDS / 2
    assert pusher.tick() == []  # its run is on the way
    versions["ROOM"] = 4
    clock.now += 0.25
    assert sorted(pusher.tick()) == ["a"]  # b was asked a moment ago
    pusher.shown("a", "ROOM", 4)
    clock.now += REPUSH_SECONDS
    assert pusher.tick() == ["b"]  # asked again: its page still shows version 2
    assert sessions.asked == ["b", "a", "b"]


def test_a_busy_session_is_asked_on_a_later_tick_and_a_gone_one_is_forgotten():
    pusher, sessions, clock = pusher_with({"ROOM": 5})
    pusher.shown("busy", "ROOM", 4)
    pusher.shown("gone", "ROOM", 4)
    sessions.answers.update(busy=SESSION_BUSY, gone=SESSION_GONE)
    assert pusher.tick() == []
    assert set(pusher.following()) == {"busy"}
    del sessions.answers["busy"]
    clock.now += 0.25
    assert pusher.tick() == ["busy"]


def test_an_ended_room_moves_and_a_lost_store_asks_nobody():
    versions = {"ENDED": NoSuchRoom("gone"), "AWAY": StoreUnavailable("down")}
    pusher, sessions, _ = pusher_with(versions)
    pusher.shown("a", "ENDED", 9)
    pusher.shown("b", "AWAY", 1)
    assert pusher.tick() == ["a"]  # its run says the room has ended
    pusher.forget("a")
    assert set(pusher.following()) == {"b"}


# --- a real server ---------------------------------------------------------------------------------


PRESETS = ("the_cat_sat_two_heads", "cat_chases_mouse")


async def a_follower_is_sent_the_change(url: str, store, *, explore: bool) -> tuple[list, float]:
    """Open ?room=CODE, then (without any poll tick from the page) publish a preset; returns the runs
    the server began by itself within 3 s of the change and how long the first took to arrive."""
    room = store.create_room(client="127.0.0.10")

    def publish(key: str) -> None:
        store.set_state(room.code, room.teacher_secret, page="", step=0,
                        setup_json=json.dumps({"preset": key}), selections={})

    publish(PRESETS[0])
    follower = FollowerSession(url, headers={"X-Forwarded-For": "127.0.0.20"})
    try:
        first = await follower.open(f"room={room.code}")
        assert first.following and "sat" in first.following, first.following
        if explore:
            await follower.press("live_explore")
        assert await follower.pushed(1.0) is None  # nothing moved: nothing sent
        changed = time.monotonic()
        await asyncio.to_thread(publish, PRESETS[1])
        runs, arrived = [], None
        while (run := await follower.pushed(3.0 - (time.monotonic() - changed))) is not None:
            arrived = arrived or time.monotonic() - changed
            runs.append(run)
        return runs, arrived
    finally:
        await follower.close()


@pytest.fixture
def server_and_store(tmp_path):
    with class_store(tmp_path) as (_, store), streamlit_server() as (url, _):
        yield url, store


def test_the_server_reruns_a_following_page_when_the_teacher_changes_it(server_and_store):
    runs, arrived = asyncio.run(a_follower_is_sent_the_change(*server_and_store, explore=False))
    assert len(runs) == 1, [r.status for r in runs]
    assert runs[0].status == "ok" and not runs[0].errors
    assert runs[0].following and "chases" in runs[0].following  # the new preset's title
    assert arrived < 1.0  # a quarter second's watch, then the page's run


def test_a_student_exploring_on_their_own_is_left_alone(server_and_store):
    runs, _ = asyncio.run(a_follower_is_sent_the_change(*server_and_store, explore=True))
    assert runs == []


async def hammering_followers(url: str, store, *, students: int, changes: int) -> list[str]:
    """Followers that send their poll tick again as soon as each reply ends (far more often than a
    browser's timer, to hit the moment a pushed page run has finished on the server but its messages
    are not sent yet) while the teacher changes the preset; returns what went wrong, per student."""
    room = store.create_room(client="127.0.0.10")
    titles = [all_scenarios()[key].title for key in PRESETS]

    def publish(key: str) -> None:
        store.set_state(room.code, room.teacher_secret, page="", step=0,
                        setup_json=json.dumps({"preset": key}), selections={})

    publish(PRESETS[0])
    stop = asyncio.Event()

    async def student(index: int) -> str:
        follower = FollowerSession(url, headers={"X-Forwarded-For": f"127.0.1.{index}"})
        shown = None  # the label of what the page shows, from the newest whole run
        try:
            runs = [await follower.open(f"room={room.code}")]
            while not stop.is_set():
                if not follower.auto_reruns:
                    return f"student {index}: a page run was lost (its poll timer with it)"
                runs.append(await follower.rerun_fragment())
                while (run := await follower.pushed(0.01)) is not None:
                    runs.append(run)
            await asyncio.sleep(3.0)  # the last change's push
            while (run := await follower.pushed(0.5)) is not None:
                runs.append(run)
            shown = next((r.following for r in reversed(runs) if r.following), None)
            return "" if shown and titles[changes % 2] in shown else f"student {index} shows {shown!r}"
        finally:
            await follower.close()

    async def teacher() -> None:
        await asyncio.sleep(3.0)
        for k in range(changes):
            await asyncio.to_thread(publish, PRESETS[(k + 1) % 2])
            await asyncio.sleep(1.5)
        stop.set()

    results = await asyncio.gather(*(student(i) for i in range(students)), teacher())
    return [r for r in results[:-1] if r]


def test_a_poll_tick_never_loses_the_page_run_the_server_pushed(server_and_store):
    """app/streamlit_race.py: without it, about one page in thirty lost a run here."""
    assert asyncio.run(hammering_followers(*server_and_store, students=30, changes=6)) == []


def test_the_race_fix_is_for_the_streamlit_this_project_pins():
    """A Streamlit upgrade must be read against app/streamlit_race.py (and app/push.py) first."""
    import streamlit

    from app import streamlit_race

    assert streamlit.__version__ == streamlit_race.PINNED
    streamlit_race.install()
    assert streamlit_race.installed()
