"""Built figures shared by every session of a server process, bounded by bytes, not entries.

A figure is keyed on its builder and a digest of its arguments (arrays by their bytes, or by the
name a shared result gave them: ``name_arrays``), and costs roughly the bytes of the arrays it
holds. When the total passes ``BUDGET_BYTES`` the least recently used figures go first, so one
session drawing huge tokens or big grids cannot keep the server's memory up for everyone else.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping

import numpy as np

from app.charts import figure_spec

BUDGET_BYTES = 64 * 2**20  # the figures of a few hundred classroom-size pages


def _any_width() -> int | None:
    return None


def _english() -> str:
    return "en"


# The width a phone's column plans figures for, or None; app.phone_css sets it (it reads the session).
column_width: Callable[[], int | None] = _any_width
# The reader's language; app.i18n sets it (it reads the session). A builder that takes ``language`` and
# is not given one is given this, before the key is made: one reader's words never reach another's page.
reader_language: Callable[[], str] = _english
_lock = threading.Lock()
_entries: OrderedDict[bytes, tuple[object, int]] = OrderedDict()
_total = 0
# id(array) -> (a weak reference to it, its name): arrays a shared, unchangeable result named, so a
# figure of them is keyed without reading their bytes (at 1,024 tokens the scores, scaled scores and
# weights are 150 MB, and hashing them took half of every rerun).
_named: dict[int, tuple[weakref.ref, bytes]] = {}


def name_arrays(owner: bytes, arrays: Mapping[str, np.ndarray]) -> None:
    """Name each array ``owner`` + its name (owner: a digest of everything the arrays were made from,
    as a result's key is) and make it read-only: a figure of a named array is keyed on the name."""
    with _lock:
        for dead in [key for key, (ref, _) in _named.items() if ref() is None]:
            del _named[dead]
        for name, array in arrays.items():
            array.flags.writeable = False
            _named[id(array)] = (weakref.ref(array), owner + b":" + name.encode())


def name_fields(owner: bytes, made) -> None:
    """name_arrays for every NumPy field of a dataclass (a result, a derivation), each by its field name."""
    name_arrays(owner, {field.name: value for field in dataclasses.fields(made)
                        if isinstance(value := getattr(made, field.name), np.ndarray)})


def _name_of(array: np.ndarray) -> bytes | None:
    named = _named.get(id(array))
    return named[1] if named is not None and named[0]() is array else None


def _feed(digest, value) -> int:
    """Hash one argument into digest; return the bytes it stands for."""
    if isinstance(value, np.ndarray):
        digest.update(f"a{value.dtype}{value.shape}".encode())
        name = _name_of(value)
        if name is not None:
            digest.update(b"named:" + name)
        else:
            digest.update(memoryview(np.ascontiguousarray(value)).cast("B"))  # no copy of a contiguous array
        return value.nbytes
    if isinstance(value, (list, tuple)):
        digest.update(f"l{len(value)}".encode())
        return sum(_feed(digest, item) for item in value) + 8 * len(value)
    if isinstance(value, dict):
        return sum(_feed(digest, k) + _feed(digest, v) for k, v in sorted(value.items()))
    text = repr(value)
    digest.update(f"s{len(text)}:{text}".encode())
    return len(text)


def figure(builder: Callable[..., figure_spec.FigureSpec], *args, **kwargs):
    """builder(*args, **kwargs), a chart of app/charts/figures.py (or another pure figure function), shared
    across reruns and sessions.

    The figures are never modified after they are built (st.plotly_chart copies them).
    """
    global _total
    narrow = column_width()
    if narrow is not None and "width" in _parameters(builder):  # a phone: one head a row, larger cells
        kwargs = {**kwargs, "width": min(kwargs.get("width", narrow), narrow)}
    if "language" not in kwargs and "language" in _parameters(builder):
        kwargs = {**kwargs, "language": reader_language()}
    digest = hashlib.blake2b(f"{builder.__module__}.{builder.__qualname__}".encode(), digest_size=20)
    cost = _feed(digest, args) + _feed(digest, kwargs)
    key = digest.digest()
    with _lock:
        if key in _entries:
            _entries.move_to_end(key)
            return _entries[key][0]
    built = builder(*args, **kwargs)
    cost = _spec_bytes(built.to_dict()) if isinstance(built, figure_spec.FigureSpec) else 3 * cost
    with _lock:
        if key not in _entries and cost <= BUDGET_BYTES:
            _entries[key] = (built, cost)
            _total += cost
            while _total > BUDGET_BYTES:
                _, (_, dropped) = _entries.popitem(last=False)
                _total -= dropped
    return built


@functools.cache
def _parameters(builder: Callable) -> tuple[str, ...]:
    return tuple(inspect.signature(builder).parameters)


def _spec_bytes(value) -> int:
    """About the bytes a figure's spec holds: its strings (a picture's PNG, texts) and arrays."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_spec_bytes(v) for v in value.values()) + 8 * len(value)
    if isinstance(value, (list, tuple)):
        return sum(_spec_bytes(v) for v in value) + 8 * len(value)
    if isinstance(value, np.ndarray):
        return value.nbytes
    return 8


def held_bytes() -> int:
    """What the cache holds now, by its own reckoning (for tests and the bench)."""
    return _total


def clear() -> None:
    global _total
    with _lock:
        _entries.clear()
        _total = 0
