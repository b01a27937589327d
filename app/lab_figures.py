"""Pure figures of the Labs page: arrays in, go.Figure out (numpy + plotly only, no streamlit).

Colours are Okabe-Ito, as in app.figures: blue for weights and scaled scores, vermillion for
unscaled ones, reddish purple for "you are here" (the chapter's magenta dot). Numbers on bars go
through format_number, so 2.1e-9 and 1 − 4.1e-9 never print as 0.00 and 1.00. Every word is marked
for the catalogues and written in the ``language`` a builder is given.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figure_spec import inked
from app.numbers import format_number, hover_number
from app.safe import chart_text
from course.i18n import ENGLISH, N_, translator

BLUE, VERMILLION, MARKER = "#0072B2", "#D55E00", "#CC79A7"
FONT = dict(size=13)
BAR_HEIGHT = 300  # px: weight bars
CURVE_HEIGHT = 320  # px: the gap and d_k curves
HISTOGRAM_HEIGHT = 380  # px: two stacked histograms
MARGIN = dict(l=60, r=16, t=48, b=56)  # room for tick labels, axis titles and a one-line title
HISTOGRAM_BINS = 40  # per histogram; each over its own data, so the narrow one keeps its shape
# Both curves end high on the right and start low on the left: their lower right corner is empty.
INSIDE_LOWER_RIGHT = dict(x=0.98, y=0.04, xanchor="right", yanchor="bottom", bgcolor="rgba(255,255,255,0.8)")
WEIGHT_TOP = 1.18  # y range of weight bars: room for the number above a bar of weight 1

KEY, WEIGHT = N_("key"), N_("weight")
BAR_HOVER = N_("{key}: score {score}, weight {weight}, value {value}")
CURVE_NAME = N_("{count} keys, T = {temperature}")
GAP_HOVER = N_("gap {gap}: top weight {weight}")
REFERENCE_HOVER = N_("T = 1, gap {gap}: {weight}")
CURRENT_GAP, CURRENT_LABEL = N_("current gap"), N_("gap {gap}: {weight}")
GAP_TITLE = N_("Softmax collapsing to one-hot ({count} keys)")
GAP_AXIS, TOP_WEIGHT_AXIS = N_("gap between the top score and the others"), N_("weight on the top key")
# "%" is given as a value: a message with "% o" in it would read as a printf format to the catalogue tools
SHARE_HOVER = N_("{name} {value}: {share} of pairs")
SHARE_AXIS, DOT_PRODUCT_AXIS = N_("{percent} of pairs"), N_("dot product")
UNSCALED_SPREAD = N_("q·k: std {spread} (√d_k = {root})")
SCALED_SPREAD = N_("q·k / √d_k: std {spread}")
UNSCALED_NAME = N_("q·k (not scaled)")
UNSCALED_HOVER = N_("d_k {d_k}: largest weight {weight} (not scaled)")
SCALED_HOVER = N_("d_k {d_k}: largest weight {weight} (scaled)")
LARGEST_TITLE = N_("Largest weight of one query over {count} random keys")
LARGEST_AXIS = N_("mean largest weight")


def _layout(height: int, title: str, **axes) -> dict:
    return inked(dict(template={}, height=height, margin=MARGIN, font=FONT, hoverlabel=dict(font=FONT),
                      title=dict(text=chart_text(title), x=0, xanchor="left", font=dict(size=15)), **axes))


def weight_bars(weights, keys, scores, values, *, title: str = "", language: str = ENGLISH) -> go.Figure:
    """One query's weights as bars, the number above each bar. weights, scores, values [n_k]."""
    _ = translator(language)
    weights = np.asarray(weights, dtype=float)  # [n_k]
    labels = [chart_text(key) for key in keys]
    positions = np.arange(1, weights.size + 1)  # [n_k] integer positions: repeated keys stay apart
    hover = [_(BAR_HOVER).format(key=key, score=hover_number(s), weight=hover_number(w, near_one=True),
                                 value=hover_number(v))
             for key, s, w, v in zip(labels, scores, weights, values, strict=True)]
    numbers = [format_number(w, near_one=True) for w in weights]
    bars = go.Bar(x=positions, y=weights, marker_color=BLUE, text=numbers, textposition="outside",
                  cliponaxis=False, hovertext=hover, hovertemplate="%{hovertext}<extra></extra>")
    return go.Figure(bars, _layout(
        BAR_HEIGHT, title,
        xaxis=dict(tickmode="array", tickvals=positions, ticktext=labels, title=_(KEY)),
        yaxis=dict(range=[0, WEIGHT_TOP], tickvals=[0, 0.25, 0.5, 0.75, 1], title=_(WEIGHT))))


def gap_figure(gaps, weights, *, gap: float, weight: float, n_keys: int, temperature: float,
               reference=None, language: str = ENGLISH) -> go.Figure:
    """Top weight against the gap (example D's figure), the current gap marked.

    gaps, weights [n]; reference [n]: the same curve at T = 1, drawn dashed when T differs.
    """
    _ = translator(language)
    traces = [go.Scatter(x=gaps, y=weights, mode="lines", line=dict(color=BLUE, width=3),
                         name=_(CURVE_NAME).format(count=n_keys, temperature=f"{temperature:g}"),
                         hovertemplate=_(GAP_HOVER).format(gap="%{x:.2f}", weight="%{y:.6f}")
                         + "<extra></extra>")]
    if reference is not None:
        traces.append(go.Scatter(x=gaps, y=reference, mode="lines", line=dict(color="grey", dash="dash"),
                                 name="T = 1", hovertemplate=_(REFERENCE_HOVER).format(gap="%{x:.2f}",
                                                                                       weight="%{y:.6f}")
                                 + "<extra></extra>"))
    label = _(CURRENT_LABEL).format(gap=f"{gap:g}", weight=format_number(weight, 4, near_one=True))
    traces.append(go.Scatter(x=[gap], y=[weight], mode="markers+text", marker=dict(color=MARKER, size=14),
                             text=[label], textposition="bottom right" if gap < 20 else "bottom left",
                             name=_(CURRENT_GAP), hovertemplate=f"{label}<extra></extra>"))
    return go.Figure(traces, _layout(
        CURVE_HEIGHT, _(GAP_TITLE).format(count=n_keys),
        xaxis=dict(title=_(GAP_AXIS), range=[0, float(gaps[-1])]),
        yaxis=dict(title=_(TOP_WEIGHT_AXIS), range=[0, 1.05]),
        legend=INSIDE_LOWER_RIGHT, showlegend=reference is not None))


def spread_histograms(unscaled, scaled, d_k: int, *, language: str = ENGLISH) -> go.Figure:
    """q·k and q·k/√d_k for the same pairs, stacked on one x axis. unscaled, scaled [n_pairs]."""
    _ = translator(language)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.16,
                        subplot_titles=(_(UNSCALED_SPREAD).format(spread=f"{np.std(unscaled):.2f}",
                                                                  root=f"{np.sqrt(d_k):.2f}"),
                                        _(SCALED_SPREAD).format(spread=f"{np.std(scaled):.2f}")))
    for row, (sample, colour, name) in enumerate(((unscaled, VERMILLION, "q·k"),
                                                  (scaled, BLUE, "q·k / √d_k")), start=1):
        low, high = float(np.min(sample)), float(np.max(sample))
        hover = _(SHARE_HOVER).format(name=name, value="%{x}", share="%{y:.1f}%")
        size = max(high - low, 1e-9) / HISTOGRAM_BINS
        fig.add_trace(go.Histogram(x=np.asarray(sample, dtype=np.float32), name=name, marker_color=colour,
                                   xbins=dict(start=low, end=high + size, size=size), histnorm="percent",
                                   hovertemplate=hover + "<extra></extra>"),
                      row=row, col=1)
        fig.update_yaxes(title_text=_(SHARE_AXIS).format(percent="%"), row=row, col=1)
    fig.update_xaxes(title_text=_(DOT_PRODUCT_AXIS), row=2, col=1)
    fig.update_annotations(font=dict(size=14), x=0, xanchor="left")
    fig.update_layout(template={}, height=HISTOGRAM_HEIGHT, margin=dict(MARGIN, t=36), font=FONT,
                      showlegend=False, bargap=0.05)
    return fig.update_layout(inked(fig.layout.to_plotly_json()))


def largest_weight_figure(widths, unscaled, scaled, *, d_k: int, n_keys: int,
                          language: str = ENGLISH) -> go.Figure:
    """Mean largest softmax weight against d_k, scaled and not; the chosen d_k marked. [len(widths)] each."""
    _ = translator(language)
    widths = np.asarray(widths)
    traces = [go.Scatter(x=widths, y=unscaled, mode="lines+markers", name=_(UNSCALED_NAME),
                         line=dict(color=VERMILLION, width=3),
                         hovertemplate=_(UNSCALED_HOVER).format(d_k="%{x}", weight="%{y:.3f}")
                         + "<extra></extra>"),
              go.Scatter(x=widths, y=scaled, mode="lines+markers", name="q·k / √d_k",
                         line=dict(color=BLUE, width=3),
                         hovertemplate=_(SCALED_HOVER).format(d_k="%{x}", weight="%{y:.3f}")
                         + "<extra></extra>")]
    layout = _layout(
        CURVE_HEIGHT, _(LARGEST_TITLE).format(count=n_keys),
        xaxis=dict(type="log", title="d_k", tickvals=widths, ticktext=[str(w) for w in widths]),
        yaxis=dict(title=_(LARGEST_AXIS), range=[0, 1.05]),
        legend=INSIDE_LOWER_RIGHT,
        shapes=[dict(type="line", x0=d_k, x1=d_k, yref="paper", y0=0, y1=1,
                     line=dict(color=MARKER, width=2, dash="dot"))])
    return go.Figure(traces, layout)
