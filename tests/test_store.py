"""The live-class store's contract, run against both backends: SQLite in a temporary directory and a
real redis-server on a free loopback port (tests/redis_server.py).

Without redis-server the Redis half is skipped with the reason, unless REQUIRE_REDIS=1 (CI), where
that fails. Time is a fake clock the tests move on (idle rooms, presence); the concurrency tests
use real threads and processes.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import multiprocessing
import os
import sqlite3
import string
import sys
import threading
import time
import types
from pathlib import Path
from unittest import mock

import pytest

from classroom.sqlite_store import SqliteStore
from classroom.store import (
    CODE_ALPHABET,
    CODE_LENGTH,
    FOLLOWER_TTL_SECONDS,
    MAX_ROOMS,
    MAX_STUDENTS_PER_ROOM,
    ROOM_IDLE_SECONDS,
    ClassroomStore,
    InvalidInput,
    LimitReached,
    NoSuchQuestion,
    NoSuchRoom,
    NotInRoom,
    NotTheTeacher,
    QuestionClosed,
    Removed,
    StoreUnavailable,
    data_dir,
    open_store,
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

    def test_the_csv_keeps_nicknames_literally_and_defuses_formulas(self, store, room, clock):
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
            ["s1", 'Zoë "the, best"\nline two', "0.5"],
            ["s2", "'+49 @home", "'=HYPERLINK(\"x\")"],
            ["s3", "'-", "'-1"],
            ["s4", " plain ", "'@SUM(A1)"]]
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
