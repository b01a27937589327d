"""Pure figures of the Labs page: arrays in, go.Figure out (numpy + plotly only, no streamlit).

Colours are Okabe-Ito, as in app.charts.figures: blue for weights and scaled scores, vermillion for
unscaled ones, reddish purple for "you are here" (the chapter's magenta dot). Numbers on bars go
through format_number, so 2.1e-9 and 1 − 4.1e-9 never print as 0.00 and 1.00. Every word is marked
for the catalogues and written in the ``language`` a builder is given.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.figure_spec import inked
from app.charts.number_text import format_number, hover_number
from app.safe import chart_text
from course.i18n import ENGLISH, N_, localized_number_text, number_marks, translator
from course.labs import binary_size_text

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


def _layout(height: int, title: str, language: str, **axes) -> dict:
    layout = dict(template={}, height=height, margin=MARGIN, font=FONT, hoverlabel=dict(font=FONT),
                  title=dict(text=chart_text(title), x=0, xanchor="left", font=dict(size=15)), **axes)
    return inked(_marked(layout, language))


def _marked(layout: dict, language: str) -> dict:
    """The layout with plotly's ``separators`` of the language, so that the numbers plotly writes itself
    (ticks, %{y:.3f} in hover text) read 0,5 in German; English layouts as they were."""
    marks = number_marks(language)
    return layout if marks == (".", ",") else {**layout, "separators": "".join(marks)}


def _numbers(text: str, language: str) -> str:
    """Numbers written by number_text (0.33, 1 − 1.3e-14) in ``text`` as the language writes them."""
    return localized_number_text(text, language)


def weight_bars(weights, keys, scores, values, *, title: str = "", language: str = ENGLISH) -> go.Figure:
    """One query's weights as bars, the number above each bar. weights, scores, values [n_k]."""
    _ = translator(language)
    weights = np.asarray(weights, dtype=float)  # [n_k]
    labels = [chart_text(key) for key in keys]
    positions = np.arange(1, weights.size + 1)  # [n_k] integer positions: repeated keys stay apart
    hover = [_(BAR_HOVER).format(key=key, score=_numbers(hover_number(s), language),
                                 weight=_numbers(hover_number(w, near_one=True), language),
                                 value=_numbers(hover_number(v), language))
             for key, s, w, v in zip(labels, scores, weights, values, strict=True)]
    numbers = [_numbers(format_number(w, near_one=True), language) for w in weights]
    bars = go.Bar(x=positions, y=weights, marker_color=BLUE, text=numbers, textposition="outside",
                  cliponaxis=False, hovertext=hover, hovertemplate="%{hovertext}<extra></extra>")
    return go.Figure(bars, _layout(
        BAR_HEIGHT, title, language,
        xaxis=dict(tickmode="array", tickvals=positions, ticktext=labels, title=_(KEY)),
        yaxis=dict(range=[0, WEIGHT_TOP], tickvals=[0, 0.25, 0.5, 0.75, 1], title=_(WEIGHT))))


def gap_figure(gaps, weights, *, gap: float, weight: float, n_keys: int, temperature: float,
               reference=None, language: str = ENGLISH) -> go.Figure:
    """Top weight against the gap (example D's figure), the current gap marked.

    gaps, weights [n]; reference [n]: the same curve at T = 1, drawn dashed when T differs.
    """
    _ = translator(language)
    traces = [go.Scatter(x=gaps, y=weights, mode="lines", line=dict(color=BLUE, width=3),
                         name=_(CURVE_NAME).format(count=n_keys,
                                                   temperature=_numbers(f"{temperature:g}", language)),
                         hovertemplate=_(GAP_HOVER).format(gap="%{x:.2f}", weight="%{y:.6f}")
                         + "<extra></extra>")]
    if reference is not None:
        traces.append(go.Scatter(x=gaps, y=reference, mode="lines", line=dict(color="grey", dash="dash"),
                                 name="T = 1", hovertemplate=_(REFERENCE_HOVER).format(gap="%{x:.2f}",
                                                                                       weight="%{y:.6f}")
                                 + "<extra></extra>"))
    label = _(CURRENT_LABEL).format(gap=_numbers(f"{gap:g}", language),
                                    weight=_numbers(format_number(weight, 4, near_one=True), language))
    traces.append(go.Scatter(x=[gap], y=[weight], mode="markers+text", marker=dict(color=MARKER, size=14),
                             text=[label], textposition="bottom right" if gap < 20 else "bottom left",
                             name=_(CURRENT_GAP), hovertemplate=f"{label}<extra></extra>"))
    return go.Figure(traces, _layout(
        CURVE_HEIGHT, _(GAP_TITLE).format(count=n_keys), language,
        xaxis=dict(title=_(GAP_AXIS), range=[0, float(gaps[-1])]),
        yaxis=dict(title=_(TOP_WEIGHT_AXIS), range=[0, 1.05]),
        legend=INSIDE_LOWER_RIGHT, showlegend=reference is not None))


def spread_histograms(unscaled, scaled, d_k: int, *, language: str = ENGLISH) -> go.Figure:
    """q·k and q·k/√d_k for the same pairs, stacked on one x axis. unscaled, scaled [n_pairs]."""
    _ = translator(language)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.16,
                        subplot_titles=(_(UNSCALED_SPREAD).format(
                            spread=_numbers(f"{np.std(unscaled):.2f}", language),
                            root=_numbers(f"{np.sqrt(d_k):.2f}", language)),
                            _(SCALED_SPREAD).format(spread=_numbers(f"{np.std(scaled):.2f}", language))))
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
    return fig.update_layout(inked(_marked(fig.layout.to_plotly_json(), language)))


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
        CURVE_HEIGHT, _(LARGEST_TITLE).format(count=n_keys), language,
        xaxis=dict(type="log", title="d_k", tickvals=widths, ticktext=[str(w) for w in widths]),
        yaxis=dict(title=_(LARGEST_AXIS), range=[0, 1.05]),
        legend=INSIDE_LOWER_RIGHT,
        shapes=[dict(type="line", x0=d_k, x1=d_k, yref="paper", y0=0, y1=1,
                     line=dict(color=MARKER, width=2, dash="dot"))])
    return go.Figure(traces, layout)


# --- Attention cost against sequence length ----------------------------------------------------

COST_HEIGHT = 560  # px: two stacked panels and a legend below them
COST_MARGIN = dict(l=72, r=16, t=56, b=112)  # room for 10ⁿ ticks, the axis title and a wrapped legend
LEGEND_BELOW = dict(orientation="h", x=0, y=-0.16, yanchor="top")  # under the x axis title; wraps on a phone
KIND_STYLES = {"full": (VERMILLION, "solid", "circle"), "causal": (BLUE, "dash", "square"),
               "window": (MARKER, "dot", "diamond")}  # colour, dash, marker: told apart without colour too
KIND_NAMES = {"full": N_("full"), "causal": N_("causal"), "window": N_("sliding window, w = {window}")}
COST_FLOPS_TITLE = N_("FLOPs of QKᵀ and weights · V")  # short: one line on a 390 px phone
COST_MEMORY_TITLE = N_("memory of the weights kept")
COST_AXIS = N_("sequence length n (tokens)")
COST_HOVER = "{name}, n = {n}: {value}"
# The summary names both panels' titles (a screen reader hears which panel a number belongs to).
COST_SUMMARY = N_("Attention cost of one layer for n from {low} to {high} tokens, on log axes; at n = "
                  "{high}: {flops_title}: full {full_flops}, causal {causal_flops}, sliding window of "
                  "{window} {window_flops}. {memory_title}: full {full_bytes}, causal {causal_bytes}, "
                  "sliding window {window_bytes}.")


def tokens_tick(n: int) -> str:
    """A sequence length as a short tick: 512, 1K, 32K (K = 1024 tokens)."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


BYTE_TICK_STEP = 5  # a tick every 2⁵ = 32 times more bytes: 1 MiB, 32 MiB, 1 GiB, ...


def _byte_ticks(low: float, high: float, language: str) -> tuple[list[float], list[str]]:
    """Powers of 32 bytes from below `low` to above `high`, and their names (1 MiB, 32 MiB, 1 GiB, ...)."""
    first = int(np.floor(np.log2(max(low, 1.0)) / BYTE_TICK_STEP)) * BYTE_TICK_STEP
    last = int(np.ceil(np.log2(max(high, 1.0)) / BYTE_TICK_STEP)) * BYTE_TICK_STEP
    values = [2.0**p for p in range(first, last + 1, BYTE_TICK_STEP)]
    return values, [binary_size_text(int(v), language) for v in values]


def attention_cost_figure(lengths, curves: dict, *, window: int, language: str = ENGLISH) -> go.Figure:
    """FLOPs (top) and weight bytes (bottom) against n for full, causal and windowed attention, log axes.

    lengths [m]; curves: kind -> (flops [m], weight bytes [m]) as course.labs.cost_curves returns them.
    """
    _ = translator(language)
    lengths = np.asarray(lengths)  # [m]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=(_(COST_FLOPS_TITLE), _(COST_MEMORY_TITLE)),
                        figure=go.Figure(layout=dict(template={})))  # no theme's grey: ink on white
    for kind, (flops, weight_bytes) in curves.items():
        colour, dash, symbol = KIND_STYLES[kind]
        name = _(KIND_NAMES[kind]).format(window=window)
        sizes = [binary_size_text(int(v), language) for v in weight_bytes]
        for row, values, words in ((1, flops, [_numbers(hover_number(v), language) for v in flops]),
                                   (2, weight_bytes, sizes)):
            hover = [COST_HOVER.format(name=name, n=n, value=word)
                     for n, word in zip(lengths, words, strict=True)]
            fig.add_trace(go.Scatter(x=lengths, y=values, mode="lines+markers", name=name, legendgroup=kind,
                                     showlegend=row == 1, line=dict(color=colour, dash=dash, width=3),
                                     marker=dict(symbol=symbol, size=8, color=colour), hovertext=hover,
                                     hovertemplate="%{hovertext}<extra></extra>"),
                          row=row, col=1)
    memory = np.concatenate([weight_bytes for _flops, weight_bytes in curves.values()])
    byte_values, byte_names = _byte_ticks(float(memory.min()), float(memory.max()), language)
    fig.update_xaxes(type="log", tickmode="array", tickvals=lengths.tolist(),
                     ticktext=[tokens_tick(int(n)) for n in lengths])
    fig.update_xaxes(title_text=_(COST_AXIS), row=2, col=1)
    fig.update_yaxes(type="log", exponentformat="power", title_text="FLOPs", row=1, col=1)
    fig.update_yaxes(type="log", tickmode="array", tickvals=byte_values, ticktext=byte_names, row=2, col=1)
    if lengths.min() <= window <= lengths.max():  # where the window stops growing with n
        fig.add_vline(x=window, line=dict(color=MARKER, width=2, dash="dot"))
    fig.update_annotations(font=dict(size=14), x=0, xanchor="left")
    fig.update_layout(height=COST_HEIGHT, margin=COST_MARGIN, font=FONT,
                      hoverlabel=dict(font=FONT), legend=LEGEND_BELOW)
    return fig.update_layout(inked(_marked(fig.layout.to_plotly_json(), language)))


def cost_summary(lengths, curves: dict, *, window: int, language: str = ENGLISH) -> str:
    """The cost chart in one sentence: its range, and each kind's FLOPs and bytes at the longest n."""
    _ = translator(language)
    last = {kind: (localized_number_text(format_number(flops[-1]), language),
                   binary_size_text(int(weight_bytes[-1]), language))
            for kind, (flops, weight_bytes) in curves.items()}
    return _(COST_SUMMARY).format(
        flops_title=_(COST_FLOPS_TITLE), memory_title=_(COST_MEMORY_TITLE),
        low=localized_number_text(f"{int(lengths[0]):,}", language),
        high=localized_number_text(f"{int(lengths[-1]):,}", language),
        window=localized_number_text(f"{window:,}", language),
        full_flops=last["full"][0], full_bytes=last["full"][1], causal_flops=last["causal"][0],
        causal_bytes=last["causal"][1], window_flops=last["window"][0], window_bytes=last["window"][1])
