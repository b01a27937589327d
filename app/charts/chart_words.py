"""Words every chart's text alternative shares: a label in quotes, the separators of lists and
clauses, "every cell is masked", and a number written as the reader's language writes it."""

from __future__ import annotations

from course.i18n import N_, localized_number_text

QUOTED = "'{}'"
NOTHING_SHOWN = N_("every cell is masked")
LIST_SEPARATOR = ", "
CLAUSE_SEPARATOR = "; "


def local_number(number: str, language: str) -> str:
    """A number written by app.charts.number_text ('0.67', '1 − 4.1e-9') as the language writes it
    ('0,67')."""
    return localized_number_text(number, language)


def quoted(label: str) -> str:
    return QUOTED.format(label)
