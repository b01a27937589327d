"""The one reader of a number a person typed: a grid's cell, a lab's list, a quiz or room answer.

The grammar is decimal or scientific notation in ASCII digits ("0.42", "-1.5", "2e3"; never "0x10",
"inf", "nan", "1_000" or another script's digits), a typographic minus read as a minus. Each caller
says what else its readers may type: a decimal comma ("0,67", as German, French, Spanish and
Portuguese write it), thousands separators in a whole number ("1,048,576", "1.048.576", "1 048 576")
or a percentage ("67%"). A ValueError says what was typed; the caller words it for its reader
(mha_core has no translations).
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
