"""The embedded backend: one SQLite file (stdlib sqlite3) in WAL mode.

Connections come from a small pool, one per call in flight, so threads never share one. Every write
is one ``BEGIN IMMEDIATE`` transaction: it takes the write lock before reading, so its checks (room
live, question open, room not full) and its write are one atomic step, and writers queue on the
busy timeout instead of failing. A read of several rows runs in one transaction, so it sees one
snapshot (WAL readers never wait for the writer). ``synchronous=FULL``: a committed answer survives
a crash of the process and of the machine. Several processes may open the same file.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from classroom.store import (
    CLOSED,
    MAX_QUESTIONS_PER_ROOM,
    MAX_ROOMS,
    MAX_STUDENTS_PER_ROOM,
    OPEN,
    REVEALED,
    ROOM_FULL,
    ROOM_IDLE_SECONDS,
    ROOMS_FULL,
    TOO_MANY_QUESTIONS,
    Answer,
    ClassroomStore,
    LimitReached,
    NoSuchQuestion,
    NoSuchRoom,
    Question,
    QuestionClosed,
    RoomState,
    StoreUnavailable,
)

DB_FILE = "classroom.sqlite3"
BUSY_TIMEOUT_SECONDS = 10.0  # a writer waits this long for the lock; hundreds of answers take < 1 s
IDLE_CONNECTIONS = 8  # kept open for reuse; more are opened while more calls run at once

SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (
    code TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    created REAL NOT NULL,
    last_active REAL NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    page TEXT NOT NULL DEFAULT '',
    step INTEGER NOT NULL DEFAULT 0,
    setup_json TEXT NOT NULL DEFAULT '',
    selections_json TEXT NOT NULL DEFAULT '{}',
    question_id TEXT
);
CREATE INDEX IF NOT EXISTS rooms_by_activity ON rooms (last_active);
CREATE TABLE IF NOT EXISTS students (
    code TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
    student_id TEXT NOT NULL,
    last_seen REAL,
    PRIMARY KEY (code, student_id)
);
CREATE TABLE IF NOT EXISTS questions (
    code TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    status TEXT NOT NULL,
    PRIMARY KEY (code, id)
);
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL,
    question_id TEXT NOT NULL,
    student_id TEXT NOT NULL,
    value TEXT NOT NULL,
    nickname TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (code, question_id, student_id),
    FOREIGN KEY (code, question_id) REFERENCES questions (code, id) ON DELETE CASCADE
);
"""


class _Pool:
    """SQLite connections for one file: one per call in flight, a few kept idle for reuse."""

    def __init__(self, path: Path, busy_timeout: float):
        self._path, self._busy_timeout = path, busy_timeout
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        connection = connection or self._connect()
        try:
            yield connection
        finally:
            with self._lock:
                keep = len(self._idle) < IDLE_CONNECTIONS and not connection.in_transaction
                if keep:
                    self._idle.append(connection)
            if not keep:
                connection.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode (isolation_level=None): transactions are the explicit BEGINs below.
        connection = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None,
                                     check_same_thread=False)
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("PRAGMA synchronous = FULL")
        return connection


class SqliteStore(ClassroomStore):
    """The classroom store in ``directory/classroom.sqlite3`` (created with the directory if missing)."""

    def __init__(self, directory: str | Path, *, clock: Callable[[], float] = time.time,
                 busy_timeout: float = BUSY_TIMEOUT_SECONDS):
        super().__init__(clock)
        directory = Path(directory)
        self.path = directory / DB_FILE
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise StoreUnavailable(f"cannot create {directory}: {error.strerror}") from error
        self._pool = _Pool(self.path, busy_timeout)
        with self._pool.connection() as connection, _unavailable_on_error(self.path):
            connection.execute("PRAGMA journal_mode = WAL")
            connection.executescript(SCHEMA)

    def close(self) -> None:
        self._pool.close()

    # Transactions

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the lock from its first read."""
        with self._pool.connection() as connection, _unavailable_on_error(self.path):
            connection.execute("BEGIN IMMEDIATE")
            with _rollback_on_error(connection):
                yield connection
                connection.execute("COMMIT")

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every SELECT inside sees the same snapshot."""
        with self._pool.connection() as connection, _unavailable_on_error(self.path):
            connection.execute("BEGIN")
            with _rollback_on_error(connection):
                yield connection
                connection.execute("COMMIT")

    # Rooms

    def _purge_idle(self, cutoff: float) -> None:
        with self._write() as db:
            db.execute("DELETE FROM rooms WHERE last_active < ?", (cutoff,))

    def _create_room(self, code: str, secret_hash: str, now: float) -> bool:
        with self._write() as db:
            if db.execute("SELECT COUNT(*) FROM rooms").fetchone()[0] >= MAX_ROOMS:
                raise LimitReached(ROOMS_FULL)
            inserted = db.execute(
                "INSERT OR IGNORE INTO rooms (code, secret_hash, created, last_active) VALUES (?, ?, ?, ?)",
                (code, secret_hash, now, now))
            return inserted.rowcount == 1

    def _secret_hash(self, code: str, cutoff: float) -> str:
        with self._read() as db:
            return _live_room(db, code, cutoff, "secret_hash")[0]

    def _end_room(self, code: str, secret_hash: str) -> None:
        with self._write() as db:
            deleted = db.execute("DELETE FROM rooms WHERE code = ? AND secret_hash = ?", (code, secret_hash))
            if deleted.rowcount != 1:
                raise NoSuchRoom(code)

    def _room_exists(self, code: str, cutoff: float) -> bool:
        with self._read() as db:
            found = db.execute("SELECT 1 FROM rooms WHERE code = ? AND last_active >= ?", (code, cutoff))
            return found.fetchone() is not None

    # Follow the teacher

    def _set_state(self, code: str, secret_hash: str, now: float, page: str, step: int, setup_json: str,
                   selections_json: str) -> int:
        with self._write() as db:
            _teachers_room(db, code, now, secret_hash)
            db.execute("UPDATE rooms SET version = version + 1, page = ?, step = ?, setup_json = ?, "
                       "selections_json = ? WHERE code = ?", (page, step, setup_json, selections_json, code))
            return _bump_activity(db, code, now)

    def _version(self, code: str, cutoff: float) -> int:
        with self._read() as db:
            return _live_room(db, code, cutoff, "version")[0]

    def _state(self, code: str, cutoff: float) -> RoomState:
        with self._read() as db:
            version, page, step, setup_json, selections_json, question_id = _live_room(
                db, code, cutoff, "version, page, step, setup_json, selections_json, question_id")
            question, status = (_question_row(db, code, question_id) if question_id else (None, OPEN))
        return RoomState(version, page, step, setup_json, json.loads(selections_json), question,
                         status == REVEALED)

    def _heartbeat(self, code: str, student_ids: tuple[str, ...], now: float) -> list[str]:
        refused = []
        with self._write() as db:
            _live_room(db, code, now - ROOM_IDLE_SECONDS, "1")
            for student_id in student_ids:
                try:
                    _admit(db, code, student_id)
                except LimitReached:
                    refused.append(student_id)
                    continue
                db.execute("UPDATE students SET last_seen = ? WHERE code = ? AND student_id = ?",
                           (now, code, student_id))
            _bump_activity(db, code, now)
        return refused

    def _followers(self, code: str, since: float, cutoff: float) -> int:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            return db.execute("SELECT COUNT(*) FROM students WHERE code = ? AND last_seen >= ?",
                              (code, since)).fetchone()[0]

    # Ask the room

    def _ask(self, code: str, secret_hash: str, question: Question) -> None:
        with self._write() as db:
            _teachers_room(db, code, question.created, secret_hash)
            asked = db.execute("SELECT COUNT(*) FROM questions WHERE code = ?", (code,)).fetchone()[0]
            if asked >= MAX_QUESTIONS_PER_ROOM:
                raise LimitReached(TOO_MANY_QUESTIONS)
            db.execute("UPDATE questions SET status = ? WHERE code = ? AND status = ?", (CLOSED, code, OPEN))
            db.execute("INSERT INTO questions (code, id, seq, data, status) VALUES (?, ?, ?, ?, ?)",
                       (code, question.id, asked, question.to_json(), OPEN))
            db.execute("UPDATE rooms SET question_id = ?, version = version + 1 WHERE code = ?",
                       (question.id, code))
            _bump_activity(db, code, question.created)

    def _question(self, code: str, question_id: str, cutoff: float) -> tuple[Question, str]:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            return _question_row(db, code, question_id)

    def _question_answers(self, code: str, question_id: str,
                          cutoff: float) -> tuple[Question, str, list[Answer]]:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            question, status = _question_row(db, code, question_id)
            return question, status, _answers_to(db, code, question_id)

    def _answer(self, code: str, answer: Answer) -> bool:
        with self._write() as db:
            _live_room(db, code, answer.at - ROOM_IDLE_SECONDS, "1")
            _, status = _question_row(db, code, answer.question_id)
            if status != OPEN:
                raise QuestionClosed()
            _admit(db, code, answer.student_id)
            stored = db.execute(
                "INSERT OR IGNORE INTO answers (code, question_id, student_id, value, nickname, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (code, answer.question_id, answer.student_id, answer.value, answer.nickname, answer.at))
            _bump_activity(db, code, answer.at)
            return stored.rowcount == 1

    def _reveal(self, code: str, secret_hash: str, now: float, question_id: str) -> int:
        with self._write() as db:
            current = _teachers_room(db, code, now, secret_hash)
            _, status = _question_row(db, code, question_id)
            if status != REVEALED:
                db.execute("UPDATE questions SET status = ? WHERE code = ? AND id = ?",
                           (REVEALED, code, question_id))
                if current == question_id:  # the class sees it: a new version
                    db.execute("UPDATE rooms SET version = version + 1 WHERE code = ?", (code,))
            return _bump_activity(db, code, now)

    def _transcript(self, code: str, cutoff: float) -> list[tuple[Question, list[Answer]]]:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            rows = db.execute("SELECT id, data FROM questions WHERE code = ? ORDER BY seq", (code,))
            return [(Question.from_json(data), _answers_to(db, code, question_id))
                    for question_id, data in rows.fetchall()]


# --- Steps inside a transaction ---------------------------------------------------------------------------


def _live_room(db: sqlite3.Connection, code: str, cutoff: float, columns: str) -> tuple:
    """The room's columns; NoSuchRoom if there is none or it has been idle since before cutoff."""
    row = db.execute(f"SELECT {columns} FROM rooms WHERE code = ? AND last_active >= ?", (code, cutoff))
    found = row.fetchone()
    if found is None:
        raise NoSuchRoom(code)
    return found


def _teachers_room(db: sqlite3.Connection, code: str, now: float, secret_hash: str) -> str | None:
    """The room's current question id, after checking the room is still this teacher's."""
    stored_hash, question_id = _live_room(db, code, now - ROOM_IDLE_SECONDS, "secret_hash, question_id")
    if stored_hash != secret_hash:
        raise NoSuchRoom(code)  # the teacher's room ended and another took its code
    return question_id


def _bump_activity(db: sqlite3.Connection, code: str, now: float) -> int:
    """Mark the room active now; returns its version."""
    bumped = db.execute("UPDATE rooms SET last_active = max(last_active, ?) WHERE code = ? RETURNING version",
                        (now, code))
    return bumped.fetchone()[0]


def _admit(db: sqlite3.Connection, code: str, student_id: str) -> None:
    """Join the student to the room unless it already has MAX_STUDENTS_PER_ROOM others."""
    known = db.execute("SELECT 1 FROM students WHERE code = ? AND student_id = ?", (code, student_id))
    if known.fetchone() is not None:
        return
    admitted = db.execute("SELECT COUNT(*) FROM students WHERE code = ?", (code,)).fetchone()[0]
    if admitted >= MAX_STUDENTS_PER_ROOM:
        raise LimitReached(ROOM_FULL)
    db.execute("INSERT INTO students (code, student_id) VALUES (?, ?)", (code, student_id))


def _question_row(db: sqlite3.Connection, code: str, question_id: str) -> tuple[Question, str]:
    row = db.execute("SELECT data, status FROM questions WHERE code = ? AND id = ?", (code, question_id))
    found = row.fetchone()
    if found is None:
        raise NoSuchQuestion()
    return Question.from_json(found[0]), found[1]


def _answers_to(db: sqlite3.Connection, code: str, question_id: str) -> list[Answer]:
    rows = db.execute("SELECT student_id, value, nickname, at FROM answers "
                      "WHERE code = ? AND question_id = ? ORDER BY at, student_id", (code, question_id))
    return [Answer(question_id, *row) for row in rows]


@contextlib.contextmanager
def _rollback_on_error(connection: sqlite3.Connection) -> Iterator[None]:
    try:
        yield
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def _unavailable_on_error(path: Path) -> Iterator[None]:
    """sqlite3's operational errors (locked past the busy timeout, disk full, I/O) as StoreUnavailable."""
    try:
        yield
    except sqlite3.OperationalError as error:
        raise StoreUnavailable(f"SQLite file {path}: {error}") from error
