"""The live-class store's contract, run against both backends: SQLite in a temporary directory and a
real redis-server on a free loopback port (tests/redis_server.py).

Without redis-server the Redis half is skipped with the reason, unless REQUIRE_REDIS=1 (CI), where
that fails. Time is a fake clock the tests move on (idle rooms, presence); the concurrency tests
use real threads and processes.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import multiprocessing
import os
import random
import re
import sqlite3
import string
import sys
import threading
import time
import types
import unicodedata
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from classroom import names
from classroom.backends import data_dir, open_store
from classroom.sqlite_store import SqliteStore
from classroom.store import (
    ANSWER_CHARS,
    CODE_ALPHABET,
    CODE_LENGTH,
    CSV_COLUMNS,
    FOLLOWER_TTL_SECONDS,
    FORMULA_CHARS,
    FORMULA_STARTS,
    HEARTBEAT_SECONDS,
    JOIN_BURST,
    JOIN_PER_SECOND,
    MAX_ROOMS,
    MAX_STUDENTS_PER_ROOM,
    MAX_TEXT_CHARS,
    NAME_TAKEN,
    NICKNAME_CHARS,
    PLAIN_NUMBER,
    ROOM_IDLE_SECONDS,
    ROOMS_PER_CLIENT,
    TEACHER_GONE_SECONDS,
    WRONG_CODES_PER_MINUTE,
    ClassroomStore,
    InvalidInput,
    LimitReached,
    NameTaken,
    NoSuchQuestion,
    NoSuchRoom,
    NotInRoom,
    NotTheTeacher,
    Question,
    QuestionClosed,
    Removed,
    RoomLocked,
    StoreUnavailable,
    TooLong,
    TooSoon,
    hash_secret,
    is_right,
)
from classroom.watch import RoomWatch
from tests.redis_server import REDIS_SERVER, RedisServer

REDIS_REQUIRED = os.environ.get("REQUIRE_REDIS") == "1"
STUDENTS_AT_ONCE = 200  # the spec's class size
VERSIONS_WRITTEN = 500


class FakeClock:
    """Epoch seconds that move only when a test says so (starts at the real time)."""

    def __init__(self):
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# --- Backends: how a test opens, restarts and takes down each one ---------------------------------------


class SqliteBackend:
    name = "sqlite"

    def __init__(self, directory: Path, clock: FakeClock):
        self.directory, self.clock, self._stores = directory, clock, []

    def open(self, **options) -> ClassroomStore:
        store = SqliteStore(self.directory, clock=self.clock, **options)
        self._stores.append(store)
        return store

    def spec(self) -> tuple[str, str]:
        return ("sqlite", str(self.directory))

    def restart(self, *, hard: bool = False) -> None:
        """Close every store (the server process ending); the file stays."""
        self.close()

    @contextlib.contextmanager
    def down(self):
        """Another connection holds the write lock: writes time out."""
        blocker = sqlite3.connect(self.directory / "classroom.sqlite3", isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()

    def close(self) -> None:
        for store in self._stores:
            store.close()


class RedisBackend:
    name = "redis"

    def __init__(self, server: RedisServer, clock: FakeClock):
        self.server, self.clock, self._stores = server, clock, []

    def open(self, **options) -> ClassroomStore:
        from classroom.redis_store import RedisStore

        store = RedisStore.from_url(self.server.url, clock=self.clock)
        self._stores.append(store)
        return store

    def spec(self) -> tuple[str, str]:
        return ("redis", self.server.url)

    def restart(self, *, hard: bool = False) -> None:
        self.server.restart(hard=hard)

    @contextlib.contextmanager
    def down(self):
        self.server.stop()
        try:
            yield
        finally:
            self.server.start()

    def close(self) -> None:
        for store in self._stores:
            store.close()


def open_spec(spec: tuple[str, str]) -> ClassroomStore:
    """A store in another process, from a backend's spec (real time)."""
    kind, where = spec
    if kind == "sqlite":
        return SqliteStore(where)
    from classroom.redis_store import RedisStore

    return RedisStore.from_url(where)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    if REDIS_SERVER is None:
        if REDIS_REQUIRED:
            pytest.fail("REQUIRE_REDIS=1 but there is no redis-server: apt-get install redis-server")
        pytest.skip("no redis-server found (apt-get install redis-server); "
                    "CI installs it and sets REQUIRE_REDIS=1")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, tmp_path, clock):
    if request.param == "sqlite":
        backend = SqliteBackend(tmp_path / "data", clock)
    else:
        server = request.getfixturevalue("redis_server")
        server.start()  # a no-op unless an earlier test left it stopped
        with server.client() as client:
            client.flushall()
        backend = RedisBackend(server, clock)
    yield backend
    backend.close()


@pytest.fixture
def store(backend):
    return backend.open()


@pytest.fixture
def room(store):
    return store.create_room()


def another_code(*codes: str) -> str:
    """A well-formed code that is none of ``codes``."""
    return next(code for code in ("KQ7M", "MQ7K", "WXYZ") if code not in codes)


def enter(store, room, *students: str) -> None:
    """The students join the room, each from an address of its own (no join rate in the way)."""
    for student in students:
        store.join(room.code, student, client=f"address-of-{student}")


def ask_abc(store, room, **options):
    return store.ask(room.code, room.teacher_secret, "Which head?", choices=("A", "B", "C"), **options)


def run_threads(count: int, target) -> list:
    """Run target(i) in count threads that start together; the results (or exceptions) in order."""
    barrier, results = threading.Barrier(count), [None] * count

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = target(index)
        except Exception as error:  # noqa: BLE001 - the test looks at what each thread got
            results[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def answer_in_process(spec, code, question_id, students) -> None:
    """A process of its own answers for each student id, then dies without closing anything."""
    store = open_spec(spec)
    for student_id in students:
        store.join(code, student_id, client=student_id)
        assert store.answer(code, question_id, student_id, "A")
    os._exit(0)


# --- The contract --------------------------------------------------------------------------------------


class TestRooms:
    def test_a_new_room_has_a_code_from_the_alphabet_and_a_long_secret(self, store, room):
        assert len(room.code) == CODE_LENGTH and set(room.code) <= set(CODE_ALPHABET)
        assert len(room.teacher_secret) >= 32
        assert room.teacher_secret not in repr(room)
        assert store.room_exists(room.code)

    def test_the_alphabet_has_no_letters_that_read_alike(self):
        assert not set("0O1IL") & set(CODE_ALPHABET)
        assert set(CODE_ALPHABET) <= set(string.ascii_uppercase + string.digits)

    def test_a_code_may_be_typed_in_lower_case_with_spaces_or_a_dash(self, store, room):
        assert store.room_exists(room.code.lower())
        assert store.version(f" {room.code[:2]}-{room.code[2:]} ") == 0

    @pytest.mark.parametrize("typed", ["", "K7Q", "K7QMX", "O0I1", "K7Q!", None])
    def test_a_malformed_code_is_no_such_room(self, store, typed):
        assert not store.room_exists(typed)
        with pytest.raises(NoSuchRoom, match="There is no room"):
            store.state(typed)

    def test_a_guessed_code_is_no_such_room(self, store, room):
        guess = another_code(room.code)
        assert not store.room_exists(guess)
        for call in (store.version, store.state, store.followers):
            with pytest.raises(NoSuchRoom, match=guess):
                call(guess)
        with pytest.raises(NoSuchRoom):
            store.heartbeat(guess, "s1")
        with pytest.raises(NoSuchRoom, match=guess):
            store.join(guess, "s1")
        with pytest.raises(NoSuchRoom):
            store.set_state(guess, room.teacher_secret, page="p", step=0, setup_json="", selections={})

    def test_only_the_teacher_ends_a_room_and_then_it_is_gone(self, store, room):
        with pytest.raises(NotTheTeacher, match="Only the teacher"):
            store.end_room(room.code, "a guess")
        store.end_room(room.code, room.teacher_secret)
        assert not store.room_exists(room.code)
        with pytest.raises(NoSuchRoom):
            store.state(room.code)
        with pytest.raises(NoSuchRoom):
            store.end_room(room.code, room.teacher_secret)

    def test_a_student_cannot_change_the_room(self, store, room):
        other = store.create_room()
        question = ask_abc(store, room)
        for secret in ("", "x" * 32, other.teacher_secret, None):
            with pytest.raises(NotTheTeacher):
                store.set_state(room.code, secret, page="p", step=1, setup_json="{}", selections={})
            with pytest.raises(NotTheTeacher):
                store.ask(room.code, secret, "Mine?")
            with pytest.raises(NotTheTeacher):
                store.reveal(room.code, secret, question.id)
            with pytest.raises(NotTheTeacher):
                store.answers_csv(room.code, secret)
            with pytest.raises(NotTheTeacher):
                store.end_room(room.code, secret)
        assert store.version(room.code) == 1  # the ask only
        assert store.tally(room.code, question.id).status == "open"

    def test_a_server_holds_at_most_max_rooms(self, store):
        rooms = [store.create_room(client=f"school-{n // 5}") for n in range(MAX_ROOMS)]
        assert len({room.code for room in rooms}) == MAX_ROOMS
        with pytest.raises(LimitReached, match=f"{MAX_ROOMS} rooms"):
            store.create_room(client="another-school")
        store.end_room(rooms[0].code, rooms[0].teacher_secret)
        assert store.room_exists(store.create_room(client="another-school").code)

    def test_an_idle_room_expires(self, store, room, clock):
        clock.advance(ROOM_IDLE_SECONDS + 1)
        assert not store.room_exists(room.code)
        for call in (store.version, store.state, store.followers):
            with pytest.raises(NoSuchRoom):
                call(room.code)
        with pytest.raises(NoSuchRoom):
            store.heartbeat(room.code, "s1")
        with pytest.raises(NoSuchRoom):
            store.join(room.code, "s1")
        with pytest.raises(NoSuchRoom):
            store.set_state(room.code, room.teacher_secret, page="p", step=0, setup_json="", selections={})

    def test_the_teachers_activity_keeps_a_room_alive(self, store, room, clock):
        clock.advance(ROOM_IDLE_SECONDS - 60)
        store.teacher_heartbeat(room.code, room.teacher_secret)
        clock.advance(ROOM_IDLE_SECONDS - 60)
        assert store.room_exists(room.code)

    def test_reading_is_not_activity(self, store, room, clock):
        clock.advance(ROOM_IDLE_SECONDS - 60)
        store.state(room.code)
        clock.advance(120)
        assert not store.room_exists(room.code)

    def test_idle_rooms_make_way_for_new_ones(self, store, clock):
        for number in range(MAX_ROOMS):
            store.create_room(client=f"school-{number // 5}")
        clock.advance(ROOM_IDLE_SECONDS + 1)
        assert store.room_exists(store.create_room().code)


class TestFollowing:
    def test_a_new_room_shows_nothing_yet(self, store, room):
        state = store.state(room.code)
        shown = (state.version, state.page, state.step, state.setup_json, state.selections)
        assert shown == (0, "", 0, "", {})
        assert state.question is None and not state.revealed

    def test_set_state_replaces_everything_and_counts_versions(self, store, room):
        selections = {"head": 2, "query": "3 · sat", "tokens": ["le", "chat"], "nested": {"a": None}}
        first = store.set_state(room.code, room.teacher_secret, page="Workbench", step=3,
                                setup_json='{"tokens": ["é", "<b>"]}', selections=selections)
        assert first == 1 and store.version(room.code) == 1
        state = store.state(room.code)
        assert (state.version, state.page, state.step) == (1, "Workbench", 3)
        assert json.loads(state.setup_json) == {"tokens": ["é", "<b>"]}
        assert state.selections == selections
        second = store.set_state(room.code, room.teacher_secret, page="Lesson", step=0, setup_json="",
                                 selections={})
        assert second == 2 and store.state(room.code).selections == {}

    @pytest.mark.parametrize("bad", [
        {"setup_json": "{not json"},
        {"step": -1},
        {"step": 1.5},
        {"selections": {"head": {1, 2}}},
        {"selections": {"x": float("nan")}},
        {"page": "p" * 201},
        {"setup_json": json.dumps("x" * 1_000_001)},
    ])
    def test_set_state_refuses_what_a_follower_could_not_show(self, store, room, bad):
        fields = {"page": "p", "step": 1, "setup_json": "{}", "selections": {}} | bad
        with pytest.raises(InvalidInput):
            store.set_state(room.code, room.teacher_secret, **fields)
        assert store.version(room.code) == 0

    def test_followers_are_the_students_seen_in_the_last_seconds(self, store, room, clock):
        enter(store, room, "s1", "s2", "s3")
        for student in ("s1", "s2", "s3", "s1"):
            store.heartbeat(room.code, student)
        assert store.followers(room.code) == 3
        clock.advance(FOLLOWER_TTL_SECONDS + 1)
        assert store.followers(room.code) == 0
        store.heartbeat(room.code, "s2")
        assert store.followers(room.code) == 1
        assert store.version(room.code) == 0  # presence is not a change to show

    def test_a_room_admits_max_students(self, store, room):
        enter(store, room, *(f"student-{number}" for number in range(MAX_STUDENTS_PER_ROOM)))
        with pytest.raises(LimitReached, match=f"{MAX_STUDENTS_PER_ROOM} students"):
            store.join(room.code, "one-too-many", client="elsewhere")
        question = ask_abc(store, room)
        with pytest.raises(NotInRoom):
            store.answer(room.code, question.id, "one-too-many", "A")
        store.join(room.code, "student-0", client="elsewhere")  # those admitted stay admitted
        assert store.answer(room.code, question.id, "student-0", "A")

    def test_heartbeats_in_one_write_count_like_one_each(self, store, room, clock):
        enter(store, room, "s1", "s2", "s3")
        clock.advance(FOLLOWER_TTL_SECONDS + 1)
        assert store.followers(room.code) == 0
        assert store.heartbeats(room.code, ["s1", "s2", "s1", "s3"]) == []
        assert store.followers(room.code) == 3
        clock.advance(FOLLOWER_TTL_SECONDS - 1)
        store.heartbeats(room.code, ["s2"])
        clock.advance(2)
        assert store.followers(room.code) == 1  # s1 and s3 went quiet, s2 did not
        assert store.heartbeats(room.code, []) == [] and store.version(room.code) == 0

    def test_heartbeats_admit_nobody_and_name_the_non_members(self, store, room, clock):
        enter(store, room, "s1", "s2", "gone")
        store.remove(room.code, room.teacher_secret, "gone")
        clock.advance(FOLLOWER_TTL_SECONDS + 1)
        outside = store.heartbeats(room.code, ["stranger", "s1", "gone", "s2", "other"])
        assert outside == ["stranger", "gone", "other"]
        assert store.followers(room.code) == 2
        for student in ("stranger", "gone"):
            with pytest.raises(NotInRoom):
                store.heartbeat(room.code, student)
        assert {s.id for s in store.roster(room.code, room.teacher_secret)} == {"s1", "s2", "gone"}

    def test_heartbeats_refuse_a_bad_id_before_writing_any(self, store, room, clock):
        enter(store, room, "s1", "s2")
        clock.advance(FOLLOWER_TTL_SECONDS + 1)
        with pytest.raises(InvalidInput):
            store.heartbeats(room.code, ["s1", "", "s2"])
        assert store.followers(room.code) == 0
        with pytest.raises(NoSuchRoom):
            store.heartbeats(another_code(room.code), ["s1"])

    @pytest.mark.parametrize("student_id", ["", "   ", "x" * 65, None])
    def test_a_student_id_is_short_text(self, store, room, student_id):
        with pytest.raises(InvalidInput):
            store.heartbeat(room.code, student_id)
        with pytest.raises(InvalidInput):
            store.join(room.code, student_id)


class TestAsking:
    def test_students_answer_and_the_teacher_sees_counts(self, store, room):
        question = ask_abc(store, room)
        assert store.version(room.code) == 1
        assert store.state(room.code).question == question
        enter(store, room, "s1", "s2", "s3")
        for student, value in (("s1", "A"), ("s2", "B"), ("s3", "A")):
            assert store.answer(room.code, question.id, student, value, nickname=student.upper())
        tally = store.tally(room.code, question.id)
        assert tally.counts == {"A": 2, "B": 1, "C": 0} and list(tally.counts) == ["A", "B", "C"]
        assert tally.total == 3 and tally.status == "open"
        assert store.version(room.code) == 1  # answers are not a change to show

    def test_the_first_answer_of_a_student_counts(self, store, room):
        question = ask_abc(store, room)
        enter(store, room, "s1")
        assert store.answer(room.code, question.id, "s1", "A")
        assert not store.answer(room.code, question.id, "s1", "B")
        assert store.tally(room.code, question.id).counts == {"A": 1, "B": 0, "C": 0}

    def test_a_free_answer_is_counted_literally(self, store, room):
        question = store.ask(room.code, room.teacher_secret, "d_k?", kind="number")
        enter(store, room, "s1", "s2", "s3", "s4")
        for student, value in (("s1", "64"), ("s2", " 64"), ("s3", "64"), ("s4", "8")):
            store.answer(room.code, question.id, student, value)
        assert store.tally(room.code, question.id).counts == {"64": 2, " 64": 1, "8": 1}

    @pytest.mark.parametrize(("value", "nickname"), [("D", ""), ("", ""), ("A", "n" * 41), ("a" * 201, "")])
    def test_an_answer_that_cannot_count_is_refused(self, store, room, value, nickname):
        question = ask_abc(store, room)
        enter(store, room, "s1")
        with pytest.raises(InvalidInput):
            store.answer(room.code, question.id, "s1", value, nickname)
        assert store.tally(room.code, question.id).total == 0

    @pytest.mark.parametrize("choices", [("A", "A"), ("",), tuple("x" * 27)])
    def test_a_question_needs_distinct_choices(self, store, room, choices):
        with pytest.raises(InvalidInput):
            store.ask(room.code, room.teacher_secret, "Which?", choices=choices)

    def test_a_new_question_closes_the_previous_one(self, store, room):
        first = ask_abc(store, room)
        enter(store, room, "s1", "s2")
        store.answer(room.code, first.id, "s1", "A")
        second = store.ask(room.code, room.teacher_secret, "And now?", choices=("yes", "no"))
        with pytest.raises(QuestionClosed, match="closed"):
            store.answer(room.code, first.id, "s2", "A")
        assert store.tally(room.code, first.id).status == "closed"
        assert store.tally(room.code, first.id).total == 1
        assert store.state(room.code).question == second
        assert store.answer(room.code, second.id, "s2", "yes")

    def test_reveal_closes_the_question_and_shows_the_solution(self, store, room):
        question = ask_abc(store, room, solution="B")
        assert question.solution == "B"
        assert store.state(room.code).question.solution == ""  # the class does not see it yet
        enter(store, room, "s1", "s2")
        store.answer(room.code, question.id, "s1", "B")
        version = store.reveal(room.code, room.teacher_secret, question.id)
        assert version == 2 == store.version(room.code)
        state = store.state(room.code)
        assert state.revealed and state.question.solution == "B"
        with pytest.raises(QuestionClosed):
            store.answer(room.code, question.id, "s2", "B")
        tally = store.tally(room.code, question.id)
        assert tally.status == "revealed" and tally.total == 1
        assert store.reveal(room.code, room.teacher_secret, question.id) == 2  # again: nothing new to show

    def test_revealing_an_earlier_question_does_not_change_what_the_class_sees(self, store, room):
        first = ask_abc(store, room)
        store.ask(room.code, room.teacher_secret, "Next?")
        assert store.reveal(room.code, room.teacher_secret, first.id) == 2
        assert store.tally(room.code, first.id).status == "revealed"
        assert not store.state(room.code).revealed

    @pytest.mark.parametrize("question_id", ["nope", "", None, "q" * 33])
    def test_an_unknown_question_is_refused(self, store, room, question_id):
        ask_abc(store, room)
        enter(store, room, "s1")
        with pytest.raises(NoSuchQuestion, match="no such question"):
            store.answer(room.code, question_id, "s1", "A")
        with pytest.raises(NoSuchQuestion):
            store.tally(room.code, question_id)
        with pytest.raises(NoSuchQuestion):
            store.reveal(room.code, room.teacher_secret, question_id)

    def test_a_question_of_another_room_is_unknown_here(self, store, room):
        other = store.create_room()
        question = ask_abc(store, other)
        enter(store, room, "s1")
        with pytest.raises(NoSuchQuestion):
            store.answer(room.code, question.id, "s1", "A")

    def test_the_csv_keeps_nicknames_as_the_room_keeps_them_and_defuses_formulas(self, store, room, clock):
        question = store.ask(room.code, room.teacher_secret, "=1+1 or \"quoted\", really?")
        given = [("s1", "0.5", 'Zoë "the, best"\nline two'), ("s2", "=HYPERLINK(\"x\")", "+49 @home"),
                 ("s3", "-1", "-"), ("s4", "@SUM(A1)", " plain ")]
        enter(store, room, "s1", "s2", "s3", "s4")
        for student, value, nickname in given:
            clock.advance(1)
            assert store.answer(room.code, question.id, student, value, nickname)
        rows = list(csv.reader(io.StringIO(store.answers_csv(room.code, room.teacher_secret))))
        assert rows[0] == ["question", "prompt", "correct", "student", "nickname", "answer", "right",
                           "answered_at"]
        assert [row[3:6] for row in rows[1:]] == [
            ["s1", 'Zoë "the, best" line two', "0.5"],  # names.clean: one line, no blanks around
            ["s2", "'+49 @home", "'=HYPERLINK(\"x\")"],
            ["s3", "'-", "-1"],  # a plain number stays a number (issue 40, 13)
            ["s4", "plain", "'@SUM(A1)"]]
        assert {row[1] for row in rows[1:]} == {"'=1+1 or \"quoted\", really?"}
        assert all(row[0] == "1" and row[7].endswith("+00:00") for row in rows[1:])
        assert {(row[2], row[6]) for row in rows[1:]} == {("", "")}  # a poll: no correct answer

    def test_the_csv_lists_every_question_in_order(self, store, room):
        first = ask_abc(store, room)
        enter(store, room, "s1")
        store.answer(room.code, first.id, "s1", "C")
        second = store.ask(room.code, room.teacher_secret, "Second?")
        store.answer(room.code, second.id, "s1", "why")
        store.ask(room.code, room.teacher_secret, "Unanswered")
        rows = list(csv.reader(io.StringIO(store.answers_csv(room.code, room.teacher_secret))))
        assert [(row[0], row[1], row[5]) for row in rows[1:]] == [("1", "Which head?", "C"),
                                                                  ("2", "Second?", "why")]
        assert [len(answers) for _, answers in store.answers(room.code, room.teacher_secret)] == [1, 1, 0]


# --- Issue 15: what a hostile student did, and the rules that now hold (each fails on the old store) --


FLOODER = "203.0.113.66"  # one client address (TEST-NET-3)


def too_soon(call) -> TooSoon:
    with pytest.raises(TooSoon) as refused:
        call()
    return refused.value


class TestRoomFlood:
    def test_one_address_starts_five_rooms_a_minute(self, store, clock):
        started, refusals = [], []
        for _ in range(205):  # the issue's 205 sessions pressing "Start a room", from one address
            try:
                started.append(store.create_room(client=FLOODER))
            except TooSoon as refusal:
                refusals.append(refusal)
        assert len(started) == ROOMS_PER_CLIENT and len(refusals) == 200
        assert refusals[0].retry_after == pytest.approx(60 / ROOMS_PER_CLIENT)
        assert str(refusals[0]) == "Too many rooms started from your address: try again in 12 s."
        assert store.room_exists(store.create_room(client="198.51.100.1").code)  # a real teacher elsewhere
        clock.advance(60 / ROOMS_PER_CLIENT)
        store.create_room(client=FLOODER)
        assert too_soon(lambda: store.create_room(client=FLOODER)).retry_after == pytest.approx(12)

    def test_five_addresses_are_still_bounded_by_max_rooms(self, store, clock):
        clients = [f"203.0.113.{n}" for n in range(5)]
        started, full = 0, []
        for attempt in range(MAX_ROOMS + 5):
            if attempt and attempt % len(clients) == 0:
                clock.advance(60 / ROOMS_PER_CLIENT)  # a token each; 41 rounds stay inside 15 min
            try:
                store.create_room(client=clients[attempt % len(clients)])
                started += 1
            except LimitReached as refusal:
                full.append(refusal)
        assert started == MAX_ROOMS
        assert len(full) == 5 and not any(isinstance(r, TooSoon) for r in full)
        assert all(f"{MAX_ROOMS} rooms" in str(refusal) for refusal in full)


class TestTeacherPresence:
    def test_students_never_keep_a_room_alive(self, store, room, clock):
        question = ask_abc(store, room)
        store.join(room.code, "s1")
        store.answer(room.code, question.id, "s1", "A")
        for _ in range(int(TEACHER_GONE_SECONDS / HEARTBEAT_SECONDS)):  # 15 minutes of a busy class
            clock.advance(HEARTBEAT_SECONDS)
            store.heartbeats(room.code, ["s1"])
            store.join(room.code, "s1")
            store.version(room.code)
            store.state(room.code)
        clock.advance(1)
        for call in (store.version, store.state, store.followers):
            with pytest.raises(NoSuchRoom):
                call(room.code)
        for call in (lambda: store.heartbeats(room.code, ["s1"]), lambda: store.join(room.code, "s1"),
                     lambda: store.answer(room.code, question.id, "s1", "B"),
                     lambda: store.teacher_heartbeat(room.code, room.teacher_secret)):
            with pytest.raises(NoSuchRoom):
                call()

    @pytest.mark.parametrize("act", ["teacher_heartbeat", "roster", "answers", "check_teacher", "lock"])
    def test_each_teacher_act_keeps_it_alive(self, store, room, clock, act):
        clock.advance(TEACHER_GONE_SECONDS - 1)
        getattr(store, act)(room.code, room.teacher_secret)
        clock.advance(TEACHER_GONE_SECONDS - 1)
        assert store.version(room.code) >= 0
        clock.advance(2)
        assert not store.room_exists(room.code)

    def test_an_ended_room_and_a_code_that_never_was_look_the_same(self, store, room, clock):
        ended, gone = room, store.create_room()
        store.end_room(ended.code, ended.teacher_secret)
        clock.advance(TEACHER_GONE_SECONDS + 1)  # gone: its teacher left
        never = next(code for code in ("KQ7M", "MQ7K", "WXYZ", "ZZZZ") if code not in (ended.code, gone.code))
        seen = []
        for code, secret in ((ended.code, ended.teacher_secret), (gone.code, gone.teacher_secret),
                             (never, "x" * 32)):
            calls = (functools.partial(store.join, code, "s1", client=f"c-{code}"),
                     functools.partial(store.version, code),
                     functools.partial(store.check_teacher, code, secret, client=f"t-{code}"),
                     functools.partial(store.teacher_heartbeat, code, secret))
            for call in calls:
                with pytest.raises(NoSuchRoom) as refused:
                    call()
                seen.append((type(refused.value), str(refused.value).replace(code, "CODE")))
        assert set(seen) == {(NoSuchRoom, "There is no room CODE: check the code.")}


class TestTheDoor:
    def test_a_class_of_40_behind_one_address_gets_in_at_once(self, store, room):
        for number in range(40):
            store.join(room.code, f"pupil-{number}", client=FLOODER)
        assert len(store.roster(room.code, room.teacher_secret)) == 40

    def test_a_flood_from_one_address_becomes_a_trickle(self, store, room, clock):
        joined, refusals = [], []
        for number in range(300):  # the issue's 300 sessions opening /?room=CODE from one client
            try:
                store.join(room.code, f"tab-{number}", client=FLOODER)
                joined.append(number)
            except TooSoon as refusal:
                refusals.append(refusal)
        assert len(joined) == JOIN_BURST and len(refusals) == 300 - JOIN_BURST
        assert refusals[0].retry_after == pytest.approx(1 / JOIN_PER_SECOND)
        assert str(refusals[0]) == "Too many students joined from your network just now: try again in 2 s."
        store.join(room.code, "real-student", client="198.51.100.7")  # another address: in at once
        store.join(room.code, "tab-0", client=FLOODER)  # a member re-joins freely
        clock.advance(1 / JOIN_PER_SECOND)
        store.join(room.code, "tab-300", client=FLOODER)
        too_soon(lambda: store.join(room.code, "tab-301", client=FLOODER))
        other = store.create_room()
        store.join(other.code, "tab-302", client=FLOODER)  # the bucket is per room

    def test_lock_keeps_newcomers_out_and_members_in(self, store, room, clock):
        store.join(room.code, "s1", client="a")
        assert store.lock(room.code, room.teacher_secret) == 1 == store.version(room.code)
        assert store.state(room.code).locked
        with pytest.raises(RoomLocked, match="The room is locked: ask your teacher to let you in."):
            store.join(room.code, "s2", client="b")
        store.join(room.code, "s1", nickname="back again", client="a")
        assert store.lock(room.code, room.teacher_secret, False) == 2
        assert not store.state(room.code).locked
        store.join(room.code, "s2", client="b")

    def test_a_removed_student_is_out_for_good_but_their_answers_stay(self, store, room):
        question = ask_abc(store, room)
        enter(store, room, "s1", "s2")
        assert store.answer(room.code, question.id, "s1", "A")
        version = store.version(room.code)
        assert store.remove(room.code, room.teacher_secret, "s1") == version
        assert store.heartbeats(room.code, ["s1", "s2"]) == ["s1"]
        with pytest.raises(NotInRoom):
            store.heartbeat(room.code, "s1")
        with pytest.raises(Removed, match="Your teacher removed you from this room."):
            store.join(room.code, "s1", client="elsewhere")
        store.lock(room.code, room.teacher_secret)
        with pytest.raises(Removed):  # removed is said before locked
            store.join(room.code, "s1")
        second = store.ask(room.code, room.teacher_secret, "Again?", choices=("A", "B"))
        with pytest.raises(Removed):
            store.answer(room.code, second.id, "s1", "A")
        assert store.tally(room.code, question.id).total == 1
        (_, answers), _ = store.answers(room.code, room.teacher_secret)
        assert [a.student_id for a in answers] == ["s1"]
        assert store.followers(room.code) == 1

    def test_a_removed_student_reads_no_more_of_the_rooms_questions(self, store, room):
        """Issue 40, 12: a student removed while exploring on their own (no heartbeat) kept receiving
        every new question, its right answer and the bars: their page asks check_member each run."""
        question = ask_abc(store, room)
        enter(store, room, "s1", "s2")
        assert store.answer(room.code, question.id, "s1", "A")
        store.check_member(room.code, "s1")
        assert store.my_answer(room.code, question.id, "s1").value == "A"
        store.remove(room.code, room.teacher_secret, "s1")
        with pytest.raises(Removed):
            store.check_member(room.code, "s1")
        with pytest.raises(Removed):
            store.my_answer(room.code, question.id, "s1")
        with pytest.raises(NotInRoom):
            store.check_member(room.code, "stranger")
        store.check_member(room.code, "s2")
        assert store.my_answer(room.code, question.id, "s2") is None
        assert [s.removed for s in store.roster(room.code, room.teacher_secret)] == [True, False]  # read only
        store.end_room(room.code, room.teacher_secret)
        with pytest.raises(NoSuchRoom):
            store.check_member(room.code, "s2")

    def test_the_roster_lists_who_joined_answered_and_was_removed(self, store, room, clock):
        question = ask_abc(store, room)
        joined_at = {}
        for student, nickname in (("s1", "Ann"), ("s2", "<b>Bo</b>"), ("s3", "")):
            clock.advance(1)
            joined_at[student] = clock.now
            store.join(room.code, student, nickname=nickname, client=student)
        store.answer(room.code, question.id, "s2", "B")
        clock.advance(3)
        store.heartbeats(room.code, ["s1"])
        store.join(room.code, "s3", nickname="Cy", client="s3")
        store.join(room.code, "s2", client="a second tab")  # no nickname: keeps <b>Bo</b>
        store.remove(room.code, room.teacher_secret, "s1")
        roster = store.roster(room.code, room.teacher_secret)
        assert [(s.id, s.nickname, s.answered, s.removed) for s in roster] == [
            ("s1", "Ann", False, True), ("s2", "<b>Bo</b>", True, False), ("s3", "Cy", False, False)]
        assert [s.joined for s in roster] == [joined_at["s1"], joined_at["s2"], joined_at["s3"]]
        assert roster[1].last_seen == roster[2].last_seen == clock.now
        store.ask(room.code, room.teacher_secret, "Next?")
        assert not any(s.answered for s in store.roster(room.code, room.teacher_secret))

    def test_only_the_teacher_opens_and_closes_the_door(self, store, room):
        question = ask_abc(store, room)
        for call in (lambda s: store.lock(room.code, s), lambda s: store.remove(room.code, s, "s1"),
                     lambda s: store.roster(room.code, s), lambda s: store.close(room.code, s, question.id),
                     lambda s: store.teacher_heartbeat(room.code, s)):
            for secret in ("", "x" * 32, None):
                with pytest.raises(NotTheTeacher):
                    call(secret)
        assert not store.state(room.code).locked and store.state(room.code).status == "open"


class TestGuessing:
    def test_the_eleventh_wrong_code_in_a_minute_locks_out_even_the_right_one(self, store, room, clock):
        wrong = [code for code in ("KQ7M", "MQ7K", "WXYZ", "ZZZZ", "2345", "ABCD", "HJKM", "NPQR", "STUV",
                                   "6789", "BCDE") if code != room.code][:WRONG_CODES_PER_MINUTE]
        for code in wrong:
            with pytest.raises(NoSuchRoom):
                store.join(code, "s1", client=FLOODER)
        refusal = too_soon(lambda: store.join(room.code, "s1", client=FLOODER))
        assert refusal.retry_after == pytest.approx(60 / WRONG_CODES_PER_MINUTE)
        assert str(refusal) == "Too many room codes tried from your address: try again in 6 s."
        too_soon(lambda: store.join("nonsense", "s1", client=FLOODER))
        too_soon(lambda: store.check_teacher(room.code, room.teacher_secret, client=FLOODER))
        store.join(room.code, "s2", client="198.51.100.7")  # another address is not held
        clock.advance(60 / WRONG_CODES_PER_MINUTE)
        store.join(room.code, "s1", client=FLOODER)
        assert {s.id for s in store.roster(room.code, room.teacher_secret)} == {"s1", "s2"}

    def test_wrong_teacher_secrets_count_as_guesses(self, store, room):
        for _ in range(WRONG_CODES_PER_MINUTE // 2):
            with pytest.raises(NotTheTeacher):
                store.check_teacher(room.code, "a guess", client=FLOODER)
            with pytest.raises(NoSuchRoom):
                store.check_teacher(another_code(room.code), room.teacher_secret, client=FLOODER)
        too_soon(lambda: store.check_teacher(room.code, room.teacher_secret, client=FLOODER))
        assert store.check_teacher(room.code, room.teacher_secret, client="the-school") is None

    def test_the_app_counts_its_own_secrets_with_the_same_guesses(self, store, room):
        class WrongKey(Exception):  # e.g. a wrong teacher key, which the app checks itself
            pass

        def try_key(client: str = FLOODER, right: bool = False) -> None:
            with store.guessing(client=client, wrong=(WrongKey,)):
                if not right:
                    raise WrongKey

        for _ in range(WRONG_CODES_PER_MINUTE - 1):
            with pytest.raises(WrongKey):
                try_key()
        try_key(right=True)  # a right key costs nothing
        with pytest.raises(NoSuchRoom):
            store.join(another_code(room.code), "s1", client=FLOODER)
        too_soon(lambda: try_key(right=True))
        too_soon(lambda: store.join(room.code, "s1", client=FLOODER))
        try_key("198.51.100.7", right=True)

    def test_guesses_made_at_the_same_moment_get_no_more_answers_than_the_bucket_holds(self, backend, room):
        """Eight stores (servers) guess at once, ten codes each: the guess's token is taken before the
        code is looked up, so exactly WRONG_CODES_PER_MINUTE guesses are answered (the clock stands)."""
        stores = [backend.open() for _ in range(8)]

        def guess(index: int) -> list[str]:
            got = []
            for _ in range(10):
                try:
                    stores[index].join(another_code(room.code), f"s{index}", client=FLOODER)
                except (NoSuchRoom, TooSoon) as error:
                    got.append(type(error).__name__)
            return got

        outcomes = [outcome for got in run_threads(len(stores), guess) for outcome in got]
        assert outcomes.count("NoSuchRoom") == WRONG_CODES_PER_MINUTE
        assert outcomes.count("TooSoon") == 80 - WRONG_CODES_PER_MINUTE

    def test_right_codes_cost_nothing(self, store, room):
        for _ in range(3 * WRONG_CODES_PER_MINUTE):
            store.join(room.code, "s1", client=FLOODER)
            store.check_teacher(room.code, room.teacher_secret, client=FLOODER)
        for _ in range(WRONG_CODES_PER_MINUTE):
            with pytest.raises(NoSuchRoom):
                store.join(another_code(room.code), "s1", client=FLOODER)


class TestBallot:
    def test_one_student_id_answers_once(self, store, room):
        question = ask_abc(store, room)
        store.join(room.code, "s1")
        counted = [store.answer(room.code, question.id, "s1", "ABC"[n % 3]) for n in range(300)]
        assert counted == [True] + [False] * 299
        assert store.tally(room.code, question.id).counts == {"A": 1, "B": 0, "C": 0}

    def test_300_sessions_from_one_address_are_held_at_the_door(self, store, room):
        question = ask_abc(store, room)
        counted = refused = 0
        for number in range(300):
            with contextlib.suppress(TooSoon):
                store.join(room.code, f"tab-{number}", client=FLOODER)
            try:
                counted += store.answer(room.code, question.id, f"tab-{number}", "C")
            except NotInRoom:
                refused += 1
        assert (counted, refused) == (JOIN_BURST, 300 - JOIN_BURST)
        assert store.tally(room.code, question.id).total == JOIN_BURST

    def test_a_student_who_never_joined_cannot_answer(self, store, room):
        question = ask_abc(store, room)
        with pytest.raises(NotInRoom):
            store.answer(room.code, question.id, "stranger", "A")
        assert store.tally(room.code, question.id).total == 0


class TestCloseAndReveal:
    def test_close_stops_answers_then_reveal_shows_the_right_one(self, store, room):
        question = ask_abc(store, room, solution="Head B, because…", correct="B")
        enter(store, room, "s1", "s2", "s3")
        state = store.state(room.code)
        assert state.status == "open" and state.question.correct == "" and state.question.solution == ""
        store.answer(room.code, question.id, "s1", "B")
        store.answer(room.code, question.id, "s2", "C")
        assert store.close(room.code, room.teacher_secret, question.id) == 2 == store.version(room.code)
        state = store.state(room.code)
        assert (state.status, state.revealed, state.question.correct) == ("closed", False, "")
        with pytest.raises(QuestionClosed):
            store.answer(room.code, question.id, "s3", "B")
        assert store.close(room.code, room.teacher_secret, question.id) == 2  # again: nothing new
        tally = store.tally(room.code, question.id)
        assert (tally.status, tally.total, tally.right) == ("closed", 2, 1)
        assert store.reveal(room.code, room.teacher_secret, question.id) == 3
        state = store.state(room.code)
        assert (state.status, state.revealed, state.question.correct) == ("revealed", True, "B")
        assert store.close(room.code, room.teacher_secret, question.id) == 3  # no way back
        assert store.state(room.code).status == "revealed"
        mine = store.my_answer(room.code, question.id, "s2")
        assert (mine.value, mine.student_id) == ("C", "s2") and is_right(state.question, mine.value) is False
        assert store.my_answer(room.code, question.id, "s3") is None
        with pytest.raises(NoSuchQuestion):
            store.my_answer(room.code, "nope", "s1")

    def test_a_room_without_a_question_has_no_status(self, store, room):
        assert store.state(room.code).status == ""

    def test_the_first_answer_is_the_one_marked(self, store, room):
        question = store.ask(room.code, room.teacher_secret, "d_k?", kind="number", correct="64")
        enter(store, room, "s1", "s2")
        assert store.answer(room.code, question.id, "s1", "8")
        assert not store.answer(room.code, question.id, "s1", "64")  # wrong, then right: still wrong
        assert store.answer(room.code, question.id, "s2", "64.0")
        assert store.tally(room.code, question.id).right == 1
        assert store.tally(room.code, ask_abc(store, room).id).right is None  # no correct answer

    @pytest.mark.parametrize("options", [
        {"choices": ("A", "B"), "correct": "C"},
        {"tolerance": -1},
        {"tolerance": float("nan")},
        {"correct": "x" * 201},
        {"grid": (2, 2)},  # a grid without kind forecast
    ])
    def test_a_question_that_cannot_be_marked_is_refused(self, store, room, options):
        with pytest.raises(InvalidInput):
            store.ask(room.code, room.teacher_secret, "Which?", **options)
        assert store.version(room.code) == 0


def question_of(kind: str, correct: str, *, choices=(), tolerance: float = 0.0) -> Question:
    return Question("q", "?", tuple(choices), kind, 0.0, correct=correct, tolerance=tolerance)


class TestIsRight:
    @pytest.mark.parametrize(("fields", "value", "right"), [
        ({"kind": "poll", "correct": "B", "choices": ("A", "B")}, "B", True),
        ({"kind": "poll", "correct": "B", "choices": ("A", "B")}, "A", False),
        ({"kind": "poll", "correct": "B", "choices": ("A", "B")}, " B", False),
        ({"kind": "shape", "correct": "3 × 5"}, "3x5", True),
        ({"kind": "shape", "correct": "3 × 5"}, "3 x 5", True),
        ({"kind": "shape", "correct": "3x5"}, " 3 × 5 ", True),
        ({"kind": "shape", "correct": "3 × 5"}, "5 × 3", False),
        ({"kind": "shape", "correct": "3 × 5"}, "3, 5", True),  # as the quiz reads it (course/answers.py)
        ({"kind": "shape", "correct": "3 × 5"}, "3 5", False),
        ({"kind": "number", "correct": "64"}, "64.0", True),
        ({"kind": "number", "correct": "64"}, "63", False),
        ({"kind": "number", "correct": "0.3"}, "0.1e1", False),
        ({"kind": "number", "correct": "0.3"}, str(0.1 + 0.2), True),
        ({"kind": "weight", "correct": "0.25", "tolerance": 0.01}, "0.255", True),
        ({"kind": "weight", "correct": "0.25", "tolerance": 0.01}, "25%", True),
        ({"kind": "weight", "correct": "0.25", "tolerance": 0.01}, "27%", False),
        ({"kind": "number", "correct": "25"}, "25%", False),  # a percent only for weights
        ({"kind": "number", "correct": "1"}, "one", False),
        ({"kind": "number", "correct": "1"}, "nan", False),
        ({"kind": "number", "correct": "1"}, "inf", False),
        ({"kind": "number", "correct": "1"}, "", False),
    ])
    def test_marks(self, fields, value, right):
        assert is_right(question_of(**fields), value) is right

    def test_nothing_to_mark_is_none(self):
        assert is_right(question_of(kind="poll", correct=""), "A") is None
        assert is_right(Question("q", "?", (), "forecast", 0.0, grid=(1, 2)), "[[0.5, 0.5]]") is None


def forecast(rows: list[list[float]]) -> str:
    return json.dumps(rows)


class TestForecasts:
    def ask_forecast(self, store, room, grid=(2, 3)):
        return store.ask(room.code, room.teacher_secret, "Draw head 1's weights", kind="forecast", grid=grid)

    def test_the_class_forecast_is_the_mean_of_first_forecasts(self, store, room):
        question = self.ask_forecast(store, room)
        assert question.grid == (2, 3) and store.state(room.code).question.grid == (2, 3)
        enter(store, room, "s1", "s2")
        assert store.tally(room.code, question.id).mean is None
        assert store.answer(room.code, question.id, "s1", forecast([[1, 0, 0], [0.5, 0.25, 0.25]]))
        assert store.answer(room.code, question.id, "s2", forecast([[0, 1, 0], [0.5, 0.5, 0]]))
        assert not store.answer(room.code, question.id, "s1", forecast([[0, 0, 1], [0, 0, 1]]))
        tally = store.tally(room.code, question.id)
        assert (tally.total, tally.counts, tally.right) == (2, {}, None)
        np.testing.assert_allclose(tally.mean, [[0.5, 0.5, 0], [0.5, 0.375, 0.125]], atol=1e-12)
        mine = store.my_answer(room.code, question.id, "s1")
        assert json.loads(mine.value) == [[1, 0, 0], [0.5, 0.25, 0.25]]

    def test_a_256_cell_forecast_fits(self, store, room):
        question = self.ask_forecast(store, room, grid=(8, 32))
        store.join(room.code, "s1")
        weights = np.random.default_rng(0).dirichlet(np.ones(32), size=8)  # [8, 32], rows sum to 1
        text = forecast(weights.tolist())
        assert len(text) > 200
        assert store.answer(room.code, question.id, "s1", text)
        np.testing.assert_allclose(store.tally(room.code, question.id).mean, weights, atol=1e-15)
        with pytest.raises(InvalidInput):  # other answers stay short
            store.answer(room.code, ask_abc(store, room).id, "s1", "A" * 201)

    @pytest.mark.parametrize(("value", "says"), [
        ("not json", "grid of weights"),
        (forecast([[1, 0, 0]]), "2 row(s) of 3"),
        (forecast([[1, 0], [1, 0]]), "2 row(s) of 3"),
        ('{"a": 1}', "2 row(s) of 3"),
        ("[[1, 0, 0], [NaN, 0, 1]]", "from 0 to 1"),
        ("[[1, 0, 0], [Infinity, 0, 0]]", "from 0 to 1"),
        (forecast([[1.5, -0.5, 0], [1, 0, 0]]), "from 0 to 1"),
        (forecast([[True, 0, 0], [1, 0, 0]]), "from 0 to 1"),
        (forecast([["1", 0, 0], [1, 0, 0]]), "from 0 to 1"),
        (forecast([[0.5, 0.4, 0], [1, 0, 0]]), "add up to 1"),
        (forecast([[0.5, 0.5, 0.002], [1, 0, 0]]), "add up to 1"),
        ("[" * 100_000, "longer than"),
    ])
    def test_a_forecast_that_is_no_grid_of_weights_is_refused(self, store, room, value, says):
        question = self.ask_forecast(store, room)
        store.join(room.code, "s1")
        with pytest.raises(InvalidInput, match=re.escape(says)):
            store.answer(room.code, question.id, "s1", value)
        assert store.answer(room.code, question.id, "s1", forecast([[0.5, 0.5, 0.0005], [1, 0, 0]]))

    @pytest.mark.parametrize("grid", [(0, 0), (0, 3), (17, 16), (1, 257), ("a", 1), (1.5, 2), (2,)])
    def test_a_forecast_grid_has_1_to_256_cells(self, store, room, grid):
        with pytest.raises(InvalidInput):
            self.ask_forecast(store, room, grid=grid)

    def test_forecasts_go_into_the_csv_as_their_numbers(self, store, room):
        question = self.ask_forecast(store, room, grid=(1, 2))
        store.join(room.code, "s1")
        store.answer(room.code, question.id, "s1", "[[0.25, 0.75]]")
        rows = list(csv.DictReader(io.StringIO(store.answers_csv(room.code, room.teacher_secret))))
        assert json.loads(rows[0]["answer"]) == [[0.25, 0.75]] and rows[0]["right"] == ""


class TestTheCsv:
    def test_correct_and_right_columns_and_a_formula_guard_on_every_column(self, store, room, clock):
        question = store.ask(room.code, room.teacher_secret, "-1 or +1?", choices=("-1", "+1", "=0"),
                             correct="-1")
        given = [("-A1-A1-B22", "-1", "=cmd|' /C calc'!A0"), ("+33612", "+1", "@me"), ("=s3", "=0", "plain")]
        for student, value, nickname in given:
            clock.advance(1)
            store.join(room.code, student, nickname=nickname, client=student)
            assert store.answer(room.code, question.id, student, value, nickname)
        free = store.ask(room.code, room.teacher_secret, "d_k?", kind="number", correct="64")
        store.answer(room.code, free.id, "-A1-A1-B22", "@64", given[0][2])
        rows = list(csv.reader(io.StringIO(store.answers_csv(room.code, room.teacher_secret))))
        assert rows[0] == list(CSV_COLUMNS)
        assert rows[1:] == [
            ["1", "'-1 or +1?", "-1", "'-A1-A1-B22", "'=cmd|' /C calc'!A0", "-1", "right", rows[1][7]],
            ["1", "'-1 or +1?", "-1", "+33612", "'@me", "+1", "wrong", rows[2][7]],  # numbers stay numbers
            ["1", "'-1 or +1?", "-1", "'=s3", "plain", "'=0", "wrong", rows[3][7]],
            ["2", "d_k?", "64", "'-A1-A1-B22", "'=cmd|' /C calc'!A0", "'@64", "wrong", rows[4][7]]]
        assert not any(cell.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(cell)
                       for row in rows for cell in row)


# --- Issue 29: one name per student in a room, CSV cells, one limit per field -------------------------


MARA = "Mara"
LOOK_ALIKES = ["mara", "Ma\u200bra", "M\u0430ra", " Mara "]  # the issue's: case, a zero-width space, a
# Cyrillic а, blanks around


def join(store, room, student: str, nickname: str = "") -> None:
    store.join(room.code, student, nickname=nickname, client=f"address-of-{student}")


def roster_names(store, room) -> list[str]:
    return [student.nickname for student in store.roster(room.code, room.teacher_secret)]


def refused_name(call) -> NameTaken:
    with pytest.raises(NameTaken) as refused:
        call()
    return refused.value


def read_the_same(first: str, second: str) -> bool:
    return names.clashes(first, names.keys(second))


def assert_no_two_read_the_same(shown: list[str]) -> None:
    named = [name for name in shown if name]
    for i, first in enumerate(named):
        for second in named[i + 1:]:
            assert not read_the_same(first, second), (first, second)


def csv_rows(store, room) -> list[list[str]]:
    return list(csv.reader(io.StringIO(store.answers_csv(room.code, room.teacher_secret))))[1:]


def as_a_spreadsheet_reads(cell: str) -> str:
    """A cell as a spreadsheet that trims blanks and controls and normalises width would read it."""
    kept = cell.lstrip("".join(ch for ch in set(cell) if ch.isspace()
                               or unicodedata.category(ch) in ("Cc", "Cf")))
    return unicodedata.normalize("NFKC", kept)


def a_formula_to_a_spreadsheet(cell: str) -> bool:
    """Whether a spreadsheet would run the cell: it starts with = + - @ as read, and is not a number
    (-1.5 and +2 are numbers to it, kept as numbers since issue 40, 13)."""
    read = as_a_spreadsheet_reads(cell)
    return read.startswith(FORMULA_CHARS) and not PLAIN_NUMBER.fullmatch(read)


class TestOneNamePerStudent:
    def test_the_issues_five_names_make_one_member_and_each_refusal_suggests_a_free_name(self, store, room):
        join(store, room, "s0", MARA)
        for number, typed in enumerate(LOOK_ALIKES, start=1):
            refusal = refused_name(lambda typed=typed, number=number: join(store, room, f"s{number}", typed))
            assert refusal.name == names.clean(typed) and refusal.suggestion == f"{names.clean(typed)} 2"
            assert str(refusal) == NAME_TAKEN.format(name=refusal.name, suggestion=refusal.suggestion)
            assert not read_the_same(refusal.suggestion, MARA)
        assert roster_names(store, room) == [MARA]  # the four refused were not let in
        join(store, room, "s5", refusal.suggestion)  # the suggestion is free: taken at once
        assert roster_names(store, room) == [MARA, "Mara 2"]
        assert refused_name(lambda: join(store, room, "s6", "MARA")).suggestion == "MARA 3"

    def test_a_right_to_left_override_and_zero_width_characters_never_reach_the_roster(self, store, room):
        join(store, room, "s1", "\u202eMara\u200d")
        join(store, room, "s2", "Bo\u200b\u2060b\tby")
        assert roster_names(store, room) == [MARA, "Bob by"]

    def test_a_member_joining_again_keeps_their_name_in_any_form(self, store, room):
        join(store, room, "s1", MARA)
        join(store, room, "s1")  # a second tab, a reconnect: no nickname keeps theirs
        assert roster_names(store, room) == [MARA]
        for again in ("MARA", "m\u0430ra", MARA):  # the same name in another form: not refused by themselves
            join(store, room, "s1", again)
        assert roster_names(store, room) == [MARA]
        refused_name(lambda: join(store, room, "s2", "mara"))

    def test_a_new_name_frees_the_old_one_and_so_does_removing_its_student(self, store, room):
        """Issue 40, 12: a removed name stayed taken ("try Quinn 2" for the real Quinn)."""
        join(store, room, "s1", MARA)
        join(store, room, "s1", "Ana")
        join(store, room, "s2", "mara")
        join(store, room, "s3", "Quinn")
        assert refused_name(lambda: join(store, room, "s4", "QUINN")).suggestion == "QUINN 2"
        store.remove(room.code, room.teacher_secret, "s3")
        join(store, room, "s4", "Quinn")  # the real Quinn
        assert roster_names(store, room) == ["Ana", "mara", "Quinn", "Quinn"]  # the first one struck through
        removed = [s.removed for s in store.roster(room.code, room.teacher_secret)]
        assert removed == [False, False, True, False]
        assert refused_name(lambda: join(store, room, "s5", "quinn")).suggestion == "quinn 2"
        with pytest.raises(Removed):
            join(store, room, "s3", "Quinn")

    @pytest.mark.parametrize("label", ["student 1", "Student 12", "STUDENT 3", "stud\u0435nt 4", "élève 5",
                                       "学生 6", "aluno 7", "estudiante 8", "Lernende:r 9",
                                       "ｓｔｕｄｅｎｔ 1"])
    def test_no_typed_name_reads_as_the_rosters_label_of_a_student_without_one(self, store, room, label):
        """Issue 40, 11: a student named "student 1" sat beside the anonymous "student 1" (the roster's
        label in any of the course's languages)."""
        join(store, room, "s0")  # the anonymous one
        refusal = refused_name(lambda: join(store, room, "s1", label))
        assert not names.reads_as_anonymous(refusal.suggestion)
        join(store, room, "s1", refusal.suggestion)
        question = ask_abc(store, room)
        refused_name(lambda: store.answer(room.code, question.id, "s1", "A", label))
        assert roster_names(store, room) == ["", refusal.suggestion]

    def test_no_nickname_is_no_name_and_never_taken(self, store, room):
        for student in ("s1", "s2", "s3"):
            join(store, room, student, "" if student != "s3" else "\u200b \u202e")  # nothing readable
        join(store, room, "s4", MARA)
        assert roster_names(store, room) == ["", "", "", MARA]

    def test_the_limit_counts_the_name_as_kept_and_the_refusal_says_the_pages_limit(self, store, room):
        visible = "n" * NICKNAME_CHARS
        join(store, room, "s1", f"\u200b{visible[:20]}\u200d{visible[20:]}\u202e ")  # 44 sent, 40 kept
        assert roster_names(store, room) == [visible]
        with pytest.raises(TooLong) as refused:
            join(store, room, "s2", visible + "m")
        assert str(refused.value) == f"A nickname has at most {NICKNAME_CHARS} characters."
        assert roster_names(store, room) == [visible]


class TestAnswersCarryTheMembersName:
    def test_an_answer_cannot_carry_another_students_name(self, store, room):
        question = ask_abc(store, room)
        join(store, room, "s1", MARA)
        join(store, room, "s2")
        for typed in LOOK_ALIKES:
            refusal = refused_name(lambda typed=typed: store.answer(room.code, question.id, "s2", "A", typed))
            assert not read_the_same(refusal.suggestion, MARA)
        assert store.tally(room.code, question.id).total == 0  # nothing recorded with a refused name
        assert store.answer(room.code, question.id, "s2", "B", "\u202eBo\u200b")
        assert store.answer(room.code, question.id, "s1", "A")  # no nickname: the member's own
        assert roster_names(store, room) == [MARA, "Bo"]  # the answer's nickname named the member
        assert sorted(row[4] for row in csv_rows(store, room)) == ["Bo", MARA]

    def test_the_csv_shows_each_students_name_as_the_room_has_it_now(self, store, room, clock):
        first = ask_abc(store, room)
        join(store, room, "s1", MARA)
        store.answer(room.code, first.id, "s1", "A")
        join(store, room, "s1", "Ana")  # renamed: Mara is free again
        join(store, room, "s2", "mara")
        second = store.ask(room.code, room.teacher_secret, "Again?", choices=("A", "B"))
        clock.advance(1)
        store.answer(room.code, second.id, "s2", "B")
        assert [(row[3], row[4]) for row in csv_rows(store, room)] == [("s1", "Ana"), ("s2", "mara")]
        (_, answers), _ = store.answers(room.code, room.teacher_secret)
        assert answers[0].nickname == "Ana"
        assert store.my_answer(room.code, first.id, "s1").nickname == "Ana"

    def test_a_random_class_never_shows_two_students_whose_names_read_the_same(self, store, room, clock):
        """Joins, renames and answers with names drawn from look-alikes: whatever was let in, the
        roster and the CSV never hold two students whose names read the same."""
        pool = [MARA, *LOOK_ALIKES, "Ana", "ANA", "\u0410na", "Bo", "B\u043e", "Zoë", "ZOË", "Ian", "Lan"]
        draw, question = random.Random(29), ask_abc(store, room)
        for step in range(120):
            student, typed = f"s{draw.randrange(12)}", draw.choice(pool)
            clock.advance(0.1)
            try:
                if step % 3 == 2 and student in {s.id for s in store.roster(room.code, room.teacher_secret)}:
                    store.answer(room.code, question.id, student, draw.choice("ABC"), typed)
                else:
                    join(store, room, student, typed)
            except NameTaken as refusal:
                assert not read_the_same(refusal.suggestion, names.clean(typed))
        assert_no_two_read_the_same(roster_names(store, room))
        by_student = {row[3]: row[4] for row in csv_rows(store, room)}
        assert_no_two_read_the_same(list(by_student.values()))
        assert len(roster_names(store, room)) >= 3  # some names were let in: the check checked something


class TestRacingForOneName:
    """Two stores (two SQLite connections on one file, or two Redis clients), threads taking the same
    name at once: exactly one wins, whatever the interleaving."""

    @pytest.mark.parametrize("how", ["join", "answer"])
    def test_exactly_one_of_many_takes_the_name(self, backend, how):
        stores = [backend.open(), backend.open()]
        room = stores[0].create_room()
        question = ask_abc(stores[0], room)
        for round_ in range(5):
            racers = [f"r{round_}-{i}" for i in range(8)]
            if how == "answer":
                for racer in racers:
                    stores[0].join(room.code, racer, client=racer)
            name = f"{MARA} {round_ + 10}"
            forms = [name, name.upper(), name.lower(), name.replace("a", "\u0430", 1)]

            def take(i, racers=racers, forms=forms):
                store = stores[i % 2]
                if how == "join":
                    return store.join(room.code, racers[i], nickname=forms[i % 4], client=racers[i])
                return store.answer(room.code, question.id, racers[i], "A", forms[i % 4])

            results = run_threads(len(racers), take)
            winners = [r for r in results if not isinstance(r, Exception)]
            assert len(winners) == 1, results
            assert all(isinstance(r, NameTaken) for r in results if isinstance(r, Exception)), results
        named = [name for name in roster_names(stores[0], room) if name]
        assert len(named) == 5
        assert_no_two_read_the_same(named)



def test_the_issues_payloads_go_out_as_text_in_the_csv(store, room, clock):
    question = store.ask(room.code, room.teacher_secret, "Anything?")
    payloads = [' =HYPERLINK("http://example.test","hi")', "\t@SUM(1)", "＝1+1", " -1"]
    for number, payload in enumerate(payloads):
        clock.advance(1)
        join(store, room, f"s{number}", payload)
        assert store.answer(room.code, question.id, f"s{number}", payload)
    rows = csv_rows(store, room)
    assert [row[4] for row in rows] == ["'=HYPERLINK(\"http://example.test\",\"hi\")", "'@SUM(1)", "'=1+1",
                                        "-1"]  # nicknames as kept (names.clean), then guarded; -1 a number
    assert [row[5] for row in rows] == ["'" + payload for payload in payloads]  # answers as typed, guarded
    assert not any(a_formula_to_a_spreadsheet(cell) for row in rows for cell in row)



@pytest.mark.parametrize(("field", "limit"), [("nickname", NICKNAME_CHARS), ("answer", ANSWER_CHARS)])
def test_the_store_refuses_one_character_past_the_pages_limit(store, room, field, limit):
    question = store.ask(room.code, room.teacher_secret, "d_k?", kind="text")
    join(store, room, "s1")
    for length in (limit + 1, 200):  # the issue's 200 characters over the websocket
        with pytest.raises(InvalidInput, match=f"^An? {field} has at most {limit} characters.$"):
            value, nickname = ("x" * length, "") if field == "answer" else ("x", "n" * length)
            store.answer(room.code, question.id, "s1", value, nickname)
    assert store.tally(room.code, question.id).total == 0
    value, nickname = ("x" * limit, "") if field == "answer" else ("x", "n" * limit)
    assert store.answer(room.code, question.id, "s1", value, nickname)


def test_a_choice_longer_than_a_typed_answer_can_still_be_chosen(store, room):
    choice = "c" * MAX_TEXT_CHARS["choice"]
    question = store.ask(room.code, room.teacher_secret, "Which?", choices=(choice, "short"))
    join(store, room, "s1")
    assert store.answer(room.code, question.id, "s1", choice)
    assert store.tally(room.code, question.id).counts[choice] == 1


class TestConcurrency:
    def test_many_students_answering_at_once_lose_nothing(self, store, room):
        question = ask_abc(store, room)
        students = [f"student-{number}" for number in range(STUDENTS_AT_ONCE)]
        enter(store, room, *students)

        def answer_twice(index: int) -> tuple[bool, bool]:
            first = store.answer(room.code, question.id, students[index], "ABC"[index % 3], f"nick {index}")
            return first, store.answer(room.code, question.id, students[index], "A")

        results = run_threads(STUDENTS_AT_ONCE, answer_twice)
        assert results == [(True, False)] * STUDENTS_AT_ONCE
        tally = store.tally(room.code, question.id)
        assert tally.total == STUDENTS_AT_ONCE
        assert tally.counts == {"A": 67, "B": 67, "C": 66}
        (_, answers), = store.answers(room.code, room.teacher_secret)
        assert sorted(answer.student_id for answer in answers) == sorted(students)

    def test_every_answer_accepted_before_reveal_is_counted(self, store, room):
        question = ask_abc(store, room)
        enter(store, room, *(f"student-{index}" for index in range(STUDENTS_AT_ONCE + 1)), "late")

        def answer_or_reveal(index: int):
            if index == STUDENTS_AT_ONCE // 2:  # the teacher: reveal, then read the count at once
                store.reveal(room.code, room.teacher_secret, question.id)
                return store.tally(room.code, question.id).total
            return store.answer(room.code, question.id, f"student-{index}", "B")

        results = run_threads(STUDENTS_AT_ONCE + 1, answer_or_reveal)
        answers = results[:STUDENTS_AT_ONCE // 2] + results[STUDENTS_AT_ONCE // 2 + 1:]
        accepted = sum(result is True for result in answers)
        refused = sum(isinstance(result, QuestionClosed) for result in answers)
        unexpected = [result for result in answers if not isinstance(result, bool | QuestionClosed)]
        assert accepted + refused == STUDENTS_AT_ONCE and not unexpected, unexpected[:3]
        assert store.tally(room.code, question.id).total == accepted == results[STUDENTS_AT_ONCE // 2]
        with pytest.raises(QuestionClosed):
            store.answer(room.code, question.id, "late", "B")

    def test_a_flood_at_once_gets_exactly_the_burst_in(self, store, room):
        results = run_threads(100, lambda index: store.join(room.code, f"tab-{index}", client=FLOODER))
        assert sum(result is None for result in results) == JOIN_BURST
        assert all(isinstance(result, TooSoon) for result in results if result is not None)
        assert len(store.roster(room.code, room.teacher_secret)) == JOIN_BURST

    def test_rooms_started_at_once_from_one_address_are_five(self, store):
        results = run_threads(20, lambda index: store.create_room(client=FLOODER))
        assert sum(not isinstance(result, TooSoon) for result in results) == ROOMS_PER_CLIENT

    def test_students_in_other_processes_lose_nothing(self, backend, store, room):
        question = ask_abc(store, room)
        processes = 4
        context = multiprocessing.get_context("spawn")
        workers = [context.Process(target=answer_in_process, args=(
            backend.spec(), room.code, question.id, [f"p{worker}-s{number}" for number in range(50)]))
            for worker in range(processes)]
        # A spawned child re-runs the parent's __main__ from its path; after an AppTest in this process that
        # is the app's script, which only Streamlit may run. The children need none of it.
        with mock.patch.dict(sys.modules, {"__main__": types.ModuleType("__main__")}):
            for worker in workers:
                worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert [worker.exitcode for worker in workers] == [0] * processes
        assert store.tally(room.code, question.id).total == processes * 50

    def test_a_follower_never_sees_a_half_written_state(self, store, room):
        seen, problems, done = set(), [], threading.Event()

        def follow() -> None:
            last = 0
            while not done.is_set():
                version = store.version(room.code)
                if version == last:
                    continue
                state = store.state(room.code)
                if state.version:
                    setup = json.loads(state.setup_json)
                    written = (setup["version"], state.step, state.selections["version"], int(state.page[5:]))
                    if written != (state.version,) * 4 or state.version < version:
                        problems.append((version, state))
                seen.add(state.version)
                last = state.version

        followers = [threading.Thread(target=follow) for _ in range(2)]
        for follower in followers:
            follower.start()
        try:
            for version in range(1, VERSIONS_WRITTEN + 1):
                setup_json = json.dumps({"version": version, "padding": "x" * (version % 7) * 100})
                written = store.set_state(room.code, room.teacher_secret, page=f"page {version}",
                                          step=version, setup_json=setup_json,
                                          selections={"version": version})
                assert written == version
        finally:
            done.set()
            for follower in followers:
                follower.join(timeout=30)
        assert not problems, problems[:3]
        assert len(seen) > 10  # the followers really read while the teacher wrote


class TestRestart:
    def test_a_restart_keeps_rooms_state_and_answers(self, backend, store, room):
        store.set_state(room.code, room.teacher_secret, page="Workbench", step=4, setup_json='{"n": 1}',
                        selections={"head": 1})
        question = ask_abc(store, room)
        enter(store, room, *(f"s{number}" for number in range(11)))
        for number in range(10):
            store.answer(room.code, question.id, f"s{number}", "ABC"[number % 3], f"nick {number}")
        csv_before = store.answers_csv(room.code, room.teacher_secret)
        backend.restart()
        reopened = backend.open()
        assert reopened.room_exists(room.code)
        state = reopened.state(room.code)
        assert (state.version, state.page, state.step, state.selections) == (2, "Workbench", 4, {"head": 1})
        assert reopened.tally(room.code, question.id).counts == {"A": 4, "B": 3, "C": 3}
        assert reopened.answers_csv(room.code, room.teacher_secret) == csv_before
        assert reopened.answer(room.code, question.id, "s10", "A")  # still open, still the teacher's
        assert not reopened.answer(room.code, question.id, "s0", "B")
        reopened.reveal(room.code, room.teacher_secret, question.id)

    def test_while_the_store_is_down_writes_fail_clearly_and_then_work_again(self, backend, room):
        store = backend.open(busy_timeout=0.2) if backend.name == "sqlite" else backend.open()
        question = ask_abc(store, room)
        enter(store, room, "s1")
        with backend.down():
            with pytest.raises(StoreUnavailable, match="unavailable"):
                store.answer(room.code, question.id, "s1", "A")
            with pytest.raises(StoreUnavailable):
                store.set_state(room.code, room.teacher_secret, page="p", step=1, setup_json="",
                                selections={})
        assert store.answer(room.code, question.id, "s1", "A")
        assert store.tally(room.code, question.id).total == 1


class TestRedisOnly:
    @pytest.fixture
    def backend(self, redis_server, clock):
        redis_server.start()
        with redis_server.client() as client:
            client.flushall()
        backend = RedisBackend(redis_server, clock)
        yield backend
        backend.close()

    def test_a_killed_server_keeps_every_acknowledged_answer(self, backend, store, room):
        question = ask_abc(store, room)
        enter(store, room, *(f"s{number}" for number in range(50)))
        for number in range(50):
            assert store.answer(room.code, question.id, f"s{number}", "A")
        backend.restart(hard=True)  # kill -9: the AOF was written before each reply
        assert backend.open().tally(room.code, question.id).total == 50

    def test_while_redis_is_down_reads_fail_clearly_too(self, backend, store, room):
        with backend.down():
            for call in (store.version, store.state, store.followers):
                with pytest.raises(StoreUnavailable, match="Redis"):
                    call(room.code)
            with pytest.raises(StoreUnavailable):
                store.create_room()
        assert store.version(room.code) == 0

    def test_open_store_uses_redis_url(self, backend, tmp_path):
        from classroom.redis_store import RedisStore

        store = open_store({"REDIS_URL": backend.server.url, "MHA_DATA_DIR": str(tmp_path)})
        try:
            assert isinstance(store, RedisStore) and store.room_exists(store.create_room().code)
        finally:
            store.close()
        assert not list(tmp_path.iterdir())


class TestChoosingABackend:
    def test_open_store_defaults_to_sqlite_in_the_data_dir(self, tmp_path):
        store = open_store({"MHA_DATA_DIR": str(tmp_path / "mha")})
        try:
            assert isinstance(store, SqliteStore) and store.room_exists(store.create_room().code)
            assert (tmp_path / "mha" / "classroom.sqlite3").exists()
            mode = store.path.parent.stat().st_mode & 0o777
            assert mode == 0o700
        finally:
            store.close()

    def test_the_wal_journal_is_on(self, tmp_path):
        store = SqliteStore(tmp_path)
        try:
            with sqlite3.connect(store.path) as connection:
                assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            store.close()

    def test_a_file_from_before_join_is_brought_up_to_date(self, tmp_path):
        """A classroom.sqlite3 written by the store before issue 15 (no locked, nickname, joined,
        removed columns, no buckets): its rooms and answers carry on."""
        old = sqlite3.connect(tmp_path / "classroom.sqlite3")
        old.executescript("""
            CREATE TABLE rooms (code TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, created REAL NOT NULL,
                last_active REAL NOT NULL, version INTEGER NOT NULL DEFAULT 0, page TEXT NOT NULL DEFAULT '',
                step INTEGER NOT NULL DEFAULT 0, setup_json TEXT NOT NULL DEFAULT '',
                selections_json TEXT NOT NULL DEFAULT '{}', question_id TEXT);
            CREATE TABLE students (code TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
                student_id TEXT NOT NULL, last_seen REAL, PRIMARY KEY (code, student_id));""")
        old.execute("INSERT INTO rooms (code, secret_hash, created, last_active) VALUES (?, ?, ?, ?)",
                    ("KQ7M", hash_secret("s" * 32), time.time(), time.time()))
        old.execute("INSERT INTO students (code, student_id, last_seen) VALUES ('KQ7M', 'old-student', 0)")
        old.commit()
        old.close()
        store = SqliteStore(tmp_path)
        try:
            question = store.ask("KQ7M", "s" * 32, "Still here?", choices=("yes", "no"))
            assert store.answer("KQ7M", question.id, "old-student", "yes")  # a member from before
            store.join("KQ7M", "new-student", nickname="Ann")
            assert not store.state("KQ7M").locked
            assert [(s.id, s.removed) for s in store.roster("KQ7M", "s" * 32)] == [
                ("old-student", False), ("new-student", False)]
        finally:
            store.close()

    def test_data_dir_falls_back_to_tmp_when_home_is_not_writable(self, tmp_path):
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("")
        assert data_dir({"XDG_DATA_HOME": str(blocker)}) == Path("/tmp/mha-data")
        assert data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "mha-visualizer"
        assert data_dir({"MHA_DATA_DIR": "/srv/mha"}) == Path("/srv/mha")


# --- One process's followers, watched together (classroom/watch.py) ------------------------------------


class CountingStore:
    """The real store, counting the calls that reach it."""

    def __init__(self, store: ClassroomStore):
        self.store, self.calls = store, {"version": 0, "heartbeat": 0, "heartbeats": 0}

    def __getattr__(self, name):
        method = getattr(self.store, name)
        if name not in self.calls:
            return method

        def counted(*args, **kwargs):
            self.calls[name] += 1
            return method(*args, **kwargs)
        return counted


@pytest.fixture
def watched(store, clock):
    counting = CountingStore(store)
    return counting, RoomWatch(counting, max_age=0.25, heartbeat_every=4.0, clock=clock)


def publish(store, room, step: int) -> int:
    return store.set_state(room.code, room.teacher_secret, page="p", step=step, setup_json="", selections={})


class TestRoomWatch:
    def test_a_version_is_read_once_per_max_age_for_every_poll(self, watched, room, clock):
        counting, watch = watched
        assert [watch.version(room.code) for _ in range(30)] == [0] * 30
        publish(counting.store, room, 1)
        assert watch.version(room.code) == 0  # still the version read 0 s ago
        clock.advance(0.25)
        assert watch.version(room.code) == 1
        assert counting.calls["version"] == 2

    def test_a_version_this_process_wrote_is_seen_at_once_and_never_goes_back(self, watched, room, clock):
        """Issue 40, 8: the teacher's page tells its server's watch the version it wrote (moved), so
        the push does not wait out the reuse age; an older version told late changes nothing."""
        counting, watch = watched
        assert watch.version(room.code) == 0
        watch.moved(room.code, publish(counting.store, room, 1))
        assert watch.version(room.code) == 1
        second = publish(counting.store, room, 2)
        watch.moved(room.code, second)
        watch.moved(room.code, second - 1)
        assert watch.version(room.code) == second
        assert counting.calls["version"] == 1  # no read of the store after the first

    def test_polls_at_once_wait_for_one_read(self, watched, room):
        counting, watch = watched
        seen, start = [], threading.Barrier(40)

        def poll():
            start.wait()
            seen.append(watch.version(room.code))
        threads = [threading.Thread(target=poll) for _ in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == [0] * 40 and counting.calls["version"] == 1

    def test_an_ended_room_is_no_room_for_max_age_too(self, watched, room, clock):
        counting, watch = watched
        watch.version(room.code)
        counting.store.end_room(room.code, room.teacher_secret)
        clock.advance(0.25)
        for _ in range(3):
            with pytest.raises(NoSuchRoom):
                watch.version(room.code)
        assert counting.calls["version"] == 2

    def test_heartbeats_go_together_every_few_seconds(self, watched, room, clock):
        counting, watch = watched
        enter(counting.store, room, "s1", "s2", "s3")
        watch.heartbeat(room.code, "s1")  # the room's first: due at once
        assert counting.calls["heartbeats"] == 1
        for student in ("s2", "s3"):  # within the heartbeat interval: noted, not written
            watch.heartbeat(room.code, student)
        clock.advance(3)
        for student in ("s1", "s2"):
            watch.heartbeat(room.code, student)
        assert counting.calls["heartbeats"] == 1
        clock.advance(1)
        watch.heartbeat(room.code, "s1")  # due: s1, s2 and s3 in one write
        assert counting.calls["heartbeats"] == 2 and counting.calls["heartbeat"] == 0
        clock.advance(FOLLOWER_TTL_SECONDS - 1)
        watch.heartbeat(room.code, "s1")
        assert counting.calls["heartbeats"] == 3
        clock.advance(2)
        assert counting.store.followers(room.code) == 1  # s2 and s3 stopped following

    def test_a_heartbeat_admits_nobody_and_tells_a_non_member_once(self, watched, room, clock):
        counting, watch = watched
        enter(counting.store, room, "s1", "gone")
        counting.store.remove(room.code, room.teacher_secret, "gone")
        with pytest.raises(NotInRoom):  # the write was due: its own caller learns at once
            watch.heartbeat(room.code, "stranger")
        watch.heartbeat(room.code, "gone")  # noted; the next write reports it
        clock.advance(4)
        watch.heartbeat(room.code, "s1")
        with pytest.raises(NotInRoom):
            watch.heartbeat(room.code, "gone")
        assert {s.id for s in counting.store.roster(room.code, room.teacher_secret)} == {"s1", "gone"}
        with pytest.raises(Removed):  # what the page does next: join, which says why
            watch.join(room.code, "gone")
        watch.join(room.code, "stranger", nickname="Ann")
        watch.heartbeat(room.code, "stranger")
        clock.advance(4)
        watch.heartbeat(room.code, "stranger")
        assert counting.store.followers(room.code) == 2

    @pytest.mark.slow
    def test_heartbeats_that_could_not_be_written_go_with_the_next_flush(self, backend, watched, room, clock):
        counting, watch = watched
        enter(counting.store, room, "s1", "s2")
        watch.heartbeat(room.code, "s1")
        clock.advance(FOLLOWER_TTL_SECONDS + 1)
        with backend.down(), pytest.raises(StoreUnavailable):
            watch.heartbeat(room.code, "s1")
        assert counting.store.followers(room.code) == 0
        watch.heartbeat(room.code, "s2")  # within the interval of the failed write: noted
        clock.advance(4)
        watch.heartbeat(room.code, "s2")  # due again: s2, with s1 kept from the failed write
        assert counting.store.followers(room.code) == 2

    def test_a_changed_state_is_read_once_for_all_followers(self, watched, room, clock):
        counting, watch = watched
        counting.calls["state"] = 0
        first = [watch.state(room.code) for _ in range(5)]
        assert {s.version for s in first} == {0} and counting.calls["state"] == 1
        publish(counting.store, room, 4)
        clock.advance(0.25)
        later = [watch.state(room.code) for _ in range(5)]
        assert {(s.version, s.step) for s in later} == {(1, 4)} and counting.calls["state"] == 2

    def test_an_ended_room_leaves_nothing_behind_but_its_refusal(self, watched, room, clock):
        counting, watch = watched
        enter(counting.store, room, "s1")
        watch.heartbeat(room.code, "s1")
        watch.state(room.code)
        counting.store.end_room(room.code, room.teacher_secret)
        clock.advance(0.25)
        with pytest.raises(NoSuchRoom):
            watch.version(room.code)
        calls = counting.calls["heartbeats"]
        with pytest.raises(NoSuchRoom):  # its last write is forgotten too: due at once, and refused
            watch.heartbeat(room.code, "s1")
        assert counting.calls["heartbeats"] == calls + 1
        with pytest.raises(NoSuchRoom):
            watch.state(room.code)
