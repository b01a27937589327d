"""Pure figures of the Learn page (numpy + plotly only): the loss over training with each head's
previous-token and induction scores, and two runs' losses side by side (example F, live).

Okabe-Ito colours as everywhere; every word is marked for the catalogues and written in the
``language`` a builder is given.
"""

from __future__ import annotations

import numpy as np
from plotly.subplots import make_subplots

from app.charts.figure_spec import FigureSpec, inked
from app.safe import chart_text
from course.i18n import ENGLISH, N_, translator

BLACK, BLUE, VERMILLION, GREEN = "#000000", "#0072B2", "#D55E00", "#009E73"
PURPLE, ORANGE = "#CC79A7", "#E69F00"
HEAD_COLOURS = [BLUE, VERMILLION, GREEN, PURPLE, ORANGE, "#56B4E9", "#8C564B", "#7F7F7F"]
FONT = dict(size=13)
MARGIN = dict(l=60, r=16, t=56, b=52)
HEIGHT = 460

LOSS, STEP = N_("loss"), N_("training step")
SCORE = N_("score (0 to 1)")
LOSS_TITLE = N_("Loss over training")
SCORES_TITLE = N_("What each head became: previous-token and induction scores")
HEAD_NAME = N_("layer {layer}, head {head}")
PREVIOUS, INDUCTION = N_("previous-token"), N_("induction")
SHOWN = N_("shown: step {step}")
HOVER_LOSS = N_("step {step}: loss {loss}")
HOVER_SCORE = N_("{name}, {what} score at step {step}: {score}")
RUNS_TITLE = N_("The same model trained twice: scaled by 1/√d_k and not scaled")


def _layout(height: int = HEIGHT, **extra) -> dict:
    return inked(dict(template={}, height=height, margin=MARGIN, font=FONT, hoverlabel=dict(font=FONT),
                      legend=dict(orientation="h", x=0, y=-0.18, xanchor="left", yanchor="top"), **extra))


def training_figure(losses, steps, scores, shown_step: int | None = None, *,
                    language: str = ENGLISH) -> FigureSpec:
    """Loss on top, each head's scores below, on one step axis. losses [n_steps] (step 1..n);
    steps [C] checkpoint steps; scores [C, layers, heads, 2] (previous-token, induction)."""
    _ = translator(language)
    losses = np.asarray(losses, dtype=float)
    scores = np.asarray(scores, dtype=float)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=(_(LOSS_TITLE), _(SCORES_TITLE)))
    every = np.arange(1, losses.size + 1)
    fig.add_scatter(x=every, y=losses, mode="lines", line=dict(color=BLACK, width=2), name=_(LOSS),
                    hovertemplate=_(HOVER_LOSS).format(step="%{x}", loss="%{y:.3f}") + "<extra></extra>",
                    row=1, col=1)
    layers, heads = scores.shape[1:3]
    for layer in range(layers):
        for head in range(heads):
            colour = HEAD_COLOURS[(layer * heads + head) % len(HEAD_COLOURS)]
            name = _(HEAD_NAME).format(layer=layer + 1, head=head + 1)
            for which, (what, dash) in enumerate(((PREVIOUS, "dot"), (INDUCTION, "solid"))):
                hover = _(HOVER_SCORE).format(name=name, what=_(what), step="%{x}", score="%{y:.2f}")
                fig.add_scatter(x=np.asarray(steps), y=scores[:, layer, head, which], mode="lines+markers",
                                line=dict(color=colour, dash=dash, width=2), marker=dict(size=5),
                                name=f"{name}: {_(what)}", hovertemplate=hover + "<extra></extra>",
                                row=2, col=1)
    if shown_step is not None:
        fig.add_vline(x=shown_step, line=dict(color=PURPLE, width=2, dash="dash"))
        fig.add_annotation(x=shown_step, y=1, yref="paper", text=_(SHOWN).format(step=shown_step),
                           showarrow=False, xanchor="left", yanchor="bottom", font=dict(color=BLACK))
    spec = fig.to_dict()
    layout = spec["layout"]
    layout.update(_layout(HEIGHT + 80,
                          xaxis2=dict(layout.get("xaxis2", {}), title=_(STEP)),
                          xaxis=dict(layout.get("xaxis", {})),
                          yaxis=dict(layout.get("yaxis", {}), title=_(LOSS), rangemode="tozero"),
                          yaxis2=dict(layout.get("yaxis2", {}), title=_(SCORE), range=[0, 1.02]),
                          annotations=layout.get("annotations", ())))
    return FigureSpec({"data": spec["data"], "layout": layout})


def runs_figure(runs, *, language: str = ENGLISH) -> FigureSpec:
    """Two or more runs' losses on one axis. runs: [(name, losses [n_steps])], names already words."""
    _ = translator(language)
    fig = make_subplots(rows=1, cols=1)
    for (name, losses), colour in zip(runs, (BLUE, VERMILLION, GREEN, PURPLE), strict=False):
        losses = np.asarray(losses, dtype=float)
        hover = chart_text(name) + ": " + _(HOVER_LOSS).format(step="%{x}", loss="%{y:.3f}")
        fig.add_scatter(x=np.arange(1, losses.size + 1), y=losses, mode="lines", name=chart_text(name),
                        line=dict(color=colour, width=2), hovertemplate=hover + "<extra></extra>")
    spec = fig.to_dict()
    layout = spec["layout"]
    layout.update(_layout(title=dict(text=_(RUNS_TITLE), x=0, xanchor="left", font=dict(size=15)),
                          xaxis=dict(title=_(STEP)), yaxis=dict(title=_(LOSS), rangemode="tozero")))
    return FigureSpec({"data": spec["data"], "layout": layout})
