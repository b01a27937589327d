"""What the teacher stumbled on in issue 16 (findings 3 to 6, 8 and 9), outside the browser."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from app.charts import figure_style, figures, number_text
from app.steps.step_text import drill_lines
from course.examples import all_examples
from tests.apptest_util import chart_specs, fresh_app, pick_example, shown

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()

# --- Finding 3: every number a lesson quotes is on the page, at the precision it is quoted --------

# A decimal (0.67, 29.99999994), a number in e-notation (2.1e-9) or a count with thousands separators
# (1,048,576). Bare small integers (scores 0, 0, 20; '3 x 5') are inputs and shapes, not readings.
QUOTED = re.compile(r"\d+\.\d+(?:e-?\d+)?|\d+e-?\d+|\d{1,3}(?:,\d{3})+")
SHOWN = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?")


def lesson_texts(example) -> list[str]:
    """Everything the page says in the chapter's voice: the story, what to look for, the forecast."""
    lesson = example.lesson
    return [example.story, lesson.look_for, lesson.forecast, lesson.forecast_answer]


def chart_strings(spec: dict) -> list[str]:
    """The numbers a figure shows: cell texts and hover texts of every trace."""
    out = []
    for trace in spec["data"]:
        for field in ("text", "hovertext"):
            value = trace.get(field)
            if isinstance(value, list):
                out.extend(str(cell) for row in value for cell in (row if isinstance(row, list) else [row]))
    return out


def drill_strings(result) -> list[str]:
    """Every drill-down line of every (head, query, key) cell, in plain notation."""
    h, n_q, n_k = result.weights.shape
    lines = [line for head, query, key in itertools.product(range(h), range(n_q), range(n_k))
             for line in drill_lines(result, head, query, key)]
    return [line.replace(r"\mathrm{e}{-}", "e-").replace(r"\mathrm{e}{+}", "e+") for line in lines]


def shown_numbers(strings) -> list[str]:
    return [match for text in strings for match in SHOWN.findall(text.replace("−", "-"))]


def is_shown(quoted: str, numbers: list[str]) -> bool:
    """A quoted number is shown when a number on the page, printed at least as precisely, reads as it
    at the quoted precision: 0.707 is the hover's 0.7071, not the cell's 0.71."""
    if "," in quoted:
        return quoted in numbers
    if "e" in quoted:
        mantissa = quoted.split("e")[0]
        significant = len(mantissa.replace(".", "").lstrip("0"))
        return any(f"{float(n.replace(',', '')):.{significant - 1}e}".replace("e-0", "e-")
                   .replace("e+0", "e") == quoted for n in numbers if "e" in n
                   and len(n.split("e")[0].replace(".", "").lstrip("0")) >= significant)
    decimals = len(quoted.split(".")[1])
    return any(f"{float(n.replace(',', '')):.{decimals}f}" == quoted for n in numbers
               if "." in n and "e" not in n and len(n.split(".")[1]) >= decimals)


@pytest.fixture(scope="module")
def workbench():
    return fresh_app()


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_number_a_lesson_quotes_is_on_the_page_at_its_precision(workbench, key):
    """The workbench shows the lesson; its numbers are on a cell, in a hover, in the page's text or in
    the drill-down (Example D's 29.99999994 was on none of them: every cell and hover read 30.00)."""
    at = workbench
    pick_example(at, key)
    assert not at.exception
    example = EXAMPLES[key]
    quoting = [text for text in lesson_texts(example) if text]
    page = [*shown(at.markdown), *shown(at.caption), *shown(at.success), *shown(at.info)]
    page = [text for text in page if not any(quote in text for quote in quoting)]  # not the lesson itself
    assert len(page) > 8
    page += [string for spec in chart_specs(at).values() for string in chart_strings(spec)]
    numbers = shown_numbers(page + drill_strings(example.run()))
    missing = [quoted for text in lesson_texts(example) for quoted in QUOTED.findall(text)
               if not is_shown(quoted, numbers)]
    assert not missing, (key, missing)


def test_is_shown_reads_precision():
    assert is_shown("0.707", ["0.71", "0.7071"]) and not is_shown("0.707", ["0.71"])
    assert is_shown("29.99999994", ["29.9999999382"]) and not is_shown("29.99999994", ["30.00"])
    assert is_shown("2.1e-9", ["2.1e-9"]) and not is_shown("2.1e-9", ["2.0e-9"])
    assert is_shown("1.3e-14", ["1.3e-14"]) and is_shown("1,048,576", ["1,048,576"])


@pytest.mark.parametrize("value, expected", [
    (29.9999999382, "30.00 (29.9999999382)"), (-3.00000001, "-3.00 (-3.00000001)"), (30.0, "30.00"),
    (2.9999999999999996, "3.00"), (198.2013, "198.2013")])
def test_a_hover_that_would_read_as_a_whole_number_says_the_value(value, expected):
    assert number_text.hover_number(value) == expected


# --- Finding 4: a step's grids show their numbers alike, and say why when they do not -------------

ATTENTION_GRIDS = ("chart_scores", "chart_scaled", "chart_weights")
NO_NUMBERS = "No numbers on these cells"


def has_numbers(spec: dict) -> bool:
    return any("text" in trace for trace in spec["data"] if trace["type"] == "heatmap")


def grid_specs(at) -> dict[str, dict]:
    return {key: spec for key, spec in chart_specs(at).items()
            if any(trace["type"] in ("heatmap", "image") for trace in spec["data"])}


@pytest.mark.parametrize("large", [False, True])
def test_example_h_scores_scaled_and_weights_all_show_numbers_or_all_say_why(workbench, large):
    at = workbench
    at.toggle(key="large_type").set_value(large).run()
    pick_example(at, "ex_h_cross_attention")
    assert not at.exception
    specs = chart_specs(at)
    shown_on_cells = {key: has_numbers(specs[key]) for key in ATTENTION_GRIDS}
    assert len(set(shown_on_cells.values())) == 1, shown_on_cells
    if not large:  # 3 x 5 grids of eight heads: −17.34 is written −17.3 rather than dropped
        assert all(shown_on_cells.values())
    at.toggle(key="large_type").set_value(False).run()


@pytest.mark.parametrize("key", ["ex_h_cross_attention", "ex_i_parameter_count", "the_cat_sat_two_heads"])
@pytest.mark.parametrize("large", [False, True])
def test_every_grid_without_numbers_says_why_next_to_it(workbench, key, large):
    at = workbench
    at.toggle(key="large_type").set_value(large).run()
    pick_example(at, key)
    without = [name for name, spec in grid_specs(at).items() if not has_numbers(spec)]
    notes = [text for text in shown(at.caption) if text.startswith(NO_NUMBERS)]
    assert len(notes) == len(without), (without, notes)
    if key != "the_cat_sat_two_heads":
        assert without  # d_model 512 grids carry no numbers: the test sees notes
    at.toggle(key="large_type").set_value(False).run()


# --- Finding 6: the right recall choice cannot be told by its length ------------------------------

MAX_LENGTH_RATIO = 1.35  # longest to shortest choice of one question


def test_the_right_recall_choice_is_not_the_longest_more_than_a_fair_share():
    """Questions 1 to 5 had their right choice the longest and only explained one (up to 102 against
    19 characters): a student could answer without reading. Now it is the longest in at most one
    question in four, and no choice is much longer than another."""
    from course.quiz import RECALL

    worded = [q for q in RECALL if not all(c.isdigit() for c in q.choices)]  # 'd_k = ?': 8, 64, 512
    assert len(worded) >= 5
    longest = [q.prompt for q in worded if len(q.answer) >= max(len(c) for c in q.choices)]
    assert len(longest) <= math.ceil(len(RECALL) / 4), longest
    for q in worded:
        lengths = [len(c) for c in q.choices]
        assert max(lengths) / min(lengths) <= MAX_LENGTH_RATIO, (q.prompt, lengths)
        assert all(re.search(r"[:;,]", c) for c in q.choices), q.prompt  # each a claim with its reason
    assert len({q.choices.index(q.answer) for q in RECALL}) == 4  # the right one is anywhere


# --- Finding 9 (outside the browser): B − A of equal setups -----------------------------------------


def test_b_minus_a_of_equal_setups_is_drawn_on_plus_minus_one():
    """A colour range of ±1e-9 labelled the colour bar '−1n … 1n'."""
    spec = figures.head_grids(np.zeros((2, 3, 3)), ["a", "b", "c"], ["a", "b", "c"], kind="signed").to_dict()
    assert [(t["zmin"], t["zmax"]) for t in spec["data"]] == [(-1.0, 1.0)] * 2
    assert (figure_style.symmetric_range([0.0, np.nan]) == 1.0
            and figure_style.symmetric_range([-0.25, 0.1]) == 0.25)


def test_compare_of_a_setup_with_itself_draws_its_difference_on_plus_minus_one(workbench):
    at = workbench
    pick_example(at, "the_cat_sat_two_heads")
    at.button(key="compare_pin").click().run()
    assert not at.exception
    delta = chart_specs(at)["compare_weights_delta"]
    assert {(t["zmin"], t["zmax"]) for t in delta["data"] if t["type"] == "heatmap"} == {(-1.0, 1.0)}
    at.button(key="compare_unpin").click().run()
