"""The bar builders: every head's attention row for one query as grouped bars (each head in its
colour and pattern), and each head's normalised entropy, its bar saying 'flat' at or past a line.
"""

from __future__ import annotations

import math

import numpy as np

from app.charts.figure_layout import (
    FIT_SLACK,
    FULL_WIDTH,
    HALF_WIDTH,
    MAX_TICKS,
    OUTER_MARGIN,
    TICK_PAD,
    TICK_SLOT_PAD,
    TITLE_STANDOFF,
    Style,
    style_of,
    text_px,
    tick_positions,
)
from app.charts.figure_spec import FigureSpec, figure_spec
from app.charts.figure_style import (
    KEY_AXIS,
    WEIGHT,
    head_colour,
    head_names_in,
    head_pattern,
    hover_labels,
    position_labels,
    recorded,
)
from app.charts.number_text import hover_number
from course.i18n import ENGLISH, N_, translator

# --- Words -------------------------------------------------------------------------------------
WEIGHT_AXIS = N_("weight")
HEAD_KEY_HOVER = N_("{head}, key {key}: {value}")
FLAT = N_("flat")
ENTROPY_HOVER = N_("{head}: entropy {number} of the maximum")
ENTROPY_AXIS = N_("entropy / max")


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
    rows = np.asarray(np.asarray(weights)[:, query, :], dtype=float)  # [h, n_k]: the query's rows alone
    h, n_k = rows.shape  # (all of a long sequence's weights in float64 were 96 MiB for one chart)
    s = style_of(large)
    head_names = position_labels(head_names or head_names_in(language, h))
    _ = translator(language)
    hover, weight = _(HEAD_KEY_HOVER), _(WEIGHT)
    cols = position_labels(k_tokens)
    keys = hover_labels(cols)
    positions = np.arange(1, n_k + 1, dtype=np.int32)  # [n_k], 1-based like the heatmaps
    data = [dict(type="bar", x=positions, y=rows[head].astype(np.float32),
                 name=head_names[head], marker=dict(color=head_colour(head), pattern=head_pattern(head)),
                 hovertext=[hover.format(head=head_names[head], key=key,
                                         value=weight.format(number=hover_number(w, near_one=True)))
                           for key, w in zip(keys, rows[head].tolist(), strict=True)],
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
    return figure_spec(data, recorded(layout, language))


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
    return figure_spec(data, recorded(layout, language))
