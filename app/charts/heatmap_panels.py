"""Heatmap panels made into one figure: a small grid's cell numbers and hover lines, a large one's
hover template, a grid too large for cells drawn as a picture, the panels on one shared colour range
with one colour bar, and the note that says why a grid's cells carry no numbers.
app/charts/figures.py draws every heatmap through ``panel_figure``.
"""

from __future__ import annotations

import base64
import math

import numpy as np
import plotly.graph_objects as go

from app.charts.figure_layout import (
    IMAGE_BLOCKS,
    IMAGE_FROM_CELLS,
    MIN_GAPPED_CELL,
    NUMBERS_UP_TO,
    SHORT_COLORBAR,
    Panel,
    Style,
    cell_numbers,
    compact,
    layout_of,
)
from app.charts.figure_spec import FigureSpec, figure_spec
from app.charts.figure_style import figure_language, hover_labels, recorded
from app.charts.number_text import MINUS, format_number, hover_number
from app.charts.pictures import block_means, colour_mapped, png_bytes
from course.i18n import ENGLISH, N_, localized_number_text, translator

# --- Words -------------------------------------------------------------------------------------
ATTENTION_HOVER = N_("query {query}, key {key}: {value}")
COLUMN_HOVER = N_("{row}, column {column}: {value}")
PICTURE_HOVER = N_("row {row}, column {column}")
BLOCK_HOVER = N_("row around {row}, column {column}")
MASKED = N_("masked")
PLOTLY_Z = "%{z:.3g}"  # plotly writes the cell's value here (with the layout's separators)

NOTE_PICTURE = N_("No numbers on these cells: each grid is drawn as a picture (too many cells to print).")
NOTE_NO_ROOM = N_("No numbers on these cells: at this size they do not all fit. Hover a cell for its value, "
                  "or open 'Numbers as a table'.")
NOTE_LARGE = N_("No numbers on these cells: a grid with more than {count} rows or columns is drawn "
                "without them. Hover a cell for its value, or open 'Numbers as a table'.")


def numbers_note(fig: go.Figure, language: str | None = None) -> str | None:
    """Why a grid's cells carry no numbers (None when they do, or when it is no grid), for a caption
    next to the chart: a figure prints all its numbers or none, so a reader must be told. In
    ``language``, by default the figure's own."""
    traces = [trace for trace in fig["data"] if trace["type"] in ("heatmap", "image")]
    if not traces or any("text" in trace for trace in traces):
        return None
    _ = translator(language or figure_language(fig))
    if any(trace["type"] == "image" for trace in traces):
        return _(NOTE_PICTURE)
    if any("hovertext" in trace for trace in traces):
        return _(NOTE_NO_ROOM)
    return _(NOTE_LARGE).format(count=NUMBERS_UP_TO)


def _image_trace(values: np.ndarray, zmin: float, zmax: float, colorscale, suffix: str,
                 language: str = ENGLISH) -> dict:
    """One panel as an image: block means (at most IMAGE_BLOCKS a side) coloured here."""
    factor = max(1, math.ceil(max(values.shape) / IMAGE_BLOCKS))
    shown = block_means(values, factor) if factor > 1 else values
    source = "data:image/png;base64," + base64.b64encode(png_bytes(colour_mapped(shown, zmin, zmax,
                                                                                 colorscale))).decode()
    centre = 1 + (factor - 1) / 2  # the first block's middle, in positions counted from 1
    where = translator(language)(BLOCK_HOVER if factor > 1 else PICTURE_HOVER)
    return dict(type="image", source=source, x0=centre, dx=factor, y0=centre, dy=factor,
                xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                hovertemplate=where.format(row="%{y:.0f}", column="%{x:.0f}") + "<extra></extra>")


def panel_figure(panels: list[Panel], *, per_row: int, zmin: float, zmax: float, colorscale, s: Style,
                 width: int, title: str = "", colorbar: bool = True, shapes=None,
                 language: str = ENGLISH) -> FigureSpec:
    """One heatmap trace per panel on a shared colour range; one colour bar by the first row."""
    plan = layout_of(panels, per_row, s, width, title=title, colorbar=colorbar)
    numbers = cell_numbers(panels, plan, s)
    if numbers is None:  # no room for numbers: cells need only be tall enough for a row label
        plan = layout_of(panels, per_row, s, width, title=title, colorbar=colorbar, numbers=False)
    if shapes:
        plan.layout["shapes"] = shapes
    data = []
    for index, (p, cell) in enumerate(zip(panels, plan.cells, strict=True)):
        suffix = str(index + 1) if index else ""
        bar_only = False
        if p.values.size > IMAGE_FROM_CELLS:  # numbers could not be read anyway; an image is far smaller
            data.append(_image_trace(p.values, zmin, zmax, colorscale, suffix, language))
            n_rows, n_cols = p.shape
            plan.layout[f"xaxis{suffix}"]["range"] = [0.5, n_cols + 0.5]
            plan.layout[f"yaxis{suffix}"].update(range=[n_rows + 0.5, 0.5], autorange=False,
                                                 scaleanchor=False)
            if not (colorbar and index == len(panels) - 1):
                continue
            p, bar_only = Panel(np.array([[zmin, zmax]]), [], []), True  # for its colour bar alone
        trace = dict(type="heatmap", z=p.values.astype(np.float32), x0=1, dx=1, y0=1, dy=1, zmin=zmin,
                     zmax=zmax, colorscale=colorscale, showscale=colorbar and index == len(panels) - 1,
                     xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        if numbers is not None:
            trace.update(text=numbers[index], texttemplate="%{text}", textfont=dict(size=s.cell_font))
        if not compact(p.shape) and min(cell) >= MIN_GAPPED_CELL:
            trace.update(xgap=s.cell_gap, ygap=s.cell_gap)
        if p.hovers is not None:
            trace.update(hovertext=p.hovers, hovertemplate="%{hovertext}<extra></extra>")
        else:  # large grids: per-cell strings would dominate the bytes sent
            trace.update(hovertemplate=p.big_hover + "<extra></extra>", hoverongaps=False)
        if bar_only:  # outside the axes' ranges, so only the colour bar shows
            trace.update(x0=-10, y0=-10, hoverinfo="skip")
        if trace["showscale"]:
            trace["colorbar"] = dict(
                x=plan.colorbar_x, xanchor="left", y=plan.colorbar_y, yanchor="top", lenmode="pixels",
                len=plan.colorbar_len, thickness=s.colorbar, outlinewidth=0, tickfont=dict(size=s.tick_font))
            if plan.colorbar_len < SHORT_COLORBAR:  # plotly's own ticks crowd or thin out to one
                ends = [zmin, (zmin + zmax) / 2, zmax]
                trace["colorbar"].update(tickmode="array", tickvals=ends,
                                         ticktext=[_tick(v, language) for v in ends])
        data.append(trace)
    return figure_spec(data, recorded(plan.layout, language))


def _tick(value: float, language: str) -> str:
    """A colour bar's tick as the language writes it: 0.71 / 0,71; −1.4 / −1,4."""
    return localized_number_text(f"{value:.2g}", language).replace("-", MINUS)


def cell_strings(values: np.ndarray, rows: list[str], cols: list[str], *, what: str, digits: int,
                 near_one: bool, attention: bool, language: str = ENGLISH) -> tuple[list | None, list | None]:
    """Cell numbers and hover lines of a small grid (None, None for a large one). values [r, c].

    Hover: "query the, key cat: weight 0.6698" for attention grids, "le, q3: 0.1234" otherwise;
    a NaN cell is "masked" (blank on the cell). ``what``: the value's message ("weight {number}"),
    or "" for the number alone.
    """
    if max(values.shape) > NUMBERS_UP_TO:
        return None, None
    _ = translator(language)
    rows, cols = hover_labels(rows), hover_labels(cols)
    cell = _(ATTENTION_HOVER) if attention else "{query}, {key}: {value}"
    value, masked = (_(what) if what else "{number}"), _(MASKED)
    texts, hovers = [], []
    for r, line in zip(rows, values.tolist(), strict=True):
        texts.append([format_number(v, digits, near_one=near_one) for v in line])
        hovers.append([cell.format(query=r, key=c, value=masked if math.isnan(v)
                                   else value.format(number=hover_number(v, near_one=near_one)))
                       for c, v in zip(cols, line, strict=True)])
    return texts, hovers


def column_hover(what: str, language: str) -> str:
    """A large grid's hover template: "%{y}, column %{x}: weight %{z:.3g}"."""
    _ = translator(language)
    value = _(what).format(number=PLOTLY_Z) if what else PLOTLY_Z
    return _(COLUMN_HOVER).format(row="%{y}", column="%{x}", value=value)


def value_panel(values, rows: list[str], cols: list[str], *, title="", digits=2, row_labels=True,
                what="", near_one=False, language: str = ENGLISH) -> Panel:
    """A signed-value grid (embeddings, projections, outputs) as a panel. values [n_rows, n_cols]."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    texts, hovers = cell_strings(values, rows, cols, what=what, digits=digits, near_one=near_one,
                                 attention=False, language=language)
    return Panel(values, rows, cols, title=title, row_labels=row_labels, texts=texts, hovers=hovers,
                  big_hover=column_hover(what, language))
