"""The shared backend: Redis, so several server processes see the same rooms and the same limits.

Each write is one Lua script (atomic in Redis: its checks and its writes happen with nothing in
between); each read of several keys is one MULTI/EXEC. Keys, with the room code as hash tag:

    mha:rooms                  sorted set: code -> the teacher's last activity (epoch seconds)
    mha:{CODE}:room            hash: secret_hash, created, version, page, step, setup_json,
                               selections, question_id, question (JSON), status, revealed, locked
    mha:{CODE}:members         set of the room's members (joined, not removed)
    mha:{CODE}:removed         set of the students the teacher removed
    mha:{CODE}:nicknames       hash: student id -> nickname (members and removed)
    mha:{CODE}:names           hash: a name's key (classroom/names.py) -> the member holding it
    mha:{CODE}:namekeys        hash: member id -> the keys of their name (JSON list)
    mha:{CODE}:joined          sorted set: student id -> when they joined
    mha:{CODE}:presence        sorted set: member -> last heartbeat (or join)
    mha:{CODE}:networks        hash: student id -> the network of their first join (store.network_of)
    mha:{CODE}:questions       list of question ids, in order asked
    mha:{CODE}:qdata           hash: question id -> question JSON
    mha:{CODE}:qstatus         hash: question id -> open | closed | revealed
    mha:{CODE}:answers:QID     hash: student id -> answer JSON (HSETNX: the first one wins)
    mha:bucket:NAME            hash: tokens, at (a rate limit's token bucket; expires once full)

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

CONNECT_TIMEOUT_SECONDS = 2.0
SOCKET_TIMEOUT_SECONDS = 5.0
MAX_CONNECTIONS = 32  # per process; every call is one short round trip
POOL_WAIT_SECONDS = 10.0

# A token bucket: the tokens in it now (a missing key is a full bucket), and taking one. Numbers go
# back to Python as strings (Redis would truncate a Lua number to an integer).
BUCKET = """
local function tokens_in(key, now, capacity, rate)
  local stored = redis.call('HMGET', key, 'tokens', 'at')
  if not stored[1] then return capacity end
  return math.min(capacity, tonumber(stored[1]) + math.max(0, now - tonumber(stored[2])) * rate)
end
local function wait_for(tokens, rate)
  if tokens >= 1 then return 0 end
  return (1 - tokens) / rate
end
local function take(key, now, capacity, rate)
  local tokens = tokens_in(key, now, capacity, rate)
  if tokens < 1 then return wait_for(tokens, rate) end
  tokens = tokens - 1
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
  redis.call('PEXPIRE', key, math.ceil((capacity - tokens) / rate * 1000) + 1000)
  return 0
end
"""

# KEYS[1]: the bucket. ARGV: now, capacity, per second, 'take' or 'peek'.
TAKE = BUCKET + """
local now, capacity, rate = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if ARGV[4] == 'take' then return string.format('%.17g', take(KEYS[1], now, capacity, rate)) end
return string.format('%.17g', wait_for(tokens_in(KEYS[1], now, capacity, rate), rate))
"""

# Every room script starts with this: ARGV[1] is the code, ARGV[2] the time now, ARGV[3] the cutoff
# (the teacher gone since before it: no room), ARGV[4] the teacher's secret hash or ''. KEYS[1] is
# mha:rooms, KEYS[2] the room's hash. touch() marks the teacher active: teacher scripts only.
ROOM_CHECK = """
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not seen or tonumber(seen) < tonumber(ARGV[3]) then return {'no_room'} end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[2], 'secret_hash') ~= ARGV[4] then return {'no_room'} end
local function touch() redis.call('ZADD', KEYS[1], 'XX', 'GT', ARGV[2], ARGV[1]) end
"""

CREATE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {'taken'} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return {'rooms_full'} end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'secret_hash', ARGV[4], 'created', ARGV[2], 'version', 0, 'page', '',
  'step', 0, 'setup_json', '', 'selections', '{}', 'question_id', '', 'question', '', 'status', '',
  'revealed', 0, 'locked', 0)
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return {'ok'}
"""

# KEYS[3..]: the room's other keys (see RedisStore._purge_keys); ARGV[5]: the answers keys' prefix.
# With ARGV[4] == '' only a room gone since before the cutoff is purged (expiry), else a live one.
PURGE = """
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not seen then return {'no_room'} end
if ARGV[4] == '' and tonumber(seen) >= tonumber(ARGV[3]) then return {'ok', 0} end
if ARGV[4] ~= '' then
  if tonumber(seen) < tonumber(ARGV[3]) then return {'no_room'} end
  if redis.call('HGET', KEYS[2], 'secret_hash') ~= ARGV[4] then return {'no_room'} end
end
for _, id in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do redis.call('DEL', ARGV[5] .. id) end
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('ZREM', KEYS[1], ARGV[1])
return {'ok', 1}
"""

TOUCH = ROOM_CHECK + """
touch()
return {'ok'}
"""

SET_STATE = ROOM_CHECK + """
local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
redis.call('HSET', KEYS[2], 'page', ARGV[5], 'step', ARGV[6], 'setup_json', ARGV[7], 'selections', ARGV[8])
touch()
return {'ok', version}
"""

# One name per student (classroom/names.py): names maps each key to the student holding it, namekeys
# each student to their keys (JSON). name_taken: nil if no other student holds one of the keys, else
# the keys the others hold (JSON, for the suggestion). take_name: the same refusal, or the student's
# keys and nickname replaced; an empty nickname changes nothing.
NAMES = """
local function name_taken(names, sid, keys_json)
  for _, key in ipairs(cjson.decode(keys_json)) do
    local holder = redis.call('HGET', names, key)
    if holder and holder ~= sid then
      local taken, all = {}, redis.call('HGETALL', names)
      for i = 1, #all, 2 do if all[i + 1] ~= sid then table.insert(taken, all[i]) end end
      return cjson.encode(taken)
    end
  end
  return nil
end
local function take_name(names, namekeys, nicknames, sid, nickname, keys_json)
  if nickname == '' then return nil end
  local taken = name_taken(names, sid, keys_json)
  if taken then return taken end
  local old = redis.call('HGET', namekeys, sid)
  if old then
    for _, key in ipairs(cjson.decode(old)) do
      if redis.call('HGET', names, key) == sid then redis.call('HDEL', names, key) end
    end
  end
  for _, key in ipairs(cjson.decode(keys_json)) do redis.call('HSET', names, key, sid) end
  redis.call('HSET', namekeys, sid, keys_json)
  redis.call('HSET', nicknames, sid, nickname)
  return nil
end
"""

# KEYS[3..11]: members, removed, nicknames, joined, presence, the join bucket, names, namekeys,
# networks. ARGV[5] student id, ARGV[6] nickname, ARGV[7] the students limit, ARGV[8..9] the bucket's
# capacity and rate, ARGV[10] the nickname's keys (JSON), ARGV[11] the network ('' for none). Returns
# {'ok', seconds the join rate asks to wait ('0': joined)}, or {'name_taken', the keys other students
# hold (JSON)}.
JOIN = ROOM_CHECK + BUCKET + NAMES + """
local now, capacity, rate = tonumber(ARGV[2]), tonumber(ARGV[8]), tonumber(ARGV[9])
if redis.call('SISMEMBER', KEYS[3], ARGV[5]) == 1 then  -- a member: an empty nickname keeps theirs
  local taken = take_name(KEYS[9], KEYS[10], KEYS[5], ARGV[5], ARGV[6], ARGV[10])
  if taken then return {'name_taken', taken} end
  redis.call('ZADD', KEYS[7], ARGV[2], ARGV[5])
  return {'ok', '0'}
end
if redis.call('SISMEMBER', KEYS[4], ARGV[5]) == 1 then return {'removed'} end
if redis.call('HGET', KEYS[2], 'locked') == '1' then return {'locked'} end
local wait = wait_for(tokens_in(KEYS[8], now, capacity, rate), rate)
if wait > 0 then return {'ok', string.format('%.17g', wait)} end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[7]) then return {'room_full'} end
local taken = name_taken(KEYS[9], ARGV[5], ARGV[10])
if taken then return {'name_taken', taken} end
take(KEYS[8], now, capacity, rate)
redis.call('SADD', KEYS[3], ARGV[5])
redis.call('HSET', KEYS[5], ARGV[5], '')
take_name(KEYS[9], KEYS[10], KEYS[5], ARGV[5], ARGV[6], ARGV[10])
redis.call('ZADD', KEYS[6], ARGV[2], ARGV[5])
redis.call('ZADD', KEYS[7], ARGV[2], ARGV[5])
if ARGV[11] ~= '' then redis.call('HSET', KEYS[11], ARGV[5], ARGV[11]) end
return {'ok', '0'}
"""

# ARGV[5]: 1 to lock, 0 to open.
LOCK = ROOM_CHECK + """
redis.call('HSET', KEYS[2], 'locked', ARGV[5])
local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
touch()
return {'ok', version}
"""

# KEYS[3..9]: members, removed, nicknames, joined, presence, names, namekeys. ARGV[5]: the student id.
# The student's name keys are freed (their nickname stays, for the roster and the answers).
REMOVE = ROOM_CHECK + """
local old = redis.call('HGET', KEYS[9], ARGV[5])
if old then
  for _, key in ipairs(cjson.decode(old)) do
    if redis.call('HGET', KEYS[8], key) == ARGV[5] then redis.call('HDEL', KEYS[8], key) end
  end
  redis.call('HDEL', KEYS[9], ARGV[5])
end
redis.call('SREM', KEYS[3], ARGV[5])
redis.call('SADD', KEYS[4], ARGV[5])
redis.call('HSETNX', KEYS[5], ARGV[5], '')
redis.call('ZADD', KEYS[6], 'NX', ARGV[2], ARGV[5])
redis.call('ZREM', KEYS[7], ARGV[5])
touch()
return {'ok', tonumber(redis.call('HGET', KEYS[2], 'version'))}
"""

# KEYS[3..4]: members, presence. ARGV[5..]: student ids. Returns {'ok', the ids that are not members...}.
HEARTBEAT = ROOM_CHECK + """
local outside = {'ok'}
for i = 5, #ARGV do
  if redis.call('SISMEMBER', KEYS[3], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[4], ARGV[2], ARGV[i])
  else
    table.insert(outside, ARGV[i])
  end
end
return outside
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
redis.call('HSET', KEYS[2], 'question_id', ARGV[5], 'question', ARGV[6], 'status', 'open', 'revealed', 0)
redis.call('HINCRBY', KEYS[2], 'version', 1)
touch()
return {'ok'}
"""

# KEYS[3..9]: members, removed, qstatus, the question's answers, names, namekeys, nicknames. ARGV[5]
# question id, ARGV[6] student id, ARGV[7] the answer's JSON (with a per-call nonce), ARGV[8] the
# nickname, ARGV[9] its keys (JSON).
ANSWER = ROOM_CHECK + NAMES + """
local status = redis.call('HGET', KEYS[5], ARGV[5])
if not status then return {'no_question'} end
if status ~= 'open' then return {'closed'} end
if redis.call('SISMEMBER', KEYS[3], ARGV[6]) == 0 then
  if redis.call('SISMEMBER', KEYS[4], ARGV[6]) == 1 then return {'removed'} end
  return {'not_in_room'}
end
local taken = take_name(KEYS[7], KEYS[8], KEYS[9], ARGV[6], ARGV[8], ARGV[9])
if taken then return {'name_taken', taken} end
local stored = redis.call('HSETNX', KEYS[6], ARGV[6], ARGV[7])
if stored == 0 and redis.call('HGET', KEYS[6], ARGV[6]) == ARGV[7] then stored = 1 end  -- a retried call
return {'ok', stored}
"""

# KEYS[3]: qstatus. ARGV[5] question id, ARGV[6] the new status: open -> closed, open or closed ->
# revealed; a new version when the class sees that question.
SET_STATUS = ROOM_CHECK + """
local status = redis.call('HGET', KEYS[3], ARGV[5])
if not status then return {'no_question'} end
if status == 'open' or (status == 'closed' and ARGV[6] == 'revealed') then
  redis.call('HSET', KEYS[3], ARGV[5], ARGV[6])
  if redis.call('HGET', KEYS[2], 'question_id') == ARGV[5] then
    redis.call('HSET', KEYS[2], 'status', ARGV[6], 'revealed', ARGV[6] == 'revealed' and 1 or 0)
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
    "removed": lambda code: Removed(),
    "locked": lambda code: RoomLocked(),
    "not_in_room": lambda code: NotInRoom(),
}
ROOM_PARTS = ("members", "removed", "nicknames", "joined", "presence")  # a room's students
NAME_PARTS = ("names", "namekeys")  # their names' keys


class RedisStore(ClassroomStore):
    """The classroom store in one Redis database, under keys starting with ``prefix``."""

    def __init__(self, client: redis.Redis, *, clock: Callable[[], float] = time.time, prefix: str = "mha"):
        super().__init__(clock)
        self._redis, self._prefix = client, prefix
        self._scripts = {name: client.register_script(source) for name, source in (
            ("take", TAKE), ("create", CREATE), ("purge", PURGE), ("touch", TOUCH), ("set_state", SET_STATE),
            ("join", JOIN), ("lock", LOCK), ("remove", REMOVE), ("heartbeat", HEARTBEAT), ("ask", ASK),
            ("answer", ANSWER), ("set_status", SET_STATUS))}

    @classmethod
    def from_url(cls, url: str, **kwargs) -> RedisStore:
        """A store on ``url`` (redis://host:port/db). At most MAX_CONNECTIONS connections: more calls
        at once wait for one (up to POOL_WAIT_SECONDS). A dropped connection is retried once, at once."""
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT_SECONDS, decode_responses=True,
            socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, socket_timeout=SOCKET_TIMEOUT_SECONDS,
            health_check_interval=30, retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)))
        return cls(redis.Redis(connection_pool=pool), **kwargs)

    def release(self) -> None:
        self._redis.close()

    # Keys

    def _rooms_key(self) -> str:
        return f"{self._prefix}:rooms"

    def _key(self, code: str, part: str) -> str:
        return f"{self._prefix}:{{{code}}}:{part}"

    def _keys(self, code: str, *parts: str) -> list[str]:
        return [self._key(code, part) for part in parts]

    def _answers_key(self, code: str, question_id: str) -> str:
        return self._key(code, f"answers:{question_id}")

    def _bucket_key(self, bucket: str) -> str:
        return f"{self._prefix}:bucket:{bucket}"

    def _purge_keys(self, code: str) -> list[str]:
        """For PURGE: mha:rooms, the room's hash, its questions list (KEYS[3]), then every other key
        ("students" is what versions before join() kept)."""
        parts = ("room", "questions", "qdata", "qstatus", *ROOM_PARTS, *NAME_PARTS, "networks", "students")
        return [self._rooms_key(), *self._keys(code, *parts)]

    # Running scripts and transactions

    def _run(self, script: str, code: str, keys: list[str], now: float, secret_hash: str, *args,
             name: Name | None = None) -> list:
        """Run a script on (mha:rooms, the room's hash, *keys); a refusal becomes its StoreError
        ('name_taken': NameTaken for ``name``, suggesting one free of the keys it lists)."""
        keys = [self._rooms_key(), self._key(code, "room"), *keys]
        argv = [code, repr(now), repr(now - TEACHER_GONE_SECONDS), secret_hash, *args]
        with _unavailable_on_error():
            result = self._scripts[script](keys=keys, args=argv)
        if result[0] == "name_taken" and name is not None:
            raise name.taken_message(json.loads(result[1]))
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

    # Rate limits

    def _bucket(self, bucket: str, now: float, capacity: float, per_second: float, mode: str) -> float:
        with _unavailable_on_error():
            wait = self._scripts["take"](keys=[self._bucket_key(bucket)], args=[
                repr(now), repr(float(capacity)), repr(float(per_second)), mode])
        return float(wait)

    def _take(self, bucket: str, now: float, capacity: float, per_second: float) -> float:
        return self._bucket(bucket, now, capacity, per_second, "take")

    def _peek(self, bucket: str, now: float, capacity: float, per_second: float) -> float:
        return self._bucket(bucket, now, capacity, per_second, "peek")

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

    def _touch(self, code: str, secret_hash: str, now: float) -> None:
        self._run("touch", code, [], now, secret_hash)

    def _end_room(self, code: str, secret_hash: str) -> None:
        self._purge(code, self._clock() - TEACHER_GONE_SECONDS, secret_hash)

    def _room_exists(self, code: str, cutoff: float) -> bool:
        with _unavailable_on_error():
            seen = self._redis.zscore(self._rooms_key(), code)
        return seen is not None and seen >= cutoff

    # The door

    def _join(self, code: str, student_id: str, name: Name, now: float, bucket: str, capacity: float,
              per_second: float, *, network: str = "") -> float:
        keys = [*self._keys(code, *ROOM_PARTS), self._bucket_key(bucket), *self._keys(code, *NAME_PARTS),
                self._key(code, "networks")]
        result = self._run("join", code, keys, now, "", student_id, name.text, MAX_STUDENTS_PER_ROOM,
                           repr(float(capacity)), repr(float(per_second)), _keys_json(name), network,
                           name=name)
        return float(result[1])

    def _networks(self, code: str, cutoff: float) -> dict[str, str]:
        (networks,) = self._snapshot(code, cutoff, ("hgetall", self._key(code, "networks")))
        return networks

    def _lock(self, code: str, secret_hash: str, now: float, locked: bool) -> int:
        return self._run("lock", code, [], now, secret_hash, int(locked))[1]

    def _remove(self, code: str, secret_hash: str, now: float, student_id: str) -> int:
        keys = self._keys(code, *ROOM_PARTS, *NAME_PARTS)
        return self._run("remove", code, keys, now, secret_hash, student_id)[1]

    def _membership(self, code: str, student_id: str, cutoff: float) -> bool | None:
        member, removed = self._snapshot(code, cutoff, ("sismember", self._key(code, "members"), student_id),
                                         ("sismember", self._key(code, "removed"), student_id))
        return False if member else True if removed else None

    def _roster(self, code: str, cutoff: float) -> list[Student]:
        question_id, removed, nicknames, joined, seen = self._snapshot(
            code, cutoff, ("hget", self._key(code, "room"), "question_id"),
            ("smembers", self._key(code, "removed")), ("hgetall", self._key(code, "nicknames")),
            ("zrange", self._key(code, "joined"), 0, -1, False, True), ("zrange", self._key(code, "presence"),
                                                                       0, -1, False, True))
        answered = set(self._snapshot(code, cutoff, ("hkeys", self._answers_key(code, question_id)))[0]
                       if question_id else ())
        last_seen = dict(seen)
        return [Student(sid, nicknames.get(sid, ""), at, last_seen.get(sid, at), sid in answered,
                        sid in removed) for sid, at in joined]

    # Follow the teacher

    def _set_state(self, code: str, secret_hash: str, now: float, page: str, step: int, setup_json: str,
                   selections_json: str) -> int:
        return self._run("set_state", code, [], now, secret_hash, page, step, setup_json, selections_json)[1]

    def _version(self, code: str, cutoff: float) -> int:
        return int(self._snapshot(code, cutoff, ("hget", self._key(code, "room"), "version"))[0])

    def _state(self, code: str, cutoff: float) -> RoomState:
        room = self._snapshot(code, cutoff, ("hgetall", self._key(code, "room")))[0]
        question = Question.from_json(room["question"]) if room["question"] else None
        status = room.get("status") or (REVEALED if room["revealed"] == "1" else OPEN if question else "")
        return RoomState(int(room["version"]), room["page"], int(room["step"]), room["setup_json"],
                         json.loads(room["selections"]), question, status == REVEALED,
                         room.get("locked") == "1", status)

    def _heartbeat(self, code: str, student_ids: tuple[str, ...], now: float) -> list[str]:
        keys = self._keys(code, "members", "presence")
        return self._run("heartbeat", code, keys, now, "", *student_ids)[1:]

    def _followers(self, code: str, since: float, cutoff: float) -> int:
        return self._snapshot(code, cutoff, ("zcount", self._key(code, "presence"), since, "+inf"))[0]

    # Ask the room

    def _ask(self, code: str, secret_hash: str, question: Question) -> None:
        keys = self._keys(code, "questions", "qdata", "qstatus")
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

    def _answer(self, code: str, answer: Answer, name: Name) -> bool:
        # "call", a nonce, tells the same call retried after a dropped connection from a second answer.
        fields = {"student_id": answer.student_id, "value": answer.value, "nickname": answer.nickname,
                  "at": answer.at, "call": secrets.token_hex(8)}
        keys = [*self._keys(code, "members", "removed", "qstatus"),
                self._answers_key(code, answer.question_id), *self._keys(code, *NAME_PARTS, "nicknames")]
        result = self._run("answer", code, keys, answer.at, "", answer.question_id, answer.student_id,
                           json.dumps(fields, ensure_ascii=False), name.text, _keys_json(name), name=name)
        return result[1] == 1

    def _my_answer(self, code: str, question_id: str, student_id: str, cutoff: float) -> Answer | None:
        data, stored, nickname = self._snapshot(
            code, cutoff, ("hget", self._key(code, "qdata"), question_id),
            ("hget", self._answers_key(code, question_id), student_id),
            ("hget", self._key(code, "nicknames"), student_id))
        if data is None:
            raise NoSuchQuestion()
        names = {} if nickname is None else {student_id: nickname}
        return _answers(question_id, [stored], names)[0] if stored else None

    def _close(self, code: str, secret_hash: str, now: float, question_id: str) -> int:
        return self._run("set_status", code, [self._key(code, "qstatus")], now, secret_hash, question_id,
                         "closed")[1]

    def _reveal(self, code: str, secret_hash: str, now: float, question_id: str) -> int:
        return self._run("set_status", code, [self._key(code, "qstatus")], now, secret_hash, question_id,
                         "revealed")[1]

    def _transcript(self, code: str, cutoff: float) -> list[tuple[Question, list[Answer]]]:
        ids, data = self._snapshot(code, cutoff, ("lrange", self._key(code, "questions"), 0, -1),
                                   ("hgetall", self._key(code, "qdata")))
        nicknames, *answers = self._snapshot(
            code, cutoff, ("hgetall", self._key(code, "nicknames")),
            *(("hvals", self._answers_key(code, qid)) for qid in ids))
        return [(Question.from_json(data[qid]), _answers(qid, stored, nicknames))
                for qid, stored in zip(ids, answers, strict=True)]


def _keys_json(name: Name) -> str:
    return json.dumps(sorted(name.keys), ensure_ascii=False)


def _answers(question_id: str, stored: list[str], nicknames: dict[str, str] | None = None) -> list[Answer]:
    """The answers in order; each carries its student's name in the room now (``nicknames``), else
    the one it was sent with."""
    answers = []
    for text in stored:
        data = json.loads(text)
        nickname = (nicknames or {}).get(data["student_id"], data["nickname"])
        answers.append(Answer(question_id, data["student_id"], data["value"], nickname, data["at"]))
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
