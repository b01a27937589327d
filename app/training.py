"""The server's training runs for the Learn page: one at a time per server, and the finished ones kept
for every session (a class opening the page after the teacher trained does not wait).

What a session may cost: a run is bounded by its Config (at most 2,000 steps of a 4-layer, 64-wide
model on the page, about a minute of one core); runs queue on one lock, and a session that waited
WAIT_SECONDS gets a message instead; KEPT finished runs stay (each 26 checkpoints of at most 0.6 MB).
However many tabs ask, training takes at most half of one core over time: a bucket of BUDGET_SECONDS
of training that refills at REFILL per second; an empty bucket refuses a new run with the wait.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import streamlit as st

from mha_core.train import Config, History, mean_head_scores, probes, train

KEPT = 8
WAIT_SECONDS = 120
BUDGET_SECONDS = 120.0  # training the server may do at once
REFILL = 0.5  # seconds of training per second of time: half of one core, sustained
PROBES = 16  # sequences the head scores are averaged over


class Runs:
    def __init__(self):
        self._lock = threading.Lock()  # guards finished
        self._training = threading.Lock()  # one run at a time
        self._finished: OrderedDict[Config, tuple[History, np.ndarray]] = OrderedDict()
        self._budget, self._checked = BUDGET_SECONDS, time.monotonic()

    def wait_before_training(self) -> float:
        """Seconds until the server may start another run (0: now)."""
        with self._lock:
            now = time.monotonic()
            self._budget = min(BUDGET_SECONDS, self._budget + (now - self._checked) * REFILL)
            self._checked = now
            return 0.0 if self._budget > 0 else -self._budget / REFILL + 1

    def _spent(self, seconds: float) -> None:
        with self._lock:
            self._budget -= seconds

    def finished(self, config: Config) -> tuple[History, np.ndarray] | None:
        """A finished run of this config and its checkpoints' head scores [C, layers, heads, 2]."""
        with self._lock:
            if config in self._finished:
                self._finished.move_to_end(config)
                return self._finished[config]
        return None

    def run(self, config: Config, on_step: Callable, history: History) -> tuple[History, np.ndarray] | None:
        """Train config, filling history as it goes (an interrupted run keeps what it did); None when
        another run held the server for WAIT_SECONDS."""
        if not self._training.acquire(timeout=WAIT_SECONDS):
            return None
        try:
            done = self.finished(config)  # trained by another session while this one waited
            if done is not None:
                return done
            started = time.monotonic()
            try:
                train(config, on_step=on_step, history=history)
            finally:
                self._spent(time.monotonic() - started)  # a stopped run costs what it ran
        finally:
            self._training.release()
        result = (history, checkpoint_scores(config, history))
        with self._lock:
            self._finished[config] = result
            while len(self._finished) > KEPT:
                self._finished.popitem(last=False)
        return result


def checkpoint_scores(config: Config, history: History) -> np.ndarray:
    """Each checkpoint's mean previous-token and induction score of every head: [C, layers, heads, 2]."""
    sequences = probes(config, PROBES)
    return np.array([mean_head_scores(model, sequences) for _, model in history.checkpoints])


@st.cache_resource
def runs() -> Runs:
    return Runs()
