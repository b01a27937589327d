"""Pure figure builders: arrays and labels in, plotly Figure out (numpy + plotly only).

Axes are integer positions counted from 1 with the labels as tick text, because plotly merges
repeated category labels ("the ... the"). Every text a builder is given (tokens, head names,
titles) goes through app.safe.chart_text before it reaches a label, title, legend or hover, so
"<b>x</b>" or "$x$" shows literally: callers pass plain text. Colours: Okabe-Ito and three more
for heads (each 3:1 on white), viridis for weights (0.25 and 0.33 look different), red-blue
centred at 0 for signed values (both readable with colour-blind vision). Numbers go through
format_number (cells) and hover_number (hover), so 2.1e-9 and 1 − 4.1e-9 never print as 0.00 and
1.00.

Legibility at every size: panels are laid out in pixels by app/charts/figure_layout.py (heights exact,
widths planned for a column of ``width`` px and checked FIT_SLACK narrower, many heads wrapped into
rows, numbers on cells only when all of them fit); large grids drop per-cell text, gaps and hover
strings and keep a few evenly spaced tick labels, so a 3 x 512 matrix paints as fast as a 3 x 3 one.
``large=True`` scales fonts and cells up for a projector.

Figures are assembled as plain dicts and returned as a ``FigureSpec``, a go.Figure that is only
its spec: plotly's validation, ``make_subplots`` and even go.Figure's constructor cost several
times the build itself, and the page draws a dozen figures on every rerun.
tests/app/test_figures.py checks the specs (and that they would pass validation), and draws
example H in Chromium.
"""

from __future__ import annotations

import base64
import math

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from app.charts.figure_layout import (
    FIT_SLACK,
    FULL_WIDTH,
    HALF_WIDTH,
    IMAGE_BLOCKS,
    IMAGE_FROM_CELLS,
    MAX_PANEL_ROWS_FOR_NUMBERS,
    MAX_PER_ROW,
    MAX_TICKS,
    MIN_GAPPED_CELL,
    MIN_PANEL_SLOT,
    MIN_PER_ROW_FOR_NUMBERS,
    NUMBERS_UP_TO,
    OUTER_MARGIN,
    REFERENCE_NUMBER,
    SHORT_COLORBAR,
    TICK_PAD,
    TICK_SLOT_PAD,
    TITLE_STANDOFF,
    Panel,
    Style,
    cell_numbers,
    compact,
    layout_of,
    numbers_fit,
    row_band,
    style_of,
    text_px,
    tick_positions,
)
from app.charts.figure_spec import FigureSpec, figure_spec
from app.charts.number_text import MINUS, format_number, hover_number
from app.charts.pictures import block_means, colour_mapped, png_bytes
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
# of app/charts/figure_cache.py's key, which gives it the reader's) and writes its words in it; the hover
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


NOTE_PICTURE = N_("No numbers on these cells: each grid is drawn as a picture (too many cells to print).")
NOTE_NO_ROOM = N_("No numbers on these cells: at this size they do not all fit. Hover a cell for its value, "
                  "or open 'Numbers as a table'.")
NOTE_LARGE = N_("No numbers on these cells: a grid with more than {count} rows or columns is drawn "
                "without them. Hover a cell for its value, or open 'Numbers as a table'.")


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


def _panel_figure(panels: list[Panel], *, per_row: int, zmin: float, zmax: float, colorscale, s: Style,
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
                 what="", near_one=False, language: str = ENGLISH) -> Panel:
    """A signed-value grid (embeddings, projections, outputs) as a panel. values [n_rows, n_cols]."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    texts, hovers = _strings(values, rows, cols, what=what, digits=digits, near_one=near_one,
                             attention=False, language=language)
    return Panel(values, rows, cols, title=title, row_labels=row_labels, texts=texts, hovers=hovers,
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
                         s=style_of(large), width=width, title=title, language=language)


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
    s = style_of(large)
    x_title, y_title = (_(KEY_AXIS), _(QUERY_AXIS)) if cols_are_tokens else ("", "")

    def panels(per_row: int) -> list[Panel]:
        first = [head % per_row == 0 for head in range(h)]  # titles and row labels once per row
        return [Panel(values[head], rows, cols, title=head_names[head], y_title=y_title,
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
            cells = layout_of(panels(balanced), balanced, s, width, title=title).cells
            if all(numbers_fit([[REFERENCE_NUMBER]], w, hgt, s) for w, hgt in cells):
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
                         s=style_of(large), width=width, language=language)


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
                         s=style_of(large), width=width, language=language)


BAND_LINE = 3  # px: outline of each head's band in the concatenation


def concat_bands(concat, q_tokens, n_heads: int, d_v: int, *, title="", large: bool = False,
                 width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """The concatenation [n_q, h*d_v] with each head's band outlined in its colour.

    Columns are labelled h1·1, h1·2, ... while they fit, else one label per band ("head 3").
    """
    concat = np.asarray(concat, dtype=float)  # [n_q, h * d_v]
    s = style_of(large)
    cols = [f"h{head + 1}·{j + 1}" for head in range(n_heads) for j in range(d_v)]
    panel = _value_panel(concat, position_labels(q_tokens), cols, language=language)
    room = (width - row_band(panel, s)) * FIT_SLACK
    if len(cols) * (text_px(cols[-1], s.tick_font) + TICK_SLOT_PAD) > room:  # per-column labels collide
        names = head_names_in(language, n_heads)
        keep = tick_positions(n_heads, int(room // (text_px(names[-1], s.tick_font) + TICK_SLOT_PAD)))
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
    s = style_of(large)
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
    keep = tick_positions(n_k, min(MAX_TICKS, int(room // (widest + TICK_SLOT_PAD))))
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
    panel = Panel(distances, names, names, texts=texts, hovers=hovers,
                   big_hover=f"%{{y}}, %{{x}}: {distance}")
    return _panel_figure([panel], per_row=1, zmin=0.0, zmax=top, colorscale=WEIGHT_SCALE, s=style_of(large),
                         width=width, language=language)


def entropy_bars(normalised, *, head_names=None, flat_at: float, large: bool = False,
                 width: int = HALF_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """Each head's normalised entropy for the chosen query; bars at or past flat_at say 'flat'."""
    normalised = np.asarray(normalised, dtype=float)  # [h]
    h = normalised.shape[0]
    s = style_of(large)
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
