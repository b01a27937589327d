"""The workbench: every step of multi-head attention, in the order of the course.

``render(current, inputs)`` draws one Setup and its MHAResult; it reads nothing else but the
editors' bases (to draw them) and the selections (through widgets.choice_ui).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import streamlit as st

from app import (
    cell_opener,
    figure_layout,
    figures,
    frame,
    i18n,
    live,
    phone_css,
    result_cache,
    state,
    widgets,
)
from app.figure_cache import figure
from app.fragments import fragment
from app.safe import lit
from app.state import Current, Inputs
from app.step_charts import CHARTS, StepView, sub
from app.step_text import drill_lines, sizes_line
from app.style import LARGE_TYPE_CSS
from app.views import compare
from app.widgets import chart, following
from course.i18n import N_
from course.steps import STEPS
from mha_core import LIMITS, row_sum_deviation
from mha_core.analysis import METRICS
from mha_core.setup import SPECS

ZOOM = 12  # positions a side of the zoomed window of a long sequence's weights
PATH = "workbench"  # the page's address (app/streamlit_app.py)
METRIC_NAMES = {"l2": N_("L2 (Euclidean)"), "js": N_("Jensen-Shannon"), "tv": N_("total variation")}


def step_header(number: int, formula: str | None = None, what: str | None = None) -> None:
    """Title, formula and what/why as one element (each element drawn costs a rerun time)."""
    st.markdown(step_markdown(number, formula, what))


def step_markdown(number: int, formula: str | None = None, what: str | None = None) -> str:
    """A step's heading, formula and what/why: the course's own Markdown (course/steps.py), or the
    formula and what given (the app's own too: tests/app/test_escaping.py checks every call)."""
    step = i18n.step(number)
    what_word = i18n.t("What.")
    why_word = i18n.t("Why.")
    return (f"### {number}. {step.title}\n\n$$\n{i18n.tex(formula or step.formula)}\n$$\n\n"
            f"**{what_word}** {what or step.what}  \n**{why_word}** {step.why}")


def grid(fig, *, key: str) -> None:
    """A grid chart, and next to it why its cells carry no numbers when they do not."""
    chart(fig, key=key)
    note = figures.numbers_note(fig)
    if note:
        st.caption(lit(note))


def waiting() -> None:
    st.info(i18n.t("Waiting for valid input: fix the input with a warning sign and this step comes back."))


def render(current: Current, inputs: Inputs) -> None:
    frame.link_notes()
    if inputs.sizes is None:
        st.warning(i18n.t("Fix the setting with a warning sign in the sidebar; nothing you typed in the "
                          "grids is lost."))
        return
    frame.hand_over(current)
    steps(inputs, frame.mark(current))


@fragment
def steps(inputs: Inputs, mark: frame.Mark) -> None:
    """The steps, rerun alone by what happens among them (an edit of a grid, a head picked, a table
    opened): the frame's sidebar and inputs stay as the whole run drew them, so such a run costs
    the steps only. What the frame drew from the result changing (the first edit of an example, a
    link that no longer fits, another example opened by a button here) runs the whole page."""
    current = frame.taken()
    alone = current is None
    if alone:
        i18n.language.start()  # read once for this run, as the frame does for a whole one
        phone_css.column_width.start()
        current = state.build(inputs)
        if frame.mark(current) != mark:
            st.rerun(scope="app")
    draw(current, inputs)
    if alone:
        frame.finish(current, PATH, whole=False)


def draw(current: Current, inputs: Inputs) -> None:
    if inputs.large:
        st.html(LARGE_TYPE_CSS)
    story(current)
    compare.render(current)
    for note in current.notes:
        st.info(lit(note), icon=":material/add_circle:")
    if current.error:
        st.error(i18n.t("The computation refused these inputs: {error}").format(error=lit(current.error)),
                 icon=":material/warning:")
    page = Page(current, inputs)
    for number in STEPS:  # the course's registry is the only list of steps
        if number in Page.DRAW:
            getattr(page, Page.DRAW[number])()
        else:  # a step with no editor or words of its own: its heading and its charts
            page.step_charts(number)
    page.drill_down()


def story(current: Current) -> None:
    """Which example is on screen, what it teaches, and the sizes and parameter count."""
    base = current.base
    example = state.examples().get(base.origin) if base is not None else None
    if example is not None:
        edited = widgets.whose_edit(below=True) if current.edited else ""
        with st.container(border=True):
            st.markdown(f"**{lit(i18n.t(example.title))}**{lit(edited)} · {lit(i18n.t(example.source))}")
            st.caption(lit(i18n.t(example.story)))
            if example.lesson is not None:
                point = lit(i18n.t(example.lesson.look_for))
                st.markdown(i18n.t("**What to look for:** {point}").format(point=point))
    if current.setup is not None:
        st.markdown(sizes_line(current.setup.sizes))


class Page:
    """The course's steps (course/steps.py), drawn from one Setup and its MHAResult."""

    # Step number -> its drawing, for the steps with editors or words of their own; any other step is
    # drawn as its heading and its charts (app/step_charts.py).
    DRAW = {1: "embeddings", 2: "projections", 3: "raw_scores", 4: "softmax", 5: "head_outputs",
            6: "heads_compared", 7: "concatenation", 8: "output"}

    def __init__(self, current: Current, inputs: Inputs):
        self.current, self.inputs = current, inputs
        self.setup, self.result, self.problems = current.setup, current.result, current.problems
        self.sizes = inputs.sizes
        self.q_tokens, self.k_tokens = inputs.tokens, inputs.kv_tokens
        self.heads = [i18n.t("head {number}").format(number=i + 1) for i in range(self.sizes.n_heads)]
        self.large = inputs.large
        self.view = (StepView(self.setup, self.result, self.q_tokens, self.k_tokens, large=self.large,
                              language=i18n.language(), build=figure,
                              keep=state.keeper(st.session_state.result_key))
                     if self.result is not None else None)

    def step_charts(self, number: int) -> None:
        step_header(number)
        if self.view is None:
            return waiting()
        for key, fig in self.charts(number).items():
            grid(fig, key=key)

    def charts(self, number: int, **choices) -> dict:
        """Step ``number``'s charts (app/step_charts.py), for the head or query chosen on the page."""
        view = replace(self.view, **choices) if choices else self.view
        return CHARTS[number](view) if number in CHARTS else {}

    def problem(self, name: str) -> None:
        if name in self.problems:
            st.error(lit(self.problems[name]), icon=":material/warning:")

    def _owner(self, name: str, head: int, group: int) -> str:
        """Whose matrix an editor holds: the query head's, or its key/value head's when they are grouped."""
        if name in ("w_q", "b_q") or self.sizes.groups == self.sizes.n_heads:
            return self.heads[head]
        return i18n.t("key/value head {number}").format(number=f"{group + 1:d}")

    def editor(self, name: str, head: int | None = None, boolean: bool = False,
               editable: bool = True) -> None:
        rows, columns = state.grid_labels(name, self.q_tokens, self.k_tokens, self.sizes)
        widgets.editor_ui(name, rows, columns, head=head, boolean=boolean, editable=editable)

    def embeddings(self):
        step_header(1)
        left, right = st.columns(2)
        with left:
            editable = max(self.sizes.n_q, self.sizes.d_model) <= LIMITS.editable and not following()
            rows = (i18n.t("X [{rows} × {columns}]: one row per query token (edit any cell)") if editable
                    else i18n.t("X [{rows} × {columns}]: one row per query token"))
            st.caption(rows.format(rows=f"{self.sizes.n_q:d}", columns=f"{self.sizes.d_model:d}"))
            self.editor("x")
            self.problem("x")
            if self.sizes.cross:
                st.caption(i18n.t("X_kv [{rows} × {columns}]: the key/value side")
                           .format(rows=f"{self.sizes.n_k:d}", columns=f"{self.sizes.d_model:d}"))
                self.editor("x_kv")
                self.problem("x_kv")
        with right:
            if self.view is not None:
                for key, fig in self.charts(1).items():
                    grid(fig, key=key)

    def projections(self):
        step_header(2)
        # One head at a time: every head's matrices still count; only the drawing is per head.
        head = widgets.choice_ui(st, i18n.t("head"), self.heads, "shown_head", segmented=True)
        sz = self.sizes
        group = head // (sz.n_heads // sz.groups)  # the key/value head this query head reads
        if sz.groups < sz.n_heads:
            st.caption(lit(sharing_text(sz.n_heads, sz.groups, head)))
        names = "W_Q, W_K, W_V" + (", b_Q, b_K, b_V" if sz.bias else "")
        editable = widgets.edit_toggle_ui(widgets.EDIT_PROJECTIONS, names)
        for column, name in zip(st.columns(3), ("w_q", "w_k", "w_v"), strict=True):
            with column:
                width = sz.d_v if name == "w_v" else sz.d_k
                st.caption(i18n.t("{matrix} of {head} [{rows} × {columns}]").format(
                    matrix=lit(SPECS[name].label), head=lit(self._owner(name, head, group)),
                    rows=f"{sz.d_model:d}", columns=f"{width:d}"))
                self.editor(name, head=head if name == "w_q" else group, editable=editable)
        if sz.bias:
            for column, name in zip(st.columns(3), ("b_q", "b_k", "b_v"), strict=True):
                with column:
                    st.caption(i18n.t("{matrix} of {head}").format(matrix=lit(SPECS[name].label),
                                                                   head=lit(self._owner(name, head, group))))
                    self.editor(name, head=head if name == "b_q" else group, editable=editable)
        for name in ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v"):
            self.problem(name)
        if self.view is not None:
            grid(self.charts(2, head=head)["chart_qkv"], key="chart_qkv")

    def raw_scores(self):
        step_header(3)
        if self.result is None:
            return waiting()
        sz, cost = self.sizes, STEPS[3].derive(self.setup, self.result, {})
        st.caption(i18n.t("Each head's scores are [{n_q} × {n_k}] (queries × keys). Cost of all {h} heads' "
                          "scores and blends: {flops} FLOPs; one head of width {width} would cost {wide}. "
                          "Thin heads add viewpoints, not work.")
                   .format(n_q=f"{sz.n_q:d}", n_k=f"{sz.n_k:d}", h=f"{sz.n_heads:d}",
                           flops=i18n.number(cost.flops), width=f"{sz.n_heads * sz.d_k:d}",
                           wide=i18n.number(cost.one_wide_head_flops)))
        grid(self.charts(3)["chart_scores"], key="chart_scores")

    def softmax(self):
        setup = self.setup
        scaling_formula = setup.scaling.latex(self.sizes.d_k) if setup else r"Q_i K_i^{\top}"
        masked = setup is not None and setup.mask is not None
        formula = (r"A_i = \operatorname{softmax}\!\left(" + scaling_formula
                   + (r" + M\right),\quad M_{jk} = -\infty \text{ where } j \text{ may not attend to } k"
                      if masked else r"\right)"))
        what = None
        if setup is not None and setup.scaling.kind != "sqrt":
            what = (i18n.t("Scale every score (here: {scaling}), then turn each row into positive weights "
                           "that add up to 1.").format(scaling=setup.scaling.describe(self.sizes.d_k)))
        step_header(4, formula, what)
        if self.inputs.mask_kind == "custom":
            self._mask_editor()
        if self.result is None:
            return waiting()
        r = self.result
        size = f"{setup.mask.size:d}" if setup.mask_kind == "window" else ""
        mask_note = {"causal": i18n.t("causal: a query sees itself and the tokens before it"),
                     "window": i18n.t("a sliding window of {size}: a query sees the last {size} tokens, "
                                      "itself included").format(size=size),
                     "custom": i18n.t("your grid")}.get(setup.mask_kind)
        scaled = i18n.t("Scaled scores: {scaling}").format(scaling=setup.scaling.describe(self.sizes.d_k))
        if mask_note:
            scaled += i18n.t("; masked cells (mask: {note}) are blank here and in the weights").format(
                note=mask_note)
        st.caption(lit(scaled))
        charts = self.charts(4)
        grid(charts["chart_scaled"], key="chart_scaled")
        st.caption(i18n.t("Attention weights A = softmax over each row (one colour scale 0 to 1 for all "
                          "heads)"))
        grid(charts["chart_weights"], key="chart_weights")
        if r.weights[0].size > figure_layout.IMAGE_FROM_CELLS:
            self._zoom(r)
        deviation = row_sum_deviation(r.weights)
        blocked = int(np.sum(~r.mask.any(axis=1))) if r.mask is not None else 0  # rows with no key
        check = i18n.t("Check: every row sums to 1 (largest deviation {deviation}).").format(
            deviation=f"{deviation:.1e}")
        if blocked:
            check = i18n.t("Check: every row that may attend to a key sums to 1 (largest deviation "
                           "{deviation}); {blocked} fully masked row(s) attend to nothing (all 0).").format(
                deviation=f"{deviation:.1e}", blocked=f"{blocked:d}")
        st.success(check, icon=":material/check_circle:")

    def _zoom(self, r) -> None:
        """A long sequence's weights: one head's window at full resolution, with its numbers."""
        n_q, n_k = r.weights.shape[1:]
        st.caption(i18n.t("Each head's {n_q} × {n_k} grid is sent as a picture (block means beyond {blocks} "
                          "positions a side): numbers on cells and editing cell by cell are off. One head's "
                          "window of {zoom} × {zoom} at full resolution, with its numbers:").format(
            n_q=f"{n_q:d}", n_k=f"{n_k:d}", blocks=f"{figure_layout.IMAGE_BLOCKS:d}", zoom=f"{ZOOM:d}"))
        head_column, query_column, key_column = st.columns(3)
        head = widgets.choice_ui(head_column, i18n.t("head"), self.heads, "zoom_head")
        q0 = int(query_column.number_input(i18n.t("queries from"), 1, max(1, n_q - ZOOM + 1),
                                           key="zoom_query")) - 1
        k0 = int(key_column.number_input(i18n.t("keys from"), 1, max(1, n_k - ZOOM + 1), key="zoom_key")) - 1
        rows, cols = slice(q0, q0 + ZOOM), slice(k0, k0 + ZOOM)
        window = r.weights[head:head + 1, rows, cols]  # [1, <= ZOOM, <= ZOOM]
        title = i18n.t("{symbol}, a window").format(symbol=f"A{sub(head + 1)}")
        chart(figure(figures.head_grids, window, state.row_labels(self.q_tokens)[rows],
                     state.row_labels(self.k_tokens)[cols], kind="weights", large=self.large,
                     mask=r.mask[rows, cols] if r.mask is not None else None,
                     head_names=[figures.shape_title(title, window.shape[1:])]),
              key="chart_zoom")

    def _mask_editor(self):
        st.caption(i18n.t("Mask: tick the (query, key) pairs that may attend"))
        self.editor(state.MASK, boolean=True)
        if self.setup is None or not isinstance(self.setup.mask, np.ndarray):
            return
        blocked = np.flatnonzero(~self.setup.mask.any(axis=1))
        if blocked.size:
            names = ", ".join(lit(f"{i + 1} · {self.q_tokens[i]}") for i in blocked)
            st.warning(i18n.t("Row {names} blocks every key: nothing can be attended to, so its weights are "
                              "all 0 and its head outputs are zero vectors. Tick at least one key to fix it.")
                       .format(names=names), icon=":material/warning:")

    def head_outputs(self):
        step_header(5)
        if self.result is None:
            return waiting()
        grid(self.charts(5)["chart_heads"], key="chart_heads")

    def heads_compared(self):
        step_header(6)
        if self.result is None:
            return waiting()
        heads_compared(st.session_state.result_key, self.q_tokens, self.k_tokens, self.heads, self.large)

    def concatenation(self):
        step_header(7)
        sz = self.sizes
        editable = widgets.edit_toggle_ui(widgets.EDIT_OUTPUT_MIX, "W_O" + (", b_O" if sz.bias else ""))
        st.caption(i18n.t("W_O [{rows} × {columns}]: row band i mixes head i's output")
                   .format(rows=f"{sz.n_heads * sz.d_v:d}", columns=f"{sz.d_model:d}"))
        self.editor("w_o", editable=editable)
        self.problem("w_o")
        if sz.bias:
            st.caption(f"b_O [{sz.d_model:d}]")
            self.editor("b_o", editable=editable)
            self.problem("b_o")
        if self.result is None:
            return waiting()
        charts = self.charts(7)
        grid(charts["chart_concat"], key="chart_concat")
        st.caption(i18n.t("Each head's contribution head_i · W_O[rows of head i]; they add up to the output"))
        grid(charts["chart_contributions"], key="chart_contributions")
        st.success(i18n.t("Check: the contributions sum to the output (largest difference {gap}).")
                   .format(gap=f"{self.view.contributions.gap:.1e}"), icon=":material/check_circle:")

    def output(self):
        step_header(8)
        if self.result is None:
            return waiting()
        grid(self.charts(8)["chart_output"], key="chart_output")

    def drill_down(self):
        if self.result is None:
            return
        cell_opener.cell_opener_ui()  # Enter on a cell of the scores' or weights' tables opens it here
        # A toggle rather than an expander: a collapsed expander still builds its contents every run.
        if st.toggle("🔍 " + i18n.t("Drill down: one (query, key) cell of one head, with the live numbers"),
                     key="drill_open"):
            drill_down(st.session_state.result_key, self.q_tokens, self.k_tokens, self.heads)


def shared_result(key: bytes):
    """A fragment's result, from the server's result cache: a fragment keeps its arguments for the
    session's lifetime, so it is given the key, never the result. Evicted meanwhile (another
    session's long sequence needed the room): the whole page runs again and computes it."""
    result = result_cache.result_of(key)
    if result is None:
        st.rerun()
    return result


@fragment
def heads_compared(key: bytes, q_tokens, k_tokens, heads, large) -> None:
    """Step 6 reruns alone when its query or metric changes."""
    r = shared_result(key)
    left, right = st.columns([2, 1])
    query = widgets.choice_ui(left, i18n.t("query token"), state.row_labels(q_tokens), "focus_query")
    live.sync_selection_params()
    metric = right.selectbox(i18n.t("disagreement"), METRICS, key="metric",
                             format_func=i18n.labels(METRIC_NAMES))
    view = StepView(None, r, q_tokens, k_tokens, query=query, metric=metric, large=large,
                    language=i18n.language(), build=figure, keep=state.keeper(key))
    charts = CHARTS[6](view)
    chart(charts["chart_bars"], key="chart_bars")
    if len(heads) == 1:
        st.caption(i18n.t("With one head there is nothing to compare."))
        return
    if len(k_tokens) == 1:
        st.caption(i18n.t("With one key every head puts all of its weight on it: the heads cannot "
                          "disagree, and every entropy is 0."))
        return
    metric_name = i18n.labels(METRIC_NAMES)(metric)
    compared = view.compared
    a, b, value = compared.pair
    if value == 0:
        st.markdown(i18n.t("For this query all {n} heads agree exactly ({metric} distance 0).")
                    .format(n=f"{len(heads):d}", metric=lit(metric_name)))
    else:
        st.markdown(i18n.t("Largest disagreement for this query: **{a}** vs **{b}** = **{value}** "
                           "({metric}).")
                    .format(a=lit(heads[a]), b=lit(heads[b]), value=i18n.number(value, 3),
                            metric=lit(metric_name)))
    cols = st.columns(2)
    with cols[0]:
        grid(charts["chart_disagreement"], key="chart_disagreement")
    with cols[1]:
        chart(charts["chart_entropy"], key="chart_entropy")
    flat = [heads[i] for i in compared.flat]
    if flat:
        flat_words = (i18n.t("{heads} is flat for this query (nearly uniform): such a head has nothing to "
                             "say, which is not the same as disagreeing. Compare heads that both have an "
                             "opinion.")
                      if len(flat) == 1 else
                      i18n.t("{heads} are flat for this query (nearly uniform): such a head has nothing to "
                             "say, which is not the same as disagreeing. Compare heads that both have an "
                             "opinion."))
        st.info(flat_words.format(heads=lit(", ".join(flat))), icon=":material/lightbulb:")


@fragment
def drill_down(key: bytes, q_tokens, k_tokens, heads) -> None:
    """The drill-down reruns alone when its head, query or key changes."""
    r = shared_result(key)
    with st.container(key="drill_down"):  # where a cell opened from a table puts the focus
        drill_down_body(r, q_tokens, k_tokens, heads)


def drill_down_body(r, q_tokens, k_tokens, heads) -> None:
    cols = st.columns(3)
    head = widgets.choice_ui(cols[0], i18n.t("head"), heads, "drill_head")
    query = widgets.choice_ui(cols[1], i18n.t("query"), state.row_labels(q_tokens), "drill_query")
    key = widgets.choice_ui(cols[2], i18n.t("key"), state.row_labels(k_tokens), "drill_key")
    for line in drill_lines(r, head, query, key):
        st.latex(i18n.tex(line))
    st.caption(i18n.t("The core computes exactly this fraction. When a score is large enough for e^s to "
                      "overflow, it first subtracts the row's largest score from every score, which leaves "
                      "the fraction unchanged."))
    live.sync_selection_params()


def sharing_text(n_heads: int, groups: int, head: int | None = None) -> str:
    """Which query heads read which key/value head (grouped-query or multi-query attention)."""
    per = n_heads // groups
    parts = [i18n.t("heads {first}–{last} read key/value head {group}").format(
        first=f"{g * per + 1:d}", last=f"{(g + 1) * per:d}", group=f"{g + 1:d}") for g in range(groups)]
    if groups == 1:
        text = i18n.t("Multi-query attention: all {h} query heads read one key/value head. They score "
                      "against the same keys and blend the same values; only their queries differ.").format(
            h=f"{n_heads:d}")
    else:
        text = i18n.t("{h} query heads share {g} key/value heads: {parts}. Heads of one group score against "
                      "the same keys and blend the same values; only their queries differ.").format(
            h=f"{n_heads:d}", g=f"{groups:d}", parts="; ".join(parts))
    if head is not None:
        text += " " + i18n.t("Editing W_K or W_V here changes every head that reads key/value head "
                             "{group}.").format(group=f"{head // per + 1:d}")
    return text
