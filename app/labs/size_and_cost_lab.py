"""The size-and-cost lab (chapter 001, examples H and I; chapter 004, step 6): one block's parameters,
FLOPs and cross-attention shapes written out with the sizes typed; grouped-query attention and the KV
cache; attention's cost against sequence length (full, causal, sliding window). Every size is checked
against SIZE_LIMITS before anything is computed."""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.charts import lab_figures
from app.charts.number_text import latex_int
from app.safe import lit, md
from app.session import session_keys
from app.widgets import chart
from course.i18n import N_
from course.labs import (
    SEQUENCE_LENGTHS,
    VALUE_BYTES,
    binary_size_text,
    cost_curves,
    cross_attention_shapes,
    head_split_flops,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_heads_problem,
    limit_problems,
    parameter_count,
)
from mha_core import head_width, mha_flops

CHAPTER_SIZES = {"lab_d_model": 512, "lab_heads": 8, "lab_even_split": True, "lab_head_d_k": 64,
                 "lab_head_d_v": 64, "lab_bias": False, "lab_n_q": 3, "lab_n_k": 5,
                 "lab_kv_heads": 8}  # examples H and I: standard multi-head attention, g = h
CACHE_DEFAULTS = {"lab_layers": 6, "lab_context": 1024, "lab_value_bytes": 4,  # 6: the original Transformer
                  "lab_window": 4096}  # a window inside the cost chart's 128 to 32K tokens
SEVEN_B = {"lab_d_model": 4096, "lab_heads": 32, "lab_even_split": True, "lab_kv_heads": 8, "lab_layers": 32,
           "lab_context": 8192, "lab_value_bytes": 2}  # a 7B-class decoder at 8K tokens in fp16
SIZE_LIMITS = {"lab_d_model": 65_536, "lab_heads": 1_024, "lab_head_d_k": 16_384, "lab_head_d_v": 16_384,
               "lab_n_q": 1_000_000, "lab_n_k": 1_000_000, "lab_kv_heads": 1_024, "lab_layers": 1_000,
               "lab_context": 10_000_000, "lab_window": 10_000_000}  # checked before anything is computed
CACHE_ROW, CHOSEN_ROW = "| {} | {} | {} | {} |", "| **{}** | {} | {} | {} |"  # the chosen g in bold
GROUPING = {"mha": N_("multi-head"), "gqa": N_("grouped-query"), "mqa": N_("multi-query")}
# The lab's inputs (their keys, written out in the tables above): a class following the teacher sees them
# as the teacher set them.
LAB_D_MODEL, LAB_HEADS, LAB_EVEN_SPLIT = "lab_d_model", "lab_heads", "lab_even_split"
LAB_HEAD_D_K = "lab_head_d_k"
LAB_HEAD_D_V, LAB_BIAS, LAB_N_Q, LAB_N_K = "lab_head_d_v", "lab_bias", "lab_n_q", "lab_n_k"
LAB_KV_HEADS, LAB_LAYERS, LAB_CONTEXT = "lab_kv_heads", "lab_layers", "lab_context"
LAB_VALUE_BYTES, LAB_WINDOW = "lab_value_bytes", "lab_window"
INPUT_KEYS = session_keys.register(*(session_keys.Key(name, __name__, default, followed=True)
                                     for name, default in {**CHAPTER_SIZES, **CACHE_DEFAULTS}.items()))


def _chapter_sizes() -> None:
    st.session_state.update(CHAPTER_SIZES)


def _seven_b() -> None:
    st.session_state.update(SEVEN_B)


def _size_input(where, label: str, key: str, help: str | None = None) -> int:
    """A whole number of at least 1. No max_value: Streamlit silently resets a value above it to the
    minimum, so SIZE_LIMITS is checked by ``_limits_ok``, with the message under the input."""
    return int(where.number_input(label, 1, step=1, key=key, help=help))


def _limits_ok(values: dict[str, int], places: dict) -> bool:
    """Every value within SIZE_LIMITS; otherwise a message under each input at fault (``places``: key ->
    the column it was drawn in) and False."""
    problems = limit_problems(values, SIZE_LIMITS, i18n.language())
    for key, problem in problems.items():
        places[key].error(lit(problem), icon=":material/warning:")
    return not problems


def _sizes_ui() -> tuple[int, int, int, int, int, int, bool] | None:
    """d_model, h, d_k, d_v, n_q, n_k, bias; None (with the message under h) when d_k cannot be whole."""
    first = st.columns(4)
    d_model = _size_input(first[0], "d_model", "lab_d_model")
    n_heads = _size_input(first[1], i18n.t("heads h"), "lab_heads")
    n_q = _size_input(first[2], i18n.t("query tokens n_q"), "lab_n_q",
                      i18n.t("Example H: 3 decoder tokens."))
    n_k = _size_input(first[3], i18n.t("key/value tokens n_k"), "lab_n_k",
                      i18n.t("Example H: 5 encoder tokens."))
    even = st.checkbox("d_k = d_v = d_model / h", key="lab_even_split")
    bias = st.checkbox(i18n.t("biases b_Q, b_K, b_V, b_O"), key="lab_bias")
    values = {"lab_d_model": d_model, "lab_heads": n_heads, "lab_n_q": n_q, "lab_n_k": n_k}
    places = dict(zip(values, first, strict=True))
    if not even:
        second = st.columns(4)
        values.update(lab_head_d_k=_size_input(second[0], "d_k", "lab_head_d_k"),
                      lab_head_d_v=_size_input(second[1], "d_v", "lab_head_d_v"))
        places.update(lab_head_d_k=second[0], lab_head_d_v=second[1])
    if not _limits_ok(values, places):
        return None
    if even:
        try:
            d_k = d_v = head_width(d_model, n_heads)
        except ValueError as error:
            first[1].error(lit(error), icon=":material/warning:")
            return None
    else:
        d_k, d_v = values["lab_head_d_k"], values["lab_head_d_v"]
    return d_model, n_heads, d_k, d_v, n_q, n_k, bias


def size_and_cost() -> None:
    st.subheader(i18n.t("Size and cost of one block"))
    st.caption(i18n.t("Chapter 001, examples H and I; chapter 004, step 6. Every formula below is written "
                      "out with your numbers."))
    chapter, seven_b = st.columns(2)
    chapter.button(i18n.t("Chapter's sizes (d_model 512, h 8, 3 queries, 5 keys)"), key="lab_size_reset",
                   on_click=_chapter_sizes)
    seven_b.button(i18n.t("7B-class model (32 layers, d_model 4096, 32 query heads, 8K tokens, fp16)"),
                   key="lab_size_7b", on_click=_seven_b)
    sizes = _sizes_ui()
    if sizes is None:
        st.info(i18n.t("The counts appear once every size above is within its limit and d_model / h is a "
                       "whole number, or with d_k and d_v set by hand."))
        return
    _parameters(*sizes)
    _flops(*sizes)
    _shapes(*sizes)
    _grouped_query(*sizes)
    _cost_against_length(*sizes)


def _parameters(d_model, n_heads, d_k, d_v, n_q, n_k, bias) -> None:
    st.markdown("#### " + i18n.t("Parameters (example I)"))
    count = parameter_count(d_model, n_heads, d_k, d_v, bias)
    st.metric(i18n.t("learnable numbers"), i18n.number(count.total))
    symbols = r"h\,d_{model}\,d_k + h\,d_{model}\,d_k + h\,d_{model}\,d_v + h\,d_v\,d_{model}"
    numbers = (rf"{n_heads:d}\cdot{d_model:d}\cdot{d_k:d} + {n_heads:d}\cdot{d_model:d}\cdot{d_k:d} + "
               rf"{n_heads:d}\cdot{d_model:d}\cdot{d_v:d} + {n_heads:d}\cdot{d_v:d}\cdot{d_model:d}")
    terms = " + ".join(latex_int(n) for n in (count.w_q, count.w_k, count.w_v, count.w_o))
    if bias:
        symbols += r" + (2h\,d_k + h\,d_v + d_{model})"
        numbers += rf" + (2\cdot{n_heads:d}\cdot{d_k:d} + {n_heads:d}\cdot{d_v:d} + {d_model:d})"
        terms += f" + {latex_int(count.biases)}"
    params = i18n.t("params")
    st.latex(i18n.tex(rf"\begin{{aligned}} \text{{{params}}} &= {symbols} \\ &= {numbers} \\ &= {terms} "
             rf"= {latex_int(count.total)} \end{{aligned}}"))
    weights, biases = i18n.number(count.total - count.biases), i18n.number(count.biases)
    if n_heads * d_k == d_model and n_heads * d_v == d_model:
        note = (i18n.t("With h·d_k = h·d_v = d_model each of W_Q, W_K, W_V, W_O is one {d_model} × {d_model} "
                       "matrix: {weights} = 4 × {d_model}² weights, plus {biases} biases (4 × {d_model}).")
                if bias else
                i18n.t("With h·d_k = h·d_v = d_model each of W_Q, W_K, W_V, W_O is one {d_model} × {d_model} "
                       "matrix: {weights} = 4 × {d_model}² weights."))
        st.markdown(lit(note.format(d_model=f"{d_model:d}", weights=weights, biases=biases)))
    else:
        note = (i18n.t("{weights} weights and {biases} biases.") if bias else i18n.t("{weights} weights."))
        st.markdown(lit(note.format(weights=weights, biases=biases)))


def _flops(d_model, n_heads, d_k, d_v, n_q, n_k, bias) -> None:
    st.markdown("#### " + i18n.t("Attention FLOPs: h thin heads = one wide head (chapter 004, step 6)"))
    thin, wide = head_split_flops(n_q, n_k, n_heads, d_k, d_v)
    left, right = st.columns(2, gap="large")
    left.metric(i18n.t("{h} heads of width {d_k}").format(h=f"{n_heads:d}", d_k=f"{d_k:d}"),
                i18n.number(thin))
    right.metric(i18n.t("1 head of width {width}").format(width=f"{n_heads * d_k:d}"), i18n.number(wide))
    thin_words = i18n.t("{h} thin heads").format(h=f"{n_heads:d}")
    wide_words = i18n.t("one wide head")
    work = (rf"\begin{{aligned}} 2\,h\,n_q\,n_k\,(d_k + d_v) "
            rf"&= 2\cdot{n_heads:d}\cdot{n_q:d}\cdot{n_k:d}\cdot({d_k:d} + {d_v:d}) = {latex_int(thin)} "
            rf"&& \text{{{thin_words}}} \\ "
            rf"&= 2\cdot 1\cdot{n_q:d}\cdot{n_k:d}\cdot({n_heads * d_k:d} + {n_heads * d_v:d}) = "
            rf"{latex_int(wide)} "
            rf"&& \text{{{wide_words}}} \end{{aligned}}")
    st.latex(i18n.tex(work))
    verdict = (i18n.t("**equal**: {h} × n_q·n_k·{d_k} = n_q·n_k·{width}. Splitting into heads gives h "
                      "different views of the sequence for the same work.") if thin == wide else
               i18n.t("**different**: {h} × n_q·n_k·{d_k} = n_q·n_k·{width}. Splitting into heads gives h "
                      "different views of the sequence for the same work."))
    st.markdown(verdict.format(h=f"{n_heads:d}", d_k=f"{d_k:d}", width=f"{n_heads * d_k:d}"))
    st.caption(i18n.t("The whole block, with the projections and W_O: {flops} FLOPs (a multiply-add "
                      "counts 2).").format(flops=i18n.number(mha_flops(n_q, n_k, d_model, n_heads, d_k,
                                                                          d_v))))


def _shapes(d_model, n_heads, d_k, d_v, n_q, n_k, bias) -> None:
    st.markdown("#### " + i18n.t("Cross-attention shapes (example H)"))
    lines = [f"| {lit(step.name)} | {i18n.number(step.shape[0])} × {i18n.number(step.shape[1])} | "
             f"{lit(step.how)} |"
             for step in cross_attention_shapes(n_q, n_k, d_model, n_heads, d_k, d_v, i18n.language())]
    st.markdown(i18n.t("| one head, then all | shape | why |") + "\n|---|---|---|\n" + "\n".join(lines))
    joined = n_heads * d_v
    algebra = (i18n.t("Shape algebra: ({n_q} × {n_k}) · ({n_k} × {d_v}) = ({n_q} × {d_v}); the inner {n_k} "
                      "cancels and the output has one row per query. After the concat: {h} · {d_v} = "
                      "{joined} = d_model ✓.") if joined == d_model else
               i18n.t("Shape algebra: ({n_q} × {n_k}) · ({n_k} × {d_v}) = ({n_q} × {d_v}); the inner {n_k} "
                      "cancels and the output has one row per query. After the concat: {h} · {d_v} = "
                      "{joined} ≠ d_model = {d_model}: W_O maps it back."))
    st.markdown(algebra.format(n_q=f"{n_q:d}", n_k=f"{n_k:d}", d_v=f"{d_v:d}", h=f"{n_heads:d}",
                               joined=f"{joined:d}", d_model=f"{d_model:d}"))


# --- Grouped-query attention and the KV cache --------------------------------------------------


def _cache_ui(n_heads: int) -> tuple[int, int, int, int] | None:
    """g, layers, context, bytes per value; None (with a message under the input at fault) when a value
    is outside SIZE_LIMITS or g does not divide h. Everything is checked before anything is computed."""
    columns = st.columns(4)
    kv_heads = _size_input(columns[0], i18n.t("key/value heads g"), "lab_kv_heads",
                           i18n.t("g = h: standard multi-head attention; g = 1: multi-query; in between: "
                                  "grouped-query, h / g query heads share one key/value head."))
    layers = _size_input(columns[1], i18n.t("layers"), "lab_layers")
    context = _size_input(columns[2], i18n.t("context length (tokens)"), "lab_context")
    value_bytes = columns[3].selectbox(i18n.t("bytes per value"), tuple(VALUE_BYTES), key="lab_value_bytes",
                                       format_func=VALUE_BYTES.get)
    values = {"lab_kv_heads": kv_heads, "lab_layers": layers, "lab_context": context}
    if not _limits_ok(values, dict(zip(values, columns, strict=False))):
        return None
    problem = kv_heads_problem(n_heads, kv_heads, i18n.language())
    if problem:
        columns[0].error(lit(problem), icon=":material/warning:")
        return None
    return kv_heads, layers, context, int(value_bytes)


def _grouping(n_heads: int, kv_heads: int) -> str:
    key = "mha" if kv_heads == n_heads else "mqa" if kv_heads == 1 else "gqa"
    return i18n.t(GROUPING[key])


def _grouped_query(d_model, n_heads, d_k, d_v, n_q, n_k, bias) -> None:
    st.markdown("#### " + i18n.t("Grouped-query attention and the KV cache"))
    st.caption(i18n.t("A decoder keeps every earlier token's keys and values (the KV cache) so that each new "
                      "token computes only its own. With g key/value heads, W_K is [g, d_model, d_k] and W_V "
                      "is [g, d_model, d_v]; each key/value head serves h / g query heads."))
    chosen = _cache_ui(n_heads)
    if chosen is None:
        st.info(i18n.t("The cache appears once g divides h and every value is within its limit."))
        return
    kv_heads, layers, context, value_bytes = chosen
    mine = parameter_count(d_model, n_heads, d_k, d_v, bias, kv_heads)
    standard = parameter_count(d_model, n_heads, d_k, d_v, bias)
    cache = kv_cache_bytes(layers, kv_heads, d_k, d_v, context, value_bytes)
    full_cache = kv_cache_bytes(layers, n_heads, d_k, d_v, context, value_bytes)
    left, right = st.columns(2, gap="large")
    left.metric(i18n.t("KV cache with g = {g}").format(g=f"{kv_heads:d}"),
                lit(binary_size_text(cache, i18n.language())))
    right.metric(i18n.t("multi-head (g = h = {h})").format(h=f"{n_heads:d}"),
                 lit(binary_size_text(full_cache, i18n.language())))
    per_token = kv_bytes_per_token(kv_heads, d_k, d_v, value_bytes)
    cache_sum = (rf"\begin{{aligned}} L\,n\,g\,(d_k + d_v)\,b &= {layers:d}\cdot{context:d}\cdot{kv_heads:d}"
                 rf"\cdot({d_k:d} + {d_v:d})\cdot{value_bytes:d} \\ &= {layers:d}\cdot{context:d}\cdot"
                 rf"{latex_int(per_token)} = {latex_int(cache)} \end{{aligned}}")
    st.latex(i18n.tex(cache_sum))
    st.caption(i18n.t("Per token and layer: g keys of d_k numbers and g values of d_v numbers, b bytes each "
                      "({per_token}); times L layers and n tokens of context. Parameters with g = {g}: "
                      "{mine}; with g = h: {standard}.").format(
        per_token=lit(binary_size_text(per_token, i18n.language())), g=f"{kv_heads:d}",
        mine=i18n.number(mine.total), standard=i18n.number(standard.total)))
    _cache_table(d_model, n_heads, d_k, d_v, bias, kv_heads, layers, context, value_bytes)


def _cache_table(d_model, n_heads, d_k, d_v, bias, kv_heads, layers, context, value_bytes) -> None:
    """Multi-head, the chosen g and multi-query side by side."""
    language = i18n.language()
    head = i18n.t("| key/value heads | parameters | KV cache per token and layer | KV cache, {layers} layers "
                  "× {context} tokens |").format(layers=f"{layers:d}", context=i18n.number(context))
    rows = [(g, f"g = {g:d} ({_grouping(n_heads, g)})",
             i18n.number(parameter_count(d_model, n_heads, d_k, d_v, bias, g).total),
             binary_size_text(kv_bytes_per_token(g, d_k, d_v, value_bytes), language),
             binary_size_text(kv_cache_bytes(layers, g, d_k, d_v, context, value_bytes), language))
            for g in sorted({n_heads, kv_heads, 1}, reverse=True)]  # multi-head, yours, multi-query
    lines = [md(CHOSEN_ROW if g == kv_heads else CACHE_ROW, *cells) for g, *cells in rows]
    st.markdown(head + "\n|---|--:|--:|--:|\n" + "\n".join(lines))


# --- Attention cost against sequence length ----------------------------------------------------


@st.cache_data(max_entries=16)
def _cost_figure(n_heads: int, d_k: int, d_v: int, window: int, value_bytes: int, language: str):
    curves = cost_curves(SEQUENCE_LENGTHS, n_heads, d_k, d_v, window, value_bytes)
    return (lab_figures.attention_cost_figure(SEQUENCE_LENGTHS, curves, window=window, language=language),
            lab_figures.cost_summary(SEQUENCE_LENGTHS, curves, window=window, language=language))


def _cost_against_length(d_model, n_heads, d_k, d_v, n_q, n_k, bias) -> None:
    st.markdown("#### " + i18n.t("Attention cost against sequence length"))
    st.markdown(i18n.t("Full attention scores every (query, key) pair: n² of them, so doubling n quadruples "
                       "the FLOPs and the memory. **Causal** attention lets token i see tokens 1 to i: "
                       "n(n+1)/2 pairs, about half. A **sliding window** of w lets each token see its last w "
                       "tokens, itself included: row i has min(i, w) keys, w(w+1)/2 + (n − w)·w pairs in all "
                       "(about n·w), so past n = w FLOPs and memory grow linearly in n."))
    controls, chart_column = st.columns([1, 3], gap="large")
    window = _size_input(controls, i18n.t("window w (tokens)"), "lab_window")
    value_bytes = int(st.session_state.get("lab_value_bytes", CACHE_DEFAULTS["lab_value_bytes"]))
    if value_bytes not in VALUE_BYTES or not _limits_ok({"lab_window": window}, {"lab_window": controls}):
        return
    controls.caption(i18n.t("One layer, all {h} heads: 2·h·pairs·(d_k + d_v) FLOPs for QKᵀ and weights · V, "
                            "h·pairs·b bytes for the weights ({b} bytes per value, as chosen above).").format(
        h=f"{n_heads:d}", b=f"{value_bytes:d}"))
    fig, summary = _cost_figure(n_heads, d_k, d_v, window, value_bytes, i18n.language())
    with chart_column:
        chart(fig, key="lab_chart_cost", text=summary)
    st.caption(i18n.t("Counted are the pairs that take part. A kernel that builds the whole n × n grid "
                      "and then masks it spends full attention's FLOPs and memory whatever the mask; "
                      "kernels that skip masked blocks save the difference."))
