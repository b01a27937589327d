"""The store's refusals a student can act on, in the reader's language: a nickname another student's
reads the same as (with the free one the store suggests), a nickname or an answer too long.

The store words them in English (classroom.store's NAME_TAKEN and TOO_LONG); the same sentences are
marked here for the catalogues (tests/classroom/test_names.py checks they match), and the refusal is
built again from the translated sentence. Every other refusal is shown as the store words it."""

from __future__ import annotations

from app import i18n
from classroom.store import NameTaken, StoreError, TooLong
from course.i18n import N_

NAME_TAKEN = N_("The nickname “{name}” is taken in this room: try “{suggestion}”.")
TOO_LONG = {"nickname": N_("A nickname has at most {limit} characters."),
            "answer": N_("An answer has at most {limit} characters.")}


def in_language(error: StoreError) -> StoreError:
    """The same refusal with its message in the reader's language (the error itself if it has none)."""
    if isinstance(error, NameTaken):
        return NameTaken(error.name, error.suggestion, i18n.t(NAME_TAKEN))
    if isinstance(error, TooLong) and error.what in TOO_LONG:
        return TooLong(error.what, i18n.t(TOO_LONG[error.what]))
    return error


def text(error: StoreError) -> str:
    """What the page says for the refusal, in the reader's language where it can be."""
    return str(in_language(error))
