"""The one reader of a number a person typed: a grid's cell, a lab's list, a quiz or room answer.

The grammar is decimal or scientific notation in ASCII digits ("0.42", "-1.5", "2e3"; never "0x10",
"inf", "nan", "1_000" or another script's digits), a typographic minus read as a minus. Each caller
says what else its readers may type: a decimal comma ("0,67", as German, French, Spanish and
Portuguese write it), thousands separators in a whole number ("1,048,576", "1.048.576", "1 048 576")
or a percentage ("67%"). A ValueError says what was typed; the caller words it for its reader
(mha_core has no translations).

``read_cell`` is the rule of a cell (a grid's, a lab list's item): a decimal point or comma in every
language (as the quiz reads answers), within a limit, never rounded to zero. Its ``Refused`` names
the kind of refusal (``EMPTY``, ``NOT_A_NUMBER``, ``OUT_OF_RANGE``, ``TOO_SMALL``) for the caller's words
(course/answers.py's ``refusal``).
"""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
THOUSANDS = re.compile(r"[+-]?[1-9]\d{0,2}([,.' _\u00a0\u202f]\d{3})+", re.ASCII)
SEPARATORS = re.compile(r"[,.' _\u00a0\u202f]")
MINUS = "\u2212"


def read_number(text, *, decimal_comma: bool = False, thousands: bool = False,
                percent: bool = False, finite: bool = True) -> float:
    """A typed number as a float; ValueError if it is not one (or, unless ``finite`` is False, if it
    overflows: "1e400").

    ``decimal_comma``: one comma and no point is a decimal comma ("0,67" is 0.67).
    ``thousands``: a whole number may group its digits by three ("1,048,576"); this wins over a
    decimal comma. ``percent``: a trailing "%" divides by 100.
    """
    cleaned = str(text).strip().replace(MINUS, "-")
    scale = 1.0
    if percent and cleaned.endswith("%"):
        cleaned, scale = cleaned[:-1].rstrip(), 0.01
    if thousands and THOUSANDS.fullmatch(cleaned):
        cleaned = SEPARATORS.sub("", cleaned)
    elif decimal_comma and cleaned.count(",") == 1 and "." not in cleaned:
        cleaned = cleaned.replace(",", ".")
    if not NUMBER.fullmatch(cleaned):
        raise ValueError(f"{str(text).strip()[:30]!r} is not a number")
    value = float(cleaned) * scale
    if finite and not math.isfinite(value):
        raise ValueError(f"{str(text).strip()[:30]!r} is not a finite number")
    return value


EMPTY, NOT_A_NUMBER, OUT_OF_RANGE, TOO_SMALL = "empty", "not a number", "out of range", "too small"


class Refused(ValueError):
    """A typed cell refused: ``kind`` (EMPTY, NOT_A_NUMBER, OUT_OF_RANGE, TOO_SMALL), ``typed`` (its first
    30 characters, stripped) and ``limit``; ``str()`` says it in English."""

    def __init__(self, kind: str, typed: str, limit: float, message: str):
        super().__init__(message)
        self.kind, self.typed, self.limit = kind, typed, limit


def read_cell(text, *, limit: float) -> float:
    """A typed cell: decimal or scientific notation, a decimal point or one decimal comma ("1,5" is
    1.5), within ±``limit``. Refused says why not: "0x10", "inf", "1,5,0"; "1e308" (out of range) and
    "1e-400" (which would become 0) are refused rather than silently read as something else."""
    typed = str(text).strip()[:30]
    cleaned = str(text).strip().replace(MINUS, "-")
    if not cleaned:
        raise Refused(EMPTY, typed, limit, "the cell is empty")
    try:
        value = read_number(cleaned, decimal_comma=True, finite=False)  # the range says what overflows
    except ValueError:
        raise Refused(NOT_A_NUMBER, typed, limit, f"{typed!r} is not a number") from None
    if not abs(value) <= limit:
        raise Refused(OUT_OF_RANGE, typed, limit,
                      f"{typed} is outside the range this page accepts (±{limit:,.0f})")
    if value == 0 and any(c in "123456789" for c in cleaned.lower().partition("e")[0]):
        raise Refused(TOO_SMALL, typed, limit, f"{typed} is too close to zero to be stored: it would become "
                      "0 (the smallest number a cell holds is about 5e-324); type 0 if you mean zero")
    return value
