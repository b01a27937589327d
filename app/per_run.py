"""A value read from the session once per run instead of at every use.

Session state is read through Streamlit's lock and proxy (about 25 µs a read); the language and the
phone's column width are asked for hundreds of times a run, and both change only between runs (a
widget's value, a component's report). A ``PerRun`` holds the value its owner set at the start of
this run, on this thread; anywhere else (a fragment's own run, code outside a run) it is read afresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from app.adapter.streamlit_door import run_context

T = TypeVar("T")


class PerRun(Generic[T]):
    def __init__(self, read: Callable[[], T]):
        self._read = read  # the value from the session itself
        self._kept = threading.local()

    def start(self) -> T:
        """At the start of a whole run: read the value once and keep it for this run."""
        value = self._read()
        self._kept.value = (run_context(), value)
        return value

    def __call__(self) -> T:
        kept = getattr(self._kept, "value", None)
        if kept is not None and kept[0] is not None and kept[0] is run_context():
            return kept[1]
        return self._read()
