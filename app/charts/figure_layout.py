"""The pixel geometry of the app's figures: how large a cell, a tick label, a title and a panel are, and how
heads' panels are laid out in rows (pure numbers and text, no plotly).

app/charts/figures.py builds every heatmap through ``_planned``: heights are exact, widths are planned for a
column of ``width`` px (FULL_WIDTH, the main column at a 1280-px window) and checked as if the chart were
FIT_SLACK narrower; many heads wrap into rows of at most MAX_PER_ROW panels; numbers are printed on cells
only when all of them fit (``cell_numbers``); large grids keep a few evenly spaced tick labels. A layout is
planned once per shape and labels (``plan``, PLANS_KEPT): an edit changes a grid's numbers, not its
layout. ``large=True`` (LARGE) scales fonts and cells up for a projector.
"""

from __future__ import annotations

import html
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from app.charts.number_text import MINUS, scientific
from app.safe import chart_text

# --- Style -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Style:
    """Pixel sizes of one figure style: NORMAL, or LARGE for a projector at 1280 x 720."""

    cell_font: int  # numbers on cells
    tick_font: int  # tick labels, axis titles, legends, colour-bar ticks
    title_font: int  # panel titles (a figure title is 2 px larger)
    cell_min: int  # smallest cell height: a number and some air (cell_font + 16)
    cell_max: int  # tallest cell height, however wide the cells are
    max_panel: int  # tallest panel; more rows share it (numbers then usually drop out)
    panel_gap: int  # between panels of a row
    row_gap: int  # between rows of panels
    cell_gap: int  # white line between cells of small grids
    colorbar: int  # colour-bar thickness
    bar_height: int  # plot height of the bar charts


NORMAL = Style(cell_font=12, tick_font=12, title_font=14, cell_min=28, cell_max=48, max_panel=520,
               panel_gap=16, row_gap=10, cell_gap=1, colorbar=12, bar_height=240)
LARGE = Style(cell_font=20, tick_font=18, title_font=22, cell_min=40, cell_max=72, max_panel=640,
              panel_gap=24, row_gap=16, cell_gap=2, colorbar=18, bar_height=360)

# Streamlit's wide main column at a 1280-px window with the sidebar open measures 820 px; a
# half column 400. Widths are only estimates (the chart stretches to its column): they decide how
# many panels share a row, whether numbers fit on cells and how many tick labels an axis gets.
FULL_WIDTH = 820
HALF_WIDTH = 400
# Whatever must not collide (numbers on cells, neighbouring tick labels, labels between panels)
# is checked as if the chart were drawn this much narrower than planned: down to a 1100-px window.
FIT_SLACK = 0.8
CHAR_EM = 0.6  # estimated width of a character, in ems (generous for Source Sans)
WIDE_CHAR_EM = 1.0  # East Asian wide characters
NUMBER_EM = {".": 0.32, ",": 0.32, " ": 0.32, "-": 0.4, "e": 0.6, MINUS: 0.84, "+": 0.84, "∞": 0.84}
DIGIT_EM = 0.6  # any other character of a number (DejaVu's digits; Source Sans's are 0.5)


def tallest_cells_within(make, cell_heights, budget: int):
    """make(cell_max) for the tallest of cell_heights (tallest first) whose figure is at most
    ``budget`` px tall; the shortest's if none is. make builds the figure with cells of that height."""
    for cell_max in cell_heights:
        fig = make(cell_max)
        if fig["layout"]["height"] <= budget:
            break
    return fig


def style_of(large: bool | Style) -> Style:
    """NORMAL, LARGE, or a Style given as ``large`` (the presenter's, fitted to a 720-px screen)."""
    return large if isinstance(large, Style) else LARGE if large else NORMAL


def text_px(text: str, font: float) -> float:
    """Estimated pixel width of a label (escaped or not) at font size `font`."""
    raw = html.unescape(str(text))
    return font * sum(WIDE_CHAR_EM if unicodedata.east_asian_width(c) in ("W", "F") else CHAR_EM for c in raw)


def number_px(text: str, font: float) -> float:
    """Estimated pixel width of a formatted number such as "-1.25" or "1 − 4.1e-9"."""
    return font * sum(NUMBER_EM.get(c, DIGIT_EM) for c in text)


def _wrap(title: str, font: float, width: float) -> tuple[str, int]:
    """A title broken into lines (<br>) no wider than `width` px where it can be, and its line count.

    Lines break at spaces, never inside a bracketed shape such as "[3 × 64]".
    """
    words = re.findall(r"\[[^\]]*\]\S*|\S+", title)
    if text_px(title, font) <= width or len(words) < 2:
        return title, 1
    lines = [words[0]]
    for word in words[1:]:
        if text_px(f"{lines[-1]} {word}", font) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return "<br>".join(lines), len(lines)


# --- Ticks -----------------------------------------------------------------------------------

MAX_TICKS = 16  # at most this many tick labels on an axis, however many positions it has
TICK_SLOT_PAD = 12  # px of air per label when spacing thinned tick labels
LABEL_AIR = 4  # px at least between two neighbouring horizontal labels
NICE_STEPS = (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 250, 256, 500, 512, 1000, 1024)


def tick_positions(n: int, budget: int) -> list[int]:
    """0-based positions to label on an axis of n positions, at most `budget`, evenly spaced.

    Labels land on multiples of a round step, preferably one that divides n so that the last
    position is labelled too: d1, d64, d128, ..., d512.
    """
    budget = max(2, budget)
    if n <= budget:
        return list(range(n))
    steps = [*(s for s in NICE_STEPS if n % s == 0), *NICE_STEPS, math.ceil(n / (budget - 1))]
    for step in steps:
        positions = list(range(0, n, step)) if step < 4 else [0, *range(step - 1, n, step)]
        if len(positions) <= budget:
            return positions
    return [0, n - 1]


# --- Panels laid out in pixels ---------------------------------------------------------------

MAX_PER_ROW = 4  # panels in one row at most (16 heads: four rows)
MIN_PER_ROW_FOR_NUMBERS = 2  # wrap down to this many panels per row to fit the cell numbers,
MAX_PANEL_ROWS_FOR_NUMBERS = 3  # but not into more rows of panels than this (then: numbers in the hover)
REFERENCE_NUMBER = "0.00"  # head panels are arranged so that a number this wide fits on a cell
MAX_CELL_ASPECT = 2.5  # a cell is at most this many times wider than tall: few columns stay compact
CELL_TEXT_PAD = 4  # px of air around a number on its cell
LINE_HEIGHT = 1.25  # of a cell's text, in font sizes
TICK_PAD = 8  # px between tick labels and the cells
TICK_LEN = 5  # px: plotly's tick marks, outside the cells
ROW_LABEL_AIR = 4  # px: a row's height is at least its label's font size plus this
TITLE_STANDOFF = 10  # px between an axis's tick labels and its title ("key" under "is" read as "is key")
OUTER_MARGIN = 8  # px around the whole figure
TITLE_BAND_PAD = 10  # px above a row of panels besides its titles' font size
MIN_PLOT_WIDTH = 100  # px: the plot area assumed when the margins leave less
COLORBAR_PAD = 12  # px between the last panel and the colour bar
COLORBAR_MAX = 320  # px: a colour bar never runs longer than this
COLORBAR_LABEL_CHARS = 5  # "-12.5": room for the colour bar's tick labels
SHORT_COLORBAR = 160  # px: a shorter colour bar is labelled at its ends and middle only
MODEBAR_ROOM = 30  # px at the figure's top right kept for the modebar (two buttons, 26 px tall)
NUMBERS_UP_TO = 12  # numbers on cells and per-cell hover text while both sides are at most this
COMPACT_SIDE = 24  # above this many rows or columns, or
COMPACT_CELLS = 400  # this many cells, a panel is drawn compactly: no gaps between cells
MIN_GAPPED_CELL = 6  # px: narrower cells get no gaps (a 1 px gap would swallow them)
IMAGE_FROM_CELLS = 64 * 64  # a panel with more cells is sent as a PNG made here, not as numbers
IMAGE_BLOCKS = 256  # an image panel has at most this many blocks a side (larger grids: block means)
MIN_PANEL_SLOT = 180  # px of the column per panel at least: 4 heads a row at 820, 2 at 400, 1 on a phone
MIN_PICTURE_PX = 120  # px: a picture panel of more rows than MAX_TICKS is at least this tall


@dataclass
class Panel:
    """One heatmap of a figure and what to write around it. values [n_rows, n_cols]."""

    values: np.ndarray
    rows: list[str]  # escaped tick text per row
    cols: list[str]  # escaped tick text per column
    title: str = ""
    x_title: str = ""
    y_title: str = ""
    row_labels: bool = True  # False: a panel to the left shows the same rows
    texts: list[list[str]] | None = None  # cell numbers (small grids only)
    hovers: list[list[str]] | None = None  # per-cell hover text (small grids only)
    big_hover: str = "%{y}, column %{x}: %{z:.3g}"  # hover template when there are no strings (English)
    col_ticks: tuple[list[float], list[str]] | None = None  # own x ticks (1-based positions, text)

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape


def compact(shape: tuple[int, int]) -> bool:
    return max(shape) > COMPACT_SIDE or shape[0] * shape[1] > COMPACT_CELLS


def row_band(panel: Panel, s: Style) -> float:
    """Pixels left of a panel for its row labels and y title (0 when it shows none)."""
    if not panel.row_labels:
        return 0.0
    widest = max((text_px(r, s.tick_font) for r in panel.rows), default=0.0)
    return widest + TICK_LEN + TICK_PAD + (s.tick_font + TICK_PAD if panel.y_title else 0)


def _spill(label: str, cell_w: float, s: Style) -> float:
    """How far a horizontal tick label centred on an edge cell reaches past the panel's edge."""
    return max(0.0, text_px(label, s.tick_font) / 2 - cell_w / 2)


def _x_ticks(panel: Panel, width: float, s: Style) -> tuple[list, list, int, float]:
    """Tick values (1-based), tick text, angle and the pixel height of the x tick band."""
    if panel.col_ticks is not None:
        values, text = panel.col_ticks
        return list(values), list(text), 0, s.tick_font + TICK_LEN + TICK_PAD
    n = len(panel.cols)
    cell_w = width * FIT_SLACK / n
    sizes = [text_px(c, s.tick_font) for c in panel.cols]
    side_by_side = all((a + b) / 2 + LABEL_AIR <= cell_w for a, b in zip(sizes, sizes[1:], strict=False))
    if n <= MAX_TICKS and side_by_side:
        positions, angle = list(range(n)), 0
    elif n <= MAX_TICKS and cell_w >= s.tick_font + 2:  # every label fits when turned upright
        positions, angle = list(range(n)), -90
    else:
        budget = min(MAX_TICKS, int(width * FIT_SLACK // (max(sizes) + TICK_SLOT_PAD)))
        positions, angle = tick_positions(n, budget), 0
    text = [panel.cols[p] for p in positions]
    band = (max(sizes[p] for p in positions) if angle else s.tick_font) + TICK_LEN + TICK_PAD
    return [p + 1 for p in positions], text, angle, band


def _y_ticks(panel: Panel, height: float, s: Style) -> tuple[list, list]:
    """Tick values (1-based) and text of a panel's rows: every row while the labels fit, else thinned."""
    n = len(panel.rows)
    budget = min(MAX_TICKS, int(height // (s.tick_font + ROW_LABEL_AIR)))
    positions = tick_positions(n, budget) if n > 1 else [0]
    return [p + 1 for p in positions], [panel.rows[p] for p in positions]


def _wrapped(text: str) -> str:
    """A near-one number on two lines: "1 −<br>4.1e-9"."""
    return text.replace(f" {MINUS} ", f" {MINUS}<br>").replace(" + ", " +<br>")


def numbers_fit(texts: list[list[str]], cell_w: float, cell_h: float, s: Style) -> bool:
    """Every text (lines split at <br>) fits on its cell with some air."""
    lines = [line for row in texts for text in row for line in [text.split("<br>")]]
    wide = max((number_px(part, s.cell_font) for line in lines for part in line), default=0.0)
    tall = max((len(line) for line in lines), default=1) * LINE_HEIGHT * s.cell_font
    return wide + CELL_TEXT_PAD <= cell_w * FIT_SLACK and tall + CELL_TEXT_PAD / 2 <= cell_h


@dataclass
class _Plan:
    """Where each panel goes, from pixel sizes planned for the estimated width."""

    layout: dict
    cells: list[tuple[float, float]]  # per panel: estimated cell width and height, px
    colorbar_x: float  # paper x of the colour bar
    colorbar_len: float  # px
    colorbar_y: float = 1.0  # paper y of the colour bar's top: the first panels' top, below their titles


PLANS_KEPT = 1024  # layouts kept by what they depend on: an edit changes a grid's numbers, not its layout
_plans: OrderedDict[tuple, _Plan] = OrderedDict()
_plans_lock = threading.Lock()


def layout_of(panels: list[Panel], per_row: int, s: Style, width: int, *, title: str = "",
          colorbar: bool = True, numbers: bool = True) -> _Plan:
    """_planned(...), made once for panels of the same shapes, labels and titles: a copy each
    figure may change (it adds shapes and image ranges) without reaching the kept one."""
    key = (tuple(_panel_key(p) for p in panels), per_row, s, width, title, colorbar, numbers)
    with _plans_lock:
        kept = _plans.get(key)
        if kept is not None:
            _plans.move_to_end(key)
    if kept is None:
        kept = _planned(panels, per_row, s, width, title=title, colorbar=colorbar, numbers=numbers)
        with _plans_lock:
            _plans[key] = kept
            while len(_plans) > PLANS_KEPT:
                _plans.popitem(last=False)
    layout = {name: dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list)
              else value for name, value in kept.layout.items()}
    return replace(kept, layout=layout, cells=list(kept.cells))


def _panel_key(p: Panel) -> tuple:
    """Everything of a panel its layout depends on: its grid's shape, never its numbers."""
    ticks = None if p.col_ticks is None else (tuple(p.col_ticks[0]), tuple(p.col_ticks[1]))
    return (p.values.shape, tuple(p.rows), tuple(p.cols), p.title, p.x_title, p.y_title, p.row_labels, ticks)


def _planned(panels: list[Panel], per_row: int, s: Style, width: int, *, title: str = "",
             colorbar: bool = True, numbers: bool = True) -> _Plan:
    """Lay out panels in rows of `per_row`: x in fractions of the planned width, y in exact pixels.

    Each row of panels is [title band, panels top-aligned, x tick band]; columns of panels are
    separated by a gap that holds the right-hand panel's row labels, if it shows any, and the
    halves of the tick labels that stick out past the panels' edges. Cells are as tall as wide
    within [a floor, s.cell_max]; the floor is s.cell_min where numbers may be printed or the grid
    is a wide strip (3 x 512), else just enough for a row label.
    """
    n_cols_grid = min(per_row, len(panels))
    grid = [panels[i:i + per_row] for i in range(0, len(panels), per_row)]
    columns = [[row[c] for row in grid if c < len(row)] for c in range(n_cols_grid)]
    bands = [max(row_band(p, s) for p in column) for column in columns]
    widest_grid = max(p.shape[1] for p in panels)
    floor = s.cell_min if numbers or widest_grid > NUMBERS_UP_TO else s.tick_font + ROW_LABEL_AIR
    if any(p.values.size > IMAGE_FROM_CELLS for p in panels):  # a picture: square cells where they are
        tallest = max(p.shape[0] for p in panels)  # readable; never a strip (12 x 384: 16-px rows, not 0.5)
        floor = s.tick_font + ROW_LABEL_AIR if tallest <= MAX_TICKS else MIN_PICTURE_PX / tallest

    def panel_size(gaps, margin_l, margin_r) -> tuple[float, float]:  # cell height, panel width (px)
        slot = (max(width - margin_l - margin_r, MIN_PLOT_WIDTH) - sum(gaps)) / n_cols_grid
        cell_h = min(max(slot / widest_grid, floor), s.cell_max)  # square-ish cells
        return cell_h, min(slot, widest_grid * cell_h * MAX_CELL_ASPECT)

    bar = s.colorbar + text_px("0" * COLORBAR_LABEL_CHARS, s.tick_font) + OUTER_MARGIN if colorbar else 0
    gaps = [0.0] + [(s.panel_gap + band) / FIT_SLACK if band else s.panel_gap for band in bands[1:]]
    margin_l, margin_r = bands[0] + OUTER_MARGIN, bar + (COLORBAR_PAD if colorbar else OUTER_MARGIN)
    _, panel_w = panel_size(gaps, margin_l, margin_r)
    # Labels centred on the edge cells stick out; keep them off the neighbour and the colour bar.
    spill_l, spill_r = [], []
    for column in columns:
        cell_w = panel_w * FIT_SLACK / max(p.shape[1] for p in column)
        spill_l.append(max(_spill(p.cols[0], cell_w, s) for p in column))
        spill_r.append(max(_spill(p.cols[-1], cell_w, s) for p in column))
    gaps = [0.0] + [max(gaps[c], (spill_r[c - 1] + spill_l[c] + LABEL_AIR) / FIT_SLACK)
                    for c in range(1, n_cols_grid)]
    margin_l = max(margin_l, spill_l[0] + OUTER_MARGIN)
    colorbar_pad = max(COLORBAR_PAD, (spill_r[-1] + LABEL_AIR) / FIT_SLACK) if colorbar else 0
    margin_r = bar + colorbar_pad if colorbar else max(OUTER_MARGIN, spill_r[-1] + OUTER_MARGIN)
    cell_h, panel_w = panel_size(gaps, margin_l, margin_r)
    plot_w = max(width - margin_l - margin_r, MIN_PLOT_WIDTH)
    lefts = [sum(gaps[:c + 1]) + c * panel_w for c in range(n_cols_grid)]

    layout: dict = dict(template={}, annotations=[])  # no template: see _figure
    titles = [_wrap(chart_text(p.title), s.title_font, panel_w * FIT_SLACK) for p in panels]
    cells, blocks, top = [], [], 0.0
    for r, row in enumerate(grid):
        lines = max(titles[i][1] for i in range(r * per_row, r * per_row + len(row)))
        title_band = lines * LINE_HEIGHT * s.title_font + TITLE_BAND_PAD
        heights = [min(p.shape[0] * cell_h, s.max_panel) for p in row]
        ticks = [_x_ticks(p, panel_w, s) for p in row]
        x_band = max(band + (s.tick_font + TITLE_STANDOFF + TICK_PAD if p.x_title else 0)
                     for p, (*_, band) in zip(row, ticks, strict=True))
        panel_top = top + (title_band if any(p.title for p in row) else 0)
        blocks.append((panel_top, heights, ticks))
        cells += [(panel_w / p.shape[1], hgt / p.shape[0]) for p, hgt in zip(row, heights, strict=True)]
        top = panel_top + max(heights) + x_band + (s.row_gap if r < len(grid) - 1 else 0)
    title, title_lines = _wrap(chart_text(title), s.title_font + 2,
                               (width - margin_l - OUTER_MARGIN) * FIT_SLACK)
    margin_t = OUTER_MARGIN + (title_lines * LINE_HEIGHT * (s.title_font + 2) + 2 * TICK_PAD if title else 0)
    plot_h = top
    layout["height"] = int(math.ceil(margin_t + plot_h + OUTER_MARGIN))
    layout["margin"] = dict(l=int(margin_l), r=int(math.ceil(margin_r)), t=int(math.ceil(margin_t)),
                            b=OUTER_MARGIN, pad=0)
    if title:  # an annotation: plotly's own title drifts above the figure when it has two lines
        layout["annotations"].append(dict(
            text=title, x=0, xref="paper", xanchor="left", y=1, yref="paper", yanchor="bottom",
            yshift=TICK_PAD, align="left", showarrow=False, font=dict(size=s.title_font + 2)))

    index = 0
    for row, (panel_top, heights, ticks) in zip(grid, blocks, strict=True):
        for c, (p, hgt, (tickvals, ticktext, angle, _)) in enumerate(zip(row, heights, ticks, strict=True)):
            suffix = str(index + 1) if index else ""
            x0, x1 = lefts[c] / plot_w, (lefts[c] + panel_w) / plot_w
            y1, y0 = 1 - panel_top / plot_h, 1 - (panel_top + hgt) / plot_h
            font = dict(size=s.tick_font)
            layout[f"xaxis{suffix}"] = dict(
                domain=[max(x0, 0.0), min(x1, 1.0)], anchor=f"y{suffix}", tickmode="array", tickvals=tickvals,
                ticktext=ticktext, ticks="outside", ticklen=TICK_LEN, tickfont=font, showgrid=False,
                zeroline=False, title=dict(text=p.x_title, font=font, standoff=TITLE_STANDOFF))
            if angle:  # else plotly's own: level, or turned if a much narrower chart makes them collide
                layout[f"xaxis{suffix}"]["tickangle"] = angle
            yvals, ytext = _y_ticks(p, hgt, s)
            layout[f"yaxis{suffix}"] = dict(
                domain=[max(y0, 0.0), min(y1, 1.0)], anchor=f"x{suffix}", tickmode="array", tickvals=yvals,
                ticktext=ytext, showticklabels=p.row_labels, ticks="outside" if p.row_labels else "",
                ticklen=TICK_LEN, tickfont=font, showgrid=False, zeroline=False, autorange="reversed",
                title=dict(text=p.y_title if p.row_labels else "", font=font, standoff=4))
            if p.title:
                layout["annotations"].append(dict(
                    text=titles[index][0], x=(x0 + x1) / 2, y=y1, xref="paper", yref="paper",
                    xanchor="center", yanchor="bottom", yshift=2, showarrow=False,
                    font=dict(size=s.title_font)))
            index += 1
    right = (lefts[-1] + panel_w) / plot_w
    # The colour bar starts where the first panels do, and below the modebar: the figure's top right
    # corner stays free for it (it covered the bar's top label when the bar started at the top).
    bar_top = max(blocks[0][0], MODEBAR_ROOM - margin_t)
    return _Plan(layout, cells, min(right, 1.0) + colorbar_pad / plot_w,
                 min(plot_h - bar_top, COLORBAR_MAX), 1 - bar_top / plot_h)


SHORT_SIGNIFICANT = 3  # a number too wide for its cell is written to this many figures: −17.34 as −17.3


def _shorter_number(match: re.Match) -> str:
    text = match.group(0)
    if "e" in text:  # 4.6e-3 -> 5e-3
        return scientific(float(text), 1)
    whole, _, decimals = text.lstrip("-").partition(".")
    keep = max(0, min(len(decimals), SHORT_SIGNIFICANT - len(whole.lstrip("0") or "")))
    return f"{float(text):.{keep}f}" if keep < len(decimals) else text


def _shorter(text: str) -> str:
    """A cell's number in fewer characters, still never 0 for a nonzero value: −17.34 -> −17.3,
    4.6e-3 -> 5e-3, 1 − 4.1e-9 -> 1 − 4e-9; 0.67 stays."""
    plain = text.replace(MINUS, "-") if text.startswith(MINUS) else text
    short = re.sub(r"-?\d+\.\d+(?:e-?\d+)?|-?\d+e-?\d+", _shorter_number, plain)
    return short.replace("-", MINUS, 1) if text.startswith(MINUS) else short


def cell_numbers(panels: list[Panel], plan: _Plan, s: Style) -> list[list[list[str]]] | None:
    """The cell texts to print, per panel: all panels or none (one figure reads one way). Too wide
    as they are, they are wrapped (1 −<br>4.1e-9), then shortened (−17.3); the hover keeps them all."""
    if any(p.texts is None for p in panels):
        return None
    for form in (lambda t: t, _wrapped, _shorter, lambda t: _wrapped(_shorter(t))):
        texts = [[[form(t) for t in row] for row in p.texts] for p in panels]
        if all(numbers_fit(t, w, h, s) for t, (w, h) in zip(texts, plan.cells, strict=True)):
            return texts
    return None



