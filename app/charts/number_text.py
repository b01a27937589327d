"""Numbers as a reader sees them on the charts: cell text and hover text that never hide a value
(2.1e-9 is not 0.00, 1 − 4.1e-9 is not 1.00). Pure Python: app/charts/figures.py, the drill-down and the
tables write every number through these."""

from __future__ import annotations

import math

SCI_FROM = 1e4  # at or above this magnitude numbers are written in scientific notation
MINUS = "\u2212"  # the minus sign of "1 − 4.1e-9"
HOVER_DECIMALS = 4  # hover precision for ordinary numbers; trailing zeros go down to
HOVER_MIN_DECIMALS = 2  # this many: 0.6698, 1.3395, 1.00, 29.99
NEAR_ONE_DIGITS = 12  # significant digits of a weight that rounds to 1 at HOVER_DECIMALS


def scientific(value: float, significant: int) -> str:
    """2.1e-9 rather than 2.1e-09; 1.2e4 rather than 1.2e+04."""
    mantissa, exponent = f"{value:.{max(significant, 1) - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def format_number(value: float, digits: int = 2, *, near_one: bool = False) -> str:
    """A number as cell text: fixed `digits` decimals unless that would hide it.

    0 -> "0.00"; 0.333 -> "0.33"; 2.06e-9 -> "2.1e-9" (nonzero but below half the last digit:
    `digits` significant digits); 12345 -> "1.2e4"; NaN -> "" (a masked cell). With
    ``near_one`` (weights) a value that would print as 1.00 but is not 1 -> "1 − 4.1e-9".
    """
    value = float(value)
    if math.isnan(value):
        return ""
    if math.isinf(value):
        return "∞" if value > 0 else MINUS + "∞"
    if value == 0:
        return f"{0:.{digits}f}"
    smallest = 0.5 * 10.0 ** -digits  # anything closer to a round number prints as that number
    if near_one and value != 1 and abs(value - 1) < smallest:
        sign = MINUS if value < 1 else "+"
        return f"1 {sign} {scientific(abs(value - 1), digits)}"
    if abs(value) < smallest or abs(value) >= SCI_FROM:
        return scientific(value, digits)
    return f"{value:.{digits}f}"


def latex_int(n: int) -> str:
    """A whole number for LaTeX with English thousands marks, braced so TeX adds no space: 12{,}345
    (app.i18n.tex writes it the reader's way)."""
    return f"{n:,}".replace(",", "{,}")


def hover_number(value: float, *, near_one: bool = False) -> str:
    """A number for hover text, with more precision than the cell: 0.6698, 1.00, 29.99, 2.1e-9.

    With ``near_one`` a weight that rounds to 1 but is not 1 shows both forms:
    "1 − 4.1e-9 (0.999999995878)"; any other value that would read as a whole number but is not
    shows both too: "30.00 (29.9999999382)".
    """
    value = float(value)
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return format_number(value)  # "" for NaN (the caller says "masked"), ∞
    smallest = 0.5 * 10.0 ** -HOVER_DECIMALS
    if near_one and value != 1 and abs(value - 1) < smallest:
        return f"{format_number(value, near_one=True)} ({value:.{NEAR_ONE_DIGITS}g})"
    if abs(value) < smallest:
        return format_number(value)  # as on the cell: 2.1e-9
    if abs(value) >= SCI_FROM:
        return scientific(value, HOVER_DECIMALS + 1)
    text = f"{value:.{HOVER_DECIMALS}f}"
    keep = len(text) - (HOVER_DECIMALS - HOVER_MIN_DECIMALS)  # up to the last decimal that always stays
    text = text[:keep] + text[keep:].rstrip("0")
    whole = round(value)
    if float(text) == whole and f"{value:.{NEAR_ONE_DIGITS}g}" != f"{whole:d}":
        return f"{text} ({value:.{NEAR_ONE_DIGITS}g})"  # 30.00 would claim exactly 30: 29.9999999382
    return text
