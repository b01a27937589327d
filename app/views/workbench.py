"""The workbench: every step of multi-head attention, in the order of the textbook."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import figures, state, widgets
from app.steps import STEPS
from mha_core import (
    attention_flops,
    head_contributions,
    multi_head_attention,
    normalised_entropy,
    pairwise_disagreement,
)
from mha_core.analysis import METRICS
from mha_core.config import setup_to_json

FLAT_AT = 0.95  # normalised entropy above which a head "has nothing to say" for that query
METRIC_NAMES = {"l2": "L2 (Euclidean)", "js": "Jensen-Shannon", "tv": "total variation"}


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, key=key, config={"displaylogo": False})


@st.cache_resource(max_entries=512, show_spinner=False)
def _figure(builder: str, *args, **kwargs):
    """figures.<builder>(*args, **kwargs), shared by every session that draws the same thing.

    The figures are never modified after they are built (st.plotly_chart copies them).
    """
    return getattr(figures, builder)(*args, **kwargs)


def step_header(number: int) -> None:
    step = STEPS[number]
    st.subheader(f"{number}. {step.title}")
    st.latex(step.formula)
    st.markdown(f"**What.** {step.what}  \n**Why.** {step.why}")


def gather_inputs(inputs: widgets.Inputs) -> tuple[dict, dict]:
    """Current matrices (base + edits) and a message per matrix that holds a bad cell."""
    shapes = inputs.shapes
    names = ["x", "w_q", "w_k", "w_v", "w_o"] + (["x_kv"] if shapes.cross else [])
    names += ["b_q", "b_k", "b_v", "b_o"] if shapes.use_bias else []
    rows = {"x": widgets.row_labels(inputs.tokens), "x_kv": widgets.row_labels(inputs.kv_tokens)}
    values, problems = {}, {}
    for name in names:
        values[name] = state.current_value(name)
        problem = widgets.matrix_problem(values[name], name, rows.get(name))
        if problem:
            problems[name] = problem
    if inputs.mask_kind == "custom":
        values["mask"] = state.current_value("mask") > 0.5  # [n_q, n_k] bool
    return values, problems


def mask_of(values: dict, inputs: widgets.Inputs):
    return {"none": None, "causal": "causal"}.get(inputs.mask_kind, values.get("mask"))


def setup_json(inputs: widgets.Inputs, values: dict) -> str:
    """The page's current setup as JSON (run only when the download button is clicked)."""
    return setup_to_json(state.current_setup(inputs.tokens, inputs.kv_tokens, values,
                                             mask_of(values, inputs), inputs.scale))


def compute(values: dict, inputs: widgets.Inputs):
    """Run the core; a ValueError (e.g. overflow) becomes a message instead of a traceback."""
    mask = mask_of(values, inputs)
    try:
        return multi_head_attention(
            values["x"], values["w_q"], values["w_k"], values["w_v"], values["w_o"],
            x_kv=values.get("x_kv"), mask=mask, scale=inputs.scale,
            b_q=values.get("b_q"), b_k=values.get("b_k"), b_v=values.get("b_v"), b_o=values.get("b_o"),
        ), None
    except ValueError as error:
        return None, str(error)


def show_problem(problems: dict, name: str) -> None:
    if name in problems:
        st.error(problems[name], icon="⚠️")


def waiting() -> None:
    st.info("Waiting for valid input: fix the input marked ⚠️ and this step comes back.")


def render() -> None:
    inputs = st.session_state.inputs
    if inputs.shapes is None:
        st.warning("Fix the setting marked ⚠️ in the sidebar; nothing you typed in the grids is lost.")
        return
    state.restore_dropped_edits()
    state.conform(inputs.shapes, inputs.seed)
    widgets.fill_ui(inputs.shapes, inputs.seed)
    for message in st.session_state.get("link_messages", []):
        st.warning(f"Ignored from the link: {widgets.md_literal(message)}", icon="⚠️")
    values, problems = gather_inputs(inputs)
    widgets.save_load_ui(lambda: setup_json(inputs, values), sum(v.size for v in values.values()))
    result, core_error = (None, None) if problems else compute(values, inputs)
    if core_error:
        st.error(f"The computation refused these inputs: {core_error}", icon="⚠️")
    page = Page(inputs, values, problems, result)
    for draw in (page.embeddings, page.projections, page.raw_scores, page.softmax, page.head_outputs,
                 page.heads_compared, page.concatenation, page.output):
        draw()
    page.drill_down()


class Page:
    """The eight steps, drawn from one set of inputs and one MHAResult."""

    def __init__(self, inputs, values, problems, result):
        self.inputs, self.values, self.problems, self.result = inputs, values, problems, result
        self.shapes = inputs.shapes
        self.q_tokens, self.k_tokens = inputs.tokens, inputs.kv_tokens
        self.heads = [f"head {i + 1}" for i in range(self.shapes.n_heads)]

    def embeddings(self):
        step_header(1)
        left, right = st.columns(2)
        with left:
            st.caption("X: one row per query token (edit any cell)")
            widgets.editor_ui("x", widgets.row_labels(self.q_tokens), col_prefix="d")
            show_problem(self.problems, "x")
            if self.shapes.cross:
                st.caption("X_kv: the key/value side (cross-attention)")
                widgets.editor_ui("x_kv", widgets.row_labels(self.k_tokens),
                                  col_prefix="d")
                show_problem(self.problems, "x_kv")
        with right:
            if "x" not in self.problems:
                chart(_figure("matrix_heatmap", self.values["x"], self.q_tokens,
                                             figures.dims("d", self.shapes.d_model), title="X"),
                      key="chart_x")

    def projections(self):
        step_header(2)
        # One head at a time: every head's matrices still count; only the drawing is per head.
        st.session_state.setdefault("shown_head", 0)
        if st.session_state.shown_head >= self.shapes.n_heads:
            st.session_state.shown_head = 0
        head = st.segmented_control("head", range(self.shapes.n_heads), key="shown_head",
                                    format_func=lambda i: self.heads[i], required=True)
        columns = st.columns(3)
        for column, name, width in zip(columns, ("w_q", "w_k", "w_v"),
                                       (self.shapes.d_k, self.shapes.d_k, self.shapes.d_v),
                                       strict=True):
            with column:
                st.caption(f"{widgets.MATRIX_LABELS[name]} of {self.heads[head]} "
                           f"[{self.shapes.d_model} × {width}]")
                widgets.editor_ui(name,
                                  figures.dims("d", self.shapes.d_model), head=head,
                                  col_prefix=name[-1])
        if self.shapes.use_bias:
            self._bias_editors(head)
        if self.result is not None:
            r = self.result
            chart(_figure("qkv_panels", r.q[head], r.k[head], r.v[head], self.q_tokens,
                                     self.k_tokens), key="chart_qkv")
        for name in ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v"):
            show_problem(self.problems, name)

    def _bias_editors(self, head):
        columns = st.columns(3)
        for column, name in zip(columns, ("b_q", "b_k", "b_v"), strict=True):
            with column:
                st.caption(f"{widgets.MATRIX_LABELS[name]} of {self.heads[head]}")
                widgets.editor_ui(name, [name], head=head,
                                  col_prefix=name[-1])

    def raw_scores(self):
        step_header(3)
        if self.result is None:
            return waiting()
        sh, n_q, n_k = self.shapes, self.shapes.n_q, self.shapes.n_k
        flops = attention_flops(n_q, n_k, sh.n_heads, sh.d_k, sh.d_v)
        one_fat_head = attention_flops(n_q, n_k, 1, sh.n_heads * sh.d_k, sh.n_heads * sh.d_v)
        st.caption(f"Cost of all {sh.n_heads} heads' scores and blends: {flops:,} FLOPs; one head of width "
                   f"{sh.n_heads * sh.d_k} would cost {one_fat_head:,}. Thin heads add viewpoints, not work.")
        chart(_figure("head_grids", self.result.scores, self.q_tokens, self.k_tokens, kind="scores",
                                 head_names=self.heads), key="chart_scores")

    def softmax(self):
        step_header(4)
        if self.inputs.mask_kind == "custom":
            self._mask_editor()
        if self.result is None:
            return waiting()
        r = self.result
        st.caption(f"Scaled scores (× {r.scale:.4g}); blank cells are masked")
        chart(_figure("head_grids", r.scaled, self.q_tokens, self.k_tokens, kind="scores",
                                 head_names=self.heads), key="chart_scaled")
        st.caption("Attention weights A = softmax over each row (one colour scale 0 to 1 for all heads)")
        chart(_figure("head_grids", r.weights, self.q_tokens, self.k_tokens, kind="weights",
                                 head_names=self.heads), key="chart_weights")
        sums = r.weights.sum(axis=-1)  # [h, n_q]
        blocked = ~np.any(r.weights > 0, axis=-1) if r.mask is not None else np.zeros_like(sums, bool)
        live = sums[~blocked]
        deviation = float(np.max(np.abs(live - 1.0))) if live.size else 0.0
        st.success(f"Check: every row sums to 1 (largest deviation {deviation:.1e}).", icon="✅")

    def _mask_editor(self):
        st.caption("Mask: tick the (query, key) pairs that may attend")
        mask = self.values["mask"]
        widgets.editor_ui("mask", widgets.row_labels(self.q_tokens), boolean=True, col_prefix="k")
        blocked = np.flatnonzero(~mask.any(axis=1))
        if blocked.size:
            names = ", ".join(widgets.md_literal(f"{i + 1} · {self.q_tokens[i]}") for i in blocked)
            st.warning(f"Row {names} blocks every key: nothing can be attended to, so its weights are all "
                       "0 and its head outputs are zero vectors. Tick at least one key to fix it.",
                       icon="⚠️")

    def head_outputs(self):
        step_header(5)
        if self.result is None:
            return waiting()
        chart(_figure("head_grids", self.result.head_outputs, self.q_tokens,
                                 figures.dims("v", self.shapes.d_v), kind="signed",
                                 head_names=self.heads, cols_are_tokens=False), key="chart_heads")

    def heads_compared(self):
        step_header(6)
        if self.result is None:
            return waiting()
        r = self.result
        left, right = st.columns([2, 1])
        st.session_state.setdefault("focus_query", 0)
        if st.session_state.focus_query >= len(self.q_tokens):
            st.session_state.focus_query = 0
        query = left.selectbox("query token", range(len(self.q_tokens)), key="focus_query",
                               format_func=lambda i: widgets.row_labels(self.q_tokens)[i])
        metric = right.selectbox("disagreement", METRICS, key="metric", format_func=METRIC_NAMES.get)
        chart(_figure("query_bars", r.weights, query, self.k_tokens, head_names=self.heads), key="chart_bars")
        entropy = normalised_entropy(r.weights[:, query, :])  # [h]
        if self.shapes.n_heads > 1:
            distances = pairwise_disagreement(r.weights, query, metric)  # [h, h]
            a, b = np.unravel_index(np.argmax(distances), distances.shape)
            st.markdown(f"Largest disagreement for this query: **{self.heads[a]}** vs **{self.heads[b]}**"
                        f" = **{distances[a, b]:.3f}** ({METRIC_NAMES[metric]}).")
            cols = st.columns(2)
            with cols[0]:
                chart(_figure("disagreement_heatmap", distances, metric=metric, head_names=self.heads),
                      key="chart_disagreement")
            with cols[1]:
                chart(_figure("entropy_bars", entropy, head_names=self.heads, flat_at=FLAT_AT),
                      key="chart_entropy")
            flat = [self.heads[i] for i in np.flatnonzero(entropy >= FLAT_AT)]
            if flat:
                st.info(f"{', '.join(flat)} {'is' if len(flat) == 1 else 'are'} flat for this query "
                        "(nearly uniform): such a head has nothing to say, which is not the same as "
                        "disagreeing. Compare heads that both have an opinion.", icon="💡")
        else:
            st.caption("With one head there is nothing to compare.")

    def concatenation(self):
        step_header(7)
        st.caption(f"W_O [{self.shapes.n_heads * self.shapes.d_v} × {self.shapes.d_model}]: "
                   "row band i mixes head i's output")
        widgets.editor_ui("w_o",
                          [f"h{h + 1}·{j + 1}" for h in range(self.shapes.n_heads)
                           for j in range(self.shapes.d_v)], col_prefix="o")
        show_problem(self.problems, "w_o")
        if self.shapes.use_bias:
            st.caption("b_O")
            widgets.editor_ui("b_o", ["b_O"], col_prefix="o")
            show_problem(self.problems, "b_o")
        if self.result is None:
            return waiting()
        r = self.result
        chart(_figure("concat_bands", r.concat, self.q_tokens, self.shapes.n_heads, self.shapes.d_v,
                                   title="Concat(head_1, ..., head_h): one coloured band per head"),
              key="chart_concat")
        contributions = head_contributions(r.head_outputs, self.values["w_o"])  # [h, n_q, d_model]
        st.caption("Each head's contribution head_i · W_O[rows of head i]; they add up to the output")
        chart(_figure("head_grids", contributions, self.q_tokens, figures.dims("d", self.shapes.d_model),
                                 kind="signed", head_names=self.heads, cols_are_tokens=False),
              key="chart_contributions")
        bias = self.values.get("b_o", 0.0)
        gap = float(np.max(np.abs(contributions.sum(0) + bias - r.output)))
        st.success(f"Check: the contributions sum to the output (largest difference {gap:.1e}).", icon="✅")

    def output(self):
        step_header(8)
        if self.result is None:
            return waiting()
        chart(_figure("side_by_side", self.values["x"], self.result.output, self.q_tokens,
                                   left_title="input X", right_title="output"), key="chart_output")

    def drill_down(self):
        if self.result is None:
            return
        with st.expander("🔍 Drill down: one (query, key) cell of one head, with the live numbers"):
            r = self.result
            cols = st.columns(3)
            head = cols[0].selectbox("head", range(self.shapes.n_heads), key="drill_head",
                                     format_func=lambda i: self.heads[i])
            query = cols[1].selectbox("query", range(len(self.q_tokens)), key="drill_query",
                                      format_func=lambda i: widgets.row_labels(self.q_tokens)[i])
            key = cols[2].selectbox("key", range(len(self.k_tokens)), key="drill_key",
                                    format_func=lambda i: widgets.row_labels(self.k_tokens)[i])
            for line in drill_lines(r, head, query, key):
                st.latex(line)


def _num(value: float) -> str:
    return f"{value:.4g}" if np.isfinite(value) else (r"-\infty" if value < 0 else r"\infty")


def drill_lines(r, head: int, query: int, key: int) -> list[str]:
    """LaTeX lines for one cell: dot product terms, scaling, softmax. Positions, never tokens."""
    q, k = r.q[head, query], r.k[head, key]  # [d_k]
    terms = " + ".join(f"({_num(a)})({_num(b)})" for a, b in zip(q[:8], k[:8], strict=True))
    terms += r" + \dots" if q.size > 8 else ""
    score, scaled = r.scores[head, query, key], r.scaled[head, query, key]
    row = r.scaled[head, query]  # [n_k]
    finite = row[np.isfinite(row)]
    top = float(finite.max()) if finite.size else 0.0
    denominator = " + ".join(rf"e^{{{_num(s)}}}" for s in row[:8] if np.isfinite(s))
    denominator += r" + \dots" if row.size > 8 else ""
    lines = [
        rf"q_{{{query + 1}}} \cdot k_{{{key + 1}}} = {terms} = {_num(score)}",
        rf"s = {_num(score)} \times {_num(r.scale)} = {_num(scaled)}",
    ]
    if np.isfinite(scaled):
        lines.append(rf"a_{{{query + 1},{key + 1}}} = \frac{{e^{{{_num(scaled)}}}}}{{{denominator}}}"
                     rf" = {_num(r.weights[head, query, key])}")
        lines.append(rf"\text{{(computed as }} e^{{s - {_num(top)}}} / \textstyle\sum_j e^{{s_j - "
                     rf"{_num(top)}}} \text{{ so that nothing overflows)}}")
    else:
        lines.append(rf"a_{{{query + 1},{key + 1}}} = 0 \quad \text{{(masked)}}")
    return lines


render()
