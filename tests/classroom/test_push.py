"""The server reruns a follower's page when its room moves (classroom/push.py, app/room/push.py).

The Pusher's rules on a clock of our own (who is asked, when again, who is left alone), then a real
server over Streamlit's websocket protocol: a follower that sends nothing (no poll tick) is sent the
teacher's change by the server, and one exploring on its own is not. A poll tick meeting a pushed run
is tests/classroom/test_race.py's case (its followers are pushed to as well).
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from classroom.push import REPUSH_SECONDS, RERUN_ASKED, SESSION_BUSY, SESSION_GONE, Pusher
from classroom.store import NoSuchRoom, StoreUnavailable
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
        self.answers: dict[str, str | Exception] = {}  # an Exception is raised, as a broken session would
        self.asked: list[str] = []

    def __call__(self, session_id: str) -> str:
        answer = self.answers.get(session_id, RERUN_ASKED)
        if isinstance(answer, Exception):
            raise answer
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


def test_a_nudge_asks_the_followers_at_once_not_at_the_next_look():
    """Issue 40, 8: the teacher's page on this server wakes the push when it sends a change (a tick
    every quarter second added up to half a second, with the watch's reuse age, to every change)."""
    versions = {"ROOM": 1}
    sessions = Sessions()
    pusher = Pusher(lambda code: versions[code], sessions, every=3600)  # no look of its own in this test
    pusher.shown("a", "ROOM", 1)
    pusher.start()
    versions["ROOM"] = 2
    time.sleep(0.3)
    assert sessions.asked == []  # nothing looked yet
    pusher.nudge()
    deadline = time.monotonic() + 5
    while not sessions.asked and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sessions.asked == ["a"]


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


def test_a_session_whose_rerun_fails_is_forgotten_not_asked_every_tick():
    pusher, sessions, _ = pusher_with({"ROOM": 5})
    pusher.shown("broken", "ROOM", 4)
    pusher.shown("fine", "ROOM", 4)
    sessions.answers["broken"] = AttributeError("_session_mgr")
    assert pusher.tick() == ["fine"]
    assert set(pusher.following()) == {"fine"}  # its page's poll and next whole run remain


def test_an_apptest_page_is_not_pushed_to():
    """AppTest runs the script under a MagicMock Runtime: a follower there has no server session, so
    the pusher keeps nothing and no thread reads the store for it after the test (one did, and built
    the next test's store from the environment between two tests: CI's failure on 2026-12-02)."""
    from app.room import live, push
    from tests.apptest_util import open_address
    from tests.classroom.test_live import rerun_after_a_poll, teacher_with_room

    _, code = teacher_with_room()
    student = open_address({"room": code})
    rerun_after_a_poll(student)  # follow_before_build took the room's state, and called push.shown
    assert not student.exception and student.session_state["applied_version"] >= 0
    assert push.pusher(live.watch).following() == {}


def test_an_ended_room_moves_and_a_lost_store_asks_nobody():
    versions = {"ENDED": NoSuchRoom("gone"), "AWAY": StoreUnavailable("down")}
    pusher, sessions, _ = pusher_with(versions)
    pusher.shown("a", "ENDED", 9)
    pusher.shown("b", "AWAY", 1)
    assert pusher.tick() == ["a"]  # its run says the room has ended
    pusher.forget("a")
    assert set(pusher.following()) == {"b"}


# --- a real server ---------------------------------------------------------------------------------


EXAMPLES = ("the_cat_sat_two_heads", "cat_chases_mouse")


async def a_follower_is_sent_the_change(url: str, store, *, explore: bool) -> tuple[list, float]:
    """Open ?room=CODE, then (without any poll tick from the page) publish an example; returns the runs
    the server began by itself within 3 s of the change and how long the first took to arrive."""
    room = store.create_room(client="127.0.0.10")

    def publish(key: str) -> None:
        store.set_state(room.code, room.teacher_secret, page="", step=0,
                        setup_json=json.dumps({"example": key}), selections={})

    publish(EXAMPLES[0])
    follower = FollowerSession(url, headers={"X-Forwarded-For": "127.0.0.20"})
    try:
        first = await follower.open(f"room={room.code}")
        assert first.following and "sat" in first.following, first.following
        if explore:
            await follower.press("live_explore")
        assert await follower.pushed(1.0) is None  # nothing moved: nothing sent
        changed = time.monotonic()
        await asyncio.to_thread(publish, EXAMPLES[1])
        runs, arrived = [], None
        while (run := await follower.pushed(3.0 - (time.monotonic() - changed))) is not None:
            arrived = arrived or time.monotonic() - changed
            runs.append(run)
        return runs, arrived
    finally:
        await follower.close()


@pytest.mark.server
def test_the_server_reruns_a_following_page_when_the_teacher_changes_it(server_and_store):
    runs, arrived = asyncio.run(a_follower_is_sent_the_change(*server_and_store, explore=False))
    assert len(runs) == 1, [r.status for r in runs]
    assert runs[0].status == "ok" and not runs[0].errors
    assert runs[0].following and "chases" in runs[0].following  # the new example's title
    assert arrived < 1.0  # a quarter second's watch, then the page's run


@pytest.mark.server
def test_a_student_exploring_on_their_own_is_left_alone(server_and_store):
    runs, _ = asyncio.run(a_follower_is_sent_the_change(*server_and_store, explore=True))
    assert runs == []
