"""Pure figures of asking the room: answers and forecasts in, go.Figure out (numpy + plotly only).

Labels (answers, tokens) are outside text: they go through ``figure_style.plain``, so "<b>x</b>" or
"$x$" shows literally. Bars are drawn on integer positions with the labels as tick text, so two
answers that print alike stay two bars. Sizes are for a projector at 1280 x 720 (``large``) or a
phone's 390-px column.
"""

from __future__ import annotations

import numpy as np

from app.charts.figure_spec import FigureSpec, inked
from app.charts.figure_style import plain
from app.charts.figures import head_grids
from app.charts.number_text import format_number, hover_number
from course.i18n import ENGLISH, N_, translator

BLUE, GREEN, GREY = "#0072B2", "#009E73", "#8C8C8C"  # Okabe-Ito: unmarked, right, wrong
RIGHT_SIGN, WRONG_SIGN = "✓ ", "✗ "  # before a revealed answer's label: right and wrong, not by colour alone
LABEL_CHARS = 28  # an answer's label is cut to this many characters on the axis (the hover has it all)
BAR_PX = {False: 34, True: 54}  # height of one bar: normal, large (projector)
FONT_PX = {False: 14, True: 22}
AXIS_PAD = 70  # px below and above the bars: the top axis's ticks, air
SHARE_FONT_PX = 16  # a student's own forecast bars (phone): labels and numbers read at arm's length
SHARE_LABEL_CHARS = 16  # a key's label beside its bar: the left margin stays under half a phone
# The words of these charts, marked for the catalogues and written in the ``language`` a builder is given.
ANSWERS_AXIS, WEIGHT_AXIS = N_("answers"), N_("weight")
MINE, REAL = N_("Your forecast"), N_("The head's softmax")


def _cut(label: str, chars: int = LABEL_CHARS) -> str:
    label = str(label)
    return label if len(label) <= chars else label[:chars - 1] + "…"


def count_text(count: int, total: int) -> str:
    """'12 · 52%': a bar's count and its share of the answers."""
    share = count / total if total else 0.0
    return f"{count} · {share:.0%}"


def answer_bars(labels, counts, *, right=None, large: bool = False, language: str = ENGLISH) -> FigureSpec:
    """The room's answers as horizontal bars, the count and share written on each.

    labels [n] (answers as given), counts [n]; right None (not revealed: every bar blue) or [n] of
    True/False/None (right green and ✓, wrong grey and ✗ before its label). The first label is on top.
    """
    counts = np.asarray(counts, dtype=int)  # [n]
    n, total = counts.size, int(counts.sum())
    positions = np.arange(1, n + 1)  # [n]
    marks = right if right is not None else [None] * n
    signs = ["" if mark is None else RIGHT_SIGN if mark else WRONG_SIGN for mark in marks]  # not colour alone
    shown = [sign + plain(_cut(label)) for sign, label in zip(signs, labels, strict=True)]
    colours = [BLUE if mark is None else GREEN if mark else GREY for mark in marks]
    texts = [count_text(int(c), total) for c in counts]
    hover = [f"{plain(label)}: {text}" for label, text in zip(labels, texts, strict=True)]
    font = dict(size=FONT_PX[large])
    top = max(int(counts.max()) if n else 1, 1)
    data = [dict(type="bar", orientation="h", y=positions, x=counts, marker=dict(color=colours), text=texts,
                 textposition="outside", cliponaxis=False, textfont=font, hovertext=hover,
                 hovertemplate="%{hovertext}<extra></extra>")]
    longest = max((len(s) for s in shown), default=4)
    left = min(int(0.55 * FONT_PX[large] * longest) + 16, 420)
    layout = dict(template={}, height=int(BAR_PX[large] * max(n, 1) + AXIS_PAD), font=font,
                  hoverlabel=dict(font=font), margin=dict(l=left, r=24, t=8, b=AXIS_PAD - 8),
                  showlegend=False,
                  bargap=0.25, yaxis=dict(tickmode="array", tickvals=positions.tolist(), ticktext=shown,
                                          autorange="reversed", tickfont=font),
                  xaxis=dict(range=[0, top * 1.35],
                             title=dict(text=translator(language)(ANSWERS_AXIS), font=font), tickfont=font,
                             dtick=max(1, int(np.ceil(top / 5)))))
    return FigureSpec(dict(data=data, layout=inked(layout)))


def forecast_vs_real(forecast, real, query_labels, key_labels, *, forecast_title: str, real_title: str,
                     large: bool = False, width: int = 900, language: str = ENGLISH) -> FigureSpec:
    """A forecast next to the real softmax, as two weight heatmaps on one 0..1 scale, numbers on
    the cells. forecast, real [n_rows, n_k]; query_labels [n_rows], key_labels [n_k]."""
    pair = np.stack([np.asarray(forecast, dtype=float), np.asarray(real, dtype=float)])  # [2, n_rows, n_k]
    return head_grids(pair, list(query_labels), list(key_labels), kind="weights", large=large, width=width,
                      head_names=[forecast_title, real_title], language=language)


ORANGE = "#C38700"  # Okabe-Ito's orange darkened to 3:1 on white (WCAG 1.4.11): the student's own forecast
PAIR_BAR_PX = 56  # one key's two bars on a phone


def mine_vs_real_bars(mine, real, key_labels, *, mine_name: str | None = None, real_name: str | None = None,
                      language: str = ENGLISH) -> FigureSpec:
    """One row's forecast next to the real weights, as two bars per key with their numbers: read on a
    phone where two heatmaps side by side would be too small. mine, real [n_k]; mine may be NaN
    (not drawn: those bars are left out). The bars' names are MINE and REAL unless given."""
    _ = translator(language)
    mine_name, real_name = mine_name or _(MINE), real_name or _(REAL)
    mine, real = np.asarray(mine, dtype=float), np.asarray(real, dtype=float)  # [n_k], [n_k]
    n = real.size
    positions = np.arange(1, n + 1)
    labels = [plain(_cut(label, SHARE_LABEL_CHARS)) for label in key_labels]
    font = dict(size=SHARE_FONT_PX)
    data = []
    for name, values, colour in ((mine_name, mine, ORANGE), (real_name, real, BLUE)):
        drawn = np.isfinite(values)
        data.append(dict(type="bar", orientation="h", name=name, y=positions[drawn], x=values[drawn],
                         marker=dict(color=colour), textposition="outside", cliponaxis=False, textfont=font,
                         text=[format_number(w, near_one=True) for w in values[drawn]],
                         texttemplate="%{text}",  # i18n.localized_figure writes it the reader's way: 0,10
                         hovertext=[f"{name}, {labels[i]}: {hover_number(values[i], near_one=True)}"
                                    for i in np.flatnonzero(drawn)],
                         hovertemplate="%{hovertext}<extra></extra>"))
    longest = max((len(s) for s in labels), default=4)
    layout = dict(template={}, height=int(PAIR_BAR_PX * n + 110), font=font, barmode="group", bargap=0.25,
                  hoverlabel=dict(font=font), margin=dict(l=int(0.55 * SHARE_FONT_PX * longest) + 14, r=12,
                                                          t=48, b=42),
                  legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom", font=font),
                  yaxis=dict(tickmode="array", tickvals=positions.tolist(), ticktext=labels,
                             autorange="reversed", tickfont=font),
                  xaxis=dict(range=[0, 1.25], tickvals=[0, 0.5, 1], tickfont=font,
                             title=dict(text=_(WEIGHT_AXIS), font=font)))
    return FigureSpec(dict(data=data, layout=inked(layout)))
