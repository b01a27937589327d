"""The embedded backend: one SQLite file (stdlib sqlite3) in WAL mode.

Connections come from a small pool, one per call in flight, so threads never share one. Every write
is one ``BEGIN IMMEDIATE`` transaction: it takes the write lock before reading, so its checks (room
live, question open, room not full) and its write are one atomic step, and writers queue on the
busy timeout instead of failing (rate-limit buckets too: a join takes its token in the
transaction that admits the student). A read of several rows runs in one transaction, so it sees one
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
    ROOMS_FULL,
    TEACHER_GONE_SECONDS,
    TOO_MANY_QUESTIONS,
    Answer,
    ClassroomStore,
    LimitReached,
    Name,
    NoSuchQuestion,
    NoSuchRoom,
    NotInRoom,
    Question,
    QuestionClosed,
    Removed,
    RoomLocked,
    RoomState,
    StoreUnavailable,
    Student,
)

DB_FILE = "classroom.sqlite3"
BUSY_TIMEOUT_SECONDS = 10.0  # a writer waits this long for the lock; hundreds of answers take < 1 s
IDLE_CONNECTIONS = 8  # kept open for reuse; more are opened while more calls run at once
# An answer read back carries its student's name in the room now (one name per student everywhere).
WITH_STUDENT = "LEFT JOIN students s ON s.code = a.code AND s.student_id = a.student_id"
NICKNAME_NOW = "coalesce(s.nickname, a.nickname)"

# last_active is the teacher's last act. A student row with removed = 1 is no member (kept so that
# the student cannot join again); last_seen is the last heartbeat or the join. names holds each
# member's name keys (classroom/names.py; a removed student's are deleted): one key, one student per room.
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
    question_id TEXT,
    locked INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS rooms_by_activity ON rooms (last_active);
CREATE TABLE IF NOT EXISTS students (
    code TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
    student_id TEXT NOT NULL,
    last_seen REAL,
    nickname TEXT NOT NULL DEFAULT '',
    joined REAL NOT NULL DEFAULT 0,
    removed INTEGER NOT NULL DEFAULT 0,
    network TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (code, student_id)
);
CREATE TABLE IF NOT EXISTS names (
    code TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
    key TEXT NOT NULL,
    student_id TEXT NOT NULL,
    PRIMARY KEY (code, key)
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
CREATE TABLE IF NOT EXISTS buckets (
    name TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    at REAL NOT NULL,
    full_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS buckets_by_full ON buckets (full_at);
"""
ADDED_COLUMNS = {  # columns a file made by an older version lacks: (table, column) -> definition
    ("rooms", "locked"): "INTEGER NOT NULL DEFAULT 0",
    ("students", "nickname"): "TEXT NOT NULL DEFAULT ''",
    ("students", "joined"): "REAL NOT NULL DEFAULT 0",
    ("students", "removed"): "INTEGER NOT NULL DEFAULT 0",
    ("students", "network"): "TEXT NOT NULL DEFAULT ''",
}


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
        with self._write() as db:
            _add_missing_columns(db)

    def release(self) -> None:
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

    # Rate limits

    def _take(self, bucket: str, now: float, capacity: float, per_second: float) -> float:
        with self._write() as db:
            return _take_token(db, bucket, now, capacity, per_second)

    def _peek(self, bucket: str, now: float, capacity: float, per_second: float) -> float:
        with self._read() as db:
            return _wait_for_token(_tokens(db, bucket, now, capacity, per_second), per_second)

    # Rooms

    def _purge_idle(self, cutoff: float) -> None:
        with self._write() as db:
            db.execute("DELETE FROM rooms WHERE last_active < ?", (cutoff,))
            db.execute("DELETE FROM buckets WHERE full_at < ?", (cutoff + TEACHER_GONE_SECONDS,))

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

    def _touch(self, code: str, secret_hash: str, now: float) -> None:
        with self._write() as db:
            _teachers_room(db, code, now, secret_hash)
            _bump_activity(db, code, now)

    def _end_room(self, code: str, secret_hash: str) -> None:
        with self._write() as db:
            deleted = db.execute("DELETE FROM rooms WHERE code = ? AND secret_hash = ?", (code, secret_hash))
            if deleted.rowcount != 1:
                raise NoSuchRoom(code)

    def _room_exists(self, code: str, cutoff: float) -> bool:
        with self._read() as db:
            found = db.execute("SELECT 1 FROM rooms WHERE code = ? AND last_active >= ?", (code, cutoff))
            return found.fetchone() is not None

    # The door

    def _join(self, code: str, student_id: str, name: Name, now: float, bucket: str, capacity: float,
              per_second: float, *, network: str = "") -> float:
        with self._write() as db:
            (locked,) = _live_room(db, code, now - TEACHER_GONE_SECONDS, "locked")
            removed = _membership(db, code, student_id)
            if removed is False:  # a member: re-joins freely (an empty nickname keeps theirs)
                _take_name(db, code, student_id, name)
                db.execute("UPDATE students SET last_seen = ? WHERE code = ? AND student_id = ?",
                           (now, code, student_id))
                return 0.0
            if removed:
                raise Removed()
            if locked:
                raise RoomLocked()
            wait = _wait_for_token(_tokens(db, bucket, now, capacity, per_second), per_second)
            if wait > 0:
                return wait
            members = db.execute("SELECT COUNT(*) FROM students WHERE code = ? AND removed = 0",
                                 (code,)).fetchone()[0]
            if members >= MAX_STUDENTS_PER_ROOM:
                raise LimitReached(ROOM_FULL)
            _refuse_taken_name(db, code, student_id, name)
            _take_token(db, bucket, now, capacity, per_second)
            db.execute("INSERT INTO students (code, student_id, last_seen, joined, network) "
                       "VALUES (?, ?, ?, ?, ?)", (code, student_id, now, now, network))
            _take_name(db, code, student_id, name)
            return 0.0

    def _lock(self, code: str, secret_hash: str, now: float, locked: bool) -> int:
        with self._write() as db:
            _teachers_room(db, code, now, secret_hash)
            db.execute("UPDATE rooms SET locked = ?, version = version + 1 WHERE code = ?",
                       (int(locked), code))
            return _bump_activity(db, code, now)

    def _remove(self, code: str, secret_hash: str, now: float, student_id: str) -> int:
        with self._write() as db:
            _teachers_room(db, code, now, secret_hash)
            db.execute("INSERT INTO students (code, student_id, last_seen, joined, removed) "
                       "VALUES (?, ?, ?, ?, 1) ON CONFLICT (code, student_id) DO UPDATE SET removed = 1",
                       (code, student_id, now, now))
            db.execute("DELETE FROM names WHERE code = ? AND student_id = ?", (code, student_id))
            return _bump_activity(db, code, now)

    def _membership(self, code: str, student_id: str, cutoff: float) -> bool | None:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            return _membership(db, code, student_id)

    def _networks(self, code: str, cutoff: float) -> dict[str, str]:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            rows = db.execute("SELECT student_id, network FROM students WHERE code = ? AND network != ''",
                              (code,))
            return dict(rows.fetchall())

    def _roster(self, code: str, cutoff: float) -> list[Student]:
        with self._read() as db:
            (question_id,) = _live_room(db, code, cutoff, "question_id")
            rows = db.execute(
                "SELECT s.student_id, s.nickname, s.joined, coalesce(s.last_seen, s.joined), "
                "a.student_id IS NOT NULL, s.removed FROM students s LEFT JOIN answers a "
                "ON a.code = s.code AND a.question_id = ? AND a.student_id = s.student_id "
                "WHERE s.code = ?", (question_id or "", code))
            return [Student(sid, nickname, joined, seen, bool(answered), bool(removed))
                    for sid, nickname, joined, seen, answered, removed in rows]

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
            version, page, step, setup_json, selections_json, question_id, locked = _live_room(
                db, code, cutoff, "version, page, step, setup_json, selections_json, question_id, locked")
            question, status = (_question_row(db, code, question_id) if question_id else (None, ""))
        return RoomState(version, page, step, setup_json, json.loads(selections_json), question,
                         status == REVEALED, bool(locked), status)

    def _heartbeat(self, code: str, student_ids: tuple[str, ...], now: float) -> list[str]:
        outside = []
        with self._write() as db:
            _live_room(db, code, now - TEACHER_GONE_SECONDS, "1")
            for student_id in student_ids:
                seen = db.execute("UPDATE students SET last_seen = ? WHERE code = ? AND student_id = ? "
                                  "AND removed = 0", (now, code, student_id))
                if seen.rowcount != 1:
                    outside.append(student_id)
        return outside

    def _followers(self, code: str, since: float, cutoff: float) -> int:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            return db.execute("SELECT COUNT(*) FROM students WHERE code = ? AND removed = 0 "
                              "AND last_seen >= ?", (code, since)).fetchone()[0]

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

    def _answer(self, code: str, answer: Answer, name: Name) -> bool:
        with self._write() as db:
            _live_room(db, code, answer.at - TEACHER_GONE_SECONDS, "1")
            _, status = _question_row(db, code, answer.question_id)
            if status != OPEN:
                raise QuestionClosed()
            removed = _membership(db, code, answer.student_id)
            if removed is None:
                raise NotInRoom()
            if removed:
                raise Removed()
            _take_name(db, code, answer.student_id, name)
            stored = db.execute(
                "INSERT OR IGNORE INTO answers (code, question_id, student_id, value, nickname, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (code, answer.question_id, answer.student_id, answer.value, answer.nickname, answer.at))
            return stored.rowcount == 1

    def _my_answer(self, code: str, question_id: str, student_id: str, cutoff: float) -> Answer | None:
        with self._read() as db:
            _live_room(db, code, cutoff, "1")
            _question_row(db, code, question_id)
            row = db.execute(f"SELECT a.value, {NICKNAME_NOW}, a.at FROM answers a {WITH_STUDENT} "
                             "WHERE a.code = ? AND a.question_id = ? AND a.student_id = ?",
                             (code, question_id, student_id)).fetchone()
            return Answer(question_id, student_id, *row) if row else None

    def _close(self, code: str, secret_hash: str, now: float, question_id: str) -> int:
        return self._set_status(code, secret_hash, now, question_id, CLOSED)

    def _reveal(self, code: str, secret_hash: str, now: float, question_id: str) -> int:
        return self._set_status(code, secret_hash, now, question_id, REVEALED)

    def _set_status(self, code: str, secret_hash: str, now: float, question_id: str, new: str) -> int:
        """OPEN -> CLOSED, or OPEN or CLOSED -> REVEALED; a new version if the class sees the question."""
        with self._write() as db:
            current = _teachers_room(db, code, now, secret_hash)
            _, status = _question_row(db, code, question_id)
            if (status, new) in ((OPEN, CLOSED), (OPEN, REVEALED), (CLOSED, REVEALED)):
                db.execute("UPDATE questions SET status = ? WHERE code = ? AND id = ?",
                           (new, code, question_id))
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


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring a file made by an older version up to this schema (new columns get their defaults)."""
    for (table, column), definition in ADDED_COLUMNS.items():
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


def _tokens(db: sqlite3.Connection, bucket: str, now: float, capacity: float, per_second: float) -> float:
    """The tokens in the bucket now (a bucket never seen, or forgotten, is full)."""
    row = db.execute("SELECT tokens, at FROM buckets WHERE name = ?", (bucket,)).fetchone()
    if row is None:
        return capacity
    tokens, at = row
    return min(capacity, tokens + max(0.0, now - at) * per_second)


def _wait_for_token(tokens: float, per_second: float) -> float:
    return 0.0 if tokens >= 1 else (1 - tokens) / per_second


def _take_token(db: sqlite3.Connection, bucket: str, now: float, capacity: float, per_second: float) -> float:
    tokens = _tokens(db, bucket, now, capacity, per_second)
    if tokens < 1:
        return _wait_for_token(tokens, per_second)
    tokens -= 1
    full_at = now + (capacity - tokens) / per_second
    db.execute("INSERT INTO buckets (name, tokens, at, full_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) "
               "DO UPDATE SET tokens = excluded.tokens, at = excluded.at, full_at = excluded.full_at",
               (bucket, tokens, now, full_at))
    return 0.0


def _refuse_taken_name(db: sqlite3.Connection, code: str, student_id: str, name: Name) -> None:
    """NameTaken if another student of the room holds one of the name's keys."""
    if not name.keys:
        return
    marks = ", ".join("?" * len(name.keys))
    held = db.execute(f"SELECT 1 FROM names WHERE code = ? AND student_id != ? AND key IN ({marks})",
                      (code, student_id, *name.keys)).fetchone()
    if held:
        others = db.execute("SELECT key FROM names WHERE code = ? AND student_id != ?", (code, student_id))
        raise name.taken_message(key for (key,) in others)


def _take_name(db: sqlite3.Connection, code: str, student_id: str, name: Name) -> None:
    """The student's nickname becomes the name (checked first); an empty name changes nothing."""
    if not name.text:
        return
    _refuse_taken_name(db, code, student_id, name)
    db.execute("DELETE FROM names WHERE code = ? AND student_id = ?", (code, student_id))
    db.executemany("INSERT INTO names (code, key, student_id) VALUES (?, ?, ?)",
                   [(code, key, student_id) for key in sorted(name.keys)])
    db.execute("UPDATE students SET nickname = ? WHERE code = ? AND student_id = ?",
               (name.text, code, student_id))


def _membership(db: sqlite3.Connection, code: str, student_id: str) -> bool | None:
    """None if the student never joined, True if removed, False if a member."""
    row = db.execute("SELECT removed FROM students WHERE code = ? AND student_id = ?", (code, student_id))
    found = row.fetchone()
    return None if found is None else bool(found[0])


def _live_room(db: sqlite3.Connection, code: str, cutoff: float, columns: str) -> tuple:
    """The room's columns; NoSuchRoom if there is none or its teacher has been gone since before cutoff."""
    row = db.execute(f"SELECT {columns} FROM rooms WHERE code = ? AND last_active >= ?", (code, cutoff))
    found = row.fetchone()
    if found is None:
        raise NoSuchRoom(code)
    return found


def _teachers_room(db: sqlite3.Connection, code: str, now: float, secret_hash: str) -> str | None:
    """The room's current question id, after checking the room is still this teacher's."""
    stored_hash, question_id = _live_room(db, code, now - TEACHER_GONE_SECONDS, "secret_hash, question_id")
    if stored_hash != secret_hash:
        raise NoSuchRoom(code)  # the teacher's room ended and another took its code
    return question_id


def _bump_activity(db: sqlite3.Connection, code: str, now: float) -> int:
    """Mark the teacher active now; returns the room's version."""
    bumped = db.execute("UPDATE rooms SET last_active = max(last_active, ?) WHERE code = ? RETURNING version",
                        (now, code))
    return bumped.fetchone()[0]


def _question_row(db: sqlite3.Connection, code: str, question_id: str) -> tuple[Question, str]:
    row = db.execute("SELECT data, status FROM questions WHERE code = ? AND id = ?", (code, question_id))
    found = row.fetchone()
    if found is None:
        raise NoSuchQuestion()
    return Question.from_json(found[0]), found[1]


def _answers_to(db: sqlite3.Connection, code: str, question_id: str) -> list[Answer]:
    rows = db.execute(f"SELECT a.student_id, a.value, {NICKNAME_NOW}, a.at FROM answers a {WITH_STUDENT} "
                      "WHERE a.code = ? AND a.question_id = ? ORDER BY a.at, a.student_id",
                      (code, question_id))
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
