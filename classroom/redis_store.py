"""The shared backend: Redis, so several server processes see the same rooms.

Each write is one Lua script (atomic in Redis: its checks and its writes happen with nothing in
between); each read of several keys is one MULTI/EXEC. Keys, with the room code as hash tag:

    mha:rooms                  sorted set: code -> last activity (epoch seconds); counts the rooms
    mha:{CODE}:room            hash: secret_hash, created, version, page, step, setup_json,
                               selections, question_id, question (JSON), revealed
    mha:{CODE}:students        set of student ids admitted
    mha:{CODE}:presence        sorted set: student id -> last heartbeat
    mha:{CODE}:questions       list of question ids, in order asked
    mha:{CODE}:qdata           hash: question id -> question JSON
    mha:{CODE}:qstatus         hash: question id -> open | closed | revealed
    mha:{CODE}:answers:QID     hash: student id -> answer JSON (HSETNX: the first one wins)

Durability is the server's: run redis-server with ``appendonly yes`` (``appendfsync everysec`` keeps
acknowledged writes across a restart or a killed process; ``always`` across a power cut too).
Connection failures become ``StoreUnavailable``; the client reconnects on the next call.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable, Iterator

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from classroom.store import (
    FOLLOWER_TTL_SECONDS,
    MAX_QUESTIONS_PER_ROOM,
    MAX_ROOMS,
    MAX_STUDENTS_PER_ROOM,
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

CONNECT_TIMEOUT_SECONDS = 2.0
SOCKET_TIMEOUT_SECONDS = 5.0
MAX_CONNECTIONS = 32  # per process; every call is one short round trip
POOL_WAIT_SECONDS = 10.0

# Every script starts with this: ARGV[1] is the code, ARGV[2] the time now, ARGV[3] the idle cutoff,
# ARGV[4] the teacher's secret hash or ''. KEYS[1] is mha:rooms, KEYS[2] the room's hash.
ROOM_CHECK = """
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not seen or tonumber(seen) < tonumber(ARGV[3]) then return {'no_room'} end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[2], 'secret_hash') ~= ARGV[4] then return {'no_room'} end
local function touch() redis.call('ZADD', KEYS[1], 'XX', 'GT', ARGV[2], ARGV[1]) end
local function admit(students, student_id, limit)
  if redis.call('SISMEMBER', students, student_id) == 1 then return true end
  if redis.call('SCARD', students) >= tonumber(limit) then return false end
  redis.call('SADD', students, student_id)
  return true
end
"""

CREATE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {'taken'} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return {'rooms_full'} end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'secret_hash', ARGV[4], 'created', ARGV[2], 'version', 0, 'page', '',
  'step', 0, 'setup_json', '', 'selections', '{}', 'question_id', '', 'question', '', 'revealed', 0)
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return {'ok'}
"""

# KEYS[3..7]: students, presence, questions, qdata, qstatus; ARGV[5]: the answers keys' prefix.
# With ARGV[4] == '' only a room idle since before the cutoff is purged (expiry), else a live one.
PURGE = """
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not seen then return {'no_room'} end
if ARGV[4] == '' and tonumber(seen) >= tonumber(ARGV[3]) then return {'ok', 0} end
if ARGV[4] ~= '' then
  if tonumber(seen) < tonumber(ARGV[3]) then return {'no_room'} end
  if redis.call('HGET', KEYS[2], 'secret_hash') ~= ARGV[4] then return {'no_room'} end
end
for _, id in ipairs(redis.call('LRANGE', KEYS[5], 0, -1)) do redis.call('DEL', ARGV[5] .. id) end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[1], ARGV[1])
return {'ok', 1}
"""

SET_STATE = ROOM_CHECK + """
local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
redis.call('HSET', KEYS[2], 'page', ARGV[5], 'step', ARGV[6], 'setup_json', ARGV[7], 'selections', ARGV[8])
touch()
return {'ok', version}
"""

# KEYS[3..4]: students, presence. ARGV[5] the limit, ARGV[6] the presence TTL, ARGV[7..] student ids.
# Returns {'ok', the ids the full room refused...}.
HEARTBEAT = ROOM_CHECK + """
local refused = {'ok'}
for i = 7, #ARGV do
  if admit(KEYS[3], ARGV[i], ARGV[5]) then
    redis.call('ZADD', KEYS[4], ARGV[2], ARGV[i])
  else
    table.insert(refused, ARGV[i])
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. (tonumber(ARGV[2]) - tonumber(ARGV[6])))
touch()
return refused
"""

# KEYS[3..5]: questions, qdata, qstatus. ARGV[5] question id, ARGV[6] its JSON, ARGV[7] the limit.
ASK = ROOM_CHECK + """
if redis.call('HEXISTS', KEYS[5], ARGV[5]) == 1 then return {'ok'} end
if redis.call('LLEN', KEYS[3]) >= tonumber(ARGV[7]) then return {'too_many_questions'} end
local previous = redis.call('HGET', KEYS[2], 'question_id')
if previous ~= '' and redis.call('HGET', KEYS[5], previous) == 'open' then
  redis.call('HSET', KEYS[5], previous, 'closed')
end
redis.call('RPUSH', KEYS[3], ARGV[5])
redis.call('HSET', KEYS[4], ARGV[5], ARGV[6])
redis.call('HSET', KEYS[5], ARGV[5], 'open')
redis.call('HSET', KEYS[2], 'question_id', ARGV[5], 'question', ARGV[6], 'revealed', 0)
redis.call('HINCRBY', KEYS[2], 'version', 1)
touch()
return {'ok'}
"""

# KEYS[3..5]: students, qstatus, the question's answers. ARGV[5] question id, ARGV[6] student id,
# ARGV[7] the answer's JSON (with a per-call nonce), ARGV[8] the students limit.
ANSWER = ROOM_CHECK + """
local status = redis.call('HGET', KEYS[4], ARGV[5])
if not status then return {'no_question'} end
if status ~= 'open' then return {'closed'} end
if not admit(KEYS[3], ARGV[6], ARGV[8]) then return {'room_full'} end
local stored = redis.call('HSETNX', KEYS[5], ARGV[6], ARGV[7])
if stored == 0 and redis.call('HGET', KEYS[5], ARGV[6]) == ARGV[7] then stored = 1 end  -- a retried call
touch()
return {'ok', stored}
"""

# KEYS[3]: qstatus. ARGV[5] question id.
REVEAL = ROOM_CHECK + """
local status = redis.call('HGET', KEYS[3], ARGV[5])
if not status then return {'no_question'} end
if status ~= 'revealed' then
  redis.call('HSET', KEYS[3], ARGV[5], 'revealed')
  if redis.call('HGET', KEYS[2], 'question_id') == ARGV[5] then
    redis.call('HSET', KEYS[2], 'revealed', 1)
    redis.call('HINCRBY', KEYS[2], 'version', 1)
  end
end
touch()
return {'ok', tonumber(redis.call('HGET', KEYS[2], 'version'))}
"""

REFUSALS = {
    "no_room": lambda code: NoSuchRoom(code),
    "rooms_full": lambda code: LimitReached(ROOMS_FULL),
    "room_full": lambda code: LimitReached(ROOM_FULL),
    "too_many_questions": lambda code: LimitReached(TOO_MANY_QUESTIONS),
    "no_question": lambda code: NoSuchQuestion(),
    "closed": lambda code: QuestionClosed(),
}


class RedisStore(ClassroomStore):
    """The classroom store in one Redis database, under keys starting with ``prefix``."""

    def __init__(self, client: redis.Redis, *, clock: Callable[[], float] = time.time, prefix: str = "mha"):
        super().__init__(clock)
        self._redis, self._prefix = client, prefix
        self._scripts = {name: client.register_script(source) for name, source in (
            ("create", CREATE), ("purge", PURGE), ("set_state", SET_STATE), ("heartbeat", HEARTBEAT),
            ("ask", ASK), ("answer", ANSWER), ("reveal", REVEAL))}

    @classmethod
    def from_url(cls, url: str, **kwargs) -> RedisStore:
        """A store on ``url`` (redis://host:port/db). At most MAX_CONNECTIONS connections: more calls
        at once wait for one (up to POOL_WAIT_SECONDS). A dropped connection is retried once, at once."""
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT_SECONDS, decode_responses=True,
            socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, socket_timeout=SOCKET_TIMEOUT_SECONDS,
            health_check_interval=30, retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)))
        return cls(redis.Redis(connection_pool=pool), **kwargs)

    def close(self) -> None:
        self._redis.close()

    # Keys

    def _rooms_key(self) -> str:
        return f"{self._prefix}:rooms"

    def _key(self, code: str, part: str) -> str:
        return f"{self._prefix}:{{{code}}}:{part}"

    def _answers_key(self, code: str, question_id: str) -> str:
        return self._key(code, f"answers:{question_id}")

    def _purge_keys(self, code: str) -> list[str]:
        parts = ("room", "students", "presence", "questions", "qdata", "qstatus")
        return [self._rooms_key(), *(self._key(code, part) for part in parts)]

    # Running scripts and transactions

    def _run(self, script: str, code: str, keys: list[str], now: float, secret_hash: str, *args) -> list:
        """Run a script on (mha:rooms, the room's hash, *keys); a refusal becomes its StoreError."""
        keys = [self._rooms_key(), self._key(code, "room"), *keys]
        argv = [code, repr(now), repr(now - ROOM_IDLE_SECONDS), secret_hash, *args]
        with _unavailable_on_error():
            result = self._scripts[script](keys=keys, args=argv)
        if result[0] != "ok":
            raise REFUSALS[result[0]](code)
        return result

    def _snapshot(self, code: str, cutoff: float, *reads: tuple) -> list:
        """The results of reads such as ("hget", key, field), all from one MULTI/EXEC; NoSuchRoom if
        the room is not live."""
        with _unavailable_on_error():
            pipe = self._redis.pipeline(transaction=True)
            pipe.zscore(self._rooms_key(), code)
            for command, *args in reads:
                getattr(pipe, command)(*args)
            seen, *results = pipe.execute()
        if seen is None or seen < cutoff:
            raise NoSuchRoom(code)
        return results

    # Rooms

    def _purge_idle(self, cutoff: float) -> None:
        with _unavailable_on_error():
            idle = self._redis.zrangebyscore(self._rooms_key(), "-inf", f"({cutoff!r}")
        for code in idle:
            self._purge(code, cutoff, "")

    def _purge(self, code: str, cutoff: float, secret_hash: str) -> list:
        with _unavailable_on_error():
            result = self._scripts["purge"](keys=self._purge_keys(code),
                                            args=[code, "", repr(cutoff), secret_hash,
                                                  self._answers_key(code, "")])
        if result[0] != "ok":
            raise NoSuchRoom(code)
        return result

    def _create_room(self, code: str, secret_hash: str, now: float) -> bool:
        with _unavailable_on_error():
            result = self._scripts["create"](keys=[self._rooms_key(), self._key(code, "room")],
                                             args=[code, repr(now), MAX_ROOMS, secret_hash])
        if result[0] == "rooms_full":
            raise LimitReached(ROOMS_FULL)
        return result[0] == "ok"

    def _secret_hash(self, code: str, cutoff: float) -> str:
        return self._snapshot(code, cutoff, ("hget", self._key(code, "room"), "secret_hash"))[0]

    def _end_room(self, code: str, secret_hash: str) -> None:
        self._purge(code, self._clock() - ROOM_IDLE_SECONDS, secret_hash)

    def _room_exists(self, code: str, cutoff: float) -> bool:
        with _unavailable_on_error():
            seen = self._redis.zscore(self._rooms_key(), code)
        return seen is not None and seen >= cutoff

    # Follow the teacher

    def _set_state(self, code: str, secret_hash: str, now: float, page: str, step: int, setup_json: str,
                   selections_json: str) -> int:
        return self._run("set_state", code, [], now, secret_hash, page, step, setup_json, selections_json)[1]

    def _version(self, code: str, cutoff: float) -> int:
        return int(self._snapshot(code, cutoff, ("hget", self._key(code, "room"), "version"))[0])

    def _state(self, code: str, cutoff: float) -> RoomState:
        room = self._snapshot(code, cutoff, ("hgetall", self._key(code, "room")))[0]
        question = Question.from_json(room["question"]) if room["question"] else None
        return RoomState(int(room["version"]), room["page"], int(room["step"]), room["setup_json"],
                         json.loads(room["selections"]), question, room["revealed"] == "1")

    def _heartbeat(self, code: str, student_ids: tuple[str, ...], now: float) -> list[str]:
        keys = [self._key(code, "students"), self._key(code, "presence")]
        return self._run("heartbeat", code, keys, now, "", MAX_STUDENTS_PER_ROOM, FOLLOWER_TTL_SECONDS,
                         *student_ids)[1:]

    def _followers(self, code: str, since: float, cutoff: float) -> int:
        return self._snapshot(code, cutoff, ("zcount", self._key(code, "presence"), since, "+inf"))[0]

    # Ask the room

    def _ask(self, code: str, secret_hash: str, question: Question) -> None:
        keys = [self._key(code, part) for part in ("questions", "qdata", "qstatus")]
        self._run("ask", code, keys, question.created, secret_hash, question.id, question.to_json(),
                  MAX_QUESTIONS_PER_ROOM)

    def _question(self, code: str, question_id: str, cutoff: float) -> tuple[Question, str]:
        data, status = self._snapshot(code, cutoff, ("hget", self._key(code, "qdata"), question_id),
                                      ("hget", self._key(code, "qstatus"), question_id))
        if data is None:
            raise NoSuchQuestion()
        return Question.from_json(data), status

    def _question_answers(self, code: str, question_id: str,
                          cutoff: float) -> tuple[Question, str, list[Answer]]:
        data, status, stored = self._snapshot(code, cutoff, ("hget", self._key(code, "qdata"), question_id),
                                              ("hget", self._key(code, "qstatus"), question_id),
                                              ("hvals", self._answers_key(code, question_id)))
        if data is None:
            raise NoSuchQuestion()
        return Question.from_json(data), status, _answers(question_id, stored)

    def _answer(self, code: str, answer: Answer) -> bool:
        # "call", a nonce, tells the same call retried after a dropped connection from a second answer.
        fields = {"student_id": answer.student_id, "value": answer.value, "nickname": answer.nickname,
                  "at": answer.at, "call": secrets.token_hex(8)}
        keys = [self._key(code, "students"), self._key(code, "qstatus"),
                self._answers_key(code, answer.question_id)]
        result = self._run("answer", code, keys, answer.at, "", answer.question_id, answer.student_id,
                           json.dumps(fields, ensure_ascii=False), MAX_STUDENTS_PER_ROOM)
        return result[1] == 1

    def _reveal(self, code: str, secret_hash: str, now: float, question_id: str) -> int:
        return self._run("reveal", code, [self._key(code, "qstatus")], now, secret_hash, question_id)[1]

    def _transcript(self, code: str, cutoff: float) -> list[tuple[Question, list[Answer]]]:
        ids, data = self._snapshot(code, cutoff, ("lrange", self._key(code, "questions"), 0, -1),
                                   ("hgetall", self._key(code, "qdata")))
        answers = self._snapshot(code, cutoff, *(("hvals", self._answers_key(code, qid)) for qid in ids))
        return [(Question.from_json(data[qid]), _answers(qid, stored))
                for qid, stored in zip(ids, answers, strict=True)]


def _answers(question_id: str, stored: list[str]) -> list[Answer]:
    answers = []
    for text in stored:
        data = json.loads(text)
        answers.append(Answer(question_id, data["student_id"], data["value"], data["nickname"], data["at"]))
    return sorted(answers, key=lambda a: (a.at, a.student_id))


@contextlib.contextmanager
def _unavailable_on_error() -> Iterator[None]:
    """The redis client's connection and timeout errors, and a server that refuses to write (out of
    memory, read-only), as StoreUnavailable: the pages say the class connection is lost."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as error:
        raise StoreUnavailable(f"Redis: {error}") from error
    except redis.ResponseError as error:
        if not str(error).startswith(("OOM", "READONLY", "MISCONF")):
            raise
        raise StoreUnavailable(f"Redis refuses to write: {error}") from error
