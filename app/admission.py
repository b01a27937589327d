"""What all sessions computing at once may hold: one server-wide budget in bytes for the runs in flight.

A run is admitted with its estimated working set (``this_run.working_set``: the core's call and the
page's drawing, from the Setup's shapes, before anything is computed) while the estimates of the runs
inside stay within ``BUDGET_BYTES``; the others wait in line (first come, first in; a run of at most
1/16 of the budget, a classroom's page, may pass the ones waiting if it fits) and are refused once
they have waited ``WAIT_SECONDS``. A run whose estimate is over the whole budget is refused at once.

Without it, 20 sessions opening the heaviest link at once (1,024 tokens, d_model 768, 12 heads, each
another seed) each held a result and drew it at the same time: past 3 GiB in 14 s (issue 40, 10).

The deployer sets the budget with MHA_RUN_BUDGET_MB and the wait with MHA_RUN_WAIT_S
(docs/deploy.md, "What one replica holds").
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MiB = 2**20
BUDGET_ENV, WAIT_ENV = "MHA_RUN_BUDGET_MB", "MHA_RUN_WAIT_S"
DEFAULT_BUDGET_MB = 640  # two of the heaviest pages at once (about 300 MiB each); 2 cores compute 2 anyway
DEFAULT_WAIT_S = 60.0
PASS_SHARE = 16  # a run of at most 1/16 of the budget (40 MiB by default: every classroom size) may pass


def _configured(name: str, default: float, low: float) -> float:
    """A positive number from the environment, else default (a typo must not lift the bound)."""
    text = os.environ.get(name, "").strip()
    try:
        value = float(text)
    except ValueError:
        return default
    return value if low <= value < 1e9 else default


class Refused(Exception):
    """A run the gate did not let in: over the whole budget (``waited`` None) or after waiting."""

    def __init__(self, need: int, budget: int, waited: float | None, inside: int):
        super().__init__(f"needs {need:,} bytes; budget {budget:,}; waited {waited}; {inside} inside")
        self.need, self.budget, self.waited, self.inside = need, budget, waited, inside


@dataclass
class _Ticket:
    need: int
    admitted: bool = False
    arrived: float = field(default_factory=time.monotonic)


class ByteGate:
    """Runs inside at once whose estimates sum to at most budget_bytes; the rest wait in line."""

    def __init__(self, budget_bytes: int, wait_seconds: float):
        self.budget_bytes, self.wait_seconds = int(budget_bytes), float(wait_seconds)
        self.pass_bytes = self.budget_bytes // PASS_SHARE  # a run this small may pass the line
        self._cond = threading.Condition()
        self._line: list[_Ticket] = []  # waiting, in arrival order
        self.held = 0  # bytes of the runs inside
        self.inside = 0  # runs inside
        self.most_held = 0  # the highest held so far (tests, the bench)

    def _fits(self, ticket: _Ticket) -> bool:
        """ticket may go in now: it fits, and it is first in line or small (a classroom's page does not
        wait behind a long sequence; small runs are quick, so the first in line is not starved)."""
        if self.held + ticket.need > self.budget_bytes:
            return False
        return ticket is self._line[0] or ticket.need <= self.pass_bytes

    def admit(self, need: int, while_waiting: Callable[[int, float], None] = lambda before, waited: None
              ) -> _Ticket:
        """Let a run of need bytes in, waiting in line if it does not fit; while_waiting(before, waited)
        is called about every second meanwhile, before counting the runs inside and those ahead in line
        (a page says so; Streamlit may stop the run there).
        Raises Refused (need over the budget, or WAIT_SECONDS waited)."""
        ticket = _Ticket(int(need))
        with self._cond:
            if ticket.need > self.budget_bytes:
                raise Refused(ticket.need, self.budget_bytes, None, self.inside)
            self._line.append(ticket)
            try:
                while not self._fits(ticket):
                    waited = time.monotonic() - ticket.arrived
                    if waited >= self.wait_seconds:
                        raise Refused(ticket.need, self.budget_bytes, waited, self.inside)
                    before = self.inside + self._line.index(ticket)  # inside, and ahead in line
                    self._cond.release()
                    try:
                        while_waiting(before, waited)
                    finally:
                        self._cond.acquire()
                    if not self._fits(ticket):
                        self._cond.wait(min(1.0, max(0.01, self.wait_seconds - waited)))
            finally:
                self._line.remove(ticket)
                self._cond.notify_all()
            self.held += ticket.need
            self.inside += 1
            self.most_held = max(self.most_held, self.held)
            ticket.admitted = True
        return ticket

    def leave(self, ticket: _Ticket) -> None:
        """The run is over (its result and figures dropped, or kept only by the bounded caches)."""
        with self._cond:
            if not ticket.admitted:
                return
            ticket.admitted = False
            self.held -= ticket.need
            self.inside -= 1
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        return len(self._line)


BUDGET_BYTES = int(_configured(BUDGET_ENV, DEFAULT_BUDGET_MB, 1) * MiB)
WAIT_SECONDS = _configured(WAIT_ENV, DEFAULT_WAIT_S, 0)
GATE = ByteGate(BUDGET_BYTES, WAIT_SECONDS)
