"""What an answer is, by the kind of question it answers: one registry for the Quiz page, a room's
questions and the room's store.

A kind says how an answer is read (a number, a shape, one of the choices, a drawn forecast, free
text), how it is kept (``stored``: the one form the store compares; "67%" and "0,67" are both
"0.67"), whether it is right (``right``), how the page writes it back (``shown``) and what its box
suggests (``placeholder``). course/quiz.py asks and explains the questions, classroom/store.py marks
a room's answers, app/room/questions.py and app/views/quiz.py draw them; none of them compares kinds by
name. Numbers are read by the one reader, mha_core/typed_number.py.

A kind the registry does not know (a teacher's own "poll") is read as free text and marked as a
number when both the answer and the correct one read as numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from course.i18n import N_, number, translator
from mha_core import typed_number
from mha_core.typed_number import read_number

NUMBER, SHAPE, CHOICE, FORECAST, TEXT = "number", "shape", "choice", "forecast", "text"  # how it is read

NO_ANSWER = N_("no answer given")
CHOOSE = N_("choose one of the options")
SHAPE_HINT = N_("write a shape as rows × columns, e.g. 3 × 5")
NOT_A_NUMBER = N_("{text} is not a number (type e.g. 0.42, -1.5 or 2e3)")
NOT_A_WHOLE_NUMBER = N_("{text} is not a whole number (type e.g. 12 or {thousands})")
REFUSED_CELL = {  # mha_core/typed_number.py's refusals of a cell, worded (NOT_A_NUMBER: not_a_number)
    typed_number.EMPTY: N_("the cell is empty"),
    typed_number.OUT_OF_RANGE: N_("{text} is outside the range this page accepts (±{limit})"),
    typed_number.TOO_SMALL: N_("{text} is too close to zero to be stored: it would become 0; type 0 if "
                               "you mean zero"),
}
RIGHT_SLACK = 1e-12  # added to a number's tolerance when a stored answer is marked (0.1 + 0.2 is 0.3)
SHAPE_PATTERN = re.compile(r"[(\[]?\s*(\d{1,7})\s*(?:x|×|\*|by|,)\s*(\d{1,7})\s*[)\]]?", re.IGNORECASE)


class Unreadable(ValueError):
    """An answer that cannot be read as its kind asks; its message is in the reader's language."""


@dataclass(frozen=True)
class AnswerKind:
    name: str
    form: str  # NUMBER, SHAPE, CHOICE, FORECAST or TEXT
    whole: bool = False  # a count: thousands separators allowed ("1,048,576"), shown with them
    percent: bool = False  # a weight: "67%" is 0.67, shown to two decimals
    placeholder: str = ""  # the answer box's example, marked N_ (translated where drawn)

    def read_number(self, text) -> float:
        """A number as this kind reads it: a decimal comma always, thousands and % where the kind says."""
        return read_number(text, decimal_comma=not self.whole, thousands=self.whole, percent=self.percent)

    def problem(self, text, choices: tuple[str, ...] = (), *, language: str = "en") -> str | None:
        """Why ``text`` cannot be read as an answer of this kind, in ``language``; None if it can."""
        try:
            self.stored(text, choices, language=language)
        except Unreadable as error:
            return str(error)
        return None

    def stored(self, text, choices: tuple[str, ...] = (), *, language: str = "en") -> str:
        """The one form the store compares: a choice as it is, a shape as "3 × 5", a number as Python
        writes the float ("0.67" for "67%" or "0,67", "1048576.0" for "1,048,576"), other text
        trimmed. Unreadable (a ValueError) says why not, in ``language``."""
        _ = translator(language)
        text = str(text).strip()
        if not text:
            raise Unreadable(_(NO_ANSWER))
        if choices:
            if text not in choices:
                raise Unreadable(_(CHOOSE))
            return text
        if self.form == SHAPE:
            shape = read_shape(text)
            if shape is None:
                raise Unreadable(_(SHAPE_HINT))
            return f"{shape[0]} × {shape[1]}"
        if self.form == NUMBER:
            try:
                return repr(self.read_number(text))
            except ValueError:
                raise Unreadable(not_a_whole_number(text, language) if self.whole
                                 else not_a_number(text, language)) from None
        return text

    def right(self, given: str, correct: str, tolerance: float, choices: tuple[str, ...] = ()) -> bool:
        """Whether a stored answer is the correct one: a choice exactly, a shape as (rows, cols),
        anything else as numbers within ``tolerance``. Unreadable answers are wrong."""
        if choices:
            return given == correct
        if self.form == SHAPE:
            mine, theirs = read_shape(given), read_shape(correct)
            return mine is not None and mine == theirs
        try:
            mine, theirs = self.read_number(given), self.read_number(correct)
        except ValueError:
            return False
        return abs(mine - theirs) <= tolerance + RIGHT_SLACK

    def shown(self, value: str) -> str:
        """A stored answer as the page writes it: a weight to two decimals, a count with separators,
        another number to four significant figures; anything else as it is."""
        if self.form != NUMBER:
            return value
        try:
            number = float(value)
        except ValueError:
            return value
        if self.percent:
            return f"{number:.2f}"
        if self.whole and number == int(number):
            return f"{int(number):,}"
        return f"{number:.4g}"


KINDS = {kind.name: kind for kind in (
    AnswerKind("weight", NUMBER, percent=True, placeholder=N_("e.g. 0.42")),
    AnswerKind("score", NUMBER, placeholder=N_("e.g. -1.25")),
    AnswerKind("head_output", NUMBER, placeholder=N_("e.g. 0.8")),
    AnswerKind("parameters", NUMBER, whole=True, placeholder=N_("e.g. 1,048,576")),
    AnswerKind("shape", SHAPE, placeholder=N_("e.g. 3 × 5")),
    AnswerKind("top_key", CHOICE),
    AnswerKind("flat_head", CHOICE),
    AnswerKind("disagreeing_pair", CHOICE),
    AnswerKind("strongest_head", CHOICE),
    AnswerKind("recall", CHOICE),
    AnswerKind("forecast", FORECAST),
)}
TEXT_KIND = AnswerKind("text", TEXT)


def kind_of(name: str) -> AnswerKind:
    """The registry's kind, or free text for a kind it does not know (a teacher's "poll")."""
    return KINDS.get(name, TEXT_KIND)


def drawn(kind: str) -> bool:
    """Answers of this kind are drawn grids of weights (a forecast), not typed."""
    return kind_of(kind).form == FORECAST


def not_a_number(text, language: str = "en") -> str:
    return translator(language)(NOT_A_NUMBER).format(text=repr(str(text).strip()[:30]))


def not_a_whole_number(text, language: str = "en") -> str:
    """A count's refusal, its example written as the reader groups digits: 1,048,576 / 1.048.576."""
    return translator(language)(NOT_A_WHOLE_NUMBER).format(text=repr(str(text).strip()[:30]),
                                                           thousands=number(1048576, language, 0))


def refusal(error: typed_number.Refused, language: str = "en") -> str:
    """A refused cell (mha_core/typed_number.py's read_cell) in the reader's language and numbers."""
    if error.kind == typed_number.NOT_A_NUMBER:
        return not_a_number(error.typed, language)
    return translator(language)(REFUSED_CELL[error.kind]).format(
        text=error.typed, limit=number(error.limit, language, 0))


def read_shape(text: str) -> tuple[int, int] | None:
    """(rows, columns) from "3 × 5", "3x5", "3 by 5", "(3, 5)"...; None if it is not a shape."""
    match = SHAPE_PATTERN.fullmatch(str(text).strip())
    return (int(match[1]), int(match[2])) if match else None

