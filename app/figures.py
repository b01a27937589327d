"""Pure figure builders: arrays and labels in, plotly Figure out (numpy + plotly only).

Axes are integer positions with the tokens as tick text, because plotly merges repeated
category labels ("the ... the"). Token text is escaped before it reaches any label, so
"<b>x</b>" or "$x$" shows literally. Colours: Okabe-Ito for heads, cividis for weights,
red-blue centred at 0 for signed values (both readable with colour-blind vision).

Figures are assembled as plain dicts and wrapped without plotly's per-property validation
(``_validate=False``): validation and ``make_subplots`` cost about 7x the build itself, and
the page draws a dozen figures on every rerun. tests/test_figures.py checks the specs.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

HEAD_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
WEIGHT_SCALE = get_colorscale("cividis")
SIGNED_SCALE = get_colorscale("RdBu_r")  # blue < 0 < red
NUMBERS_UP_TO = 12  # print values on cells while both sides of a grid are at most this
GAP = 0.04  # horizontal space between panels, as a fraction of the width


def plain(text: str) -> str:
    """A token as literal text for plotly: HTML tags, entities and $...$ (LaTeX) disarmed."""
    return html.escape(str(text), quote=False).replace("$", "&#36;")


def head_colour(head: int) -> str:
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


def position_labels(tokens) -> list[str]:
    """Tick text for each position: the escaped token (integer positions keep repeats apart)."""
    return [plain(t) for t in tokens]


def dims(prefix: str, n: int) -> list[str]:
    """Column labels for a width-n axis: q1, q2, ..."""
    return [f"{prefix}{j + 1}" for j in range(n)]


def symmetric_range(values) -> float:
    """Half-width of a colour range centred at 0 that covers every finite value (at least 1e-9)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return max(float(np.max(np.abs(finite))) if finite.size else 1.0, 1e-9)


def _figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _cell_text(values: np.ndarray, digits: int) -> list[list[str]] | None:
    """Numbers to print on the cells of a small grid; blank for NaN (masked)."""
    if max(values.shape) > NUMBERS_UP_TO:
        return None
    return [["" if np.isnan(v) else f"{v:.{digits}f}" for v in row] for row in values.tolist()]


def _heatmap(values, rows, cols, *, zmin, zmax, colorscale, hover, panel=0, showscale=True,
             digits=2, colorbar_x=None) -> dict:
    """One heatmap trace on integer axes. values [n_rows, n_cols]; NaN cells stay blank."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    text = _cell_text(values, digits)
    suffix = str(panel + 1) if panel else ""
    trace = dict(
        type="heatmap", z=values.astype(np.float32), zmin=zmin, zmax=zmax, colorscale=colorscale,
        showscale=showscale, xgap=1, ygap=1, hovertemplate=hover + "<extra></extra>",
        xaxis=f"x{suffix}", yaxis=f"y{suffix}",
    )
    if text is not None:  # small grids: numbers on the cells and names in the hover
        trace.update(text=text, texttemplate="%{text}",
                     hovertext=[[f"{r} · {c}" for c in cols] for r in rows])
    else:  # large grids: per-cell strings would dominate the bytes sent; hover gives positions
        trace["hovertemplate"] = trace["hovertemplate"].replace("%{hovertext}", "row %{y}, column %{x}")
    if colorbar_x is not None:
        trace["colorbar"] = dict(x=colorbar_x, thickness=12)
    return trace


def _axes(layout: dict, panel: int, n_panels: int, rows, cols, *, x_title="", y_title="",
          title="", right=1.0) -> None:
    """Axes for panel `panel` of `n_panels` side by side, positions labelled by tick text."""
    suffix = str(panel + 1) if panel else ""
    width = (right - GAP * (n_panels - 1)) / n_panels
    left = panel * (width + GAP)
    layout[f"xaxis{suffix}"] = dict(
        domain=[left, left + width], anchor=f"y{suffix}", tickmode="array",
        tickvals=list(range(len(cols))), ticktext=list(cols), title=dict(text=x_title), showgrid=False)
    layout[f"yaxis{suffix}"] = dict(
        anchor=f"x{suffix}", tickmode="array", tickvals=list(range(len(rows))), ticktext=list(rows),
        autorange="reversed", title=dict(text=y_title), showgrid=False)
    if title:
        layout.setdefault("annotations", []).append(dict(
            text=title, x=left + width / 2, y=1.0, xref="paper", yref="paper", xanchor="center",
            yanchor="bottom", showarrow=False, font=dict(size=14)))


def _layout(height: int, title: str = "") -> dict:
    # An empty template: st.plotly_chart's theme styles the figure in the browser, and plotly's
    # default template costs ~3 ms per figure to copy in on the server.
    layout = dict(height=height, margin=dict(l=10, r=10, t=45 if title else 30, b=10), template={})
    if title:
        layout["title"] = dict(text=title)
    return layout


def _grid_height(n_rows: int) -> int:
    return 110 + 30 * max(3, n_rows)


def matrix_heatmap(values, row_labels, col_labels, *, title="", digits=2) -> go.Figure:
    """A labelled matrix (embeddings, projections, outputs): signed values, red-blue centred at 0."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    rows, cols = position_labels(row_labels), position_labels(col_labels)
    bound = symmetric_range(values)
    layout = _layout(60 + 32 * max(2, len(rows)), title)
    _axes(layout, 0, 1, rows, cols)
    return _figure([_heatmap(values, rows, cols, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                             digits=digits, hover="%{hovertext}: %{z:.4f}")], layout)


def head_grids(values, row_tokens, col_labels, *, kind: str, head_names=None, title="",
               cols_are_tokens: bool = True) -> go.Figure:
    """One panel per head, all on one colour scale. values [h, n_rows, n_cols].

    kind "weights": 0..1 on cividis; "scores" or "signed": red-blue centred at 0, one range
    for all heads. Masked cells are NaN (-inf is turned into NaN) and drawn blank.
    """
    values = np.asarray(values, dtype=float).copy()  # [h, n_rows, n_cols]
    values[np.isinf(values)] = np.nan
    h = values.shape[0]
    head_names = head_names or [f"head {i + 1}" for i in range(h)]
    if kind == "weights":
        zmin, zmax, scale, what = 0.0, 1.0, WEIGHT_SCALE, "weight"
    elif kind in ("scores", "signed"):
        bound = symmetric_range(values)
        zmin, zmax, scale, what = -bound, bound, SIGNED_SCALE, kind.rstrip("s")
    else:
        raise ValueError(f"kind must be 'weights', 'scores' or 'signed', got {kind!r}")
    rows, cols = position_labels(row_tokens), position_labels(col_labels)
    layout = _layout(_grid_height(len(rows)), title)
    data = []
    for head in range(h):
        hover = "%{hovertext}: " + what + " %{z:.4f}"
        if cols_are_tokens:
            hover = "query %{hovertext}: " + what + " %{z:.4f}"
        data.append(_heatmap(values[head], rows, cols, zmin=zmin, zmax=zmax, colorscale=scale,
                             hover=hover, panel=head, showscale=head == h - 1, colorbar_x=1.0))
        _axes(layout, head, h, rows, cols, x_title="key" if cols_are_tokens else "",
              y_title="query" if head == 0 and cols_are_tokens else "", title=head_names[head],
              right=0.95)
    return _figure(data, layout)


def qkv_panels(q, k, v, q_tokens, k_tokens) -> go.Figure:
    """One head's Q [n_q, d_k], K [n_k, d_k] and V [n_k, d_v] side by side, one signed scale."""
    panels = [("Q", np.asarray(q, float), q_tokens, "q"), ("K", np.asarray(k, float), k_tokens, "k"),
              ("V", np.asarray(v, float), k_tokens, "v")]
    bound = symmetric_range(np.concatenate([p[1].ravel() for p in panels]))
    layout = _layout(_grid_height(max(len(q_tokens), len(k_tokens))))
    data = []
    for panel, (name, values, tokens, prefix) in enumerate(panels):
        rows, cols = position_labels(tokens), dims(prefix, values.shape[1])
        data.append(_heatmap(values, rows, cols, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                             hover="%{hovertext}: %{z:.4f}", panel=panel, showscale=panel == 2,
                             colorbar_x=1.0))
        _axes(layout, panel, 3, rows, cols, title=name, right=0.95)
    return _figure(data, layout)


def side_by_side(left, right, row_labels, *, left_title, right_title) -> go.Figure:
    """Two matrices with the same rows, e.g. the output next to the input, on one shared scale."""
    pair = [np.asarray(left, dtype=float), np.asarray(right, dtype=float)]
    rows = position_labels(row_labels)
    bound = symmetric_range(np.concatenate([m.ravel() for m in pair]))
    layout = _layout(_grid_height(len(rows)))
    data = []
    for panel, (values, name) in enumerate(zip(pair, (left_title, right_title), strict=True)):
        cols = dims("d", values.shape[1])
        data.append(_heatmap(values, rows, cols, zmin=-bound, zmax=bound, colorscale=SIGNED_SCALE,
                             hover="%{hovertext}: %{z:.4f}", panel=panel, showscale=panel == 1,
                             colorbar_x=1.0))
        _axes(layout, panel, 2, rows, cols, title=name, right=0.95)
    return _figure(data, layout)


def concat_bands(concat, q_tokens, n_heads: int, d_v: int, *, title="") -> go.Figure:
    """The concatenation [n_q, h*d_v] with each head's band outlined in its colour."""
    concat = np.asarray(concat, dtype=float)
    cols = [f"h{head + 1}·{j + 1}" for head in range(n_heads) for j in range(d_v)]
    fig = matrix_heatmap(concat, q_tokens, cols, title=title)
    fig.layout.shapes = [dict(type="rect", x0=head * d_v - 0.5, x1=(head + 1) * d_v - 0.5, y0=-0.5,
                              y1=concat.shape[0] - 0.5, line=dict(color=head_colour(head), width=4))
                         for head in range(n_heads)]
    return fig


def query_bars(weights, query: int, k_tokens, *, head_names=None) -> go.Figure:
    """Every head's attention row for one query as grouped bars. weights [h, n_q, n_k]."""
    weights = np.asarray(weights, dtype=float)
    h, _, n_k = weights.shape
    head_names = head_names or [f"head {i + 1}" for i in range(h)]
    cols = position_labels(k_tokens)
    data = [dict(type="bar", x=list(range(n_k)), y=weights[head, query].astype(np.float32),
                 name=head_names[head], marker=dict(color=head_colour(head)), hovertext=cols,
                 hovertemplate=f"{head_names[head]} → %{{hovertext}}: %{{y:.4f}}<extra></extra>")
            for head in range(h)]
    layout = _layout(300)
    layout.update(barmode="group", legend=dict(orientation="h", y=1.12),
                  xaxis=dict(tickmode="array", tickvals=list(range(n_k)), ticktext=cols,
                             title=dict(text="key")),
                  yaxis=dict(range=[0, 1], title=dict(text="weight")))
    return _figure(data, layout)


def disagreement_heatmap(distances, *, metric: str, head_names=None) -> go.Figure:
    """The head x head distance matrix for one query. distances [h, h]."""
    distances = np.asarray(distances, dtype=float)
    h = distances.shape[0]
    names = head_names or [f"head {i + 1}" for i in range(h)]
    top = {"l2": float(np.sqrt(2.0)), "js": 1.0, "tv": 1.0}[metric]
    layout = _layout(80 + 40 * max(2, h))
    _axes(layout, 0, 1, names, names)
    return _figure([_heatmap(distances, names, names, zmin=0.0, zmax=top, colorscale=WEIGHT_SCALE,
                             digits=3, hover="%{hovertext}: %{z:.4f}")], layout)


def entropy_bars(normalised, *, head_names=None, flat_at: float) -> go.Figure:
    """Each head's normalised entropy for the chosen query; bars at or past flat_at say 'flat'."""
    normalised = np.asarray(normalised, dtype=float)  # [h]
    h = normalised.shape[0]
    names = head_names or [f"head {i + 1}" for i in range(h)]
    data = [dict(type="bar", x=names, y=normalised.astype(np.float32),
                 marker=dict(color=[head_colour(i) for i in range(h)]),
                 text=["flat" if value >= flat_at else "" for value in normalised], textposition="outside",
                 hovertemplate="%{x}: entropy %{y:.3f} of the maximum<extra></extra>")]
    layout = _layout(260)
    layout.update(yaxis=dict(range=[0, 1.15], title=dict(text="entropy / max")), shapes=[dict(
        type="line", xref="paper", x0=0, x1=1, y0=flat_at, y1=flat_at, line=dict(dash="dot"))])
    return _figure(data, layout)
