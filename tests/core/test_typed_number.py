"""The one reader of a typed number (mha_core/typed_number.py; issue 28, 3): its grammar, and the grid's
cells (``parse_number``) read by it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_core.setup import parse_number
from mha_core.typed_number import read_number


@pytest.mark.parametrize(("typed", "value"), [
    ("0.42", 0.42), ("-1.5", -1.5), ("\u22121.5", -1.5), ("2e3", 2000.0), (".5", 0.5), ("+3", 3.0),
    (" 7 ", 7.0)])
def test_decimal_and_scientific_notation_are_numbers(typed, value):
    assert read_number(typed) == value


@pytest.mark.parametrize("typed", ["0x10", "inf", "nan", "1_000", "\u0661\u0662", "1e400", "", "1.2.3", "--1",
                                   "1,5", "12%", "1 000"])
def test_anything_else_is_refused_unless_the_caller_allows_it(typed):
    with pytest.raises(ValueError):
        read_number(typed)


def test_what_a_caller_may_allow():
    assert read_number("0,67", decimal_comma=True) == 0.67
    assert read_number("1.048.576", thousands=True) == 1048576
    assert read_number("1\u202f048\u202f576", thousands=True) == 1048576
    assert read_number("67%", percent=True) == pytest.approx(0.67)
    assert read_number("1e400", finite=False) == float("inf")
    with pytest.raises(ValueError):
        read_number("1,5", thousands=True)  # not groups of three: neither a count nor (here) a decimal


@given(st.text(alphabet="0123456789.,eE+-\u2212 x%_", max_size=8))
def test_a_grid_cell_is_a_number_exactly_when_the_reader_says_so(text):
    try:
        read_number(text, decimal_comma=True, finite=False)  # a cell reads a decimal comma (issue 40, 5)
        readable = True
    except ValueError:
        readable = False
    try:
        parse_number(text)
        parsed = True
    except ValueError as error:
        parsed = False
        assert readable == ("outside the range" in str(error) or "too close to zero" in str(error)), error
    if parsed:
        assert readable
