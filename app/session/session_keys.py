"""The session-state keys the pages keep, in one registry: who owns each, its default, whether the
address holds it, and whether a student following a room receives it from the teacher.

A page registers what it adds when it is imported (app/streamlit_app.py imports every page before
the first run); app/room/following.py reads ``followed()`` and imports no page.

A key's string is written once, as a module-level constant of its owner (the module that registers it,
``Key(ROOM, __name__)``); every other module names it by that constant (``ss[live.ROOM]``), never by its
string or as an attribute (``ss.room``): tests/app/test_session_keys.py fails otherwise. A key used by
modules that its owner imports lives in the lowest of them (the setting keys in app/session/state.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    name: str
    owner: str  # the module that registers it and holds its constant: its __name__
    default: Any = None
    followed: bool = False  # a following student's page takes the teacher's value (app/room/following.py)
    address: str | None = None  # the link parameter that holds it, if any (app/session/state.py)


REGISTRY: dict[str, Key] = {}


def register(*keys: Key) -> tuple[Key, ...]:
    """Add keys; a name is one key, owned by one module (registering it again changes nothing)."""
    for key in keys:
        known = REGISTRY.setdefault(key.name, key)
        if known != key:
            raise ValueError(f"session key {key.name!r} is registered twice: {known} and {key}")
    return keys


def followed() -> tuple[str, ...]:
    """The keys a following student receives from the teacher's page (beyond the setup itself)."""
    return tuple(name for name, key in REGISTRY.items() if key.followed)


def defaults(keys: Iterable[Key]) -> dict[str, Any]:
    """Each key's name and default (``keys`` as register() returned them)."""
    return {key.name: key.default for key in keys}


def restore(state, saved: str, defaults: dict[str, Any]) -> None:
    """A page's widget keys back from ``state[saved]`` (Streamlit forgets a widget's key on a run
    that does not draw it, as when another page is open), else their defaults."""
    kept = state.setdefault(saved, {})
    for key, default in defaults.items():
        state.setdefault(key, kept.get(key, default))


def save(state, saved: str, defaults: dict[str, Any]) -> None:
    """The page's widget keys, kept under ``state[saved]`` for restore()."""
    state[saved] = {key: state[key] for key in defaults if key in state}
