"""Each course step's charts, defined once: the workbench draws them among its editors and captions
(app/views/workbench.py) and the downloadable page writes them under each step (app/page_export.py).

``CHARTS[number](view)`` gives step ``number``'s charts (course/steps.py numbers them) as an ordered
dict, chart key -> figure; the keys are the workbench's ``st.plotly_chart`` keys. Pure: no widget is
drawn and nothing is read from the session; the view says everything a chart depends on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from app import figures
from app.figure_spec import FigureSpec
from course.i18n import ENGLISH, translator
from course.steps import STEPS
from mha_core.analysis import FLAT_AT
from mha_core.attention import MHAResult
from mha_core.setup import Setup

Build = Callable[..., FigureSpec]  # (builder, *args, **kwargs) -> figure: a cache, or the builder itself
# Steps whose charts show one head at a time (the workbench's head picker); the downloaded page,
# which has no picker, writes them once per head.
ONE_HEAD_AT_A_TIME = frozenset({2})


def build_directly(builder: Callable[..., FigureSpec], *args, **kwargs) -> FigureSpec:
    return builder(*args, **kwargs)


def sub(n: int) -> str:
    """A head's number as a subscript: 12 -> '₁₂'."""
    return str(n).translate(figures.SUBSCRIPTS)


@dataclass(frozen=True)
class StepView:
    """What every step's charts are drawn from: one setup, its result, and the reader's choices."""

    setup: Setup | None  # None where only the result's charts are drawn (step 6's fragment)
    result: MHAResult
    q_tokens: Sequence[str]
    k_tokens: Sequence[str]
    head: int = 0  # the head shown where one head is drawn (ONE_HEAD_AT_A_TIME)
    query: int = 0  # the query token whose heads are compared (step 6)
    metric: str = "l2"  # their disagreement's measure (mha_core.analysis.METRICS)
    large: object = False  # figures' large type (False, True or a figures.Style)
    language: str = ENGLISH
    build: Build = build_directly

    @cached_property
    def heads(self) -> list[str]:
        _ = translator(self.language)
        return [_("head {number}").format(number=i + 1) for i in range(self.result.n_heads)]

    @cached_property
    def compared(self):
        """Step 6's derivation: the heads' disagreement for the query, entropies, flat heads."""
        return STEPS[6].derive(self.setup, self.result, {"focus_query": self.query, "metric": self.metric})

    @cached_property
    def contributions(self):
        """Step 7's derivation: each head's part of the output, and how closely they add up to it."""
        return STEPS[7].derive(self.setup, self.result, {})

    def chart(self, builder: Callable[..., FigureSpec], *args, **kwargs) -> FigureSpec:
        return self.build(builder, *args, large=self.large, language=self.language, **kwargs)

    def titled(self, symbol: str, values) -> list[str]:
        """Panel titles: the head's symbol and its grid's shape, 'A₁ [3 × 5]'; with grouped key/value
        heads also the one each head reads, 'A₃ [3 × 5] · K/V₂'."""
        titles = figures.head_titles(symbol, values)
        per = self.result.n_heads // self.result.groups
        if per == 1:
            return titles
        return [f"{title} · K/V{sub(head // per + 1)}" for head, title in enumerate(titles)]


def embeddings(view: StepView) -> dict[str, FigureSpec]:
    setup, d_model = view.setup, figures.dims("d", view.setup.sizes.d_model)
    charts = {"chart_x": view.chart(figures.matrix_heatmap, setup.x, view.q_tokens, d_model,
                                    title=figures.shape_title("X", setup.x.shape))}
    if setup.x_kv is not None:
        charts["chart_x_kv"] = view.chart(figures.matrix_heatmap, setup.x_kv, view.k_tokens, d_model,
                                          title=figures.shape_title("X_kv", setup.x_kv.shape))
    return charts


def projections(view: StepView) -> dict[str, FigureSpec]:
    """Q, K and V of the shown head; K and V named by their key/value head when heads share them."""
    r, head = view.result, view.head
    number = {"Q": head + 1, "K": r.group_of(head) + 1, "V": r.group_of(head) + 1}
    titles = [figures.shape_title(f"{name}{sub(number[name])}", a[head].shape)
              for name, a in (("Q", r.q), ("K", r.k), ("V", r.v))]
    return {"chart_qkv": view.chart(figures.qkv_panels, r.q[head], r.k[head], r.v[head], view.q_tokens,
                                    view.k_tokens, titles=titles)}


def raw_scores(view: StepView) -> dict[str, FigureSpec]:
    scores = view.result.scores  # [h, n_q, n_k]
    return {"chart_scores": view.chart(figures.head_grids, scores, view.q_tokens, view.k_tokens,
                                       kind="scores", head_names=view.titled("S", scores))}


def softmax(view: StepView) -> dict[str, FigureSpec]:
    r = view.result
    scaled = view.chart(figures.head_grids, r.scaled, view.q_tokens, view.k_tokens, kind="scores",
                        mask=r.mask, head_names=view.titled("scaled", r.scaled))
    weights = view.chart(figures.head_grids, r.weights, view.q_tokens, view.k_tokens, kind="weights",
                         mask=r.mask, head_names=view.titled("A", r.weights))
    return {"chart_scaled": scaled, "chart_weights": weights}


def head_outputs(view: StepView) -> dict[str, FigureSpec]:
    outputs = view.result.head_outputs  # [h, n_q, d_v]
    return {"chart_heads": view.chart(figures.head_grids, outputs, view.q_tokens,
                                      figures.dims("v", view.setup.sizes.d_v), kind="signed",
                                      head_names=view.titled("head", outputs), cols_are_tokens=False)}


def heads_compared(view: StepView) -> dict[str, FigureSpec]:
    """The query's row in every head; with two heads and two keys or more, how far apart they are."""
    charts = {"chart_bars": view.chart(figures.query_bars, view.result.weights, view.query, view.k_tokens,
                                       head_names=view.heads)}
    compared = view.compared
    if compared.comparable:
        charts["chart_disagreement"] = view.chart(figures.disagreement_heatmap, compared.distances,
                                                  metric=view.metric, head_names=view.heads)
        charts["chart_entropy"] = view.chart(figures.entropy_bars, compared.entropy, head_names=view.heads,
                                             flat_at=FLAT_AT)
    return charts


def concatenation(view: StepView) -> dict[str, FigureSpec]:
    r, sizes = view.result, view.setup.sizes
    _ = translator(view.language)
    title = _("Concat(head_1, ..., head_h) {shape}: one coloured band per head").format(
        shape=figures.shape_title("", r.concat.shape).strip())
    contributions = view.contributions.per_head  # [h, n_q, d_model]
    return {"chart_concat": view.chart(figures.concat_bands, r.concat, view.q_tokens, sizes.n_heads,
                                       sizes.d_v, title=title),
            "chart_contributions": view.chart(figures.head_grids, contributions, view.q_tokens,
                                              figures.dims("d", sizes.d_model), kind="signed",
                                              head_names=view.titled("C", contributions),
                                              cols_are_tokens=False)}


def output(view: StepView) -> dict[str, FigureSpec]:
    x, out = view.setup.x, view.result.output  # both [n_q, d_model]
    _ = translator(view.language)
    return {"chart_output": view.chart(figures.side_by_side, x, out, view.q_tokens,
                                       left_title=figures.shape_title(_("input X"), x.shape),
                                       right_title=figures.shape_title(_("output"), out.shape))}


# Step number (course/steps.py) -> its charts. tests/course/test_registry.py holds it to the registry.
CHARTS: Mapping[int, Callable[[StepView], dict[str, FigureSpec]]] = {
    1: embeddings, 2: projections, 3: raw_scores, 4: softmax, 5: head_outputs, 6: heads_compared,
    7: concatenation, 8: output}
