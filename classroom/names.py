"""Students' nicknames: the one form a room shows, and the keys that say whether two read the same.

``clean`` gives the form the store keeps and every screen and the CSV show: NFKC; bidirectional
controls (U+202E reverses the text after it), zero-width characters (U+200B, U+200C, U+200D, U+2060,
U+FEFF), the soft hyphen, Hangul fillers and other invisible characters removed (below, then
``disarm.strip_format``), that is every character of Unicode category Cc, Cf, Cs or Co still left
(controls, format characters, lone surrogates, private use) and every default-ignorable code point
(Unicode's Default_Ignorable_Code_Point: ``default_ignorable``, which also takes in the Khmer inherent
vowels U+17B4/5, the variation selectors U+180B..F, U+FE00..F and U+E0100.., and the code points
reserved as ignorable, U+FFF0..8 and U+E0000..U+E0FFF: each drawn as nothing); at most
``MARKS_PER_BASE`` combining marks (Mn, Me) on one character, counted decomposed (a stack of them
overprints the lines above); whitespace runs become one space and the ends are stripped. A
nickname's limit (``NICKNAME_CHARS``) counts this form.

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

A student without a nickname is shown as ``ANONYMOUS`` ("student 3", in the teacher's language), so a
typed name that reads as that label in any of the course's languages (``reads_as_anonymous``) is
refused as taken, and never suggested.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from functools import cache

import disarm

from course.i18n import LANGUAGES, translator

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co"})  # controls, format, surrogates, private use
NUMBERED = re.compile(r"^(.*\S) (\d+)$")  # "Mara 2": a base and its number
MARKS_PER_BASE = 2  # combining marks kept on one character (Vietnamese needs 2; NFKC composes most)
STACKING = frozenset({"Mn", "Me"})  # the marks drawn over or under their base
ANONYMOUS = "student {number}"  # the roster's label of a student without a nickname (app/views/classroom.py)

# Default_Ignorable_Code_Point, as Unicode derives it (DerivedCoreProperties.txt): Other_Default_Ignorable_
# Code_Point + Cf + Variation_Selector - White_Space - FFF9..FFFB - 13430..1343F - Prepended_Concatenation_
# Mark. The lists below are PropList.txt's (stable: new ignorables go into the reserved ranges listed);
# Cf comes from the Unicode data Python ships.
OTHER_DEFAULT_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x2065, 0x2065),
                           (0x3164, 0x3164), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000),
                           (0xE0002, 0xE001F), (0xE0080, 0xE00FF), (0xE01F0, 0xE0FFF))
VARIATION_SELECTORS = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
VISIBLE_FORMAT = ((0xFFF9, 0xFFFB), (0x13430, 0x1343F),  # interlinear annotation, Egyptian hieroglyph format
                  (0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),  # prepended
                  (0x08E2, 0x08E2), (0x110BD, 0x110BD), (0x110CD, 0x110CD))  # concatenation marks


def _within(point: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(first <= point <= last for first, last in ranges)


def default_ignorable(ch: str) -> bool:
    """Whether the character has Unicode's Default_Ignorable_Code_Point property (drawn as nothing
    when a font lacks it: U+17B5, U+180B, U+FFF0, U+E0080 after "Mara" look like "Mara")."""
    point = ord(ch)
    if _within(point, OTHER_DEFAULT_IGNORABLE) or _within(point, VARIATION_SELECTORS):
        return True
    return unicodedata.category(ch) == "Cf" and not ch.isspace() and not _within(point, VISIBLE_FORMAT)


def hidden(ch: str) -> bool:
    """A character a nickname loses: a control, format, surrogate or private-use one, or an ignorable.
    Not a blank: a tab or a line break is a control too, but it parts two words (clean makes it a space)."""
    return not ch.isspace() and (unicodedata.category(ch) in HIDDEN_CATEGORIES or default_ignorable(ch))


def capped_marks(text: str) -> str:
    """At most MARKS_PER_BASE combining marks after each character (and at the start); give it the
    decomposed form (NFD), so that a mark composed with its letter counts too (Ź́ is Z with two)."""
    kept, marks = [], 0
    for ch in text:
        marks = marks + 1 if unicodedata.category(ch) in STACKING else 0
        if marks <= MARKS_PER_BASE:
            kept.append(ch)
    return "".join(kept)


def clean(text: str) -> str:
    """The nickname as a room keeps and shows it (see the module's docstring); "" stays ""."""
    text = "".join(ch for ch in unicodedata.normalize("NFKC", text) if not hidden(ch))  # before disarm
    text = "".join(" " if ch.isspace() else ch for ch in disarm.strip_format(text))  # makes fillers blanks
    return unicodedata.normalize("NFKC", capped_marks(unicodedata.normalize("NFD", " ".join(text.split()))))


def keys(name: str) -> frozenset[str]:
    """The keys two names that read the same share: the skeleton as written and case-folded.
    Empty for a name with nothing readable left (then it is no name). Taken of the clean form, so
    what clean drops never tells two names apart."""
    name = clean(name)
    found = {disarm.skeleton_key(name), disarm.skeleton_key(name.casefold())}
    return frozenset(key for key in found if key)


def clashes(name: str, taken: Collection[str]) -> bool:
    """Whether the name reads the same as one whose keys are among ``taken``."""
    return not keys(name).isdisjoint(taken)


@cache
def anonymous_labels() -> tuple[str, ...]:
    """ANONYMOUS in each of the course's languages ("student {number}", "élève {number}", ...)."""
    return tuple(dict.fromkeys(translator(language)(ANONYMOUS) for language in LANGUAGES))


def reads_as_anonymous(name: str) -> bool:
    """Whether the name reads the same as the roster's label of a student without one, in any of
    the course's languages, whatever its number ("student 1", "STUDENT 12", "élève 3")."""
    name_keys = keys(name)
    return any(not keys(label.format(number=int(number))).isdisjoint(name_keys)
               for number in set(re.findall(r"\d+", name)) for label in anonymous_labels())


def suggestion(name: str, taken: Collection[str], limit: int) -> str:
    """The first free numbered form of the name ("Mara 2", "Mara 3"; "Mara 2" taken: "Mara 3"),
    shortened to fit ``limit`` characters; never one that reads as an anonymous student's label
    ("student 1" gets "student 1 2")."""
    numbered = NUMBERED.match(name)
    base, number = ((numbered[1], int(numbered[2]) + 1) if numbered and not reads_as_anonymous(name)
                    else (name, 2))
    while True:
        tail = f" {number}"
        candidate = clean(base[:max(1, limit - len(tail))]) + tail
        if not clashes(candidate, taken) and not reads_as_anonymous(candidate):
            return candidate
        number += 1
