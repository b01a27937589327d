"""Pure figure builders: arrays and labels in, plotly Figure out (numpy + plotly only).

Axes are integer positions with the tokens as tick text, because plotly merges repeated
category labels ("the ... the"). Token text is escaped before it reaches any label, so
"<b>x</b>" or "$x$" shows literally. Colours: Okabe-Ito for heads, cividis for weights,
RdBu for signed values (both readable with colour-blind vision).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

HEAD_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
WEIGHT_SCALE = "cividis"
SIGNED_SCALE = "RdBu_r"
NUMBERS_UP_TO = 12  # print values on cells while both sides of a grid are at most this


def plain(text: str) -> str:
    """A token as literal text for plotly: HTML tags, entities and $...$ (LaTeX) disarmed."""
    return html.escape(str(text), quote=False).replace("$", "&#36;")


def head_colour(head: int) -> str:
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


def position_labels(tokens) -> list[str]:
    """Tick text for each position: the escaped token (positions keep repeats apart)."""
    return [plain(t) for t in tokens]


def _cell_text(values: np.ndarray, digits: int) -> np.ndarray | None:
    if max(values.shape) > NUMBERS_UP_TO:
        return None
    return np.where(np.isnan(values), "", np.vectorize(lambda v: f"{v:.{digits}f}")(values))


def _heatmap(values, rows, cols, *, zmin, zmax, colorscale, digits, hover, showscale=True, zmid=None):
    """One heatmap trace on integer axes. values [n_rows, n_cols]; NaN cells stay blank."""
    values = np.asarray(values, dtype=float)
    text = _cell_text(values, digits)
    customdata = np.dstack(np.meshgrid(np.array(cols, dtype=object), np.array(rows, dtype=object)))
    return go.Heatmap(
        z=values, x=np.arange(values.shape[1]), y=np.arange(values.shape[0]),
        zmin=zmin, zmax=zmax, zmid=zmid, colorscale=colorscale, showscale=showscale,
        text=text, texttemplate="%{text}" if text is not None else None,
        customdata=customdata, hovertemplate=hover + "<extra></extra>", xgap=1, ygap=1,
    )


def _label_axes(fig, rows, cols, *, row=None, col=None, x_title="", y_title=""):
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(cols))), ticktext=cols,
                     title_text=x_title, row=row, col=col, side="bottom")
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(rows))), ticktext=rows,
                     autorange="reversed", title_text=y_title, row=row, col=col)


def _layout(fig, height, title=""):
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40 if title else 25, b=10),
                      title=dict(text=title) if title else None)
    return fig


def symmetric_range(values) -> float:
    """Half-width of a colour range centred at 0 that covers every finite value (at least 1e-9)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return max(float(np.max(np.abs(finite))) if finite.size else 1.0, 1e-9)


def matrix_heatmap(values, row_labels, col_labels, *, title="", signed=True, digits=2) -> go.Figure:
    """A labelled matrix (embeddings, projections, outputs): signed values on RdBu centred at 0."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    rows, cols = [plain(r) for r in row_labels], [plain(c) for c in col_labels]
    bound = symmetric_range(values)
    fig = go.Figure(_heatmap(values, rows, cols, zmin=-bound if signed else None,
                             zmax=bound if signed else None, colorscale=SIGNED_SCALE, digits=digits,
                             hover="%{y}: %{customdata[1]}, %{customdata[0]}: %{z:.4f}"))
    _label_axes(fig, rows, cols)
    return _layout(fig, 60 + 32 * max(2, len(rows)), title)


def head_grids(values, row_tokens, col_labels, *, kind: str, head_names=None, title="",
               cols_are_tokens: bool = True) -> go.Figure:
    """One panel per head, all on one colour scale. values [h, n_rows, n_cols].

    kind "weights": 0..1 on cividis; "scores" or "signed": diverging RdBu centred at 0, one
    range for all heads. Masked cells are NaN (-inf is turned into NaN) and drawn blank.
    """
    values = np.asarray(values, dtype=float).copy()  # [h, n_rows, n_cols]
    values[np.isinf(values)] = np.nan
    h = values.shape[0]
    head_names = head_names or [f"head {i + 1}" for i in range(h)]
    rows = position_labels(row_tokens)
    cols = position_labels(col_labels)
    fig = make_subplots(rows=1, cols=h, subplot_titles=head_names, horizontal_spacing=0.04)
    if kind == "weights":
        zmin, zmax, scale, zmid, what = 0.0, 1.0, WEIGHT_SCALE, None, "weight"
    elif kind in ("scores", "signed"):
        bound = symmetric_range(values)
        zmin, zmax, scale, zmid, what = -bound, bound, SIGNED_SCALE, 0.0, kind.rstrip("s")
    else:
        raise ValueError(f"kind must be 'weights', 'scores' or 'signed', got {kind!r}")
    arrow = " → " if cols_are_tokens else ", "
    for head in range(h):
        trace = _heatmap(values[head], rows, cols, zmin=zmin, zmax=zmax, colorscale=scale, digits=2,
                         hover="%{customdata[1]}" + arrow + "%{customdata[0]}: " + what + " %{z:.4f}",
                         showscale=head == h - 1, zmid=zmid)
        fig.add_trace(trace, row=1, col=head + 1)
        _label_axes(fig, rows, cols, row=1, col=head + 1, x_title="key" if cols_are_tokens else "",
                    y_title="query" if head == 0 and cols_are_tokens else "")
    side = 30 * max(3, len(rows))
    return _layout(fig, side + 100, title)


def dims(prefix: str, n: int) -> list[str]:
    """Column labels for a width-n axis: q1, q2, ..."""
    return [f"{prefix}{j + 1}" for j in range(n)]


def query_bars(weights, query: int, k_tokens, *, head_names=None) -> go.Figure:
    """Every head's attention row for one query as grouped bars. weights [h, n_q, n_k]."""
    weights = np.asarray(weights, dtype=float)
    h, _, n_k = weights.shape
    head_names = head_names or [f"head {i + 1}" for i in range(h)]
    cols = position_labels(k_tokens)
    fig = go.Figure([
        go.Bar(x=np.arange(n_k), y=weights[head, query], name=head_names[head],
               marker_color=head_colour(head), customdata=cols,
               hovertemplate=f"{head_names[head]} → %{{customdata}}: %{{y:.4f}}<extra></extra>")
        for head in range(h)
    ])
    fig.update_xaxes(tickmode="array", tickvals=list(range(n_k)), ticktext=cols, title_text="key")
    fig.update_yaxes(range=[0, 1], title_text="weight")
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=1.12))
    return _layout(fig, 300)


def disagreement_heatmap(distances, *, metric: str, head_names=None) -> go.Figure:
    """The head x head distance matrix for one query. distances [h, h]."""
    distances = np.asarray(distances, dtype=float)
    h = distances.shape[0]
    names = head_names or [f"head {i + 1}" for i in range(h)]
    top = {"l2": float(np.sqrt(2.0)), "js": 1.0, "tv": 1.0}[metric]
    fig = go.Figure(_heatmap(distances, names, names, zmin=0.0, zmax=top, colorscale=WEIGHT_SCALE,
                             digits=3, hover="%{y} vs %{customdata[0]}: %{z:.4f}"))
    _label_axes(fig, names, names)
    return _layout(fig, 80 + 40 * max(2, h))


def concat_bands(concat, q_tokens, n_heads: int, d_v: int, *, title="") -> go.Figure:
    """The concatenation [n_q, h*d_v] with each head's band outlined in its colour."""
    concat = np.asarray(concat, dtype=float)
    cols = [f"h{head + 1}·{j + 1}" for head in range(n_heads) for j in range(d_v)]
    fig = matrix_heatmap(concat, q_tokens, cols, title=title)
    for head in range(n_heads):
        fig.add_shape(type="rect", x0=head * d_v - 0.5, x1=(head + 1) * d_v - 0.5,
                      y0=-0.5, y1=concat.shape[0] - 0.5, line=dict(color=head_colour(head), width=4))
    return fig


def side_by_side(left, right, row_labels, *, left_title, right_title) -> go.Figure:
    """Two matrices with the same rows, e.g. the output next to the input, on one shared scale."""
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    rows = position_labels(row_labels)
    bound = symmetric_range(np.concatenate([left.ravel(), right.ravel()]))
    fig = make_subplots(rows=1, cols=2, subplot_titles=[left_title, right_title], horizontal_spacing=0.08)
    for col, values in ((1, left), (2, right)):
        cols = [f"d{j + 1}" for j in range(values.shape[1])]
        fig.add_trace(_heatmap(values, rows, cols, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                               digits=2, hover="%{y}: %{customdata[1]}, %{customdata[0]}: %{z:.4f}",
                               showscale=col == 2, zmid=0.0), row=1, col=col)
        _label_axes(fig, rows, cols, row=1, col=col)
    return _layout(fig, 90 + 32 * max(2, len(rows)))


def entropy_bars(normalised, *, head_names=None, flat_at: float) -> go.Figure:
    """Each head's normalised entropy for the chosen query; bars past flat_at are flagged flat."""
    normalised = np.asarray(normalised, dtype=float)  # [h]
    h = normalised.shape[0]
    names = head_names or [f"head {i + 1}" for i in range(h)]
    fig = go.Figure(go.Bar(
        x=names, y=normalised, marker_color=[head_colour(i) for i in range(h)],
        text=["flat" if value >= flat_at else "" for value in normalised], textposition="outside",
        hovertemplate="%{x}: entropy %{y:.3f} of the maximum<extra></extra>",
    ))
    fig.add_hline(y=flat_at, line_dash="dot", annotation_text="flat", annotation_position="top left")
    fig.update_yaxes(range=[0, 1.15], title_text="entropy / max")
    return _layout(fig, 260)


def qkv_panels(q, k, v, q_tokens, k_tokens) -> go.Figure:
    """One head's Q [n_q, d_k], K [n_k, d_k] and V [n_k, d_v] side by side, one signed scale."""
    panels = [("Q", np.asarray(q, float), q_tokens, "q"), ("K", np.asarray(k, float), k_tokens, "k"),
              ("V", np.asarray(v, float), k_tokens, "v")]
    bound = symmetric_range(np.concatenate([p[1].ravel() for p in panels]))
    fig = make_subplots(rows=1, cols=3, subplot_titles=[p[0] for p in panels], horizontal_spacing=0.06)
    for col, (_, values, tokens, prefix) in enumerate(panels, start=1):
        rows, cols = position_labels(tokens), dims(prefix, values.shape[1])
        fig.add_trace(_heatmap(values, rows, cols, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                               digits=2, hover="%{y}: %{customdata[0]} = %{z:.4f}", showscale=col == 3,
                               zmid=0.0), row=1, col=col)
        _label_axes(fig, rows, cols, row=1, col=col)
    return _layout(fig, 100 + 30 * max(3, len(q_tokens), len(k_tokens)))
