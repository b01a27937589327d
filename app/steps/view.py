"""What every step's charts are drawn from (``StepView``) and what they are (``Charts``).

A step's ``charts(view)`` (app/steps/<step>.py) gives its charts by key, in order; the keys are the
workbench's ``st.plotly_chart`` keys. The workbench draws them among its editors and captions, the
presenter fits them to a projector's screen and the downloadable page writes every one of them under
its step. Each chart is built when a layout first asks for it, so a layout that draws some of a
step's charts pays for those only. Pure: no widget is drawn and nothing is read from the session; the
view says everything a chart depends on (the heads shown, the query compared, the reader's language,
and ``build``: the page's figure cache, the projector's fitting, or the builder itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from app.charts import figure_layout, figure_style, figures
from app.charts.figure_spec import FigureSpec
from course.i18n import ENGLISH, translator
from course.steps import STEPS
from mha_core.attention import MHAResult
from mha_core.setup import Setup

Build = Callable[..., FigureSpec]  # (builder, *args, **kwargs) -> figure: a cache, or the builder itself
Keep = Callable[[str, Callable[[], object]], object]  # (name, make) -> a derivation: kept per result, or made


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
    return str(n).translate(figure_style.SUBSCRIPTS)


@dataclass(frozen=True)
class StepView:
    """What every step's charts are drawn from: one setup, its result, and the reader's choices."""

    setup: Setup | None  # None where only the result's charts are drawn (heads_compared's fragment)
    result: MHAResult
    q_tokens: Sequence[str]
    k_tokens: Sequence[str]
    head: int = 0  # the head shown where one head is drawn (a step's drawing: one_head_at_a_time)
    shown: tuple[int, ...] | None = None  # the heads a grid of every head draws (None: all of them)
    kv_in_titles: bool = True  # with grouped key/value heads, panel titles name the one each head reads
    query: int = 0  # the query token whose heads are compared (heads_compared)
    metric: str = "l2"  # their disagreement's measure (mha_core.analysis.METRICS)
    large: bool | figure_layout.Style = False  # the page's large type, or a style of its own
    language: str = ENGLISH
    build: Build = build_directly
    keep: Keep = make_directly  # the page keeps a result's derivations with it (app/session/this_run.py)

    @cached_property
    def heads(self) -> list[str]:
        _ = translator(self.language)
        return [_("head {number}").format(number=i + 1) for i in range(self.result.n_heads)]

    @cached_property
    def compared(self):
        """heads_compared's derivation: the heads' disagreement for the query, entropies, flat heads."""
        return self.keep(f"compared {self.query} {self.metric}", lambda: STEPS["heads_compared"].derive(
            self.setup, self.result, {"focus_query": self.query, "metric": self.metric}))

    @cached_property
    def contributions(self):
        """concatenation's derivation: each head's part of the output, and how closely they add up to
        it (h × n_q × d_model numbers: at 1,024 tokens, 80 ms a rerun to make again)."""
        return self.keep("contributions", lambda: STEPS["concatenation"].derive(self.setup, self.result, {}))

    def chart(self, builder: Callable[..., FigureSpec], *args, **kwargs) -> FigureSpec:
        return self.build(builder, *args, large=self.large, language=self.language, **kwargs)

    def titled(self, symbol: str, values) -> list[str]:
        """Panel titles: the head's symbol and its grid's shape, 'A₁ [3 × 5]'; with grouped key/value
        heads also the one each head reads, 'A₃ [3 × 5] · K/V₂'."""
        titles = figure_style.head_titles(symbol, values)
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
