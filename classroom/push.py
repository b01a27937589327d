"""Tell a server's followers that their room moved, instead of having each of them ask every second.

A following page used to learn of a change by polling: every second each follower's page ran a small
fragment that read the room's version (3.4 ms of the server's one core for Streamlit's script runner
alone, docs/performance.md), and only then reran. With a hundred followers a third of the core went
to asking, and a change reached the class a poll's wait later. ``Pusher`` keeps, per server process,
which session follows which room and which version its page shows; one thread reads each followed
room's version every ``PUSH_SECONDS`` (through ``RoomWatch``, one store read per room) and asks the
page of every follower behind it to rerun; a teacher's page on the same server wakes it at once
(``nudge``) when it sends the room a change. The follower's own poll stays, slower, for heartbeats and
as the safety net.

Streamlit-free: the caller gives it ``version_of(code)`` and ``rerun(session_id)``; the app's side
(app/room/push.py) connects them to the store's watch and to Streamlit's sessions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from classroom.store import NoSuchRoom, StoreError

LOG = logging.getLogger(__name__)
PUSH_SECONDS = 0.25  # how often the followed rooms' versions are read (the watch's own reuse age)
REPUSH_SECONDS = 2.0  # a page asked to rerun that still shows an older version is asked again after this

RERUN_ASKED, SESSION_BUSY, SESSION_GONE = "asked", "busy", "gone"  # what rerun(session_id) returns


@dataclass
class Follower:
    code: str  # the room its page follows
    shown: int  # the room version its page shows
    asked_at: float = float("-inf")  # when its page was last asked to rerun


class Pusher:
    """Thread-safe; one per server process."""

    def __init__(self, version_of: Callable[[str], int], rerun: Callable[[str], str], *,
                 clock: Callable[[], float] = time.monotonic, every: float = PUSH_SECONDS):
        self._version_of, self._rerun, self._clock, self._every = version_of, rerun, clock, every
        self._lock = threading.Lock()
        self._followers: dict[str, Follower] = {}  # session id -> what its page follows and shows
        self._thread: threading.Thread | None = None
        self._woken = threading.Event()  # set by nudge: tick now, not at the end of the wait

    def shown(self, session_id: str, code: str, version: int) -> None:
        """A follower's page run ended showing this version of the room."""
        with self._lock:
            self._followers[session_id] = Follower(code, version)

    def forget(self, session_id: str) -> None:
        """The page follows no room now (explores on its own, left, was removed)."""
        with self._lock:
            self._followers.pop(session_id, None)

    def nudge(self) -> None:
        """A room followed here has moved (its teacher's page is on this server): tick now."""
        self._woken.set()

    def following(self) -> dict[str, Follower]:
        with self._lock:
            return dict(self._followers)

    def tick(self) -> list[str]:
        """Ask every follower whose page shows an older version than its room's to rerun (a room that
        ended counts as moved: the page's run says so). Returns the sessions asked."""
        followers = self.following()
        versions = {code: self._read(code) for code in {f.code for f in followers.values()}}
        asked = []
        for session_id, follower in followers.items():
            newest = versions[follower.code]
            if newest is None or newest <= follower.shown:
                continue
            if self._clock() - follower.asked_at < REPUSH_SECONDS:
                continue  # asked a moment ago; its run is on the way
            try:
                answer = self._rerun(session_id)
            except Exception:  # noqa: BLE001 - one session's failure must not stop the others' push
                LOG.exception("asking session %s to rerun failed; its page's poll remains", session_id)
                answer = SESSION_GONE  # not asked again every tick: its next whole run says it follows
            if answer == SESSION_GONE:
                self.forget(session_id)
            elif answer == RERUN_ASKED:
                follower.asked_at = self._clock()
                asked.append(session_id)
            # SESSION_BUSY: a run is going on; the next tick looks again
        return asked

    def _read(self, code: str) -> float | None:
        """The room's version; +inf for a room that ended; None when the store cannot say now (the
        follower's own poll shows that the connection is lost)."""
        try:
            return self._version_of(code)
        except NoSuchRoom:
            return float("inf")
        except StoreError:
            return None

    def start(self) -> None:
        """Run tick() every ``every`` seconds (PUSH_SECONDS) and when nudged, on a daemon thread, once
        per Pusher."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._loop, name="mha-push", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            self._woken.wait(self._every)
            self._woken.clear()
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - the thread must outlive one bad tick; the polls remain
                LOG.exception("the push's tick failed")
