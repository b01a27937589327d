"""At most N computations of one kind at once per process; the others wait their turn.

The caches of a server bound what it keeps; a gate bounds what it is computing: four sessions
asking for four long traces at the same moment would otherwise each allocate a whole trace.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext


class Gate:
    """A bounded semaphore that says whether a caller had to wait, and how many are inside."""

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError(f"a gate needs at least one slot, got {slots!r}")
        self.slots = slots
        self._semaphore = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self.inside = 0  # callers holding a slot now
        self.waiting = 0  # callers queued for one

    @contextmanager
    def turn(self, while_queued: Callable[[], AbstractContextManager] = nullcontext) -> Iterator[None]:
        """Hold one slot for the block; while every slot is taken, wait inside while_queued()
        (for example a spinner that says the caller is queued)."""
        if not self._semaphore.acquire(blocking=False):
            self._wait(while_queued)
        with self._lock:
            self.inside += 1
        try:
            yield
        finally:
            with self._lock:
                self.inside -= 1
            self._semaphore.release()

    def _wait(self, while_queued: Callable[[], AbstractContextManager]) -> None:
        """Block until a slot is free; a slot taken is given back if while_queued fails on exit."""
        acquired = False
        with self._lock:
            self.waiting += 1
        try:
            with while_queued():
                acquired = self._semaphore.acquire()
        except BaseException:
            if acquired:
                self._semaphore.release()
            raise
        finally:
            with self._lock:
                self.waiting -= 1
