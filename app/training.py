"""The server's training runs for the Learn page: one at a time per server, and the finished ones kept
for every session (a class opening the page after the teacher trained does not wait).

What a session may cost: a run is bounded by its Config (at most 2,000 steps of a 4-layer, 64-wide
model on the page, about a minute of one core); runs queue on one lock, and a session that waited
WAIT_SECONDS gets a message instead; KEPT finished runs stay (each 26 checkpoints of at most 0.6 MB).
However many tabs ask, training takes at most half of one core over time: a bucket of BUDGET_SECONDS
of training that refills at REFILL per second; an empty bucket refuses a new run with the wait.

Runs trained earlier (mha_core/checkpoints.py: at the image's build, or live on this server before a
restart) are read from the checkpoint cache on disk the first time a config is asked for, then kept
in memory as a live run is; a finished live run of a default config (checkpoints.PRETRAINED) is written
there for the next start. The cache is outside input: a file that does not load is skipped (logged
once) and the page trains anew; a disk that cannot be written costs only the saved run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import streamlit as st

from mha_core import checkpoints
from mha_core.train import Config, History, load_history, mean_head_scores, probes, train

KEPT = 8
WAIT_SECONDS = 120
BUDGET_SECONDS = 120.0  # training the server may do at once
REFILL = 0.5  # seconds of training per second of time: half of one core, sustained
PROBES = 16  # sequences the head scores are averaged over
log = logging.getLogger(__name__)


class Runs:
    def __init__(self):
        self._lock = threading.Lock()  # guards finished
        self._training = threading.Lock()  # one run at a time
        self._finished: OrderedDict[Config, tuple[History, np.ndarray]] = OrderedDict()
        self._earlier: set[Config] = set()  # those of _finished read from the cache, not trained here
        self._unreadable: set[tuple[str, int, int]] = set()  # cache files (path, mtime, size) that failed
        self._budget, self._checked = BUDGET_SECONDS, time.monotonic()
        self._live: dict[Config, History] = {}  # the run training now, growing step by step

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
        """A finished run of this config and its checkpoints' head scores [C, layers, heads, 2]: one
        kept in memory, else one from the checkpoint cache (then kept in memory too)."""
        with self._lock:
            if config in self._finished:
                self._finished.move_to_end(config)
                return self._finished[config]
        history = self._read_cache(config)  # outside the lock: a file takes a few tens of milliseconds
        if history is None:
            return None
        result = (history, checkpoint_scores(config, history))
        with self._lock:
            if config in self._finished:  # another session read or trained it meanwhile
                return self._finished[config]
            self._keep(config, result)
            self._earlier.add(config)
        return result

    def training_now(self, config: Config) -> History | None:
        """The run of this config training on this server now (its losses grow as it goes), or None."""
        with self._lock:
            return self._live.get(config)

    def earlier(self, config: Config) -> bool:
        """Whether the finished run kept for config came from the cache (trained before this server
        started, with the same settings and seed) rather than live on this server."""
        with self._lock:
            return config in self._earlier

    def _read_cache(self, config: Config) -> History | None:
        for path in checkpoints.cached_files(config):
            seen = _signature(path)
            if seen is None or seen in self._unreadable:
                continue
            try:
                stored, history = load_history(path)
                if stored != config or history.stopped:
                    raise ValueError(f"{path}: a run of another config, or a stopped one")
            except (OSError, ValueError) as error:
                log.warning("checkpoint cache: skipped %s", error)
                self._unreadable.add(seen)
                continue
            return history
        return None

    def _keep(self, config: Config, result: tuple[History, np.ndarray]) -> None:
        """Under self._lock: keep a finished run, dropping the least recently asked beyond KEPT."""
        self._finished[config] = result
        self._finished.move_to_end(config)
        while len(self._finished) > KEPT:
            dropped, _ = self._finished.popitem(last=False)
            self._earlier.discard(dropped)

    def run(self, config: Config, on_step: Callable, history: History,
            again: bool = False) -> tuple[History, np.ndarray] | None:
        """Train config, filling history as it goes (an interrupted run keeps what it did); None when
        another run held the server for WAIT_SECONDS. A finished run is returned as it is, unless
        ``again`` asks to train anew one that came from the cache (training live is always possible)."""
        if not self._training.acquire(timeout=WAIT_SECONDS):
            return None
        try:
            done = self.finished(config)  # trained by another session while this one waited
            if done is not None and not (again and self.earlier(config)):
                return done
            started = time.monotonic()
            with self._lock:
                self._live[config] = history
            try:
                train(config, on_step=on_step, history=history)
            finally:
                self._spent(time.monotonic() - started)  # a stopped run costs what it ran
                with self._lock:
                    self._live.pop(config, None)
        finally:
            self._training.release()
        result = (history, checkpoint_scores(config, history))
        with self._lock:
            self._keep(config, result)
            self._earlier.discard(config)
        if not history.stopped and len(history.losses) == config.steps:
            self._save(config, history)
        return result

    def _save(self, config: Config, history: History) -> None:
        """A finished live run of a default config, into the writable cache for the next start (unless
        a cache directory holds a good one already). A read-only or full disk is logged, never raised."""
        if not checkpoints.is_pretrained(config) or any(
                _signature(path) not in self._unreadable for path in checkpoints.cached_files(config)):
            return
        try:
            checkpoints.store(config, history)
        except OSError as error:
            log.warning("checkpoint cache: could not save a run of %s: %s", config, error)


def _signature(path) -> tuple[str, int, int] | None:
    """A file as it is now (path, modification time, size): a rewritten file is read again."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return str(path), stat.st_mtime_ns, stat.st_size


def checkpoint_scores(config: Config, history: History) -> np.ndarray:
    """Each checkpoint's mean previous-token and induction score of every head: [C, layers, heads, 2]."""
    sequences = probes(config, PROBES)
    return np.array([mean_head_scores(model, sequences) for _, model in history.checkpoints])


@st.cache_resource
def runs() -> Runs:
    return Runs()
