"""Each course step's charts, defined once: the workbench draws them among its editors and captions
(app/views/workbench.py), the presenter fits them to a projector's screen (app/views/present.py) and
the downloadable page writes every one of them under its step (app/page_export.py).

``CHARTS[number](view)`` gives step ``number``'s charts (course/steps.py numbers them) by key, in
order; the keys are the workbench's ``st.plotly_chart`` keys. Each chart is built when a layout first
asks for it, so a layout that draws some of a step's charts pays for those only. Pure: no widget is
drawn and nothing is read from the session; the view says everything a chart depends on (the heads
shown, the query compared, the reader's language, and ``build``: the page's figure cache, the
projector's fitting, or the builder itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from app import figure_layout, figures
from app.figure_spec import FigureSpec
from course.i18n import ENGLISH, translator
from course.steps import STEPS
from mha_core.analysis import FLAT_AT
from mha_core.attention import MHAResult
from mha_core.setup import Setup

Build = Callable[..., FigureSpec]  # (builder, *args, **kwargs) -> figure: a cache, or the builder itself
Keep = Callable[[str, Callable[[], object]], object]  # (name, make) -> a derivation: kept per result, or made
# Steps whose charts show one head at a time (the workbench's head picker); the downloaded page,
# which has no picker, writes them once per head.
ONE_HEAD_AT_A_TIME = frozenset({2})


def build_directly(builder: Callable[..., FigureSpec], *args, **kwargs) -> FigureSpec:
    return builder(*args, **kwargs)


def make_directly(name: str, make: Callable[[], object]) -> object:
    return make()


class Charts(Mapping):
    """A step's charts by key, in order, each built when first asked for."""

    def __init__(self, makers: dict[str, Callable[[], FigureSpec]]):
        self._makers, self._built = makers, {}

    def __getitem__(self, key: str) -> FigureSpec:
        if key not in self._built:
            self._built[key] = self._makers[key]()
        return self._built[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


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
    shown: tuple[int, ...] | None = None  # the heads a grid of every head draws (None: all of them)
    kv_in_titles: bool = True  # with grouped key/value heads, panel titles name the one each head reads
    query: int = 0  # the query token whose heads are compared (step 6)
    metric: str = "l2"  # their disagreement's measure (mha_core.analysis.METRICS)
    large: bool | figure_layout.Style = False  # the page's large type, or a style of its own
    language: str = ENGLISH
    build: Build = build_directly
    keep: Keep = make_directly  # the page keeps a result's derivations with the result (app/state.py)

    @cached_property
    def heads(self) -> list[str]:
        _ = translator(self.language)
        return [_("head {number}").format(number=i + 1) for i in range(self.result.n_heads)]

    @cached_property
    def compared(self):
        """Step 6's derivation: the heads' disagreement for the query, entropies, flat heads."""
        return self.keep(f"compared {self.query} {self.metric}", lambda: STEPS[6].derive(
            self.setup, self.result, {"focus_query": self.query, "metric": self.metric}))

    @cached_property
    def contributions(self):
        """Step 7's derivation: each head's part of the output, and how closely they add up to it
        (h × n_q × d_model numbers: at 1,024 tokens, 80 ms a rerun to make again)."""
        return self.keep("contributions", lambda: STEPS[7].derive(self.setup, self.result, {}))

    def chart(self, builder: Callable[..., FigureSpec], *args, **kwargs) -> FigureSpec:
        return self.build(builder, *args, large=self.large, language=self.language, **kwargs)

    def titled(self, symbol: str, values) -> list[str]:
        """Panel titles: the head's symbol and its grid's shape, 'A₁ [3 × 5]'; with grouped key/value
        heads also the one each head reads, 'A₃ [3 × 5] · K/V₂'."""
        titles = figures.head_titles(symbol, values)
        per = self.result.n_heads // self.result.groups
        if per == 1 or not self.kv_in_titles:
            return titles
        return [f"{title} · K/V{sub(head // per + 1)}" for head, title in enumerate(titles)]

    def heads_grid(self, symbol: str, values: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """values [h, rows, cols] of the heads shown, and their panel titles."""
        titles = self.titled(symbol, values)
        if self.shown is None:
            return values, titles
        return values[list(self.shown)], [titles[head] for head in self.shown]


def embeddings(view: StepView) -> Charts:
    setup, d_model = view.setup, figures.dims("d", view.setup.sizes.d_model)
    charts = {"chart_x": lambda: view.chart(figures.matrix_heatmap, setup.x, view.q_tokens, d_model,
                                            title=figures.shape_title("X", setup.x.shape))}
    if setup.x_kv is not None:
        charts["chart_x_kv"] = lambda: view.chart(figures.matrix_heatmap, setup.x_kv, view.k_tokens, d_model,
                                                  title=figures.shape_title("X_kv", setup.x_kv.shape))
    return Charts(charts)


def projections(view: StepView) -> Charts:
    """Q, K and V of the shown head; K and V named by their key/value head when heads share them."""
    r, head = view.result, view.head
    number = {"Q": head + 1, "K": r.group_of(head) + 1, "V": r.group_of(head) + 1}
    titles = [figures.shape_title(f"{name}{sub(number[name])}", a[head].shape)
              for name, a in (("Q", r.q), ("K", r.k), ("V", r.v))]
    return Charts({"chart_qkv": lambda: view.chart(figures.qkv_panels, r.q[head], r.k[head], r.v[head],
                                                   view.q_tokens, view.k_tokens, titles=titles)})


def grid_of_heads(view: StepView, symbol: str, values: np.ndarray, columns=None,
                  **options) -> Callable[[], FigureSpec]:
    """The maker of one panel per head shown (values [h, n_q, cols]) on one colour scale; the columns
    are the key tokens unless named (a head's output or contribution: its dimensions)."""
    def make() -> FigureSpec:
        shown, titles = view.heads_grid(symbol, values)
        labels = view.k_tokens if columns is None else columns
        return view.chart(figures.head_grids, shown, view.q_tokens, labels, head_names=titles,
                          cols_are_tokens=columns is None, **options)
    return make


def raw_scores(view: StepView) -> Charts:
    return Charts({"chart_scores": grid_of_heads(view, "S", view.result.scores, kind="scores")})


def softmax(view: StepView) -> Charts:
    r = view.result
    return Charts({"chart_scaled": grid_of_heads(view, "scaled", r.scaled, kind="scores", mask=r.mask),
                   "chart_weights": grid_of_heads(view, "A", r.weights, kind="weights", mask=r.mask)})


def head_outputs(view: StepView) -> Charts:
    d_v = figures.dims("v", view.result.head_outputs.shape[2])
    return Charts({"chart_heads": grid_of_heads(view, "head", view.result.head_outputs, d_v, kind="signed")})


def heads_compared(view: StepView) -> Charts:
    """The query's row in every head, as bars and as one grid of heads by keys; with two heads and two
    keys or more, how far apart the heads are and how flat each is."""
    r, query = view.result, view.query
    _ = translator(view.language)
    rows = r.weights[:, query, :]  # [h, n_k]: one row per head, on the weights' one scale
    title = figures.shape_title(_("Query {number} · {token}").format(number=f"{query + 1:d}",
                                                                     token=view.q_tokens[query]), rows.shape)
    charts = {"chart_bars": lambda: view.chart(figures.query_bars, r.weights, query, view.k_tokens,
                                               head_names=view.heads),
              "chart_heads_row": lambda: view.chart(figures.head_grids, rows[None], view.heads,
                                                    view.k_tokens, kind="weights", cols_are_tokens=False,
                                                    head_names=[title])}
    compared = view.compared
    if compared.comparable:
        charts["chart_disagreement"] = lambda: view.chart(figures.disagreement_heatmap, compared.distances,
                                                          metric=view.metric, head_names=view.heads)
        charts["chart_entropy"] = lambda: view.chart(figures.entropy_bars, compared.entropy,
                                                     head_names=view.heads, flat_at=FLAT_AT)
    return Charts(charts)


def concatenation(view: StepView) -> Charts:
    r = view.result
    _ = translator(view.language)
    title = _("Concat {shape}: one band per head").format(
        shape=figures.shape_title("", r.concat.shape).strip())
    d_model = figures.dims("d", r.output.shape[1])
    return Charts({
        "chart_concat": lambda: view.chart(figures.concat_bands, r.concat, view.q_tokens, r.n_heads,
                                           r.head_outputs.shape[2], title=title),
        "chart_contributions": grid_of_heads(view, "C", view.contributions.per_head, d_model, kind="signed")})


def output(view: StepView) -> Charts:
    x, out = view.setup.x, view.result.output  # both [n_q, d_model]
    _ = translator(view.language)
    titles = {"left_title": figures.shape_title(_("input X"), x.shape),
              "right_title": figures.shape_title(_("output"), out.shape)}
    return Charts({"chart_output": lambda: view.chart(figures.side_by_side, x, out, view.q_tokens, **titles)})


# Step number (course/steps.py) -> its charts. tests/course/test_registry.py holds it to the registry.
CHARTS: Mapping[int, Callable[[StepView], Charts]] = {
    1: embeddings, 2: projections, 3: raw_scores, 4: softmax, 5: head_outputs, 6: heads_compared,
    7: concatenation, 8: output}
