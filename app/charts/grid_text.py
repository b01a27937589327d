"""A heatmap panel in words and as a table: where a head's queries look ("'sat' attends most to
'cat' (0.67)"), which heads are furthest apart, or a matrix's largest and smallest cell; read back
from a figure's heatmap traces (read_grids) or made from the arrays (app/charts/chart_text.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from app.charts.chart_tables import Table
from app.charts.chart_words import CLAUSE_SEPARATOR, LIST_SEPARATOR, NOTHING_SHOWN, local_number, quoted
from app.charts.figure_reading import (
    axis_labels,
    axis_layout,
    axis_words,
    plain,
    title_text,
    trace_positions,
    values_of,
)
from app.charts.number_text import format_number, hover_number
from course import describe
from course.i18n import ENGLISH, N_, translator

FOCUS = N_("{query} attends most to {key} ({value})")
FLAT_ONE = N_("{queries} is nearly flat")
FLAT_MANY = N_("{queries} are nearly flat")
ALL_FLAT = N_("every query spreads its weight nearly evenly")
EXTREMES = N_("largest {high} at {high_at}, smallest {low} at {low_at}")
ALL_EQUAL = N_("every value is {value}")
ONE_PAIR = N_("{a} and {b} are {value} apart")
EVERY_PAIR = N_("every two are {value} apart")
DISTANCES = N_("{far_a} and {far_b} are furthest apart ({far}), {near_a} and {near_b} closest ({near})")
CELL_AT_ATTENTION = "{row} → {col}"
CELL_AT = "{row}, {col}"
MASKED_CELLS = N_("{count} masked")
MASKED = N_("masked")
PICTURE = N_("{rows} × {cols} cells drawn as a picture, too many to list")
NO_NUMBERS = N_("{name}: drawn as a picture; its {rows} × {cols} numbers are too many to list here.")
# The heatmaps' axis titles (app/charts/figures.py writes them in the figure's language): a grid whose rows
# are called "query" or whose columns are called "key", in any language, is an attention grid.
QUERY_AXIS, KEY_AXIS = N_("query"), N_("key")


@dataclass
class Grid:
    """One heatmap panel as read back: values [n_rows, n_cols] and what rows and columns are called."""

    name: str
    values: np.ndarray | None  # None: drawn as a picture
    rows: list[str]
    cols: list[str]
    attention: bool  # rows are queries and columns keys
    weights: bool  # every row is a distribution on 0..1


def read_grids(data: list[dict], layout: dict, names: list[str], language: str = ENGLISH) -> list[Grid]:
    grids = []
    for trace, name in zip(data, names, strict=True):
        kind = trace.get("type")
        if kind not in ("heatmap", "image") or trace.get("hoverinfo") == "skip":
            continue  # an off-axis trace drawn for its colour bar alone
        x_axis = axis_layout(layout, trace.get("xaxis", "x"), "x")
        y_axis = axis_layout(layout, trace.get("yaxis", "y"), "y")
        attention = (title_text(y_axis.get("title")).lower() in axis_words(QUERY_AXIS)
                     or title_text(x_axis.get("title")).lower() in axis_words(KEY_AXIS))
        if kind == "image":  # its axes' ranges are [0.5, n + 0.5]
            n_rows, n_cols = (int(round(max(a.get("range", [0.5, 0.5])) - 0.5)) for a in (y_axis, x_axis))
            grids.append(Grid(name, None, [""] * n_rows, [""] * n_cols, attention, False))
            continue
        values = values_of(trace["z"])  # [n_rows, n_cols]
        if values.ndim == 1:
            values = values[None, :]
        rows = axis_labels(y_axis, trace_positions(trace, "y", values.shape[0]), counted=True,
                           language=language)
        cols = axis_labels(x_axis, trace_positions(trace, "x", values.shape[1]), counted=True,
                           language=language)
        rows, cols = _same_tokens(rows, cols, x_axis)
        weights = trace.get("zmin") == 0 and trace.get("zmax") == 1 and describe.looks_like_weights(values)
        grids.append(Grid(name, values, rows, cols, attention, weights))
    if any(g.attention for g in grids):  # only the first panel of a row titles its axes
        for g in grids:
            g.attention = True
    return grids


def _same_tokens(rows: list[str], cols: list[str], x_axis: dict) -> tuple[list[str], list[str]]:
    """Self-attention's keys are its queries: when the x axis had room for some labels only and
    each of those is the row label at the same position, the columns take the rows' labels."""
    shown = x_axis.get("ticktext")
    if len(rows) != len(cols) or shown is None or len(shown) >= len(cols):
        return rows, cols
    positions = values_of(x_axis["tickvals"])
    ticked = [(int(v) - 1, plain(t)) for v, t in zip(positions, shown, strict=False)]
    bare = [_bare(label) for label in rows]
    if ticked and all(0 <= i < len(rows) and bare[i] == text for i, text in ticked):
        return rows, list(rows)
    return rows, cols


def _bare(label: str) -> str:
    """'the (5)' -> 'the': a label without the position distinct_labels gave it."""
    return re.sub(r" \(\d+\)$", "", label)


def grid_sentence(grid: Grid, language: str = ENGLISH) -> str:
    """One panel in words: where a head's queries look, or a matrix's largest and smallest cell."""
    _ = translator(language)
    if grid.values is None:
        return _(PICTURE).format(rows=len(grid.rows), cols=len(grid.cols))
    if grid.weights:
        return weights_sentence(grid.values, grid.rows, grid.cols, language)
    if describe.looks_like_distances(grid.values):
        return distances_sentence(grid.values, grid.rows, language)
    facts = describe.matrix_facts(grid.values)
    if facts.largest is None:
        return _(NOTHING_SHOWN)
    at = CELL_AT_ATTENTION if grid.attention else CELL_AT

    def where(cell: describe.Cell) -> str:
        return at.format(row=quoted(grid.rows[cell.row]), col=quoted(grid.cols[cell.col]))

    high, low = format_number(facts.largest.value), format_number(facts.smallest.value)
    text = _(ALL_EQUAL).format(value=local_number(high, language)) if high == low else _(EXTREMES).format(
        high=local_number(high, language), high_at=where(facts.largest), low=local_number(low, language),
        low_at=where(facts.smallest))
    return text + (f" ({_(MASKED_CELLS).format(count=facts.masked)})" if facts.masked else "")


def distances_sentence(distances, names: list[str], language: str = ENGLISH) -> str:
    """"'head 1' and 'head 3' are furthest apart (0.81), 'head 1' and 'head 2' closest (0.05)"."""
    _ = translator(language)
    far, near = describe.pair_facts(distances)
    far_value, near_value = (local_number(format_number(cell.value), language) for cell in (far, near))
    if len(names) == 2:
        return _(ONE_PAIR).format(a=quoted(names[0]), b=quoted(names[1]), value=far_value)
    if far.value == near.value:
        return _(EVERY_PAIR).format(value=far_value)
    return _(DISTANCES).format(far_a=quoted(names[far.row]), far_b=quoted(names[far.col]), far=far_value,
                               near_a=quoted(names[near.row]), near_b=quoted(names[near.col]),
                               near=near_value)


def weights_sentence(weights, queries: list[str], keys: list[str], language: str = ENGLISH) -> str:
    """"'sat' attends most to 'cat' (0.67); 'the' is nearly flat". weights [n_q, n_k]."""
    _ = translator(language)
    facts = describe.weights_facts(weights)
    sharpest = facts.sharpest
    if sharpest is None:
        return _(NOTHING_SHOWN)
    flat = facts.flat
    if len(flat) == len(facts.rows):
        return _(ALL_FLAT)
    clauses = [_(FOCUS).format(query=quoted(queries[sharpest.row]), key=quoted(keys[sharpest.col]),
                               value=local_number(format_number(sharpest.value, near_one=True), language))]
    if flat:
        names = LIST_SEPARATOR.join(quoted(queries[r.row]) for r in flat)
        clauses.append(_(FLAT_ONE if len(flat) == 1 else FLAT_MANY).format(queries=names))
    return CLAUSE_SEPARATOR.join(clauses)


def grid_table(grid: Grid, language: str = ENGLISH) -> Table:
    _ = translator(language)
    if grid.values is None:
        return Table(grid.name, [], [], _(NO_NUMBERS).format(name=grid.name, rows=len(grid.rows),
                                                             cols=len(grid.cols)))
    masked = _(MASKED)
    cells = [[local_number(hover_number(v, near_one=grid.weights), language) if np.isfinite(v) else masked
              for v in row] for row in grid.values.tolist()]
    return Table(grid.name, list(grid.cols), list(zip(grid.rows, cells, strict=True)))
