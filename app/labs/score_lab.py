"""The score lab (chapter 001, examples C to G): one query's raw scores against each key and each key's
value, softmax's weights at a temperature, the output Σ weight × value; then softmax collapsing to
one-hot as the gap between the top score and the others grows (example D)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from app import i18n
from app.charts import lab_figures
from app.charts.number_text import format_number, hover_number
from app.safe import lit
from app.session import session_keys, state
from app.widgets import chart
from course.i18n import N_, localized_number_text
from course.labs import (
    SCORE_EXAMPLES,
    TEMPERATURE,
    ScoreRow,
    gap_curve,
    gap_of,
    parse_numbers,
    score_inputs,
    score_row,
    top_weight,
)
from mha_core.setup import LIMITS, token_problem

EXAMPLE_LABELS = {"ex_c_equal_scores": N_("C · equal"), "ex_d_one_huge_score": N_("D · one huge"),
                  "ex_e_negative_score": N_("E · negative"), "ex_f_unscaled": N_("F · unscaled"),
                  "ex_f_scaled": "F · ÷ √64", "ex_g_coreference": N_("G · 'it' → 'cat'")}
GAP_RANGE = (0.0, 40.0)  # example F's unscaled gap, 32, fits
TEXT_CHARS = 400  # a score or value box: 24 numbers with room to spare
NEGATIVES_LISTED = 4  # the note on negative scores names this many


def _numbered(keys) -> bool:
    """k1, k2, ...: the names the lab gives itself when the box is empty."""
    return list(keys) == _default_names(len(keys))


def _default_names(n_keys: int) -> list[str]:
    return [f"k{i}" for i in range(1, n_keys + 1)]


def example_texts(key: str, language: str = "en") -> dict:
    """The score lab's widget values that load example `key`, its numbers written as ``language``
    writes them (parse_numbers reads them back: "0,5, 1,5" is 0.5 and 1.5 in German)."""
    inputs = score_inputs(state.examples()[key])

    def listed(numbers) -> str:
        return ", ".join(localized_number_text(f"{n:.12g}", language) for n in numbers)

    texts = {"lab_scores": listed(inputs.scores), "lab_values": listed(inputs.values),
             "lab_keys": "" if _numbered(inputs.keys) else " ".join(inputs.keys),
             "lab_temperature": inputs.temperature}
    gap = gap_of(inputs.scores)
    if gap is not None:
        texts["lab_gap"] = min(max(gap, GAP_RANGE[0]), GAP_RANGE[1])
    return texts


# The score lab's inputs (a class following the teacher sees them as the teacher set them) and which
# example's numbers it shows (not an input: never restored as one, never followed).
LAB_SCORES, LAB_VALUES, LAB_KEYS, LAB_TEMPERATURE = "lab_scores", "lab_values", "lab_keys", "lab_temperature"
LAB_GAP, LAB_LOADED = "lab_gap", "lab_loaded"
INPUT_KEYS = session_keys.register(*(session_keys.Key(name, __name__, default, followed=True)
                                     for name, default in {**example_texts(SCORE_EXAMPLES[0]),
                                                           LAB_GAP: 20.0}.items()))  # D's gap, the dot
session_keys.register(session_keys.Key(LAB_LOADED, __name__))


def _load(key: str) -> None:
    st.session_state.update(example_texts(key, i18n.language()))
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
        steps, written = slider_steps("lab_temperature", low, high, 0.05)
        temperature = st.select_slider(i18n.t("temperature T (the scores are divided by T)"), steps,
                                       key="lab_temperature", format_func=written,
                                          help=i18n.t("T = 1: the scores as typed. Small T sharpens towards "
                                                   "one-hot, large T flattens towards uniform. Dividing by "
                                                   "√d_k is T = √d_k (F · ÷ √64: T = 8)."))
    row = score_row(scores, values, temperature) if scores is not None and values is not None else None
    with results:
        if row is None:
            st.info(i18n.t("The weights appear here once every box above reads as numbers."))
        else:
            _row_results(row, keys)
    if row is not None:
        _row_table(row, keys)
    _gap_section(row.scores.size if row is not None else None, temperature)


def slider_steps(key: str, low: float, high: float, step: float) -> tuple[list[float], Callable]:
    """A select_slider's options from ``low`` to ``high`` by ``step`` and their labels written the reader's
    way (1,00 in German: st.slider's printf format has a decimal point in every language). The value
    kept under ``key`` is snapped to a step first (a room may send any number in range)."""
    count = round((high - low) / step)
    options = [round(low + i * step, 10) for i in range(count + 1)]
    kept = st.session_state.get(key)
    if isinstance(kept, (int, float)) and not isinstance(kept, bool) and kept not in options:
        st.session_state[key] = options[min(max(round((kept - low) / step), 0), count)]
    decimals = len(f"{step:g}".partition(".")[2])
    return options, lambda value: i18n.number(value, decimals)


def _loaded_note() -> None:
    key = st.session_state.get("lab_loaded")
    if key not in EXAMPLE_LABELS:
        return
    example = state.examples()[key]
    loaded = example_texts(key)
    edited = any(st.session_state.get(name) != loaded[name] for name in ("lab_scores", "lab_values",
                                                                          "lab_temperature"))
    note = i18n.t("Edited from {title}: {story}") if edited else i18n.t("Loaded {title}: {story}")
    st.caption(note.format(title=lit(i18n.t(example.title)), story=lit(i18n.t(example.story))))


def _local(text: str) -> str:
    """A number written by format_number as the reader's language writes it (0,9820 in German)."""
    return localized_number_text(text, i18n.language())


def weight_text(weight: float) -> str:
    return _local(format_number(weight, 4, near_one=True))


def _positive_text(weight: float) -> str:
    """A negative score's weight: never "0", which would contradict the note."""
    return weight_text(weight) if weight > 0 else i18n.t("too small for the computer, shown as 0")


def _factor(text: str) -> str:
    """A number inside a product: "1 − 4.1e-9" and "-3.00" in brackets."""
    return f"({text})" if " " in text or text.startswith("-") else text


def _row_results(row: ScoreRow, keys: list[str]) -> None:
    chart(lab_figures.weight_bars(row.weights, keys, row.scores, row.values,
                                  title=i18n.t("weights (T = {t})").format(t=_local(f"{row.temperature:g}")),
                                  language=i18n.language()),
          key="lab_chart_weights")
    terms = " + ".join(f"{_factor(weight_text(w))} × {_factor(_local(format_number(v)))}"
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
                      "value.").format(total=lit(_local(f"{row.weights.sum():.12g}"))))
    if row.negative.size:
        _negative_note(row, keys)


def _negative_note(row: ScoreRow, keys: list[str]) -> None:
    """Example E: a negative score still gets a positive weight."""
    listed = ", ".join(i18n.t("{score} ('{key}', weight {weight})").format(
        score=lit(_local(f"{row.scores[i]:g}")), key=lit(keys[i]), weight=lit(_positive_text(row.weights[i])))
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
    lines = [f"| {lit(key)} | {lit(_local(hover_number(s)))} | {lit(_local(hover_number(z)))} | "
             f"{lit(_local(hover_number(w, near_one=True)))} | {lit(_local(hover_number(v)))} | "
             f"{lit(_local(hover_number(t)))} |"
             for key, s, z, w, v, t in zip(keys, row.scores, row.scaled, row.weights, row.values, row.terms,
                                           strict=True)]
    with st.expander(i18n.t("All the numbers"), expanded=False):
        st.markdown(head + "\n".join(lines))


def _gap_section(n_keys: int | None, temperature: float) -> None:
    st.markdown("#### " + i18n.t("Softmax collapsing to one-hot (example D)"))
    n_keys = n_keys or 3
    left, right = st.columns([2, 3], gap="large")
    with left:
        steps, written = slider_steps("lab_gap", *GAP_RANGE, 0.5)
        gap = st.select_slider(i18n.t("gap between the top score and every other score"), steps,
                               key="lab_gap", format_func=written,
                               help=i18n.t("Scores [0, …, 0, gap]: the others all equal, the top one gap "
                                           "higher."))
        weight = float(top_weight(gap, n_keys, temperature))
        gap_text = lit(_local(f"{gap:g}"))
        t_text = lit(_local(f"{temperature:g}"))
        formula = rf"1 / (1 + {n_keys - 1:d} · e^(−{gap_text} / {t_text}))"
        st.markdown(i18n.t("With {n} keys and T = {t}, the top weight is {formula} = **{weight}**.").format(
            n=f"{n_keys:d}", t=t_text, formula=formula, weight=lit(weight_text(weight))))
        st.caption(i18n.t("Exponentials magnify gaps: at gap 20 (example D) the top weight is already "
                          "{weight} for 3 keys at T = 1. The curve uses as many keys as the scores above.")
                   .format(weight=lit(weight_text(float(top_weight(20.0, 3))))))
    gaps, weights = gap_curve(n_keys, temperature, largest=GAP_RANGE[1])
    reference = gap_curve(n_keys, 1.0, largest=GAP_RANGE[1])[1] if temperature != 1 else None
    with right:
        chart(lab_figures.gap_figure(gaps, weights, gap=gap, weight=weight, n_keys=n_keys,
                                     temperature=temperature, reference=reference,
                                     language=i18n.language()),
              key="lab_chart_gap")
