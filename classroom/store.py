"""The live-class store: rooms a class follows, questions it answers (no Streamlit, no UI).

One interface, ``ClassroomStore``, and two backends: ``SqliteStore`` (the default, a file under
``MHA_DATA_DIR``, so ``make run`` needs nothing else and a room survives a restart) and
``RedisStore`` (chosen by ``REDIS_URL``, so several server processes share rooms and limits).
``classroom.backends.open_store()`` picks one. The public methods here check and normalise their
arguments, compare the teacher's secret and build results; a backend implements only the
``_``-prefixed primitives, each of them one atomic step (a SQLite transaction, a Redis Lua script
or MULTI/EXEC).

The rules every backend keeps (``tests/classroom/test_store.py`` checks them on both):

* A room is a short code from ``CODE_ALPHABET`` (no 0/O/1/I/L) and a teacher secret that only
  ``create_room`` returns; the store keeps its SHA-256 only. Students need only the code, and no
  student operation changes what the class sees.
* The teacher keeps a room alive. A room ends when the teacher ends it (everything in it is
  deleted) or ``TEACHER_GONE_SECONDS`` after the teacher's last act (create_room, set_state, ask,
  close, reveal, lock, remove, roster, answers, check_teacher, teacher_heartbeat). Students' calls
  (join, heartbeats, answer, my_answer, version, state) never keep it alive. An ended room and a
  code that never existed are the same to everyone: ``NoSuchRoom``, with the same message.
* Rate limits are token buckets kept in the store (``_take``), so servers sharing a Redis share
  them; each refusal is ``TooSoon`` with ``retry_after`` seconds. One client address starts at
  most ``ROOMS_PER_CLIENT`` rooms a minute; it may try ``WRONG_CODES_PER_MINUTE`` wrong codes
  (or teacher secrets) a minute, and with its bucket empty even a right code is refused; students
  join a room from one address ``JOIN_BURST`` at once, then ``JOIN_PER_SECOND``.
* ``join`` is the only way into a room. In order, before any write: the guess limit, the room
  exists, a member re-joins freely (and may change the nickname), a removed student is refused
  (``Removed``), a locked room is refused (``RoomLocked``), the join rate, ``MAX_STUDENTS_PER_ROOM``,
  the nickname.
* One name per student in a room (``classroom/names.py``): a nickname is kept as ``names.clean``
  gives it (no controls or invisible characters, spaces collapsed; the limit counts that form) and
  refused with ``NameTaken`` (and a free suggestion) when it reads the same as another member's
  (``names.keys``: case and look-alikes folded; a removed student's name is free again), or as
  the roster's label of a student without one ("student 3", in any language:
  ``names.reads_as_anonymous``). The check and the write are one atomic step with the join or the
  answer that carries the name; an empty nickname is no name and never clashes, and a member keeps
  theirs (or renames) without clashing with themselves. An answer's nickname is the member's name (a
  new one renames them, or is refused), and the roster, the answers and the CSV show each student's
  name as the room has it now.
  Heartbeats mark members present and name the ids that are not members; they admit nobody.
* A member's network is a hash of the room's code and the client address of their first join
  (``network_of``; the member's record keeps no address): ``answer_networks`` gives the teacher one
  per answer, so the page can say when many answers come from one address (one machine, or one school).
  Removing a student keeps their given answers but refuses their later ones, and what a member
  reads of the room's questions: ``check_member`` and ``my_answer`` say ``Removed`` (a page that is
  not following sends no heartbeat, and asks ``check_member`` on each of its runs instead).
* ``version`` counts the changes a follower must show: ``set_state``, ``ask``, ``lock`` and
  closing or revealing the current question. Poll it; read ``state`` (one consistent snapshot)
  only when it changed.
* One question is open at a time: asking a new one closes the previous, and so does ``close``.
  Only a member's first answer to an open question counts; a later one from the same student id is
  ignored (``answer`` returns False), so an answer cannot be changed. A closed or revealed question
  refuses answers (``QuestionClosed``). Every answer that returned True is counted exactly once.
  The ``solution`` and ``correct`` of a question stay hidden from students until it is revealed.
* Limits (``LimitReached`` with a message that says which): ``MAX_ROOMS`` rooms per server,
  ``MAX_STUDENTS_PER_ROOM`` members per room, ``MAX_QUESTIONS_PER_ROOM`` questions.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import math
import re
import secrets
import time
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime

import classroom.names as names
from course.answers import FORECAST as FORECAST  # the kind whose answers are grids of weights
from course.answers import drawn, kind_of

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or off a projector
CODE_LENGTH = 4  # 31**4 ≈ 920,000 codes for at most MAX_ROOMS rooms: a guess hits one in ~4,600
CODE_DRAWS = 50  # attempts to draw a code no live room has

MAX_ROOMS = 200  # per server (per SQLite file or Redis database)
MAX_STUDENTS_PER_ROOM = 300  # members; the spec asks for at least 200
ANSWERS_PER_STUDENT = 1  # per question: the first one counts
MAX_QUESTIONS_PER_ROOM = 500  # a long lesson asks a few dozen
TEACHER_GONE_SECONDS = 15 * 60  # a room ends this long after its teacher's last act
ROOM_IDLE_SECONDS = TEACHER_GONE_SECONDS  # the older name, kept for callers
ROOM_IDLE_HOURS = ROOM_IDLE_SECONDS / 3600
FOLLOWER_TTL_SECONDS = 10.0  # a student counts as following if it sent a heartbeat this recently
HEARTBEAT_SECONDS = 4.0  # how often a follower's page should call heartbeat (well inside the TTL)

# Token buckets (capacity, refill per second), one per client address (and per room for joins)
ROOMS_PER_CLIENT = 5  # rooms one address may start per minute: a school's teachers share one address
WRONG_CODES_PER_MINUTE = 10  # wrong room codes or teacher secrets one address may try per minute
JOIN_BURST = 45  # students from one address joining one room at once: a class behind a school's NAT
JOIN_PER_SECOND = 0.5  # then one every 2 s: a flood is a trickle the teacher sees and can lock out
ROOMS_BUCKET = (ROOMS_PER_CLIENT, ROOMS_PER_CLIENT / 60)
GUESS_BUCKET = (WRONG_CODES_PER_MINUTE, WRONG_CODES_PER_MINUTE / 60)
JOIN_BUCKET = (JOIN_BURST, JOIN_PER_SECOND)

# The limits the pages' boxes use too (max_chars), so the page and the store say the same.
NICKNAME_CHARS = 40  # counted after names.clean
ANSWER_CHARS = 60  # a typed answer (a number, a shape, a word); a choice is one of the choices
MAX_TEXT_CHARS = {  # what one field may hold; longer is a paste gone wrong
    "student id": 64,
    "nickname": NICKNAME_CHARS,
    "answer": ANSWER_CHARS,
    "forecast": 8_000,  # a forecast's JSON: 256 cells of up to ~25 characters each, with brackets
    "page": 200,
    "prompt": 2_000,
    "choice": 200,
    "kind": 40,
    "solution": 2_000,
    "correct": 200,
}
RAW_NICKNAME_CHARS = 4 * NICKNAME_CHARS  # a nickname as sent, before names.clean drops what it hides
MAX_CHOICES = 26
MAX_QUESTION_ID_CHARS = 32  # ids are secrets.token_urlsafe(8), 11 characters
MAX_STATE_CHARS = 1_000_000  # setup_json plus the selections' JSON; the page's upload limit
MAX_FORECAST_CELLS = 256  # rows * cols of a forecast question's grid
FORECAST_ROW_SUM_TOLERANCE = 1e-3

OPEN, CLOSED, REVEALED = "open", "closed", "revealed"  # a question's status
CSV_COLUMNS = ("question", "prompt", "correct", "student", "nickname", "answer", "right", "answered_at")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula
FORMULA_CHARS = ("=", "+", "-", "@")  # ... also after blanks it trims, and in full width (＝＋－＠)


# --- Errors: each message can be shown to the person as it is --------------------------------------


class StoreError(Exception):
    """Anything the classroom store refuses; the message is meant for the person."""


class NoSuchRoom(StoreError):
    """No live room has this code: never existed, ended, or its teacher left (the same to everyone)."""

    def __init__(self, code: str = ""):
        shown = f" {code}" if code else ""
        super().__init__(f"There is no room{shown}: check the code.")


class NotTheTeacher(StoreError):
    def __init__(self):
        super().__init__("Only the teacher who started this room can do that.")


class LimitReached(StoreError):
    """A limit of this server; the message says which."""


class TooSoon(LimitReached):
    """A rate limit: the message says when to try again; ``retry_after`` is that in seconds."""

    def __init__(self, what: str, retry_after: float):
        self.retry_after = float(retry_after)
        seconds = max(1, math.ceil(self.retry_after - 1e-6))  # 12.000000000000002 s is "12 s"
        super().__init__(f"{what}: try again in {seconds} s.")


class RoomLocked(StoreError):
    def __init__(self):
        super().__init__("The room is locked: ask your teacher to let you in.")


class Removed(StoreError):
    def __init__(self):
        super().__init__("Your teacher removed you from this room.")


class NotInRoom(StoreError):
    def __init__(self):
        super().__init__("You are not in this room (yet): join it with its code.")


class NoSuchQuestion(StoreError):
    def __init__(self):
        super().__init__("This room has no such question.")


class QuestionClosed(StoreError):
    def __init__(self):
        super().__init__("This question is closed: the teacher has closed it, revealed the answers or "
                         "asked another question.")


class InvalidInput(StoreError, ValueError):
    """An argument the store does not accept (too long, not JSON, not one of the choices)."""


# What the pages say for the refusals a student can act on; app/room/refusals.py marks the same
# English for the catalogues and builds the refusal in the reader's language with template=.
NAME_TAKEN = "The nickname “{name}” is taken in this room: try “{suggestion}”."
TOO_LONG = {"nickname": "A nickname has at most {limit} characters.",
            "answer": "An answer has at most {limit} characters."}


class TooLong(InvalidInput):
    """A text longer than its field's limit (MAX_TEXT_CHARS, which the pages' boxes use too)."""

    def __init__(self, what: str, template: str = ""):
        self.what, self.limit = what, MAX_TEXT_CHARS[what]
        template = template or TOO_LONG.get(what, f"The {what} is longer than {{limit}} characters.")
        super().__init__(template.format(limit=self.limit))


class NameTaken(StoreError):
    """Another student of the room has a name that reads the same; ``suggestion`` is a free one."""

    def __init__(self, name: str, suggestion: str, template: str = NAME_TAKEN):
        self.name, self.suggestion = name, suggestion
        super().__init__(template.format(name=name, suggestion=suggestion))


class StoreUnavailable(StoreError):
    """The backend cannot be reached or is busy; the same call may work a moment later."""

    def __init__(self, detail: str):
        super().__init__(f"The live-class store is unavailable ({detail}). Try again in a moment.")


ROOMS_FULL = f"This server already runs {MAX_ROOMS} rooms: end one, or wait until an idle one expires."
ROOM_FULL = f"This room is full: it has {MAX_STUDENTS_PER_ROOM} students."
TOO_MANY_QUESTIONS = f"This room has asked {MAX_QUESTIONS_PER_ROOM} questions: start a new room."
TOO_MANY_ROOMS_STARTED = "Too many rooms started from your address"
TOO_MANY_GUESSES = "Too many room codes tried from your address"
TOO_MANY_JOINS = "Too many students joined from your network just now"


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
    choices: tuple[str, ...]  # empty: a free answer (a number, a shape, a word) or a forecast
    kind: str  # the quiz's kind ("weight", "shape", ...), "poll", or FORECAST (answers are grids)
    created: float
    solution: str = field(default="", repr=False)  # shown to students only once revealed
    correct: str = field(default="", repr=False)  # the right answer, for is_right; hidden until revealed
    tolerance: float = 0.0  # a number answer within this of correct is right
    grid: tuple[int, int] = (0, 0)  # a forecast's (rows, cols); (0, 0) for other kinds

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Question:
        data = json.loads(text)
        return cls(**{**data, "choices": tuple(data["choices"]), "grid": tuple(data.get("grid", (0, 0)))})


@dataclass(frozen=True)
class RoomState:
    """What a follower shows, read as one consistent snapshot."""

    version: int
    page: str
    step: int
    setup_json: str  # the teacher's Setup as JSON ("" until the teacher sets it)
    selections: dict  # the teacher's selections (head, query, ...), JSON values only
    question: Question | None = None  # the last question asked; solution and correct blank until revealed
    revealed: bool = False  # whether that question's answers are revealed
    locked: bool = False  # the teacher let no new student in
    status: str = ""  # the question's OPEN, CLOSED or REVEALED ("" without a question)


@dataclass(frozen=True)
class Answer:
    question_id: str
    student_id: str
    value: str  # literally as given (a choice's exact text, what the student typed, a forecast's JSON)
    nickname: str  # as sent (names.clean); read back: the student's name in the room now. Escape it.
    at: float  # epoch seconds


@dataclass(frozen=True)
class Name:
    """A nickname as the room keeps it (names.clean) and its keys (names.keys); "" is no name."""

    text: str = ""
    keys: frozenset[str] = frozenset()

    def taken_message(self, taken: Iterable[str]) -> NameTaken:
        """The refusal when another student holds one of ``taken`` keys, with a free suggestion."""
        return NameTaken(self.text, names.suggestion(self.text, frozenset(taken), NICKNAME_CHARS))


@dataclass(frozen=True)
class Tally:
    """The answers to one question so far: counts per value, the choices first (zeros included)."""

    question: Question
    status: str  # OPEN, CLOSED or REVEALED
    counts: dict[str, int]  # empty for a forecast (its answers are grids: see mean)
    total: int  # answers counted
    right: int | None = None  # how many are right; None when the question has no correct answer
    mean: list[list[float]] | None = None  # a forecast's element-wise mean ([rows][cols]); None otherwise


@dataclass(frozen=True)
class Student:
    """One line of the teacher's roster."""

    id: str
    nickname: str
    joined: float  # epoch seconds
    last_seen: float  # epoch seconds of the last heartbeat (or the join)
    answered: bool  # answered the current question
    removed: bool


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


NETWORK_CHARS = 16  # of network_of's hash: enough to tell a room's addresses apart


def network_of(code: str, client: str) -> str:
    """The name a room keeps for a client address ("" for none): a hash with the room's code, so
    equal addresses read equal inside one room, and no member's record, answer or CSV holds the
    address (the rate limits' buckets are named by it, and expire)."""
    if not client:
        return ""
    return hashlib.sha256(f"mha-network:{code}:{client}".encode()).hexdigest()[:NETWORK_CHARS]


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
        raise TooLong(what)
    return text


def check_nickname(nickname: str) -> Name:
    """The nickname as the room keeps it, its limit counted after names.clean; a name with nothing
    readable left is no name."""
    if not isinstance(nickname, str):
        raise InvalidInput("The nickname must be text.")
    if len(nickname) > RAW_NICKNAME_CHARS:
        raise TooLong("nickname")
    text = check_text("nickname", names.clean(nickname))
    keys = names.keys(text)
    if keys and names.reads_as_anonymous(text):  # the roster's "student 3": no typed name may read so
        raise NameTaken(text, names.suggestion(text, frozenset(), NICKNAME_CHARS))
    return Name(text, keys) if keys else Name()


def check_client(client: str) -> str:
    """A client address as a bucket's name part (text, at most 200 characters)."""
    return client[:200] if isinstance(client, str) else ""


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


def check_choices(choices: Iterable[str]) -> tuple[str, ...]:
    choices = tuple(check_text("choice", choice, empty_ok=False) for choice in choices)
    if len(choices) > MAX_CHOICES or len(set(choices)) != len(choices):
        raise InvalidInput(f"A question has at most {MAX_CHOICES} different choices.")
    return choices


def check_grid(kind: str, grid) -> tuple[int, int]:
    """A forecast's (rows, cols) with 1 <= rows * cols <= MAX_FORECAST_CELLS; (0, 0) for other kinds."""
    try:
        rows, cols = (int(n) if float(n) == int(n) else -1 for n in grid)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput("The grid must be two whole numbers (rows, columns).") from None
    if not drawn(kind):
        if (rows, cols) != (0, 0):
            raise InvalidInput("Only a forecast question has a grid.")
        return (0, 0)
    if rows < 1 or cols < 1 or rows * cols > MAX_FORECAST_CELLS:
        raise InvalidInput(f"A forecast's grid has 1 to {MAX_FORECAST_CELLS} cells (rows × columns).")
    return (rows, cols)


def check_question(question: Question) -> Question:
    """The question's fields checked together (choices, correct, tolerance, grid)."""
    if drawn(question.kind) and (question.choices or question.correct):
        raise InvalidInput("A forecast question has no choices and no correct answer.")
    if question.correct and question.choices and question.correct not in question.choices:
        raise InvalidInput("The correct answer must be one of the choices.")
    if not math.isfinite(question.tolerance) or question.tolerance < 0:
        raise InvalidInput("The tolerance must be a number, 0 or more.")
    return question


def forecast_grid(value: str, grid: tuple[int, int]) -> list[list[float]]:
    """A forecast answer's weights ([rows][cols], each row summing to 1); InvalidInput says what is wrong."""
    rows, cols = grid
    try:
        weights = json.loads(value)
    except (ValueError, RecursionError):
        raise InvalidInput("A forecast must be a grid of weights (JSON).") from None
    if (not isinstance(weights, list) or len(weights) != rows
            or any(not isinstance(row, list) or len(row) != cols for row in weights)):
        raise InvalidInput(f"A forecast must be {rows} row(s) of {cols} weight(s).")
    cells = [w for row in weights for w in row]
    if any(isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or not 0 <= w <= 1
           for w in cells):
        raise InvalidInput("Every weight of a forecast is a number from 0 to 1.")
    if any(abs(math.fsum(row) - 1) > FORECAST_ROW_SUM_TOLERANCE for row in weights):
        raise InvalidInput("Every row of a forecast must add up to 1.")
    return [[float(w) for w in row] for row in weights]


def check_answer(question: Question, value: str) -> str:
    """The value as stored: a forecast as compact JSON of its weights, a choice as it is (one of
    the question's), a typed answer as given (at most ANSWER_CHARS)."""
    if drawn(question.kind):
        check_text("forecast", value, empty_ok=False)
        return json.dumps(forecast_grid(value, question.grid), separators=(",", ":"))
    if question.choices:
        if value not in question.choices:
            raise InvalidInput("Choose one of the options.")
        return value
    return check_text("answer", value, empty_ok=False)


def is_right(question: Question, value: str) -> bool | None:
    """Whether an answer is right: None if the question cannot be marked (no correct answer, or a
    forecast); otherwise as its kind marks it (course/answers.py: choices exactly, shapes as
    (rows, cols), anything else as numbers within the question's tolerance; unreadable is wrong)."""
    if not question.correct or drawn(question.kind):
        return None
    return kind_of(question.kind).right(value, question.correct, question.tolerance, question.choices)


def count_answers(question: Question, answers: Iterable[Answer]) -> dict[str, int]:
    """Counts per value: the choices in their order (zeros included), then other values, most first."""
    counts = dict.fromkeys(question.choices, 0)
    others: dict[str, int] = {}
    for answer in answers:
        target = counts if answer.value in counts else others
        target[answer.value] = target.get(answer.value, 0) + 1
    return counts | dict(sorted(others.items(), key=lambda item: (-item[1], item[0])))


def mean_forecast(question: Question, answers: list[Answer]) -> list[list[float]] | None:
    """The element-wise mean of the forecasts given ([rows][cols]); None before the first."""
    if not answers:
        return None
    rows, cols = question.grid
    grids = [forecast_grid(answer.value, question.grid) for answer in answers]
    return [[math.fsum(g[r][c] for g in grids) / len(grids) for c in range(cols)] for r in range(rows)]


def make_tally(question: Question, status: str, answers: list[Answer]) -> Tally:
    marks = [is_right(question, answer.value) for answer in answers]
    right = None if is_right(question, "") is None else sum(mark is True for mark in marks)
    if drawn(question.kind):
        return Tally(question, status, {}, len(answers), None, mean_forecast(question, answers))
    counts = count_answers(question, answers)
    return Tally(question, status, counts, sum(counts.values()), right)


PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)  # kept as a number


def csv_safe(text: str) -> str:
    """A cell a spreadsheet shows as text (OWASP's CSV injection advice): one leading ' when it starts
    with = + - @, a tab or a carriage return, also when those come after blanks and controls a
    spreadsheet may trim first, and in their full-width or other compatibility forms (＝＋－＠)."""
    if PLAIN_NUMBER.fullmatch(text):  # -1.5 or +2e3 is a number to a spreadsheet, never a formula
        return text
    first = next((ch for ch in text if not (ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf"))), "")
    formula = unicodedata.normalize("NFKC", first).startswith(FORMULA_CHARS)
    return "'" + text if formula or text.startswith(FORMULA_STARTS) else text


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def right_or_wrong(question: Question, value: str) -> str:
    mark = is_right(question, value)
    return "" if mark is None else "right" if mark else "wrong"


def transcript_csv(transcript: Iterable[tuple[Question, list[Answer]]]) -> str:
    """One row per answer, questions in the order asked, answers in the order given; every text
    cell through csv_safe."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for number, (question, answers) in enumerate(transcript, start=1):
        for answer in sorted(answers, key=lambda a: (a.at, a.student_id)):
            cells = (question.prompt, question.correct, answer.student_id, answer.nickname, answer.value,
                     right_or_wrong(question, answer.value), iso_time(answer.at))
            writer.writerow([number, *(csv_safe(cell) for cell in cells)])
    return out.getvalue()


def without_solution(state: RoomState) -> RoomState:
    if state.question is None or state.revealed:
        return state
    return replace(state, question=replace(state.question, solution="", correct=""))


# --- The interface ------------------------------------------------------------------------------------


class ClassroomStore(ABC):
    """Rooms, their followed state, their questions and answers; safe to share between threads."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock  # epoch seconds; tests pass a fake one to move time on

    # Rooms (the teacher)

    def create_room(self, *, client: str = "") -> Room:
        """A new room with a fresh code; gone rooms are removed first. TooSoon past ROOMS_PER_CLIENT
        a minute from this client address; LimitReached at MAX_ROOMS."""
        secret, now = new_secret(), self._clock()
        self._purge_idle(self._cutoff(now))
        self._take_or_refuse(f"rooms:{check_client(client)}", now, ROOMS_BUCKET, TOO_MANY_ROOMS_STARTED)
        for _ in range(CODE_DRAWS):
            code = new_code()
            if self._create_room(code, hash_secret(secret), now):
                return Room(code, secret, now)
        raise LimitReached(ROOMS_FULL)  # never in practice: MAX_ROOMS is far below the codes there are

    def end_room(self, code: str, secret: str) -> None:
        code = self._check_teacher(code, secret)
        self._end_room(code, hash_secret(secret))

    def check_teacher(self, code: str, secret: str, *, client: str = "") -> None:
        """Whether a teacher link holds: NoSuchRoom or NotTheTeacher, each taking one of the client's
        WRONG_CODES_PER_MINUTE; with none left, TooSoon whatever the link. A link that holds counts
        as the teacher's activity."""
        now = self._clock()
        with self.guessing(client=client, wrong=(NoSuchRoom, NotTheTeacher)):
            code = self._check_teacher(code, secret)
        self._touch(code, hash_secret(secret), now)

    @contextmanager
    def guessing(self, *, client: str = "", wrong: tuple[type[BaseException], ...] = (NoSuchRoom,)):
        """One try of a secret (a room code, a teacher link or key) from this client address: TooSoon
        at once when the client has no wrong guess left; a block that raises one of ``wrong`` takes
        one, and when tries made at the same moment have taken the last one meanwhile, it says
        TooSoon instead of its answer (the bucket is the oracle's limit). A right try costs nothing."""
        bucket = f"guess:{check_client(client)}"
        self._refuse_if_empty(bucket, self._clock(), GUESS_BUCKET, TOO_MANY_GUESSES)
        try:
            yield
        except wrong:
            self._take_or_refuse(bucket, self._clock(), GUESS_BUCKET, TOO_MANY_GUESSES)
            raise

    def teacher_heartbeat(self, code: str, secret: str) -> None:
        """The teacher's page is open: keeps the room alive for TEACHER_GONE_SECONDS more."""
        code = self._check_teacher(code, secret)
        self._touch(code, hash_secret(secret), self._clock())

    def room_exists(self, code: str) -> bool:
        """For tests and the store itself only: a page must not offer it (it would be a free oracle)."""
        try:
            return self._room_exists(normalise_code(code), self._cutoff())
        except NoSuchRoom:
            return False

    # The door

    def join(self, code: str, student_id: str, *, nickname: str = "", client: str = "") -> None:
        """Enter the room (the only way in); a member re-joins freely and may change the nickname
        (an empty one keeps the nickname they have: a second tab, a reconnect).
        Refusals, checked in this order before anything is written: InvalidInput (TooLong: the
        nickname), TooSoon (too many wrong codes from this client), NoSuchRoom (takes one of those),
        Removed, RoomLocked, TooSoon (the join rate from this client to this room), LimitReached
        (full), NameTaken (another student's name reads the same)."""
        check_text("student id", student_id, empty_ok=False)
        name = check_nickname(nickname)
        client, now = check_client(client), self._clock()
        with self.guessing(client=client):
            code = normalise_code(code)
            wait = self._join(code, student_id, name, now, f"join:{code}:{client}", *JOIN_BUCKET,
                              network=network_of(code, client))
        if wait > 0:
            raise TooSoon(TOO_MANY_JOINS, wait)

    def lock(self, code: str, secret: str, locked: bool = True) -> int:
        """Let no new student in (members stay and may re-join), or open the door again; the new version."""
        code = self._check_teacher(code, secret)
        return self._lock(code, hash_secret(secret), self._clock(), bool(locked))

    def remove(self, code: str, secret: str, student_id: str) -> int:
        """The student is no longer a member and cannot join again; their given answers stay, later
        ones raise Removed, and so do their reads of the room's questions (check_member, my_answer);
        their name is free for another student (the roster still shows it, struck through). Returns
        the room's version (unchanged: the class sees nothing new)."""
        check_text("student id", student_id, empty_ok=False)
        code = self._check_teacher(code, secret)
        return self._remove(code, hash_secret(secret), self._clock(), student_id)

    def roster(self, code: str, secret: str) -> list[Student]:
        """Every student who joined (the removed ones marked), in the order they joined."""
        code = self._check_teacher(code, secret)
        now = self._clock()
        self._touch(code, hash_secret(secret), now)
        return sorted(self._roster(code, self._cutoff(now)), key=lambda s: (s.joined, s.id))

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

    def check_member(self, code: str, student_id: str) -> None:
        """Nothing when the student is a member of the live room; else NoSuchRoom, Removed (the teacher
        removed them) or NotInRoom (never joined). A read: it admits nobody and marks nobody present."""
        check_text("student id", student_id, empty_ok=False)
        membership = self._membership(normalise_code(code), student_id, self._cutoff())
        if membership is None:
            raise NotInRoom()
        if membership:
            raise Removed()

    def heartbeat(self, code: str, student_id: str) -> None:
        """Say this member is following now; NotInRoom if they are not a member (never joined, or
        removed: join() then says which)."""
        if self.heartbeats(code, [student_id]):
            raise NotInRoom()

    def heartbeats(self, code: str, student_ids: Iterable[str]) -> list[str]:
        """heartbeat for many students in one write (a server sends its followers' together);
        returns the ids that are not members (the others count as following). Admits nobody."""
        ids = tuple(dict.fromkeys(check_text("student id", i, empty_ok=False) for i in student_ids))
        if len(ids) > MAX_STUDENTS_PER_ROOM:
            raise InvalidInput(f"At most {MAX_STUDENTS_PER_ROOM} heartbeats at once.")
        return self._heartbeat(normalise_code(code), ids, self._clock()) if ids else []

    def followers(self, code: str) -> int:
        """How many members sent a heartbeat (or joined) in the last FOLLOWER_TTL_SECONDS."""
        now = self._clock()
        return self._followers(normalise_code(code), now - FOLLOWER_TTL_SECONDS, self._cutoff(now))

    # Ask the room

    def ask(self, code: str, secret: str, prompt: str, choices: Iterable[str] = (), kind: str = "poll",
            solution: str = "", *, correct: str = "", tolerance: float = 0.0,
            grid: tuple[int, int] = (0, 0)) -> Question:
        """Put a question to the room (closing the previous one); returns it with its id."""
        kind = check_text("kind", kind)
        try:
            tolerance = float(tolerance)
        except (TypeError, ValueError):
            raise InvalidInput("The tolerance must be a number, 0 or more.") from None
        question = check_question(Question(
            secrets.token_urlsafe(8), check_text("prompt", prompt, empty_ok=False), check_choices(choices),
            kind, self._clock(), check_text("solution", solution), check_text("correct", correct),
            tolerance, check_grid(kind, grid)))
        code = self._check_teacher(code, secret)
        self._ask(code, hash_secret(secret), question)
        return question

    def answer(self, code: str, question_id: str, student_id: str, value: str, nickname: str = "") -> bool:
        """Record a member's answer: True if it counts, False if this student had already answered.
        NotInRoom for a student who never joined, Removed for one the teacher removed. A nickname
        is the member's name: a new one renames them (NameTaken, and nothing is recorded, if another
        student's reads the same); an empty one keeps theirs."""
        check_text("student id", student_id, empty_ok=False)
        if not isinstance(value, str):
            raise InvalidInput("The answer must be text.")
        name = check_nickname(nickname)
        code, question_id = normalise_code(code), check_question_id(question_id)
        question, status = self._question(code, question_id, self._cutoff())
        if status != OPEN:  # checked again inside the atomic step; this is the quick refusal
            raise QuestionClosed()
        value = check_answer(question, value)
        return self._answer(code, Answer(question_id, student_id, value, name.text, self._clock()), name)

    def my_answer(self, code: str, question_id: str, student_id: str) -> Answer | None:
        """This student's counted answer to the question, if any; Removed for a removed student."""
        check_text("student id", student_id, empty_ok=False)
        code, question_id = normalise_code(code), check_question_id(question_id)
        answer = self._my_answer(code, question_id, student_id, self._cutoff())
        if self._membership(code, student_id, self._cutoff()):
            raise Removed()
        return answer

    def tally(self, code: str, question_id: str) -> Tally:
        code, question_id = normalise_code(code), check_question_id(question_id)
        question, status, answers = self._question_answers(code, question_id, self._cutoff())
        return make_tally(question, status, answers)

    def close(self, code: str | None = None, secret: str = "", question_id: str = "") -> int | None:
        """Stop taking answers to the question (OPEN -> CLOSED; students see no answer yet); returns
        the room's version (a new one if it is the current question). Without arguments, as before:
        release the store's connections (see release())."""
        if code is None:
            self.release()
            return None
        code, question_id = self._check_teacher(code, secret), check_question_id(question_id)
        return self._close(code, hash_secret(secret), self._clock(), question_id)

    def reveal(self, code: str, secret: str, question_id: str) -> int:
        """Close the question (if open) and show its answers; returns the room's version."""
        code, question_id = self._check_teacher(code, secret), check_question_id(question_id)
        return self._reveal(code, hash_secret(secret), self._clock(), question_id)

    def answer_networks(self, code: str, secret: str, question_id: str) -> list[str]:
        """For the teacher: the network (network_of) each answer to the question came from, the
        network its student first joined from ("" when unknown), one per answer."""
        code, question_id = self._check_teacher(code, secret), check_question_id(question_id)
        cutoff = self._cutoff()
        _, _, answers = self._question_answers(code, question_id, cutoff)
        networks = self._networks(code, cutoff)
        return [networks.get(answer.student_id, "") for answer in answers]

    def answers(self, code: str, secret: str) -> list[tuple[Question, list[Answer]]]:
        """Every question asked in this room, in order, with its answers (for the teacher only)."""
        code = self._check_teacher(code, secret)
        now = self._clock()
        self._touch(code, hash_secret(secret), now)
        return self._transcript(code, self._cutoff(now))

    def answers_csv(self, code: str, secret: str) -> str:
        return transcript_csv(self.answers(code, secret))

    @abstractmethod
    def release(self) -> None:
        """Release connections; the data stays."""

    # Shared steps

    def _cutoff(self, now: float | None = None) -> float:
        """Rooms whose teacher was last active before this time are gone."""
        return (self._clock() if now is None else now) - TEACHER_GONE_SECONDS

    def _check_teacher(self, code: str, secret: str) -> str:
        code = normalise_code(code)
        if not secret_matches(secret, self._secret_hash(code, self._cutoff())):
            raise NotTheTeacher()
        return code

    def _take_or_refuse(self, bucket: str, now: float, limits: tuple[float, float], what: str) -> None:
        wait = self._take(bucket, now, *limits)
        if wait > 0:
            raise TooSoon(what, wait)

    def _refuse_if_empty(self, bucket: str, now: float, limits: tuple[float, float], what: str) -> None:
        wait = self._peek(bucket, now, *limits)
        if wait > 0:
            raise TooSoon(what, wait)

    # Backend primitives. `cutoff` is the time before which a room counts as gone; a `secret_hash`
    # argument is the one just checked, and the write must fail with NoSuchRoom if the room now has
    # another (it ended and a new room took its code in between). Teacher writes mark the room
    # active at `now`; student writes never do.

    @abstractmethod
    def _take(self, bucket: str, now: float, capacity: float, per_second: float) -> float:
        """Atomically take one token from the bucket (full when new): 0.0 if taken, else the seconds
        until one is there. A bucket is forgotten once it would be full again."""

    @abstractmethod
    def _peek(self, bucket: str, now: float, capacity: float, per_second: float) -> float:
        """The seconds until the bucket has a token (0.0 if it has one now); takes nothing."""

    @abstractmethod
    def _purge_idle(self, cutoff: float) -> None: ...

    @abstractmethod
    def _create_room(self, code: str, secret_hash: str, now: float) -> bool:
        """False if the code is taken; LimitReached(ROOMS_FULL) at MAX_ROOMS."""

    @abstractmethod
    def _secret_hash(self, code: str, cutoff: float) -> str: ...

    @abstractmethod
    def _touch(self, code: str, secret_hash: str, now: float) -> None:
        """The teacher is active now."""

    @abstractmethod
    def _end_room(self, code: str, secret_hash: str) -> None: ...

    @abstractmethod
    def _room_exists(self, code: str, cutoff: float) -> bool: ...

    @abstractmethod
    def _join(self, code: str, student_id: str, name: Name, now: float, bucket: str, capacity: float,
              per_second: float, *, network: str = "") -> float:
        """join's checks from the room on and the write, in one atomic step: NoSuchRoom, Removed,
        RoomLocked, LimitReached(ROOM_FULL), NameTaken (name.taken_message); returns 0.0 when
        joined (or re-joined), else the seconds the join rate's bucket needs (nothing written). A
        name (not "") replaces the student's keys; another student's keys are never touched. A new
        member's network is kept (a member's re-join keeps the first)."""

    @abstractmethod
    def _networks(self, code: str, cutoff: float) -> dict[str, str]:
        """Student id -> the network they first joined from, for the students with one."""

    @abstractmethod
    def _lock(self, code: str, secret_hash: str, now: float, locked: bool) -> int: ...

    @abstractmethod
    def _remove(self, code: str, secret_hash: str, now: float, student_id: str) -> int:
        """The student marked removed (a row made if they never joined) and their name's keys freed."""

    @abstractmethod
    def _roster(self, code: str, cutoff: float) -> list[Student]: ...

    @abstractmethod
    def _membership(self, code: str, student_id: str, cutoff: float) -> bool | None:
        """None if the student never joined the live room (NoSuchRoom if it is not live), True if
        removed, False if a member."""

    @abstractmethod
    def _set_state(self, code: str, secret_hash: str, now: float, page: str, step: int, setup_json: str,
                   selections_json: str) -> int: ...

    @abstractmethod
    def _version(self, code: str, cutoff: float) -> int: ...

    @abstractmethod
    def _state(self, code: str, cutoff: float) -> RoomState: ...

    @abstractmethod
    def _heartbeat(self, code: str, student_ids: tuple[str, ...], now: float) -> list[str]:
        """Mark each member present, in one atomic step; returns the ids that are not members."""

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
    def _answer(self, code: str, answer: Answer, name: Name) -> bool:
        """Atomically: the room is live, the question open, the student a member (NotInRoom, or
        Removed), the name theirs to take (NameTaken, as _join); the first answer wins."""

    @abstractmethod
    def _my_answer(self, code: str, question_id: str, student_id: str, cutoff: float) -> Answer | None:
        """NoSuchQuestion if the room never asked it."""

    @abstractmethod
    def _close(self, code: str, secret_hash: str, now: float, question_id: str) -> int: ...

    @abstractmethod
    def _reveal(self, code: str, secret_hash: str, now: float, question_id: str) -> int: ...

    @abstractmethod
    def _transcript(self, code: str, cutoff: float) -> list[tuple[Question, list[Answer]]]: ...
