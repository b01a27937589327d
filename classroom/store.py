"""The live-class store: rooms a class follows, questions it answers (no Streamlit, no UI).

One interface, ``ClassroomStore``, and two backends: ``SqliteStore`` (the default, a file under
``MHA_DATA_DIR``, so ``make run`` needs nothing else and a room survives a restart) and
``RedisStore`` (chosen by ``REDIS_URL``, so several server processes share rooms). ``open_store()``
picks one. The public methods here check and normalise their arguments, compare the teacher's
secret and build results; a backend implements only the ``_``-prefixed primitives, each of them
one atomic step (a SQLite transaction, a Redis Lua script or MULTI/EXEC).

The rules every backend keeps (``tests/test_store.py`` checks them on both):

* A room is a short code from ``CODE_ALPHABET`` (no 0/O/1/I/L) and a teacher secret that only
  ``create_room`` returns; the store keeps its SHA-256 only. Students need only the code, and no
  student operation changes what the class sees.
* A room ends when the teacher ends it (everything in it is deleted) or after ``ROOM_IDLE_HOURS``
  without activity (any write by teacher or student; reads are not activity). Then, as for a
  guessed code, every operation raises ``NoSuchRoom``.
* ``version`` counts the changes a follower must show: ``set_state``, ``ask`` and revealing the
  current question. Poll it; read ``state`` (one consistent snapshot) only when it changed.
* One question is open at a time: asking a new one closes the previous. A student's first answer
  to the open question counts; a later one from the same student id is ignored (``answer`` returns
  False), so an answer cannot be changed. After ``reveal``, or once another question is asked,
  answers raise ``QuestionClosed``. Every answer that returned True is counted exactly once.
* Limits (``LimitReached`` with a message that says which): ``MAX_ROOMS`` rooms per server,
  ``MAX_STUDENTS_PER_ROOM`` student ids per room (a student joins on the first heartbeat or
  answer), one answer per student per question, ``MAX_QUESTIONS_PER_ROOM`` questions.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or off a projector
CODE_LENGTH = 4  # 31**4 ≈ 920,000 codes for at most MAX_ROOMS rooms: a guess hits one in ~4,600
CODE_DRAWS = 50  # attempts to draw a code no live room has

MAX_ROOMS = 200  # per server (per SQLite file or Redis database)
MAX_STUDENTS_PER_ROOM = 300  # distinct student ids; the spec asks for at least 200
ANSWERS_PER_STUDENT = 1  # per question: the first one counts
MAX_QUESTIONS_PER_ROOM = 500  # a long lesson asks a few dozen
ROOM_IDLE_HOURS = 4  # a room with no write for this long is gone
ROOM_IDLE_SECONDS = ROOM_IDLE_HOURS * 3600
FOLLOWER_TTL_SECONDS = 10.0  # a student counts as following if it sent a heartbeat this recently
HEARTBEAT_SECONDS = 4.0  # how often a follower's page should call heartbeat (well inside the TTL)

MAX_TEXT_CHARS = {  # what one field may hold; longer is a paste gone wrong
    "student id": 64,
    "nickname": 40,
    "answer": 200,
    "page": 200,
    "prompt": 2_000,
    "choice": 200,
    "kind": 40,
    "solution": 2_000,
}
MAX_CHOICES = 26
MAX_QUESTION_ID_CHARS = 32  # ids are secrets.token_urlsafe(8), 11 characters
MAX_STATE_CHARS = 1_000_000  # setup_json plus the selections' JSON; the page's upload limit

OPEN, CLOSED, REVEALED = "open", "closed", "revealed"  # a question's status
CSV_COLUMNS = ("question", "prompt", "student", "nickname", "answer", "answered_at")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


# --- Errors: each message can be shown to the person as it is --------------------------------------


class StoreError(Exception):
    """Anything the classroom store refuses; the message is meant for the person."""


class NoSuchRoom(StoreError):
    def __init__(self, code: str = ""):
        shown = f" {code}" if code else ""
        super().__init__(f"There is no room{shown}: check the code. A room ends when the teacher ends it "
                         f"or after {ROOM_IDLE_HOURS} hours without activity.")


class NotTheTeacher(StoreError):
    def __init__(self):
        super().__init__("Only the teacher who started this room can do that.")


class LimitReached(StoreError):
    """A limit of this server; the message says which."""


class NoSuchQuestion(StoreError):
    def __init__(self):
        super().__init__("This room has no such question.")


class QuestionClosed(StoreError):
    def __init__(self):
        super().__init__("This question is closed: the teacher has revealed the answers or asked "
                         "another question.")


class InvalidInput(StoreError, ValueError):
    """An argument the store does not accept (too long, not JSON, not one of the choices)."""


class StoreUnavailable(StoreError):
    """The backend cannot be reached or is busy; the same call may work a moment later."""

    def __init__(self, detail: str):
        super().__init__(f"The live-class store is unavailable ({detail}). Try again in a moment.")


ROOMS_FULL = f"This server already runs {MAX_ROOMS} rooms: end one, or wait until an idle one expires."
ROOM_FULL = f"This room is full: it has {MAX_STUDENTS_PER_ROOM} students."
TOO_MANY_QUESTIONS = f"This room has asked {MAX_QUESTIONS_PER_ROOM} questions: start a new room."


# --- Values -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Room:
    """A new room: its code for the class, its secret for the teacher's session only."""

    code: str
    teacher_secret: str = field(repr=False)
    created: float  # epoch seconds


@dataclass(frozen=True)
class Question:
    """One question put to the room; ``id`` and ``created`` come from the store."""

    id: str
    prompt: str
    choices: tuple[str, ...]  # empty: a free answer (a number, a shape, a word)
    kind: str  # the quiz's kind ("weight", "shape", ...) or "poll"; the store does not interpret it
    created: float
    solution: str = field(default="", repr=False)  # shown to students only once revealed

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Question:
        data = json.loads(text)
        return cls(**{**data, "choices": tuple(data["choices"])})


@dataclass(frozen=True)
class RoomState:
    """What a follower shows, read as one consistent snapshot."""

    version: int
    page: str
    step: int
    setup_json: str  # the teacher's Setup as JSON ("" until the teacher sets it)
    selections: dict  # the teacher's selections (head, query, ...), JSON values only
    question: Question | None = None  # the last question asked; its solution blank until revealed
    revealed: bool = False  # whether that question's answers are revealed


@dataclass(frozen=True)
class Answer:
    question_id: str
    student_id: str
    value: str  # literally as given (a choice's exact text, or what the student typed)
    nickname: str  # literally as given; escape it wherever it is shown
    at: float  # epoch seconds


@dataclass(frozen=True)
class Tally:
    """The answers to one question so far: counts per value, the choices first (zeros included)."""

    question: Question
    status: str  # OPEN, CLOSED or REVEALED
    counts: dict[str, int]
    total: int


# --- Checks and small helpers shared by the backends ----------------------------------------------


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def new_student_id() -> str:
    """A random id for one student's browser session (keep it for the session's lifetime)."""
    return secrets.token_urlsafe(12)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, stored_hash: str) -> bool:
    return isinstance(secret, str) and hmac.compare_digest(hash_secret(secret), stored_hash)


def normalise_code(code: str) -> str:
    """The code as stored: upper case, spaces and dashes dropped; NoSuchRoom if it cannot be one."""
    cleaned = code.strip().upper().replace(" ", "").replace("-", "") if isinstance(code, str) else ""
    if len(cleaned) != CODE_LENGTH or any(letter not in CODE_ALPHABET for letter in cleaned):
        raise NoSuchRoom(cleaned[:CODE_LENGTH + 2])
    return cleaned


def check_text(what: str, text: str, *, empty_ok: bool = True) -> str:
    if not isinstance(text, str):
        raise InvalidInput(f"The {what} must be text.")
    if not empty_ok and not text.strip():
        raise InvalidInput(f"The {what} is empty.")
    if len(text) > MAX_TEXT_CHARS[what]:
        raise InvalidInput(f"The {what} is longer than {MAX_TEXT_CHARS[what]} characters.")
    return text


def selections_to_json(selections: Mapping) -> str:
    try:
        return json.dumps(dict(selections), sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidInput(f"The selections must be JSON values: {error}.") from None


def check_state(page: str, step: int, setup_json: str, selections_json: str) -> None:
    check_text("page", page)
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise InvalidInput("The step must be a whole number, 0 or more.")
    if not isinstance(setup_json, str) or len(setup_json) + len(selections_json) > MAX_STATE_CHARS:
        raise InvalidInput(f"The setup and selections must be text of at most {MAX_STATE_CHARS} characters.")
    if setup_json:
        try:
            json.loads(setup_json)
        except ValueError:
            raise InvalidInput("The setup is not valid JSON.") from None


def check_question_id(question_id: str) -> str:
    if not isinstance(question_id, str) or not 0 < len(question_id) <= MAX_QUESTION_ID_CHARS:
        raise NoSuchQuestion()
    return question_id


def check_answer_fits(question: Question, value: str) -> None:
    if question.choices and value not in question.choices:
        raise InvalidInput("Choose one of the options.")


def count_answers(question: Question, answers: Iterable[Answer]) -> dict[str, int]:
    """Counts per value: the choices in their order (zeros included), then other values, most first."""
    counts = dict.fromkeys(question.choices, 0)
    others: dict[str, int] = {}
    for answer in answers:
        target = counts if answer.value in counts else others
        target[answer.value] = target.get(answer.value, 0) + 1
    return counts | dict(sorted(others.items(), key=lambda item: (-item[1], item[0])))


def csv_safe(text: str) -> str:
    """A cell a spreadsheet shows as text: one leading ' before = + - @ (OWASP's CSV injection advice)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def transcript_csv(transcript: Iterable[tuple[Question, list[Answer]]]) -> str:
    """One row per answer, questions in the order asked, answers in the order given."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for number, (question, answers) in enumerate(transcript, start=1):
        for answer in sorted(answers, key=lambda a: (a.at, a.student_id)):
            writer.writerow([number, csv_safe(question.prompt), answer.student_id, csv_safe(answer.nickname),
                             csv_safe(answer.value), iso_time(answer.at)])
    return out.getvalue()


def without_solution(state: RoomState) -> RoomState:
    if state.question is None or state.revealed:
        return state
    return replace(state, question=replace(state.question, solution=""))


# --- The interface ------------------------------------------------------------------------------------


class ClassroomStore(ABC):
    """Rooms, their followed state, their questions and answers; safe to share between threads."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock  # epoch seconds; tests pass a fake one to move time on

    # Rooms

    def create_room(self) -> Room:
        """A new room with a fresh code; idle rooms are removed first. LimitReached when full."""
        secret, now = new_secret(), self._clock()
        self._purge_idle(self._cutoff(now))
        for _ in range(CODE_DRAWS):
            code = new_code()
            if self._create_room(code, hash_secret(secret), now):
                return Room(code, secret, now)
        raise LimitReached(ROOMS_FULL)  # never in practice: MAX_ROOMS is far below the codes there are

    def end_room(self, code: str, secret: str) -> None:
        code = self._check_teacher(code, secret)
        self._end_room(code, hash_secret(secret))

    def room_exists(self, code: str) -> bool:
        try:
            return self._room_exists(normalise_code(code), self._cutoff())
        except NoSuchRoom:
            return False

    # Follow the teacher

    def set_state(self, code: str, secret: str, *, page: str, step: int, setup_json: str,
                  selections: Mapping) -> int:
        """Replace what the class sees, all fields at once; returns the new version."""
        selections_json = selections_to_json(selections)
        check_state(page, step, setup_json, selections_json)
        code = self._check_teacher(code, secret)
        return self._set_state(code, hash_secret(secret), self._clock(), page, step, setup_json,
                               selections_json)

    def version(self, code: str) -> int:
        """The room's version: cheap, for polling."""
        return self._version(normalise_code(code), self._cutoff())

    def state(self, code: str) -> RoomState:
        return without_solution(self._state(normalise_code(code), self._cutoff()))

    def heartbeat(self, code: str, student_id: str) -> None:
        """Say this student is following now; joins the room on the first call (LimitReached when full)."""
        if self.heartbeats(code, [student_id]):
            raise LimitReached(ROOM_FULL)

    def heartbeats(self, code: str, student_ids: Iterable[str]) -> list[str]:
        """heartbeat for many students in one write (a server sends its followers' together);
        returns the ids the room had no place for (the others count as following)."""
        ids = tuple(dict.fromkeys(check_text("student id", i, empty_ok=False) for i in student_ids))
        if len(ids) > MAX_STUDENTS_PER_ROOM:
            raise InvalidInput(f"At most {MAX_STUDENTS_PER_ROOM} heartbeats at once.")
        return self._heartbeat(normalise_code(code), ids, self._clock()) if ids else []

    def followers(self, code: str) -> int:
        """How many students sent a heartbeat in the last FOLLOWER_TTL_SECONDS."""
        now = self._clock()
        return self._followers(normalise_code(code), now - FOLLOWER_TTL_SECONDS, self._cutoff(now))

    # Ask the room

    def ask(self, code: str, secret: str, prompt: str, choices: Iterable[str] = (), kind: str = "poll",
            solution: str = "") -> Question:
        """Put a question to the room (closing the previous one); returns it with its id."""
        question = Question(secrets.token_urlsafe(8), check_text("prompt", prompt, empty_ok=False),
                            check_choices(choices), check_text("kind", kind), self._clock(),
                            check_text("solution", solution))
        code = self._check_teacher(code, secret)
        self._ask(code, hash_secret(secret), question)
        return question

    def answer(self, code: str, question_id: str, student_id: str, value: str, nickname: str = "") -> bool:
        """Record a student's answer: True if it counts, False if this student had already answered."""
        check_text("student id", student_id, empty_ok=False)
        check_text("answer", value, empty_ok=False)
        check_text("nickname", nickname)
        code, question_id = normalise_code(code), check_question_id(question_id)
        question, status = self._question(code, question_id, self._cutoff())
        if status != OPEN:  # checked again inside the atomic step; this is the quick refusal
            raise QuestionClosed()
        check_answer_fits(question, value)
        return self._answer(code, Answer(question_id, student_id, value, nickname, self._clock()))

    def tally(self, code: str, question_id: str) -> Tally:
        code, question_id = normalise_code(code), check_question_id(question_id)
        question, status, answers = self._question_answers(code, question_id, self._cutoff())
        counts = count_answers(question, answers)
        return Tally(question, status, counts, sum(counts.values()))

    def reveal(self, code: str, secret: str, question_id: str) -> int:
        """Close the question and show its answers; returns the room's version."""
        code, question_id = self._check_teacher(code, secret), check_question_id(question_id)
        return self._reveal(code, hash_secret(secret), self._clock(), question_id)

    def answers(self, code: str, secret: str) -> list[tuple[Question, list[Answer]]]:
        """Every question asked in this room, in order, with its answers (for the teacher only)."""
        code = self._check_teacher(code, secret)
        return self._transcript(code, self._cutoff())

    def answers_csv(self, code: str, secret: str) -> str:
        return transcript_csv(self.answers(code, secret))

    @abstractmethod
    def close(self) -> None:
        """Release connections; the data stays."""

    # Shared steps

    def _cutoff(self, now: float | None = None) -> float:
        """Rooms last active before this time are gone."""
        return (self._clock() if now is None else now) - ROOM_IDLE_SECONDS

    def _check_teacher(self, code: str, secret: str) -> str:
        code = normalise_code(code)
        if not secret_matches(secret, self._secret_hash(code, self._cutoff())):
            raise NotTheTeacher()
        return code

    # Backend primitives. `cutoff` is the time before which a room counts as idle (so gone); a
    # `secret_hash` argument is the one just checked, and the write must fail with NoSuchRoom if the
    # room now has another (it ended and a new room took its code in between).

    @abstractmethod
    def _purge_idle(self, cutoff: float) -> None: ...

    @abstractmethod
    def _create_room(self, code: str, secret_hash: str, now: float) -> bool:
        """False if the code is taken; LimitReached(ROOMS_FULL) at MAX_ROOMS."""

    @abstractmethod
    def _secret_hash(self, code: str, cutoff: float) -> str: ...

    @abstractmethod
    def _end_room(self, code: str, secret_hash: str) -> None: ...

    @abstractmethod
    def _room_exists(self, code: str, cutoff: float) -> bool: ...

    @abstractmethod
    def _set_state(self, code: str, secret_hash: str, now: float, page: str, step: int, setup_json: str,
                   selections_json: str) -> int: ...

    @abstractmethod
    def _version(self, code: str, cutoff: float) -> int: ...

    @abstractmethod
    def _state(self, code: str, cutoff: float) -> RoomState: ...

    @abstractmethod
    def _heartbeat(self, code: str, student_ids: tuple[str, ...], now: float) -> list[str]:
        """Admit and mark each student present, in one atomic step; returns the ids refused (full)."""

    @abstractmethod
    def _followers(self, code: str, since: float, cutoff: float) -> int: ...

    @abstractmethod
    def _ask(self, code: str, secret_hash: str, question: Question) -> None: ...

    @abstractmethod
    def _question(self, code: str, question_id: str, cutoff: float) -> tuple[Question, str]:
        """The question and its status; NoSuchQuestion if the room never asked it."""

    @abstractmethod
    def _question_answers(self, code: str, question_id: str,
                          cutoff: float) -> tuple[Question, str, list[Answer]]: ...

    @abstractmethod
    def _answer(self, code: str, answer: Answer) -> bool:
        """Atomically: the room is live, the question open, the student admitted; first answer wins."""

    @abstractmethod
    def _reveal(self, code: str, secret_hash: str, now: float, question_id: str) -> int: ...

    @abstractmethod
    def _transcript(self, code: str, cutoff: float) -> list[tuple[Question, list[Answer]]]: ...


def check_choices(choices: Iterable[str]) -> tuple[str, ...]:
    choices = tuple(check_text("choice", choice, empty_ok=False) for choice in choices)
    if len(choices) > MAX_CHOICES or len(set(choices)) != len(choices):
        raise InvalidInput(f"A question has at most {MAX_CHOICES} different choices.")
    return choices


# --- Choosing a backend -----------------------------------------------------------------------------


def data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """MHA_DATA_DIR, else ~/.local/share/mha-visualizer if home is writable, else /tmp/mha-data."""
    if environ.get("MHA_DATA_DIR"):
        return Path(environ["MHA_DATA_DIR"])
    home_data = Path(environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "mha-visualizer"
    try:
        home_data.mkdir(parents=True, exist_ok=True, mode=0o700)
        if os.access(home_data, os.W_OK):
            return home_data
    except OSError:
        pass
    return Path("/tmp/mha-data")


def open_store(environ: Mapping[str, str] = os.environ) -> ClassroomStore:
    """RedisStore if REDIS_URL is set, else SqliteStore in data_dir(). Open one per process."""
    if environ.get("REDIS_URL"):
        from classroom.redis_store import RedisStore

        return RedisStore.from_url(environ["REDIS_URL"])
    from classroom.sqlite_store import SqliteStore

    return SqliteStore(data_dir(environ))
