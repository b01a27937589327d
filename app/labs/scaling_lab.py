"""The scaling lab (chapter 001, example F): why attention divides by √d_k. The spread of q·k for
random vectors grows like √d_k and the largest softmax weight with it; divided by √d_k, both stay put.
Example F's scores 40 and 8, unscaled and scaled, side by side."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app import i18n
from app.charts import lab_figures
from app.labs.score_lab import weight_text
from app.safe import lit
from app.session import session_keys, state
from app.widgets import chart
from course.labs import PAIRS, WIDTHS, dot_products, largest_weights, score_inputs, score_row, top_weight

CURVE_DRAWS = 200  # random queries per d_k behind each point of the largest-weight curve
# The scaling lab's inputs: a class following the teacher sees them as the teacher set them.
LAB_D_K, LAB_SEED, LAB_PAIRS, LAB_CURVE_KEYS = "lab_d_k", "lab_seed", "lab_pairs", "lab_curve_keys"
INPUT_KEYS = session_keys.register(*(session_keys.Key(name, __name__, default, followed=True)
                                     for name, default in {LAB_D_K: 64, LAB_SEED: 0, LAB_PAIRS: 2000,
                                                           LAB_CURVE_KEYS: 8}.items()))


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


def _superscript(number: float) -> str:
    """e to this power as text: -32 -> "⁻³²"."""
    return f"{number:g}".translate(str.maketrans("0123456789.-", "⁰¹²³⁴⁵⁶⁷⁸⁹·⁻"))


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
                                                       weight=lit(weight_text(unscaled.weights[0]))))
    with right:
        title = i18n.t("divided by √64 = {t}: scores ({first}, {second})").format(
            t=i18n.numbers_in(f"{scaled.temperature:g}"), first=i18n.numbers_in(f"{scaled.scaled[0]:g}"),
            second=i18n.numbers_in(f"{scaled.scaled[1]:g}"))
        chart(lab_figures.weight_bars(scaled.weights, inputs.keys, scaled.scaled, scaled.values, title=title,
                                      language=i18n.language()),
              key="lab_chart_f_scaled")
        st.markdown(i18n.t("w₁ = e⁵ / (e⁵ + e¹) = **{weight}**: token 2 keeps {share} of the attention, so "
                           "gradients still reach it.").format(weight=i18n.number(scaled.weights[0], 4),
                                                               share=i18n.number(scaled.weights[1], 3)))
    yours = float(top_weight(gap, 2, temperature=math.sqrt(d_k)))
    root = lit(i18n.numbers_in(f"{math.sqrt(d_k):.3g}"))
    st.caption(i18n.t("With the d_k chosen above ({d_k}), 40 and 8 divided by √{d_k} = {root} give "
                      "w₁ = {weight}.").format(d_k=f"{d_k:d}", root=root, weight=lit(weight_text(yours))))
