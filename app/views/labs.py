"""Labs: the score lab, the scaling lab, size and cost (chapter 001 examples C to I, chapter 004 step 6;
grouped-query attention, the KV cache, and attention's cost against sequence length).

Thin: widgets in, course.labs computes, app.lab_figures draws. Every widget key starts with
``lab_``; the values are also kept in ``lab_saved``, because Streamlit forgets a widget's state
on a run that does not draw it (another page), and nothing typed here should be lost.
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app import i18n, lab_figures, session_keys, state
from app.number_text import format_number, hover_number, latex_int
from app.safe import lit, md
from app.widgets import chart
from course.i18n import N_, localized_number_text
from course.labs import (
    PAIRS,
    SCORE_EXAMPLES,
    SEQUENCE_LENGTHS,
    TEMPERATURE,
    VALUE_BYTES,
    WIDTHS,
    ScoreRow,
    binary_size_text,
    cost_curves,
    cross_attention_shapes,
    dot_products,
    gap_curve,
    gap_of,
    head_split_flops,
    kv_bytes_per_token,
    kv_cache_bytes,
    kv_heads_problem,
    largest_weights,
    limit_problems,
    parameter_count,
    parse_numbers,
    score_inputs,
    score_row,
    top_weight,
)
from mha_core import head_width, mha_flops
from mha_core.setup import LIMITS, token_problem

SAVED = "lab_saved"  # a plain session key (no widget): the labs' inputs across pages
EXAMPLE_LABELS = {"ex_c_equal_scores": N_("C · equal"), "ex_d_one_huge_score": N_("D · one huge"),
                  "ex_e_negative_score": N_("E · negative"), "ex_f_unscaled": N_("F · unscaled"),
                  "ex_f_scaled": "F · ÷ √64", "ex_g_coreference": N_("G · 'it' → 'cat'")}
GAP_RANGE = (0.0, 40.0)  # example F's unscaled gap, 32, fits
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
CURVE_DRAWS = 200  # random queries per d_k behind each point of the largest-weight curve
TEXT_CHARS = 400  # a score or value box: 24 numbers with room to spare
REACH = 10**12  # no lab input goes near this; a kept value past it is not one a person typed
NEGATIVES_LISTED = 4  # the note on negative scores names this many


def _numbered(keys) -> bool:
    """k1, k2, ...: the names the lab gives itself when the box is empty."""
    return list(keys) == _default_names(len(keys))


def _default_names(n_keys: int) -> list[str]:
    return [f"k{i}" for i in range(1, n_keys + 1)]


def _example_texts(key: str) -> dict:
    """The score lab's widget values that load example `key`."""
    inputs = score_inputs(state.examples()[key])
    texts = {"lab_scores": ", ".join(f"{s:.12g}" for s in inputs.scores),
             "lab_values": ", ".join(f"{v:.12g}" for v in inputs.values),
             "lab_keys": "" if _numbered(inputs.keys) else " ".join(inputs.keys),
             "lab_temperature": inputs.temperature}
    gap = gap_of(inputs.scores)
    if gap is not None:
        texts["lab_gap"] = min(max(gap, GAP_RANGE[0]), GAP_RANGE[1])
    return texts


# The labs' inputs: a class following the teacher sees them as the teacher set them (app/live.py).
session_keys.register(*(session_keys.Key(name, "labs", default, followed=True) for name, default in {
    **_example_texts(SCORE_EXAMPLES[0]), "lab_gap": 20.0,  # example D's gap, the chapter's dot
    "lab_d_k": 64, "lab_seed": 0, "lab_pairs": 2000, "lab_curve_keys": 8, **CHAPTER_SIZES,
    **CACHE_DEFAULTS}.items()))
DEFAULTS = session_keys.defaults("labs")
# Which example's numbers the labs show (not an input: never restored as one, never followed).
session_keys.register(session_keys.Key("lab_loaded", "labs.page"))


def _restore() -> None:
    """The inputs kept, and any value a room or a crafted session sent that no input of the page could
    hold (another type, a number past any input's reach, a box longer than a person types, a choice the
    page does not offer) back to its default, before a widget or a number formatter sees it."""
    ss = st.session_state
    session_keys.restore(ss, SAVED, DEFAULTS)
    for key, default in DEFAULTS.items():
        if not _holdable(ss[key], default) or (key == "lab_value_bytes" and ss[key] not in VALUE_BYTES):
            ss[key] = default


def _holdable(value, default) -> bool:
    if type(value) is not type(default):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and abs(value) <= REACH
    return not isinstance(value, str) or len(value) <= 10 * TEXT_CHARS


def _save() -> None:
    session_keys.save(st.session_state, SAVED, DEFAULTS)


def render() -> None:
    _restore()
    st.title(i18n.t("Labs"))
    st.caption(i18n.t("Three small experiments from the course text; each control changes one thing."))
    score_tab, scaling_tab, size_tab = st.tabs([i18n.t("Score lab"),
                                                i18n.t("Scaling lab: why divide by √d_k"),
                                                i18n.t("Size and cost")])
    with score_tab:
        score_lab()
    with scaling_tab:
        scaling_lab()
    with size_tab:
        size_and_cost()
    _save()


# --- Score lab -------------------------------------------------------------------------------


def _load(key: str) -> None:
    st.session_state.update(_example_texts(key))
    st.session_state.lab_loaded = key


def _numbers_ui(label: str, key: str, what: str, help: str) -> np.ndarray | None:
    text = st.text_input(label, key=key, max_chars=TEXT_CHARS, help=help)
    try:
        return parse_numbers(text, what, i18n.language())
    except ValueError as error:
        st.error(lit(error), icon=":material/warning:")
        return None


def _keys_ui(n_keys: int | None) -> list[str] | None:
    """Key names typed, or k1, k2, ... when the box is empty or cannot be used (with a message)."""
    names = str(st.text_input(i18n.t("key names (optional, separated by spaces)"), key="lab_keys",
                              max_chars=LIMITS.token_text)).split()
    if n_keys is None:
        return None
    problem = token_problem(names, "key names") if names else None
    if not problem and names and len(names) != n_keys:
        problem = i18n.t("{count} key names for {n} scores: give one name per score, or none.").format(
            count=len(names), n=f"{n_keys:d}")
    if problem:
        st.error(lit(problem), icon=":material/warning:")
    return names if names and not problem else _default_names(n_keys)


def score_lab() -> None:
    st.subheader(i18n.t("Score lab: one query, its scores, its weights"))
    st.caption(i18n.t("Chapter 001, examples C to G: the raw scores q·k of one query against each key, "
                      "and each key's value. Softmax turns the scores into weights; the output is "
                      "Σ weight × value."))
    for column, key in zip(st.columns(len(SCORE_EXAMPLES)), SCORE_EXAMPLES, strict=True):
        column.button(i18n.t(EXAMPLE_LABELS[key]), key=f"lab_load_{key}", on_click=_load, args=(key,),
                      help=lit(i18n.t(state.examples()[key].title)), width="stretch")
    _loaded_note()
    inputs, results = st.columns([2, 3], gap="large")
    with inputs:
        scores = _numbers_ui(i18n.t("scores (raw q·k, one per key)"), "lab_scores", "scores",
                             i18n.t("Numbers separated by commas, e.g. 2, 2, 2; decimals with a point "
                                    "(1.5)."))
        values = _numbers_ui(i18n.t("values (one number per key)"), "lab_values", "values",
                             i18n.t("One number per key: the output blends them with the weights."))
        if scores is not None and values is not None and scores.size != values.size:
            st.error(i18n.t("{scores} scores but {values} values: give one value per score.").format(
                scores=f"{scores.size:d}", values=f"{values.size:d}"), icon=":material/warning:")
            values = None
        keys = _keys_ui(scores.size if scores is not None else None)
        low, high = TEMPERATURE
        temperature = st.slider(i18n.t("temperature T (the scores are divided by T)"), low, high, step=0.05,
                                key="lab_temperature",
                                help=i18n.t("T = 1: the scores as typed. Small T sharpens towards one-hot, "
                                            "large T flattens towards uniform. Dividing by √d_k is T = √d_k "
                                            "(F · ÷ √64: T = 8)."))
    row = score_row(scores, values, temperature) if scores is not None and values is not None else None
    with results:
        if row is None:
            st.info(i18n.t("The weights appear here once every box above reads as numbers."))
        else:
            _row_results(row, keys)
    if row is not None:
        _row_table(row, keys)
    _gap_section(row.scores.size if row is not None else None, temperature)


def _loaded_note() -> None:
    key = st.session_state.get("lab_loaded")
    if key not in EXAMPLE_LABELS:
        return
    example = state.examples()[key]
    loaded = _example_texts(key)
    edited = any(st.session_state.get(name) != loaded[name] for name in ("lab_scores", "lab_values",
                                                                          "lab_temperature"))
    note = i18n.t("Edited from {title}: {story}") if edited else i18n.t("Loaded {title}: {story}")
    st.caption(note.format(title=lit(i18n.t(example.title)), story=lit(i18n.t(example.story))))


def _local(text: str) -> str:
    """A number written by format_number as the reader's language writes it (0,9820 in German)."""
    return localized_number_text(text, i18n.language())


def _weight_text(weight: float) -> str:
    return _local(format_number(weight, 4, near_one=True))


def _superscript(number: float) -> str:
    """e to this power as text: -32 -> "⁻³²"."""
    return f"{number:g}".translate(str.maketrans("0123456789.-", "⁰¹²³⁴⁵⁶⁷⁸⁹·⁻"))


def _positive_text(weight: float) -> str:
    """A negative score's weight: never "0", which would contradict the note."""
    return _weight_text(weight) if weight > 0 else i18n.t("too small for the computer, shown as 0")


def _factor(text: str) -> str:
    """A number inside a product: "1 − 4.1e-9" and "-3.00" in brackets."""
    return f"({text})" if " " in text or text.startswith("-") else text


def _row_results(row: ScoreRow, keys: list[str]) -> None:
    chart(lab_figures.weight_bars(row.weights, keys, row.scores, row.values,
                                  title=i18n.t("weights (T = {t})").format(t=f"{row.temperature:g}"),
                                  language=i18n.language()),
          key="lab_chart_weights")
    terms = " + ".join(f"{_factor(_weight_text(w))} × {_factor(_local(format_number(v)))}"
                       for w, v in zip(row.weights, row.values, strict=True))
    shown = format_number(row.output)
    precise = f"{row.output:.10g}"
    if float(precise) == float(shown):
        output = i18n.t("**output** = Σ wᵢ·vᵢ = {terms} = **{value}**").format(terms=lit(terms),
                                                                              value=lit(_local(shown)))
    else:
        output = i18n.t("**output** = Σ wᵢ·vᵢ = {terms} = **{value}** (more precisely {precise})").format(
            terms=lit(terms), value=lit(_local(shown)), precise=lit(_local(precise)))
    st.markdown(output)
    st.caption(i18n.t("The weights sum to {total}: the output lies between the smallest and the largest "
                      "value.").format(total=f"{row.weights.sum():.12g}"))
    if row.negative.size:
        _negative_note(row, keys)


def _negative_note(row: ScoreRow, keys: list[str]) -> None:
    """Example E: a negative score still gets a positive weight."""
    listed = ", ".join(i18n.t("{score} ('{key}', weight {weight})").format(
        score=f"{row.scores[i]:g}", key=lit(keys[i]), weight=lit(_positive_text(row.weights[i])))
        for i in row.negative[:NEGATIVES_LISTED])
    if row.negative.size > NEGATIVES_LISTED:
        listed = i18n.t("{listed} and {count} more").format(listed=listed,
                                                           count=f"{row.negative.size - NEGATIVES_LISTED:d}")
    note = (i18n.t("Negative score {listed}: every weight is still positive, since e to any power is "
                   "above 0. A negative score means 'listen less', never 'listen a negative amount' "
                   "(example E).")
            if row.negative.size == 1 else
            i18n.t("Negative scores {listed}: every weight is still positive, since e to any power is "
                   "above 0. A negative score means 'listen less', never 'listen a negative amount' "
                   "(example E)."))
    st.info(note.format(listed=listed), icon=":material/add_circle:")


def _row_table(row: ScoreRow, keys: list[str]) -> None:
    head = (i18n.t("| key | score | score ÷ T | weight | value | weight × value |")
            + "\n|---|--:|--:|--:|--:|--:|\n")
    lines = [f"| {lit(key)} | {hover_number(s)} | {hover_number(z)} | "
             f"{lit(hover_number(w, near_one=True))} | {hover_number(v)} | {hover_number(t)} |"
             for key, s, z, w, v, t in zip(keys, row.scores, row.scaled, row.weights, row.values, row.terms,
                                           strict=True)]
    with st.expander(i18n.t("All the numbers"), expanded=False):
        st.markdown(head + "\n".join(lines))


def _gap_section(n_keys: int | None, temperature: float) -> None:
    st.markdown("#### " + i18n.t("Softmax collapsing to one-hot (example D)"))
    n_keys = n_keys or 3
    left, right = st.columns([2, 3], gap="large")
    with left:
        gap = st.slider(i18n.t("gap between the top score and every other score"), *GAP_RANGE, step=0.5,
                        key="lab_gap",
                        help=i18n.t("Scores [0, …, 0, gap]: the others all equal, the top one gap higher."))
        weight = float(top_weight(gap, n_keys, temperature))
        formula = rf"1 / (1 + {n_keys - 1:d} · e^(−{gap:g} / {temperature:g}))"
        st.markdown(i18n.t("With {n} keys and T = {t}, the top weight is {formula} = **{weight}**.").format(
            n=f"{n_keys:d}", t=f"{temperature:g}", formula=formula, weight=lit(_weight_text(weight))))
        st.caption(i18n.t("Exponentials magnify gaps: at gap 20 (example D) the top weight is already "
                          "{weight} for 3 keys at T = 1. The curve uses as many keys as the scores above.")
                   .format(weight=lit(_weight_text(float(top_weight(20.0, 3))))))
    gaps, weights = gap_curve(n_keys, temperature, largest=GAP_RANGE[1])
    reference = gap_curve(n_keys, 1.0, largest=GAP_RANGE[1])[1] if temperature != 1 else None
    with right:
        chart(lab_figures.gap_figure(gaps, weights, gap=gap, weight=weight, n_keys=n_keys,
                                     temperature=temperature, reference=reference,
                                     language=i18n.language()),
              key="lab_chart_gap")


# --- Scaling lab -----------------------------------------------------------------------------


@st.cache_data(max_entries=32)
def _dot_products(d_k: int, n_pairs: int, seed: int) -> np.ndarray:
    return dot_products(d_k, n_pairs, seed)


@st.cache_data(max_entries=32)
def _largest_weights(n_keys: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return largest_weights(WIDTHS, n_keys, CURVE_DRAWS, seed)


def scaling_lab() -> None:
    st.subheader(i18n.t("Scaling lab: why divide by √d_k"))
    st.caption(i18n.t("A query and a key with d_k standard normal entries: q·k adds d_k products of "
                      "variance 1, so its spread grows like √d_k, and softmax of widely spread scores is "
                      "nearly one-hot. Dividing by √d_k brings the spread back to about 1, whatever d_k."))
    controls, charts = st.columns([1, 3], gap="large")
    with controls:
        d_k = int(st.select_slider("d_k", WIDTHS, key="lab_d_k"))
        seed = int(st.number_input(i18n.t("random seed"), 0, 1_000_000, step=1, key="lab_seed"))
        n_pairs = int(st.selectbox(i18n.t("random (q, k) pairs"), PAIRS, key="lab_pairs"))
        n_keys = int(st.slider(i18n.t("keys per query (the curve)"), 2, 64, key="lab_curve_keys"))
    products = _dot_products(d_k, n_pairs, seed)  # [n_pairs]
    scaled = products / math.sqrt(d_k)  # [n_pairs]
    with controls:
        st.metric(i18n.t("std of q·k"), i18n.number(products.std(), 2),
                  help=f"√d_k = {i18n.number(math.sqrt(d_k), 2)}")
        st.metric(i18n.t("std of q·k / √d_k"), i18n.number(scaled.std(), 2),
                  help=i18n.t("about 1 for every d_k"))
    with charts:
        chart(lab_figures.spread_histograms(products, scaled, d_k,
                                            language=i18n.language()), key="lab_chart_spread")
        unscaled_top, scaled_top = _largest_weights(n_keys, seed)
        chart(lab_figures.largest_weight_figure(WIDTHS, unscaled_top, scaled_top, d_k=d_k, n_keys=n_keys,
                                                language=i18n.language()),
              key="lab_chart_largest")
        st.caption(i18n.t("Each point: the largest softmax weight of a random query over {n_keys} random "
                          "keys, averaged over {draws} queries (random seed {seed}). The dotted line is "
                          "d_k = {d_k}.")
                   .format(n_keys=n_keys, draws=CURVE_DRAWS, seed=seed, d_k=d_k))
    _example_f(d_k)


def _example_f(d_k: int) -> None:
    st.markdown("#### " + i18n.t("Example F side by side: scores 40 and 8"))
    unscaled_key, scaled_key = "ex_f_unscaled", "ex_f_scaled"
    rows = {}
    for key in (unscaled_key, scaled_key):
        inputs = score_inputs(state.examples()[key])
        rows[key] = (inputs, score_row(inputs.scores, inputs.values, inputs.temperature))
    left, right = st.columns(2, gap="large")
    (inputs, unscaled), (_, scaled) = rows[unscaled_key], rows[scaled_key]
    gap = unscaled.scores[0] - unscaled.scores[1]
    with left:
        chart(lab_figures.weight_bars(unscaled.weights, inputs.keys, unscaled.scores, unscaled.values,
                                      title=i18n.t("not scaled: scores (40, 8)"), language=i18n.language()),
              key="lab_chart_f_unscaled")
        st.markdown(i18n.t("w₁ = e⁴⁰ / (e⁴⁰ + e⁸) = 1 − e{power} = **{weight}**: nearly one-hot, so token 2 "
                           "gets no gradient.").format(power=lit(_superscript(-gap)),
                                                       weight=lit(_weight_text(unscaled.weights[0]))))
    with right:
        title = i18n.t("divided by √64 = {t}: scores ({first}, {second})").format(
            t=f"{scaled.temperature:g}", first=f"{scaled.scaled[0]:g}", second=f"{scaled.scaled[1]:g}")
        chart(lab_figures.weight_bars(scaled.weights, inputs.keys, scaled.scaled, scaled.values, title=title,
                                      language=i18n.language()),
              key="lab_chart_f_scaled")
        st.markdown(i18n.t("w₁ = e⁵ / (e⁵ + e¹) = **{weight}**: token 2 keeps {share} of the attention, so "
                           "gradients still reach it.").format(weight=i18n.number(scaled.weights[0], 4),
                                                               share=i18n.number(scaled.weights[1], 3)))
    yours = float(top_weight(gap, 2, temperature=math.sqrt(d_k)))
    st.caption(i18n.t("With the d_k chosen above ({d_k}), 40 and 8 divided by √{d_k} = {root} give "
                      "w₁ = {weight}.").format(d_k=f"{d_k:d}", root=f"{math.sqrt(d_k):.3g}",
                                               weight=lit(_weight_text(yours))))


# --- Size and cost ---------------------------------------------------------------------------


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
