"""Students' nicknames: the one form a room shows, and the keys that say whether two read the same.

``clean`` gives the form the store keeps and every screen and the CSV show: NFKC; bidirectional
controls (U+202E reverses the text after it), zero-width characters (U+200B, U+200C, U+200D, U+2060,
U+FEFF), the soft hyphen, Hangul fillers and other invisible characters removed
(``disarm.strip_format``), then every character of Unicode category Cc, Cf, Cs or Co still left
(controls, format characters, lone surrogates, private use); whitespace runs become one space and the
ends are stripped. A nickname's limit (``NICKNAME_CHARS``) counts this form.

``keys`` gives a name's comparison keys; two names clash when they share one. Each key is
``disarm.skeleton_key`` (disarm==0.17.2, maintained, built on Unicode 17.0's confusables.txt): the
UTS #39 skeleton, case-folded, whitespace collapsed. It is taken of the name as written (look-alikes:
``Mаra`` with a Cyrillic а, ``Mοra`` with a Greek ο, full-width ``Ｍａｒａ``) and of its case fold
(the same letters up to case: ``Ian``/``ian``; a Greek capital and its small letter resemble
different Latin letters, Η/h and η/n, so no single key does both).

Folded: case, compatibility forms (full-width, ligatures, circled and super/subscript letters and
digits), the confusables between scripts that UTS #39 lists, capital I with l (``Ian`` and ``Lan``
clash: in many fonts they look the same), invisible characters. Not folded, deliberately
(disarm's default): digits with letters (``Mara 1`` and ``Mara l``, ``0`` and ``O`` stay apart, so
suggested names stay free), the multi-letter look-alikes ``rn``/``m``; not folded at all: accents
(``José`` and ``Jose`` are two names), transliteration (``Борис`` and ``Boris``), homophones.
PyICU (ICU's own ``uspoof`` skeleton) needs a compiled ICU; ``confusable-homoglyphs`` and
``confusables`` ship the data but no skeleton; disarm ships the skeleton.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

import disarm

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co"})  # controls, format, surrogates, private use
NUMBERED = re.compile(r"^(.*\S) (\d+)$")  # "Mara 2": a base and its number


def clean(text: str) -> str:
    """The nickname as a room keeps and shows it (see the module's docstring); "" stays ""."""
    text = disarm.strip_format(unicodedata.normalize("NFKC", text))
    text = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or unicodedata.category(ch) not in HIDDEN_CATEGORIES)
    return unicodedata.normalize("NFKC", " ".join(text.split()))


def keys(name: str) -> frozenset[str]:
    """The keys two names that read the same share: the skeleton as written and case-folded.
    Empty for a name with nothing readable left (then it is no name)."""
    found = {disarm.skeleton_key(name), disarm.skeleton_key(name.casefold())}
    return frozenset(key for key in found if key)


def clashes(name: str, taken: Collection[str]) -> bool:
    """Whether the name reads the same as one whose keys are among ``taken``."""
    return not keys(name).isdisjoint(taken)


def suggestion(name: str, taken: Collection[str], limit: int) -> str:
    """The first free numbered form of the name ("Mara 2", "Mara 3"; "Mara 2" taken: "Mara 3"),
    shortened to fit ``limit`` characters."""
    numbered = NUMBERED.match(name)
    base, number = (numbered[1], int(numbered[2]) + 1) if numbered else (name, 2)
    while True:
        tail = f" {number}"
        candidate = clean(base[:max(1, limit - len(tail))]) + tail
        if not clashes(candidate, taken):
            return candidate
        number += 1
