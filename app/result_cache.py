"""Big things a session computes live here, shared by every session of the process and bounded in
bytes; a session keeps only their keys.

* ``RESULTS``: the core's results (``MHAResult``), keyed on a digest of everything that changes
  a result (``setup_key``). A long sequence's result is ~160 MiB in float32; kept in
  ``st.session_state`` it stayed with the session until Streamlit reaped it, minutes after the
  tab closed. Here the least recently used go first once ``RESULTS_BUDGET_BYTES`` is passed, and
  a session that disconnects drops the result only it was using (``hold``).
* What the runs in flight hold (computing a result and drawing it) is bounded server-wide by
  ``app/admission.py``; what a session keeps after its run, by ``SESSION_BUDGET_BYTES``.

``numpy_bytes`` counts the bytes of the NumPy arrays an object holds (tests and the bench use it
to measure what a session keeps).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import gc
import hashlib
import threading
import types
from collections import Counter, OrderedDict
from contextlib import nullcontext

import numpy as np
import streamlit as st

from app.adapter import streamlit_door
from mha_core import MHAResult, Setup

SESSION_BUDGET_BYTES = 64 * 2**20  # what one session may keep after its run (docs/performance.md)
RESULTS_BUDGET_BYTES = 320 * 2**20  # the largest result the page accepts (~180 MiB) fits, with room


class BytesLRU:
    """A thread-safe mapping bounded by the bytes of its values; least recently used out first.

    A value larger than the whole budget is not kept. ``pin``/``unpin`` count the sessions using
    a key: ``unpin`` drops an entry that no session uses any more (its session has ended), and with
    it what was derived from it (``get_or_make_derived``); ``len`` counts entries of their own.
    """

    def __init__(self, budget_bytes: int):
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[object, tuple[object, int]] = OrderedDict()
        self._pins: Counter = Counter()
        self._making: dict[object, threading.Lock] = {}  # keys being made now, each with its lock
        self._derived: dict[object, set] = {}  # key -> the keys of what was derived from its value
        self._total = 0

    def get(self, key):
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return self._entries[key][0]

    def put(self, key, value, nbytes: int) -> None:
        with self._lock:
            if key in self._entries or nbytes > self.budget_bytes:
                return
            self._entries[key] = (value, nbytes)
            self._total += nbytes
            while self._total > self.budget_bytes:
                oldest, (_, dropped) = self._entries.popitem(last=False)
                self._total -= dropped
                self._drop_derived(oldest)

    def _drop_derived(self, key) -> None:
        """Drop what was derived from key's value (under the lock)."""
        for derived in self._derived.pop(key, ()):
            if derived in self._entries:
                self._total -= self._entries.pop(derived)[1]

    def get_or_make(self, key, make, nbytes_of, while_waiting=nullcontext):
        """The value under key, or make() kept under it. Callers asking for one key at the same
        time wait (inside while_waiting()) for the first one's make() instead of each making it:
        a class opening one text at once runs the model once."""
        value = self.get(key)
        if value is not None:
            return value
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        if not making.acquire(blocking=False):
            with while_waiting():
                making.acquire()
        try:
            value = self.get(key)
            if value is None:
                value = make()
                self.put(key, value, nbytes_of(value))
        finally:
            making.release()
            with self._lock:
                if self._making.get(key) is making and not making.locked():
                    del self._making[key]
        return value

    def get_or_make_derived(self, key, name, make, nbytes_of):
        """What is derived from key's value, made once while that value is kept (under (key, name));
        it goes when key's entry goes."""
        derived = (key, name)
        with self._lock:
            self._derived.setdefault(key, set()).add(derived)
        return self.get_or_make(derived, make, nbytes_of)

    def pin(self, key) -> None:
        with self._lock:
            self._pins[key] += 1

    def unpin(self, key) -> None:
        """One session less uses key; the entry goes once none does."""
        with self._lock:
            self._pins[key] -= 1
            if self._pins[key] > 0:
                return
            del self._pins[key]
            if key in self._entries:
                self._total -= self._entries.pop(key)[1]
            self._drop_derived(key)

    def held_bytes(self) -> int:
        return self._total

    def __len__(self) -> int:
        derived = set().union(*self._derived.values()) if self._derived else set()
        return sum(1 for key in self._entries if key not in derived)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._pins.clear()
            self._derived.clear()
            self._total = 0


RESULTS = BytesLRU(RESULTS_BUDGET_BYTES)


def setup_key(setup: Setup) -> bytes:
    """A digest of everything that changes setup.run() (what Setup.same_inputs compares)."""
    digest = hashlib.blake2b(digest_size=20)
    window = setup.mask if setup.mask_kind == "window" else None
    digest.update(repr((setup.tokens, setup.kv_tokens, setup.scaling, setup.mask_kind, window)).encode())
    arrays = setup.arrays()
    if setup.mask_kind == "custom":
        arrays["mask"] = setup.mask
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        digest.update(f"{name}:{array.dtype}{array.shape}".encode())
        digest.update(memoryview(array).cast("B"))  # no copy of a contiguous array
    return digest.digest()


def result_of(key: bytes) -> MHAResult | None:
    """The result kept under key, or None once it has been evicted."""
    return RESULTS.get(key)


class _Held:
    """The one result key a session uses now (a session-scoped resource, released on disconnect)."""

    def __init__(self):
        self.key: bytes | None = None
        self.session_id = streamlit_door.session_id()

    def hold(self, key: bytes) -> None:
        if key == self.key:
            return
        RESULTS.pin(key)
        if self.key is not None:
            RESULTS.unpin(self.key)
        self.key = key


def _release(held: _Held) -> None:
    """A session disconnected: drop the result only it used, and the callables its download
    buttons left with Streamlit's media manager (they hold the session's Setup). Streamlit drops
    those only when a session shuts down, and a disconnected session that expires is never shut
    down. A tab that reconnects in time reruns and draws its buttons anew."""
    if held.key is not None:
        RESULTS.unpin(held.key)
        held.key = None
    streamlit_door.clear_session_media(held.session_id)
    give_back_soon()


GIVE_BACK_AFTER_S = 5.0  # after a disconnect (Streamlit reaps expired sessions right after it); a class
# leaving together pays one full collection (75-180 ms with 20 sessions) per 5 s, not one a second


def give_back_soon() -> None:
    """In a second, collect garbage and hand freed memory back to the OS (at most one pending).

    A freed session's arrays sit in reference cycles (runner.postScriptGC is off) and, once
    collected, in glibc's heaps, which keep freed blocks below the mmap threshold (it rises to
    32 MiB as large blocks are freed): RSS stayed ~160 MB above its level after four long
    sessions had closed and been reaped. gc.collect() and malloc_trim(0) give it back."""
    global _give_back_timer
    with _give_back_lock:
        if _give_back_timer is not None and _give_back_timer.is_alive():
            return
        _give_back_timer = threading.Timer(GIVE_BACK_AFTER_S, give_back)
        _give_back_timer.daemon = True
        _give_back_timer.start()


# Young objects a collection waits for (CPython's default: 700). A run makes thousands of containers
# that live until it ends (its figures' specs, its messages); collected every 700 they are promoted,
# counted as long-lived and bring on full collections of every session's objects, 140-180 ms each
# with 60 sessions editing. At 5,000: collections took 3 ms of a run instead of 7 (bench/load.py).
YOUNG_OBJECTS_PER_COLLECTION = 5000


def tune_collector() -> None:
    """Once per process, after the app's imports: their objects (Streamlit's, plotly's, pandas', the
    app's, about 140,000) leave the collector's sight for good (gc.freeze: never garbage, never read
    again by a full collection), and young objects are collected less often."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    gc.collect()  # nothing collectable is frozen
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, middle, old)


_tuned = False


def give_back() -> None:
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc():
    """glibc, if this process runs on it (malloc_trim); None elsewhere (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _libc()
_give_back_lock = threading.Lock()
_give_back_timer: threading.Timer | None = None


@st.cache_resource(scope="session", on_release=_release, show_spinner=False)
def _held() -> _Held:
    return _Held()


def hold(key: bytes) -> None:
    """This session uses the result under key (and no longer its previous one); when the session
    disconnects, a result no other session uses is dropped at once."""
    _held().hold(key)


def numpy_bytes(value, _seen: set[int] | None = None, _depth: int = 0) -> int:
    """The bytes of every NumPy buffer value holds (through dicts, sequences, dataclasses, plain
    objects and functions' closures), each buffer counted once however many views share it."""
    seen = set() if _seen is None else _seen
    if _depth > 12 or id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return _buffer_bytes(value, seen)
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return 0
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    elif isinstance(value, types.FunctionType):  # a closure's cells (a fragment keeps its arguments so)
        items = [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
        items += [value.__defaults__, value.__kwdefaults__]
    elif isinstance(value, functools.partial):
        items = [value.func, value.args, value.keywords]
    elif isinstance(value, type) or callable(value) and not hasattr(value, "__dict__"):
        return 0
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif hasattr(value, "__dict__"):
        items = list(vars(value).values())
    else:
        return 0
    return sum(numpy_bytes(item, seen, _depth + 1) for item in items)


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _buffer_bytes(array: np.ndarray, seen: set[int]) -> int:
    """The bytes of the buffer under array (its base chain's owner), if not counted yet."""
    owner = array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner is not array:
        if id(owner) in seen:
            return 0
        seen.add(id(owner))
    return owner.nbytes
