"""Pure heatmap builders: arrays and labels in, plotly Figure out (numpy + plotly only): a labelled
matrix, one panel per head (weights, scores or signed values), one head's Q, K and V, two matrices
side by side, the concatenation with each head's band outlined, and the heads' distances. Each plans
its panels and draws them through app/charts/heatmap_panels.py; the bars are in bar_figures.py, and
what every builder shares (colours, labels, words) is in figure_style.py.

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

import math

import numpy as np

from app.charts.figure_layout import (
    FIT_SLACK,
    FULL_WIDTH,
    HALF_WIDTH,
    MAX_PANEL_ROWS_FOR_NUMBERS,
    MAX_PER_ROW,
    MIN_PANEL_SLOT,
    MIN_PER_ROW_FOR_NUMBERS,
    REFERENCE_NUMBER,
    TICK_SLOT_PAD,
    Panel,
    layout_of,
    numbers_fit,
    row_band,
    style_of,
    text_px,
    tick_positions,
)
from app.charts.figure_spec import FigureSpec
from app.charts.figure_style import (
    KEY_AXIS,
    QUERY_AXIS,
    SIGNED_SCALE,
    WEIGHT,
    WEIGHT_SCALE,
    dims,
    head_colour,
    head_names_in,
    position_labels,
    shape_title,
    symmetric_range,
)
from app.charts.heatmap_panels import (
    ATTENTION_HOVER,
    PLOTLY_Z,
    cell_strings,
    column_hover,
    panel_figure,
    value_panel,
)
from course.i18n import ENGLISH, N_, translator

# --- Words -------------------------------------------------------------------------------------
SCORE = N_("score {number}")
VALUE = N_("value {number}")
DISTANCE = N_("distance {number}")


# --- Public builders -------------------------------------------------------------------------


def matrix_heatmap(values, row_labels, col_labels, *, title="", digits=2, large: bool = False,
                   width: int = HALF_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """A labelled matrix (embeddings, projections, outputs): signed values, red-blue centred at 0.

    values [n_rows, n_cols]; `width` is the column width the figure is planned for (px).
    """
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    rows, cols = position_labels(row_labels), position_labels(col_labels)
    bound = symmetric_range(values)
    panel = value_panel(values, rows, cols, digits=digits, language=language)
    return panel_figure([panel], per_row=1, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
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
        big_hover = column_hover(what, language)
    strings = [cell_strings(values[head], rows, cols, what=what, digits=2, near_one=kind == "weights",
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
    return panel_figure(panels(per_row), per_row=per_row, zmin=zmin, zmax=zmax, colorscale=scale, s=s,
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
    panels = [value_panel(m, rows, dims(prefix, m.shape[1]), title=name, row_labels=show, language=language)
              for name, (m, rows, prefix, show) in zip(titles, parts, strict=True)]
    bound = symmetric_range(np.concatenate([q.ravel(), k.ravel(), v.ravel()]))
    return panel_figure(panels, per_row=per_row, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
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
    panels = [value_panel(m, rows, dims("d", m.shape[1]), title=name, row_labels=i == 0 or per_row < 2,
                          language=language)
              for i, (m, name) in enumerate(zip(pair, (left_title, right_title), strict=True))]
    return panel_figure(panels, per_row=per_row, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
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
    panel = value_panel(concat, position_labels(q_tokens), cols, language=language)
    room = (width - row_band(panel, s)) * FIT_SLACK
    if len(cols) * (text_px(cols[-1], s.tick_font) + TICK_SLOT_PAD) > room:  # per-column labels collide
        names = head_names_in(language, n_heads)
        keep = tick_positions(n_heads, int(room // (text_px(names[-1], s.tick_font) + TICK_SLOT_PAD)))
        panel.col_ticks = ([head * d_v + (d_v + 1) / 2 for head in keep], [names[head] for head in keep])
    bound = symmetric_range(concat)
    bands = [dict(type="rect", x0=head * d_v + 0.5, x1=(head + 1) * d_v + 0.5, y0=0.5,
                  y1=concat.shape[0] + 0.5, line=dict(color=head_colour(head), width=BAND_LINE))
             for head in range(n_heads)]
    return panel_figure([panel], per_row=1, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE, s=s,
                        width=width, title=title, shapes=bands, language=language)


def disagreement_heatmap(distances, *, metric: str, head_names=None, large: bool = False,
                         width: int = HALF_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """The head x head distance matrix for one query. distances [h, h]; 0 to the metric's maximum."""
    distances = np.asarray(distances, dtype=float)  # [h, h]
    h = distances.shape[0]
    names = position_labels(head_names or head_names_in(language, h))
    top = {"l2": float(np.sqrt(2.0)), "js": 1.0, "tv": 1.0}[metric]
    texts, hovers = cell_strings(distances, names, names, what=DISTANCE, digits=3, near_one=False,
                                 attention=False, language=language)
    distance = translator(language)(DISTANCE).format(number=PLOTLY_Z)
    panel = Panel(distances, names, names, texts=texts, hovers=hovers,
                   big_hover=f"%{{y}}, %{{x}}: {distance}")
    return panel_figure([panel], per_row=1, zmin=0.0, zmax=top, colorscale=WEIGHT_SCALE, s=style_of(large),
                        width=width, language=language)
