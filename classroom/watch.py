"""What one server process's followers ask the store, asked once for all of them.

Every following page polls its room's version each second and says it is still there every few
seconds. With a hundred students on one server that is a hundred reads and twenty-five writes a
second, most of them the same question. ``RoomWatch`` answers the polls of a whole process from one
read per room every ``max_age`` seconds, reads a changed room's state once for all of them, and
sends its followers' heartbeats in one write per room every ``HEARTBEAT_SECONDS``. A change
therefore reaches a follower at most ``max_age`` later than it would by asking the store itself.
Heartbeats admit nobody (``ClassroomStore.join`` does): a student the store reports as no member
(never joined, or removed) gets ``NotInRoom`` from their next heartbeat, once, so that their page
calls ``join`` and shows the store's precise answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from classroom.store import HEARTBEAT_SECONDS, ClassroomStore, NoSuchRoom, NotInRoom, RoomState, StoreError

VERSION_MAX_AGE = 0.25  # seconds a room's version is reused for the polls of this process


class RoomWatch:
    """Thread-safe; one per server process (share it as the store is shared)."""

    def __init__(self, store: ClassroomStore, *, max_age: float = VERSION_MAX_AGE,
                 heartbeat_every: float = HEARTBEAT_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._store, self._max_age, self._every, self._clock = store, max_age, heartbeat_every, clock
        self._lock = threading.Lock()
        self._versions: dict[str, tuple[float, int | StoreError]] = {}  # code -> (read at, version or error)
        self._reading: dict[str, threading.Lock] = {}  # code -> held while one thread reads it
        self._states: dict[str, RoomState] = {}  # code -> the newest state read
        self._present: dict[str, set[str]] = {}  # code -> students seen since the last flush
        self._flushed: dict[str, float] = {}  # code -> when its heartbeats were last sent
        self._outside: set[tuple[str, str]] = set()  # (code, student) the store said are no members

    def version(self, code: str) -> int:
        """The room's version as read at most max_age ago; raises what the store raised (NoSuchRoom,
        StoreUnavailable), also reused for max_age."""
        with self._lock:
            reading = self._reading.setdefault(code, threading.Lock())
        with reading:  # one thread reads; the others wait for its answer rather than read too
            read_at, value = self._versions.get(code, (float("-inf"), 0))
            if self._clock() - read_at >= self._max_age:
                try:
                    value = self._store.version(code)
                except NoSuchRoom as error:  # ended or expired: nothing kept about it is needed now
                    self._forget(code)
                    value = error
                except StoreError as error:
                    value = error
                with self._lock:
                    self._versions[code] = (self._clock(), value)
        if isinstance(value, StoreError):
            raise value
        return value

    def moved(self, code: str, version: int) -> None:
        """This process just wrote the room's new version (its teacher's page): the polls and the
        push see it now, not up to max_age later."""
        with self._lock:
            _, kept = self._versions.get(code, (float("-inf"), 0))
            if isinstance(kept, StoreError) or kept < version:
                self._versions[code] = (self._clock(), version)

    def state(self, code: str) -> RoomState:
        """The room's state, read once per version for every follower of this process (a change
        makes them all ask at once); at least as new as version(code) says."""
        version = self.version(code)
        with self._lock:
            reading = self._reading.setdefault(code, threading.Lock())
        with reading:
            kept = self._states.get(code)
            if kept is None or kept.version < version:
                kept = self._store.state(code)
                with self._lock:
                    self._states[code] = kept
        return kept

    def join(self, code: str, student_id: str, *, nickname: str = "", client: str = "") -> None:
        """ClassroomStore.join (its refusals as they are); forgets an earlier NotInRoom report."""
        self._store.join(code, student_id, nickname=nickname, client=client)
        with self._lock:
            self._outside.discard((code, student_id))

    def heartbeat(self, code: str, student_id: str) -> None:
        """Note the student as following. A room's heartbeats go to the store together every
        heartbeat_every seconds, sent by whichever caller finds them due; raises what the store raised
        on that write. NotInRoom (once) if a write found this student is no member of the room."""
        with self._lock:
            self._raise_if_outside(code, student_id)
            self._present.setdefault(code, set()).add(student_id)
        self._flush_if_due(code)
        with self._lock:
            self._raise_if_outside(code, student_id)

    def _raise_if_outside(self, code: str, student_id: str) -> None:
        """Called holding the lock: the report is given once (the page then calls join)."""
        if (code, student_id) in self._outside:
            self._outside.discard((code, student_id))
            raise NotInRoom()

    def _flush_if_due(self, code: str) -> None:
        with self._lock:
            now = self._clock()
            if now - self._flushed.get(code, float("-inf")) < self._every or not self._present.get(code):
                return
            students, self._present[code] = self._present[code], set()
            self._flushed[code] = now
        try:
            outside = self._store.heartbeats(code, sorted(students))
        except StoreError:
            with self._lock:  # sent with the next flush instead; the caller learns of the failure
                self._present.setdefault(code, set()).update(students)
            raise
        with self._lock:
            self._outside.update((code, student) for student in outside)

    def _forget(self, code: str) -> None:
        """Drop the state, heartbeats and reports kept for a room that has ended (its version entry
        stays, holding NoSuchRoom, so that a server running for weeks keeps nothing else)."""
        with self._lock:
            self._states.pop(code, None)
            self._present.pop(code, None)
            self._flushed.pop(code, None)
            self._outside = {(c, s) for c, s in self._outside if c != code}
