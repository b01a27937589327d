"""``fragment``: Streamlit's ``st.fragment`` in a container of its own, the only way this app makes one.

Streamlit 1.67 can drop a fragment's block from the run before its own run: a fragment run (a
timer's tick, a tap inside it) that starts before the page's last run has reached the browser
clears that fragment's unsent deltas, and the browser, told that run finished, removes the block
as stale. The browser's list of elements then closes up, every later element of the same
container moves one place back, and the fragment's next block overwrites the element that moved
into its place: a student saw the question box lose its chips, or a tap land on nothing, until
the teacher's next change redrew the page (tests/app/test_browser.py's forecast class, on a loaded
machine; app/adapter/streamlit_door.py's races are the others it met). Alone in a container of its own, a
dropped block leaves an empty container and moves nothing. tests/app/test_fragments.py holds every
fragment of the app to this.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st


def fragment(func: Callable | None = None, *, run_every: float | None = None) -> Callable:
    """``@fragment`` or ``@fragment(run_every=seconds)``: st.fragment, called inside a fresh
    ``st.container()`` that holds nothing else."""
    if func is None:
        return functools.partial(fragment, run_every=run_every)
    inner = st.fragment(func, run_every=run_every)

    @functools.wraps(func)
    def alone(*args: Any, **kwargs: Any) -> Any:
        with st.container():
            return inner(*args, **kwargs)

    return alone
