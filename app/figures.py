"""Pure figure builders: arrays and labels in, plotly Figure out (numpy + plotly only).

Axes are integer positions counted from 1 with the labels as tick text, because plotly merges
repeated category labels ("the ... the"). Every text a builder is given (tokens, head names,
titles) goes through app.safe.chart_text before it reaches a label, title, legend or hover, so
"<b>x</b>" or "$x$" shows literally: callers pass plain text. Colours: Okabe-Ito and three more
for heads (each 3:1 on white), viridis for weights (0.25 and 0.33 look different), red-blue
centred at 0 for signed values (both readable with colour-blind vision). Numbers go through
format_number (cells) and hover_number (hover), so 2.1e-9 and 1 − 4.1e-9 never print as 0.00 and
1.00.

Legibility at every size: panels are laid out in pixels. Heights are exact; widths are planned for
a column of ``width`` px (FULL_WIDTH, the main column at a 1280-px window) and stretch with the real
one, and whatever must not collide is checked as if the chart were FIT_SLACK narrower. Many heads
wrap into rows of at most MAX_PER_ROW panels; row labels are drawn once per row of panels; long
titles wrap; numbers are printed on cells only when all of them fit; large grids drop per-cell
text, gaps and hover strings and keep a few evenly spaced tick labels, so a 3 x 512 matrix paints
as fast as a 3 x 3 one. ``large=True`` scales fonts and cells up for a projector.

Figures are assembled as plain dicts and returned as a ``FigureSpec``, a go.Figure that is only
its spec: plotly's validation, ``make_subplots`` and even go.Figure's constructor cost several
times the build itself, and the page draws a dozen figures on every rerun.
tests/app/test_figures.py checks the specs (and that they would pass validation), and draws
example H in Chromium.
"""

from __future__ import annotations

import base64
import html
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from app.figure_spec import FigureSpec, figure_spec
from app.number_text import MINUS, format_number, hover_number, scientific
from app.pictures import block_means, colour_mapped, png_bytes
from app.safe import chart_text
from course.i18n import ENGLISH, N_, translator

# One colour a head, every one 3:1 or more on white (a mark a reader needs, WCAG 1.4.11) and every two
# 11.7 or more apart (CAM02-UCS) as typical, protanopic, deuteranopic and tritanopic eyes see them:
# the five Okabe-Ito colours that stand 3:1, then three found by a search under those two rules
# (Okabe-Ito's orange, sky blue and yellow are 2.0, 2.3 and 1.2:1).
HEAD_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#962D69", "#695A3C", "#A578FF")
# Perceptually uniform and colour-blind safe; unlike cividis, whose middle is a flat grey, it
# changes hue as well as lightness, so 0.25 and 0.33 (CIELAB distance 17.7, cividis 10.4) differ.
WEIGHT_SCALE = get_colorscale("viridis")
SIGNED_SCALE = get_colorscale("RdBu_r")  # blue < 0 < red

# --- Words -------------------------------------------------------------------------------------
# Every word a builder writes on a chart, marked for the catalogues. A builder takes ``language`` (part
# of app/figure_cache.py's key, which gives it the reader's) and writes its words in it; the hover
# templates are the same messages with plotly's %{...} in the places of the values.
HEAD = N_("head {number}")
QUERY_AXIS, KEY_AXIS = N_("query"), N_("key")
WEIGHT_AXIS = N_("weight")
ATTENTION_HOVER = N_("query {query}, key {key}: {value}")
COLUMN_HOVER = N_("{row}, column {column}: {value}")
HEAD_KEY_HOVER = N_("{head}, key {key}: {value}")
PICTURE_HOVER = N_("row {row}, column {column}")
BLOCK_HOVER = N_("row around {row}, column {column}")
WEIGHT = N_("weight {number}")
SCORE = N_("score {number}")
VALUE = N_("value {number}")
DISTANCE = N_("distance {number}")
MASKED = N_("masked")
FLAT = N_("flat")
ENTROPY_HOVER = N_("{head}: entropy {number} of the maximum")
ENTROPY_AXIS = N_("entropy / max")
PLOTLY_Z = "%{z:.3g}"  # plotly writes the cell's value here (with the layout's separators)


def head_names_in(language: str, h: int) -> list[str]:
    """'head 1', 'head 2', ... in ``language``: the heads' names when the caller gives none."""
    return [translator(language)(HEAD).format(number=i + 1) for i in range(h)]


# --- Numbers ---------------------------------------------------------------------------------
def shape_title(name: str, shape: tuple[int, ...]) -> str:
    """A matrix's name and shape for a title: shape_title("Q₁", (3, 64)) -> "Q₁ [3 × 64]"."""
    return f"{name} [{' × '.join(str(int(n)) for n in shape)}]"


SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def head_titles(symbol: str, values) -> list[str]:
    """Each head's panel title for values [h, rows, cols]: 'A₁ [3 × 3]', 'A₂ [3 × 3]', ..."""
    return [shape_title(f"{symbol}{str(head + 1).translate(SUBSCRIPTS)}", values.shape[1:])
            for head in range(values.shape[0])]


# --- Labels ----------------------------------------------------------------------------------


plain = chart_text  # the name this module used; app.safe.chart_text is the one escaper


def head_colour(head: int) -> str:
    """The colour of head `head` (0-based), repeating after eight heads."""
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


HEAD_PATTERNS = ("", "/", ".", "x", "\\", "-", "+", "|")  # head 1 solid; with the colour, never colour alone


def head_pattern(head: int) -> dict:
    """A bar's fill pattern for head `head` (0-based): grouped bars name their heads by it as well as by
    colour (the legend shows both); drawn over the colour in black or white, whichever stands out."""
    return dict(shape=HEAD_PATTERNS[head % len(HEAD_PATTERNS)], fillmode="overlay", solidity=0.3)


def position_labels(tokens) -> list[str]:
    """Tick text for each position: the escaped token (integer positions keep repeats apart)."""
    return [chart_text(t) for t in tokens]


def dims(prefix: str, n: int) -> list[str]:
    """Column labels for a width-n axis: q1, q2, ..."""
    return [f"{prefix}{j + 1}" for j in range(n)]


def symmetric_range(values) -> float:
    """Half-width of a colour range centred at 0 that covers every finite value; 1 for all zeros
    (B − A of equal setups: a range of ±1e-9 labelled its colour bar "−1n … 1n")."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    largest = float(np.max(np.abs(finite))) if finite.size else 0.0
    return largest if largest > 0 else 1.0


def _hover_labels(labels: list[str]) -> list[str]:
    """Labels for hover text: a repeated label gets its position, "the (5)"."""
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [f"{label} ({i + 1})" if seen[label] > 1 else label for i, label in enumerate(labels)]


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


def _style(large: bool | Style) -> Style:
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


def _tick_positions(n: int, budget: int) -> list[int]:
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
class _Panel:
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


def _compact(shape: tuple[int, int]) -> bool:
    return max(shape) > COMPACT_SIDE or shape[0] * shape[1] > COMPACT_CELLS


def _row_band(panel: _Panel, s: Style) -> float:
    """Pixels left of a panel for its row labels and y title (0 when it shows none)."""
    if not panel.row_labels:
        return 0.0
    widest = max((text_px(r, s.tick_font) for r in panel.rows), default=0.0)
    return widest + TICK_LEN + TICK_PAD + (s.tick_font + TICK_PAD if panel.y_title else 0)


def _spill(label: str, cell_w: float, s: Style) -> float:
    """How far a horizontal tick label centred on an edge cell reaches past the panel's edge."""
    return max(0.0, text_px(label, s.tick_font) / 2 - cell_w / 2)


def _x_ticks(panel: _Panel, width: float, s: Style) -> tuple[list, list, int, float]:
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
        positions, angle = _tick_positions(n, budget), 0
    text = [panel.cols[p] for p in positions]
    band = (max(sizes[p] for p in positions) if angle else s.tick_font) + TICK_LEN + TICK_PAD
    return [p + 1 for p in positions], text, angle, band


def _y_ticks(panel: _Panel, height: float, s: Style) -> tuple[list, list]:
    """Tick values (1-based) and text of a panel's rows: every row while the labels fit, else thinned."""
    n = len(panel.rows)
    budget = min(MAX_TICKS, int(height // (s.tick_font + ROW_LABEL_AIR)))
    positions = _tick_positions(n, budget) if n > 1 else [0]
    return [p + 1 for p in positions], [panel.rows[p] for p in positions]


def _wrapped(text: str) -> str:
    """A near-one number on two lines: "1 −<br>4.1e-9"."""
    return text.replace(f" {MINUS} ", f" {MINUS}<br>").replace(" + ", " +<br>")


def _numbers_fit(texts: list[list[str]], cell_w: float, cell_h: float, s: Style) -> bool:
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


def _plan(panels: list[_Panel], per_row: int, s: Style, width: int, *, title: str = "",
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


def _panel_key(p: _Panel) -> tuple:
    """Everything of a panel its layout depends on: its grid's shape, never its numbers."""
    ticks = None if p.col_ticks is None else (tuple(p.col_ticks[0]), tuple(p.col_ticks[1]))
    return (p.values.shape, tuple(p.rows), tuple(p.cols), p.title, p.x_title, p.y_title, p.row_labels, ticks)


def _planned(panels: list[_Panel], per_row: int, s: Style, width: int, *, title: str = "",
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
    bands = [max(_row_band(p, s) for p in column) for column in columns]
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


def _numbers(panels: list[_Panel], plan: _Plan, s: Style) -> list[list[list[str]]] | None:
    """The cell texts to print, per panel: all panels or none (one figure reads one way). Too wide
    as they are, they are wrapped (1 −<br>4.1e-9), then shortened (−17.3); the hover keeps them all."""
    if any(p.texts is None for p in panels):
        return None
    for form in (lambda t: t, _wrapped, _shorter, lambda t: _wrapped(_shorter(t))):
        texts = [[[form(t) for t in row] for row in p.texts] for p in panels]
        if all(_numbers_fit(t, w, h, s) for t, (w, h) in zip(texts, plan.cells, strict=True)):
            return texts
    return None


NOTE_PICTURE = N_("No numbers on these cells: each grid is drawn as a picture (too many cells to print).")
NOTE_NO_ROOM = N_("No numbers on these cells: at this size they do not all fit. Hover a cell for its value, "
                  "or open 'Numbers as a table'.")
NOTE_LARGE = N_("No numbers on these cells: a grid with more than {count} rows or columns is drawn "
                "without them. Hover a cell for its value, or open 'Numbers as a table'.")


def figure_language(fig) -> str:
    """The language a figure's words are written in (a builder given one records it in the layout's
    ``meta``; English figures carry none, as before)."""
    meta = fig["layout"].get("meta") if hasattr(fig, "__getitem__") else None
    return meta.get("language", ENGLISH) if isinstance(meta, dict) else ENGLISH


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


def _panel_figure(panels: list[_Panel], *, per_row: int, zmin: float, zmax: float, colorscale, s: Style,
                  width: int, title: str = "", colorbar: bool = True, shapes=None,
                  language: str = ENGLISH) -> FigureSpec:
    """One heatmap trace per panel on a shared colour range; one colour bar by the first row."""
    plan = _plan(panels, per_row, s, width, title=title, colorbar=colorbar)
    numbers = _numbers(panels, plan, s)
    if numbers is None:  # no room for numbers: cells need only be tall enough for a row label
        plan = _plan(panels, per_row, s, width, title=title, colorbar=colorbar, numbers=False)
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
            p, bar_only = _Panel(np.array([[zmin, zmax]]), [], []), True  # for its colour bar alone
        trace = dict(type="heatmap", z=p.values.astype(np.float32), x0=1, dx=1, y0=1, dy=1, zmin=zmin,
                     zmax=zmax, colorscale=colorscale, showscale=colorbar and index == len(panels) - 1,
                     xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        if numbers is not None:
            trace.update(text=numbers[index], texttemplate="%{text}", textfont=dict(size=s.cell_font))
        if not _compact(p.shape) and min(cell) >= MIN_GAPPED_CELL:
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
                                         ticktext=[f"{v:.2g}".replace("-", MINUS) for v in ends])
        data.append(trace)
    return figure_spec(data, _recorded(plan.layout, language))


def _recorded(layout: dict, language: str) -> dict:
    """The layout with the language of its words in ``meta`` (read by numbers_note); English: as it was."""
    return layout if language == ENGLISH else {**layout, "meta": {"language": language}}


def _strings(values: np.ndarray, rows: list[str], cols: list[str], *, what: str, digits: int,
             near_one: bool, attention: bool, language: str = ENGLISH) -> tuple[list | None, list | None]:
    """Cell numbers and hover lines of a small grid (None, None for a large one). values [r, c].

    Hover: "query the, key cat: weight 0.6698" for attention grids, "le, q3: 0.1234" otherwise;
    a NaN cell is "masked" (blank on the cell). ``what``: the value's message ("weight {number}"),
    or "" for the number alone.
    """
    if max(values.shape) > NUMBERS_UP_TO:
        return None, None
    _ = translator(language)
    rows, cols = _hover_labels(rows), _hover_labels(cols)
    cell = _(ATTENTION_HOVER) if attention else "{query}, {key}: {value}"
    value, masked = (_(what) if what else "{number}"), _(MASKED)
    texts, hovers = [], []
    for r, line in zip(rows, values.tolist(), strict=True):
        texts.append([format_number(v, digits, near_one=near_one) for v in line])
        hovers.append([cell.format(query=r, key=c, value=masked if math.isnan(v)
                                   else value.format(number=hover_number(v, near_one=near_one)))
                       for c, v in zip(cols, line, strict=True)])
    return texts, hovers


def _column_hover(what: str, language: str) -> str:
    """A large grid's hover template: "%{y}, column %{x}: weight %{z:.3g}"."""
    _ = translator(language)
    value = _(what).format(number=PLOTLY_Z) if what else PLOTLY_Z
    return _(COLUMN_HOVER).format(row="%{y}", column="%{x}", value=value)


def _value_panel(values, rows: list[str], cols: list[str], *, title="", digits=2, row_labels=True,
                 what="", near_one=False, language: str = ENGLISH) -> _Panel:
    """A signed-value grid (embeddings, projections, outputs) as a panel. values [n_rows, n_cols]."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    texts, hovers = _strings(values, rows, cols, what=what, digits=digits, near_one=near_one,
                             attention=False, language=language)
    return _Panel(values, rows, cols, title=title, row_labels=row_labels, texts=texts, hovers=hovers,
                  big_hover=_column_hover(what, language))


# --- Public builders -------------------------------------------------------------------------


def matrix_heatmap(values, row_labels, col_labels, *, title="", digits=2, large: bool = False,
                   width: int = HALF_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """A labelled matrix (embeddings, projections, outputs): signed values, red-blue centred at 0.

    values [n_rows, n_cols]; `width` is the column width the figure is planned for (px).
    """
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    rows, cols = position_labels(row_labels), position_labels(col_labels)
    bound = symmetric_range(values)
    panel = _value_panel(values, rows, cols, digits=digits, language=language)
    return _panel_figure([panel], per_row=1, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                         s=_style(large), width=width, title=title, language=language)


KINDS = {  # kind -> (the value's message in the hover, colours); weights on a fixed 0..1 range
    "weights": (WEIGHT, WEIGHT_SCALE),
    "scores": (SCORE, SIGNED_SCALE),
    "signed": ("", SIGNED_SCALE),
}


def head_grids(values, row_tokens, col_labels, *, kind: str, head_names=None, title="",
               cols_are_tokens: bool = True, mask=None, large: bool = False,
               width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """One panel per head, all on one colour scale, in rows of at most four. values [h, n_rows, n_cols].

    kind "weights": 0..1 on viridis; "scores" or "signed": red-blue centred at 0, one range
    for all heads. mask None or bool [n_rows, n_cols] (True = may attend): masked cells, and
    -inf scores, are NaN, drawn blank and say "masked" in the hover, in every kind.
    Row labels are drawn on the first panel of each row only (every head has the same rows).
    """
    values = np.asarray(values)
    keep = np.float32 if values.dtype == np.float32 else float  # a long sequence's grids stay float32
    values = np.array(values, dtype=keep)  # [h, n_rows, n_cols]
    if kind not in KINDS:
        raise ValueError(f"kind must be 'weights', 'scores' or 'signed', got {kind!r}")
    values[np.isinf(values)] = np.nan
    if mask is not None:
        values[:, ~np.broadcast_to(np.asarray(mask, dtype=bool), values.shape[1:])] = np.nan
    h = values.shape[0]
    head_names = list(head_names or head_names_in(language, h))
    what, scale = KINDS[kind]
    if kind == "weights":
        zmin, zmax = 0.0, 1.0
    else:
        bound = symmetric_range(values)
        zmin, zmax = -bound, bound
    rows, cols = position_labels(row_tokens), position_labels(col_labels)
    _ = translator(language)
    if cols_are_tokens:
        big_hover = _(ATTENTION_HOVER).format(query="%{y}", key="%{x}",
                                              value=_(what or VALUE).format(number=PLOTLY_Z))
    else:
        big_hover = _column_hover(what, language)
    strings = [_strings(values[head], rows, cols, what=what, digits=2, near_one=kind == "weights",
                        attention=cols_are_tokens, language=language) for head in range(h)]
    s = _style(large)
    x_title, y_title = (_(KEY_AXIS), _(QUERY_AXIS)) if cols_are_tokens else ("", "")

    def panels(per_row: int) -> list[_Panel]:
        first = [head % per_row == 0 for head in range(h)]  # titles and row labels once per row
        return [_Panel(values[head], rows, cols, title=head_names[head], y_title=y_title,
                       x_title=x_title if first[head] else "", row_labels=first[head], texts=texts,
                       hovers=hovers, big_hover=big_hover) for head, (texts, hovers) in enumerate(strings)]

    # The most panels per row, unless fewer (in at most MAX_PANEL_ROWS_FOR_NUMBERS rows) let a number
    # like REFERENCE_NUMBER fit on the cells. The choice depends on the shape only, so the scores,
    # scaled scores and weights of one setup line up panel for panel; each figure then prints its
    # own numbers if they all fit, else leaves them to the hover.
    per_row = min(h, MAX_PER_ROW, max(1, int(width // MIN_PANEL_SLOT)))  # a phone's column: one a row
    if strings[0][0] is not None:
        fewest = max(min(h, MIN_PER_ROW_FOR_NUMBERS), math.ceil(h / MAX_PANEL_ROWS_FOR_NUMBERS))
        for attempt in range(per_row, fewest - 1, -1):
            balanced = math.ceil(h / math.ceil(h / attempt))  # 5 heads: 3 + 2, not 4 + 1
            cells = _plan(panels(balanced), balanced, s, width, title=title).cells
            if all(_numbers_fit([[REFERENCE_NUMBER]], w, hgt, s) for w, hgt in cells):
                per_row = balanced
                break
    return _panel_figure(panels(per_row), per_row=per_row, zmin=zmin, zmax=zmax, colorscale=scale, s=s,
                         width=width, title=title, language=language)


def qkv_panels(q, k, v, q_tokens, k_tokens, *, titles=None, large: bool = False,
               width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """One head's Q [n_q, d_k], K [n_k, d_k] and V [n_k, d_v] side by side, one signed scale.

    Q shows the query tokens; K shows the key tokens only when they differ (cross-attention);
    V always shares K's rows. titles: three panel titles, by default "Q [3 × 64]", ...
    """
    q, k, v = (np.asarray(m, dtype=float) for m in (q, k, v))  # [n_q, d_k], [n_k, d_k], [n_k, d_v]
    q_rows, k_rows = position_labels(q_tokens), position_labels(k_tokens)
    own_keys = k_rows != q_rows
    titles = titles or [shape_title(name, m.shape) for name, m in zip("QKV", (q, k, v), strict=True)]
    per_row = max(1, min(3, int(width // MIN_PANEL_SLOT)))  # a phone's column: one a row, each labelled
    parts = ((q, q_rows, "q", True), (k, k_rows, "k", own_keys or per_row < 3), (v, k_rows, "v", per_row < 3))
    panels = [_value_panel(m, rows, dims(prefix, m.shape[1]), title=name, row_labels=show, language=language)
              for name, (m, rows, prefix, show) in zip(titles, parts, strict=True)]
    bound = symmetric_range(np.concatenate([q.ravel(), k.ravel(), v.ravel()]))
    return _panel_figure(panels, per_row=per_row, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                         s=_style(large), width=width, language=language)


def side_by_side(left, right, row_labels, *, left_title, right_title, large: bool = False,
                 width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """Two matrices with the same rows, e.g. the output next to the input, on one shared scale.

    left [n, d_left], right [n, d_right]; the rows are labelled once, on the left panel.
    """
    pair = [np.asarray(left, dtype=float), np.asarray(right, dtype=float)]
    rows = position_labels(row_labels)
    bound = symmetric_range(np.concatenate([m.ravel() for m in pair]))
    per_row = max(1, min(2, int(width // MIN_PANEL_SLOT)))  # a phone's column: one a row, each labelled
    panels = [_value_panel(m, rows, dims("d", m.shape[1]), title=name, row_labels=i == 0 or per_row < 2,
                           language=language)
              for i, (m, name) in enumerate(zip(pair, (left_title, right_title), strict=True))]
    return _panel_figure(panels, per_row=per_row, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                         s=_style(large), width=width, language=language)


BAND_LINE = 3  # px: outline of each head's band in the concatenation


def concat_bands(concat, q_tokens, n_heads: int, d_v: int, *, title="", large: bool = False,
                 width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """The concatenation [n_q, h*d_v] with each head's band outlined in its colour.

    Columns are labelled h1·1, h1·2, ... while they fit, else one label per band ("head 3").
    """
    concat = np.asarray(concat, dtype=float)  # [n_q, h * d_v]
    s = _style(large)
    cols = [f"h{head + 1}·{j + 1}" for head in range(n_heads) for j in range(d_v)]
    panel = _value_panel(concat, position_labels(q_tokens), cols, language=language)
    room = (width - _row_band(panel, s)) * FIT_SLACK
    if len(cols) * (text_px(cols[-1], s.tick_font) + TICK_SLOT_PAD) > room:  # per-column labels collide
        names = head_names_in(language, n_heads)
        keep = _tick_positions(n_heads, int(room // (text_px(names[-1], s.tick_font) + TICK_SLOT_PAD)))
        panel.col_ticks = ([head * d_v + (d_v + 1) / 2 for head in keep], [names[head] for head in keep])
    bound = symmetric_range(concat)
    bands = [dict(type="rect", x0=head * d_v + 0.5, x1=(head + 1) * d_v + 0.5, y0=0.5,
                  y1=concat.shape[0] + 0.5, line=dict(color=head_colour(head), width=BAND_LINE))
             for head in range(n_heads)]
    return _panel_figure([panel], per_row=1, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE, s=s,
                         width=width, title=title, shapes=bands, language=language)


LEGEND_ITEM = 40  # px of a legend entry besides its text (symbol and spacing)


def _bar_layout(s: Style, top: float = 0) -> dict:
    """Layout of a bar chart: plot height s.bar_height; `top` px above it for a legend or labels."""
    font = dict(size=s.tick_font)
    bottom = 2 * (s.tick_font + TICK_PAD) + TITLE_STANDOFF + OUTER_MARGIN  # tick labels, axis title
    left = text_px("0.8", s.tick_font) + s.tick_font + TITLE_STANDOFF + 2 * TICK_PAD  # ticks, axis title
    return dict(template={}, height=int(s.bar_height + top + bottom + OUTER_MARGIN),
                margin=dict(l=int(left), r=OUTER_MARGIN, t=int(OUTER_MARGIN + top), b=int(bottom)),
                font=font, hoverlabel=dict(font=font))


def query_bars(weights, query: int, k_tokens, *, head_names=None, large: bool = False,
               width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """Every head's attention row for one query as grouped bars. weights [h, n_q, n_k]."""
    weights = np.asarray(weights, dtype=float)  # [h, n_q, n_k]
    h, _, n_k = weights.shape
    s = _style(large)
    head_names = position_labels(head_names or head_names_in(language, h))
    _ = translator(language)
    hover, weight = _(HEAD_KEY_HOVER), _(WEIGHT)
    cols = position_labels(k_tokens)
    keys = _hover_labels(cols)
    positions = np.arange(1, n_k + 1, dtype=np.int32)  # [n_k], 1-based like the heatmaps
    data = [dict(type="bar", x=positions, y=weights[head, query].astype(np.float32),
                 name=head_names[head], marker=dict(color=head_colour(head), pattern=head_pattern(head)),
                 hovertext=[hover.format(head=head_names[head], key=key,
                                         value=weight.format(number=hover_number(w, near_one=True)))
                           for key, w in zip(keys, weights[head, query].tolist(), strict=True)],
                 hovertemplate="%{hovertext}<extra></extra>")
            for head in range(h)]
    item = max(text_px(name, s.tick_font) for name in head_names) + LEGEND_ITEM
    legend_lines = math.ceil(h / max(1, int((width - 2 * OUTER_MARGIN) // item)))
    legend = legend_lines * (s.tick_font + TICK_PAD) + TICK_PAD
    layout = _bar_layout(s, top=legend)
    widest = max((text_px(c, s.tick_font) for c in cols), default=0.0)
    room = (width - layout["margin"]["l"] - OUTER_MARGIN) * FIT_SLACK
    keep = _tick_positions(n_k, min(MAX_TICKS, int(room // (widest + TICK_SLOT_PAD))))
    font = dict(size=s.tick_font)
    layout.update(barmode="group", legend=dict(orientation="h", x=0, y=1, yanchor="bottom", font=font),
                  xaxis=dict(tickmode="array", tickvals=[p + 1 for p in keep],
                            ticktext=[cols[p] for p in keep], tickfont=font,
                            title=dict(text=_(KEY_AXIS), font=font)),
                  yaxis=dict(range=[0, 1], tickfont=font, title=dict(text=_(WEIGHT_AXIS), font=font)))
    return figure_spec(data, _recorded(layout, language))


def disagreement_heatmap(distances, *, metric: str, head_names=None, large: bool = False,
                         width: int = HALF_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """The head x head distance matrix for one query. distances [h, h]; 0 to the metric's maximum."""
    distances = np.asarray(distances, dtype=float)  # [h, h]
    h = distances.shape[0]
    names = position_labels(head_names or head_names_in(language, h))
    top = {"l2": float(np.sqrt(2.0)), "js": 1.0, "tv": 1.0}[metric]
    texts, hovers = _strings(distances, names, names, what=DISTANCE, digits=3, near_one=False,
                             attention=False, language=language)
    distance = translator(language)(DISTANCE).format(number=PLOTLY_Z)
    panel = _Panel(distances, names, names, texts=texts, hovers=hovers,
                   big_hover=f"%{{y}}, %{{x}}: {distance}")
    return _panel_figure([panel], per_row=1, zmin=0.0, zmax=top, colorscale=WEIGHT_SCALE, s=_style(large),
                         width=width, language=language)


def entropy_bars(normalised, *, head_names=None, flat_at: float, large: bool = False,
                 width: int = HALF_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """Each head's normalised entropy for the chosen query; bars at or past flat_at say 'flat'."""
    normalised = np.asarray(normalised, dtype=float)  # [h]
    h = normalised.shape[0]
    s = _style(large)
    names = position_labels(head_names or head_names_in(language, h))
    _ = translator(language)
    font = dict(size=s.tick_font)
    data = [dict(type="bar", x=names, y=normalised.astype(np.float32),
                 marker=dict(color=[head_colour(i) for i in range(h)]),
                 text=[_(FLAT) if value >= flat_at else "" for value in normalised], textposition="outside",
                 textfont=font, cliponaxis=False,
                 hovertemplate=_(ENTROPY_HOVER).format(head="%{x}", number="%{y:.3f}") + "<extra></extra>")]
    layout = _bar_layout(s, top=s.tick_font + TICK_PAD)
    widest = max((text_px(n, s.tick_font) for n in names), default=0.0)
    upright = h * (widest + TICK_SLOT_PAD) > (width - layout["margin"]["l"]) * FIT_SLACK
    if upright:  # head names would collide side by side
        layout["height"] += int(widest)
        layout["margin"]["b"] += int(widest)
    layout.update(xaxis=dict(tickfont=font, tickangle=-90 if upright else 0),
                  yaxis=dict(range=[0, 1.15], tickfont=font, title=dict(text=_(ENTROPY_AXIS), font=font)),
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=flat_at, y1=flat_at,
                               line=dict(dash="dot"))])
    return figure_spec(data, _recorded(layout, language))
