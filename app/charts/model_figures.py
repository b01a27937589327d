"""Pure figures of the real-model page: the model view (every head as a thumbnail) and the head
view (lines from each query word piece to the keys). Arrays and labels in, plotly figure out."""

from __future__ import annotations

import numpy as np

from app.charts.figure_layout import FULL_WIDTH, number_px, text_px
from app.charts.figure_spec import FigureSpec, figure_spec
from app.charts.figure_style import WEIGHT_SCALE, head_colour
from app.charts.number_text import format_number
from app.charts.pictures import block_means
from app.safe import chart_text
from course.i18n import ENGLISH, N_, localized_number_text, translator

THUMB_BLOCKS = 24  # a thumbnail shows at most this many blocks a side (block means beyond)
THUMB_PX = 64  # px: one thumbnail's side
THUMB_TITLE = 30  # px above each thumbnail for its two-line label
THUMB_FONT = 11
THUMB_GAP = 8  # px between thumbnails
LAYER_LABEL_PX = 60  # px left of each row of thumbnails for "layer 3"
LAYER_GAP = 14  # px between layers whose heads wrap, for the rule
LAYER_RULE = "#767676"  # the line between layers whose heads wrap (4.5:1 on white)
LABELS_WHERE = "above"  # the model view writes each head's label above its thumbnail
OVERVIEW_CAPTION = N_("Every head of every layer, layer 1 at the top (heads 1 to {heads} in reading order). "
                    "Above each head: its entropy (1 = uniform) and a guess at its pattern (previous or next "
                    "word piece, itself, the [CLS] or [SEP] sink, broad, mixed). Pick a head below to open "
                    "it.")
LINE_ROW_PX = 22  # px per word piece in the head view
LINE_FONT = 14
LINE_WIDTHS = (1, 2, 4, 7)  # px: lines of weights in [0.05, .2), [.2, .4), [.4, .7), [.7, 1]
LINE_EDGES = (0.2, 0.4, 0.7)
LINE_MIN_WEIGHT = 0.05  # weaker links are not drawn
LINE_OPACITY = 0.7  # lines cross; they stay see-through
LINE_CONTRAST = 3.0  # a line against white, at its opacity (WCAG 1.4.11, graphics)
TEXT_CONTRAST = 4.5  # a head's numbers against white (WCAG 1.4.3)
LABEL_OFFSET = 0.02  # of the lines' length: between a line's end and its word piece
LABEL_PAD_PX = 12  # px beside the widest word piece
NUMBER_PAD_PX = 10  # px between two heads' numbers after a key
MIN_SPAN_PX = 120  # px: the lines never get shorter than this, however many numbers
# The words of these figures, marked for the catalogues and written in the ``language`` a builder is given.
LAYER = N_("layer {number}")
LAYER_HEAD = N_("layer {layer}, head {head}")
HEAD = N_("head {number}")
SATURATED = N_("Colours saturate at ±{limit}, which {share} of the values lie within; the largest, "
               "{largest}, would otherwise leave every other cell white.")


def thumbnail(weights: np.ndarray) -> np.ndarray:
    """weights [n, n] -> at most THUMB_BLOCKS a side, by block means."""
    factor = max(1, int(np.ceil(weights.shape[0] / THUMB_BLOCKS)))
    return block_means(np.asarray(weights, dtype=float), factor) if factor > 1 else np.asarray(weights)


THUMB_MIN_PX = 52  # px: thumbnails shrink to this before a layer's heads wrap into more rows


def model_view(weights: list[np.ndarray], labels: list[list[str]], *, width: int = FULL_WIDTH,
               language: str = ENGLISH) -> FigureSpec:
    """Every head of every layer as a small heatmap, one band per layer (its heads wrap into more
    rows on a narrow column, a phone's: four a row): weights[layer] [h, n, n], labels[layer][head] a
    short plain text, lines split at "\n" (entropy, pattern), written above each thumbnail. Weights on
    one 0..1 scale. `width`: the column's width in px."""
    _ = translator(language)
    n_layers, n_heads = len(weights), weights[0].shape[0]
    per_row = max(1, min(n_heads, (width - LAYER_LABEL_PX) // (THUMB_MIN_PX + THUMB_GAP)))
    rows_per_layer = -(-n_heads // per_row)
    band = THUMB_PX + THUMB_TITLE  # px: one row of thumbnails and its labels
    gap = LAYER_GAP if rows_per_layer > 1 else 0  # px between layers whose heads wrap
    height = n_layers * rows_per_layer * band + (n_layers - 1) * gap + 10
    plot_h = height - 16  # margins t + b
    margin = dict(l=LAYER_LABEL_PX - 8, r=8, t=8, b=8)
    data, layout = [], dict(width=per_row * (THUMB_PX + THUMB_GAP) + LAYER_LABEL_PX, height=height,
                            margin=margin, annotations=[], showlegend=False)
    axis = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    for layer in range(n_layers):
        for head in range(n_heads):
            index = layer * n_heads + head
            suffix = str(index + 1) if index else ""
            small = thumbnail(weights[layer][head])  # [b, b]
            data.append(dict(type="heatmap", z=small.astype(np.float32), zmin=0, zmax=1,
                             colorscale=WEIGHT_SCALE,
                             showscale=False, xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                             hovertemplate=_(LAYER_HEAD).format(layer=layer + 1, head=head + 1)
                             + "<extra></extra>"))
            row, column = layer * rows_per_layer + head // per_row, head % per_row
            x0 = column / per_row
            top = 1 - (row * band + layer * gap + THUMB_TITLE) / plot_h
            bottom = top - THUMB_PX / plot_h
            layout[f"xaxis{suffix}"] = dict(axis, domain=[x0 + 0.004, x0 + 1 / per_row - 0.004],
                                            anchor=f"y{suffix}")
            layout[f"yaxis{suffix}"] = dict(axis, domain=[max(bottom, 0), top], anchor=f"x{suffix}",
                                            autorange="reversed")
            lines = [chart_text(line) for line in labels[layer][head].split("\n")]
            layout["annotations"].append(dict(  # LABELS_WHERE: above the thumbnail
                text="<br>".join(lines), x=x0 + 0.5 / per_row, y=top, xref="paper", yref="paper",
                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=THUMB_FONT)))
        first_row = layer * (rows_per_layer * band + gap)  # px from the top
        layout["annotations"].append(dict(
            text=_(LAYER).format(number=layer + 1), x=0, xref="paper", xanchor="right", xshift=-6,
            showarrow=False,
            y=1 - (first_row + (rows_per_layer * band + THUMB_TITLE) / 2) / plot_h, yref="paper",
            font=dict(size=12)))
        if rows_per_layer > 1 and layer:  # wrapped heads: a rule between layers
            layout.setdefault("shapes", []).append(dict(
                type="line", xref="paper", yref="paper", x0=0, x1=1, y0=1 - (first_row - gap / 2) / plot_h,
                y1=1 - (first_row - gap / 2) / plot_h, line=dict(color=LAYER_RULE, width=1)))
    return figure_spec(data, layout)


def _luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour given as three bytes."""
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_on_white(rgb) -> float:
    """WCAG contrast ratio of a colour (three bytes) against white."""
    return 1.05 / (_luminance(rgb) + 0.05)


def on_white(rgb, opacity: float) -> tuple[float, float, float]:
    """The colour a see-through stroke shows on white."""
    return tuple(opacity * c + (1 - opacity) * 255 for c in rgb)


def readable_colour(colour: str, ratio: float, opacity: float = 1.0) -> str:
    """The head's colour, darkened just enough to stand `ratio`:1 against white at `opacity` (every
    head colour stands 3:1 as it is; numbers need 4.5:1, and a line drawn see-through less)."""
    rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    factor = 1.0
    while contrast_on_white(on_white([c * factor for c in rgb], opacity)) < ratio and factor > 0:
        factor -= 0.02
    return "#" + "".join(f"{round(c * max(factor, 0)):02x}" for c in rgb)


SATURATE_PERCENTILE = 99.9  # a picture's colours saturate at this percentile of |value|, when
SATURATE_RATIO = 4.0  # the largest value is more than this many times it (one outlier whitens the rest)


def saturated(values: np.ndarray, language: str = ENGLISH) -> tuple[np.ndarray, str | None]:
    """Values for a picture's colours: clipped to ± the SATURATE_PERCENTILE of |values| when a few
    outliers (BERT's large dimensions) are SATURATE_RATIO times larger and would leave every other
    cell white, with a sentence that says so; else the values as they are and None."""
    values = np.asarray(values)
    magnitude = np.abs(values[np.isfinite(values)])
    if magnitude.size == 0:
        return values, None
    limit, largest = float(np.percentile(magnitude, SATURATE_PERCENTILE)), float(magnitude.max())
    if limit <= 0 or largest <= SATURATE_RATIO * limit:
        return values, None
    note = translator(language)(SATURATED).format(
        limit=localized_number_text(f"{limit:.2f}", language),
        share=localized_number_text(f"{SATURATE_PERCENTILE:g}%", language),
        largest=localized_number_text(f"{largest:.2f}", language))
    return np.clip(values, -limit, limit), note


def _bucket(weight: float) -> int:
    return int(np.searchsorted(LINE_EDGES, weight, side="right"))


def head_view(weights: np.ndarray, heads: list[int], tokens, *, query: int | None = None,
              width: int = FULL_WIDTH, language: str = ENGLISH) -> FigureSpec:
    """Lines from each query word piece (left) to the keys (right), one colour per head, thicker
    for larger weights. weights [h, n, n] of one layer; heads: the ones drawn; query: only its lines,
    and after each key every drawn head's weight, one column per head in the head's colour.

    Links weaker than LINE_MIN_WEIGHT are left out; each (head, thickness) is one trace. Colours are
    darkened where they would be too pale on white (LINE_CONTRAST for lines, TEXT_CONTRAST for numbers).
    `width`: the column's width in px, to leave room for the labels and numbers on either side.
    """
    n = weights.shape[1]
    labels = [chart_text(token) for token in tokens]
    queries = range(n) if query is None else [query]
    data = []
    for head in heads:
        colour = readable_colour(head_colour(head), LINE_CONTRAST, LINE_OPACITY)
        paths: list[list[float | None]] = [[] for _ in LINE_WIDTHS]
        ys: list[list[float | None]] = [[] for _ in LINE_WIDTHS]
        for q in queries:
            for k in np.flatnonzero(weights[head, q] >= LINE_MIN_WEIGHT):
                bucket = _bucket(float(weights[head, q, k]))
                paths[bucket] += [0.0, 1.0, None]
                ys[bucket] += [q, int(k), None]
        for bucket, line_px in enumerate(LINE_WIDTHS):
            if paths[bucket]:
                data.append(dict(type="scatter", mode="lines", x=paths[bucket], y=ys[bucket],
                                 line=dict(color=colour, width=line_px), opacity=LINE_OPACITY,
                                 hoverinfo="skip", name=translator(language)(HEAD).format(number=head + 1),
                                 legendgroup=f"head {head + 1}",
                                 showlegend=bucket == max(b for b, p in enumerate(paths) if p)))
    for side, x in (("query", -LABEL_OFFSET), ("key", 1 + LABEL_OFFSET)):
        data.append(dict(type="scatter", mode="text", x=[x] * n, y=list(range(n)), text=labels,
                         textposition="middle left" if side == "query" else "middle right",
                         textfont=dict(size=LINE_FONT), hoverinfo="skip", showlegend=False))
    label_px = max(text_px(label, LINE_FONT) for label in labels) + LABEL_PAD_PX
    numbers = [] if query is None else key_numbers(weights[:, query, :], heads, label_px)
    column_px = max((number_px(note["text"], LINE_FONT) for note in numbers), default=0) + NUMBER_PAD_PX
    right_px = label_px + (len(heads) * column_px if numbers else 0)
    span_px = max(width - 16 - label_px - right_px, MIN_SPAN_PX)  # 16: the margins
    left, right = -label_px / span_px, 1 + right_px / span_px  # the 0..1 lines keep span_px
    for note in numbers:
        note["xshift"] += (note.pop("column")) * column_px
    axis = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    layout = dict(height=int(n * LINE_ROW_PX + 80), margin=dict(l=8, r=8, t=40, b=8),
                  xaxis=dict(axis, range=[left, right]), yaxis=dict(axis, autorange="reversed"),
                  legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"), annotations=numbers)
    return figure_spec(data, layout)


def key_numbers(rows: np.ndarray, heads: list[int], label_px: float) -> list[dict]:
    """After each key's label, each drawn head's weight from the query, one column per head in the
    head's colour (darkened to TEXT_CONTRAST on white). rows [h, n_k]: the query's row per head.
    Annotations placed in px ("column" is turned into an x shift by the caller)."""
    notes = []
    for column, head in enumerate(heads):
        colour = readable_colour(head_colour(head), TEXT_CONTRAST)
        for k, weight in enumerate(rows[head]):
            notes.append(dict(x=1 + LABEL_OFFSET, y=k, xref="x", yref="y", xanchor="left", xshift=label_px,
                              column=column, text=format_number(float(weight)), showarrow=False,
                              font=dict(size=LINE_FONT, color=colour)))
    return notes
