"""Pure figures of the real-model page: the model view (every head as a thumbnail) and the head
view (lines from each query word piece to the keys). Arrays and labels in, plotly figure out."""

from __future__ import annotations

import numpy as np

from app.figures import HEAD_COLOURS, WEIGHT_SCALE, FigureSpec, _figure, block_means, format_number
from app.safe import chart_text

THUMB_BLOCKS = 24  # a thumbnail shows at most this many blocks a side (block means beyond)
THUMB_PX = 64  # px: one thumbnail's side
THUMB_TITLE = 30  # px above each thumbnail for its two-line label
THUMB_FONT = 10
LINE_ROW_PX = 22  # px per word piece in the head view
LINE_FONT = 14
LINE_WIDTHS = (1, 2, 4, 7)  # px: lines of weights in [0.05, .2), [.2, .4), [.4, .7), [.7, 1]
LINE_EDGES = (0.2, 0.4, 0.7)
LINE_MIN_WEIGHT = 0.05  # weaker links are not drawn


def thumbnail(weights: np.ndarray) -> np.ndarray:
    """weights [n, n] -> at most THUMB_BLOCKS a side, by block means."""
    factor = max(1, int(np.ceil(weights.shape[0] / THUMB_BLOCKS)))
    return block_means(np.asarray(weights, dtype=float), factor) if factor > 1 else np.asarray(weights)


def model_view(weights: list[np.ndarray], labels: list[list[str]]) -> FigureSpec:
    """Every head of every layer as a small heatmap, one row per layer: weights[layer] [h, n, n],
    labels[layer][head] a short plain text, lines split at "\n" (entropy, pattern). Weights on one 0..1
    scale."""
    n_layers, n_heads = len(weights), weights[0].shape[0]
    width = n_heads * (THUMB_PX + 8) + 60
    height = n_layers * (THUMB_PX + THUMB_TITLE) + 10
    data, layout = [], dict(width=width, height=height, margin=dict(l=52, r=8, t=8, b=8), annotations=[],
                            showlegend=False)
    for layer in range(n_layers):
        for head in range(n_heads):
            index = layer * n_heads + head
            suffix = str(index + 1) if index else ""
            small = thumbnail(weights[layer][head])  # [b, b]
            data.append(dict(type="heatmap", z=small.astype(np.float32), zmin=0, zmax=1,
                             colorscale=WEIGHT_SCALE,
                             showscale=False, xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                             hovertemplate=f"layer {layer + 1}, head {head + 1}<extra></extra>"))
            x0 = head / n_heads
            top = 1 - (layer * (THUMB_PX + THUMB_TITLE) + THUMB_TITLE) / (height - 16)
            bottom = top - THUMB_PX / (height - 16)
            axis = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
            layout[f"xaxis{suffix}"] = dict(axis, domain=[x0 + 0.004, x0 + 1 / n_heads - 0.004],
                                            anchor=f"y{suffix}")
            layout[f"yaxis{suffix}"] = dict(axis, domain=[max(bottom, 0), top], anchor=f"x{suffix}",
                                            autorange="reversed")
            lines = [chart_text(line) for line in labels[layer][head].split("\n")]
            layout["annotations"].append(dict(
                text="<br>".join(lines), x=x0 + 0.5 / n_heads, y=top, xref="paper", yref="paper",
                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=THUMB_FONT)))
        layout["annotations"].append(dict(
            text=f"layer {layer + 1}", x=0, xref="paper", xanchor="right", xshift=-6, showarrow=False,
            y=1 - (layer * (THUMB_PX + THUMB_TITLE) + THUMB_TITLE + THUMB_PX / 2) / (height - 16),
            yref="paper",
            font=dict(size=12)))
    return _figure(data, layout)


def _bucket(weight: float) -> int:
    return int(np.searchsorted(LINE_EDGES, weight, side="right"))


def head_view(weights: np.ndarray, heads: list[int], tokens, *, query: int | None = None) -> FigureSpec:
    """Lines from each query word piece (left) to the keys (right), one colour per head, thicker
    for larger weights. weights [h, n, n] of one layer; heads: the ones drawn; query: only its lines.

    Links weaker than LINE_MIN_WEIGHT are left out; each (head, thickness) is one trace.
    """
    n = weights.shape[1]
    labels = [chart_text(token) for token in tokens]
    queries = range(n) if query is None else [query]
    data = []
    for head in heads:
        colour = HEAD_COLOURS[head % len(HEAD_COLOURS)]
        paths: list[list[float | None]] = [[] for _ in LINE_WIDTHS]
        ys: list[list[float | None]] = [[] for _ in LINE_WIDTHS]
        for q in queries:
            for k in np.flatnonzero(weights[head, q] >= LINE_MIN_WEIGHT):
                bucket = _bucket(float(weights[head, q, k]))
                paths[bucket] += [0.0, 1.0, None]
                ys[bucket] += [q, int(k), None]
        for bucket, width in enumerate(LINE_WIDTHS):
            if paths[bucket]:
                data.append(dict(type="scatter", mode="lines", x=paths[bucket], y=ys[bucket],
                                 line=dict(color=colour, width=width), opacity=0.6, hoverinfo="skip",
                                 name=f"head {head + 1}", legendgroup=f"head {head + 1}",
                                 showlegend=bucket == max(b for b, p in enumerate(paths) if p)))
    hover = [format_number(float(weights[heads[0], query, k])) if query is not None and heads else ""
             for k in range(n)]
    for side, x in (("query", -0.02), ("key", 1.02)):
        data.append(dict(type="scatter", mode="text", x=[x] * n, y=list(range(n)), text=labels,
                         textposition="middle left" if side == "query" else "middle right",
                         textfont=dict(size=LINE_FONT), hoverinfo="skip", showlegend=False))
    if query is not None:
        data[-1]["text"] = [f"{label} ({weight})" if weight else label for label, weight in zip(labels, hover,
                                                                                                strict=True)]
    axis = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    layout = dict(height=int(n * LINE_ROW_PX + 80), margin=dict(l=8, r=8, t=40, b=8),
                  xaxis=dict(axis, range=[-0.6, 1.6]), yaxis=dict(axis, autorange="reversed"),
                  legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"))
    return _figure(data, layout)
