"""Chart words in the reader's language: the builders write them in the ``language`` they are given,
app/charts/figure_cache.py gives each reader's figure its own key, and app/charts/chart_text.py words a
summary in the language asked for. A stand-in translator marks every translated message (⟨...⟩), so
these tests do not depend on what the catalogues hold."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.charts import (
    bar_figures,
    chart_tables,
    chart_text,
    figure_cache,
    figure_reading,
    figure_style,
    figures,
    forecast_figures,
    grid_text,
    heatmap_panels,
    lab_figures,
    model_figures,
    series_text,
)

MODULES = (figures, figure_style, heatmap_panels, bar_figures, chart_text, figure_reading, grid_text,
           series_text, chart_tables, forecast_figures, lab_figures, model_figures)


def marked(language: str):
    return str if language == "en" else (lambda message: f"⟨{message}⟩")


@pytest.fixture(autouse=True)
def stand_in_translator(monkeypatch):
    for module in MODULES:
        monkeypatch.setattr(module, "translator", marked)
    figure_reading.axis_words.cache_clear()
    figure_cache.clear()
    yield
    figure_reading.axis_words.cache_clear()
    figure_cache.clear()


WEIGHTS = np.array([[[0.9, 0.1], [0.5, 0.5]]])  # [1 head, 2 queries, 2 keys]
TOKENS = ["sat", "<b>cat</b>"]


def spec_text(fig) -> str:
    return json.dumps(fig.to_dict(), ensure_ascii=False, default=str)


def test_english_is_the_default_and_carries_no_language():
    english = figures.head_grids(WEIGHTS, TOKENS, TOKENS, kind="weights")
    same = figures.head_grids(WEIGHTS, TOKENS, TOKENS, kind="weights", language="en")
    assert english.to_dict() == same.to_dict()
    assert "meta" not in english["layout"]
    assert english["layout"]["yaxis"]["title"]["text"] == "query"
    assert english["data"][0]["hovertext"][0][0] == "query sat, key sat: weight 0.90"


def test_a_builder_writes_its_words_in_the_language_given_and_keeps_tokens_escaped():
    fig = figures.head_grids(WEIGHTS, TOKENS, TOKENS, kind="weights", language="de")
    assert fig["layout"]["meta"] == {"language": "de"}
    assert fig["layout"]["yaxis"]["title"]["text"] == "⟨query⟩"
    assert fig["layout"]["xaxis"]["title"]["text"] == "⟨key⟩"
    hover = fig["data"][0]["hovertext"][0][1]
    assert hover == "⟨query {query}, key {key}: {value}⟩".format(
        query="sat", key="&lt;b&gt;cat&lt;/b&gt;", value="⟨weight {number}⟩".format(number="0.10"))
    assert "<b>cat</b>" not in spec_text(fig)


def test_every_builder_takes_a_language():
    rng = np.random.default_rng(0)
    wide = 13  # more columns than figure_layout.NUMBERS_UP_TO: the hover is a template with words in it
    de = dict(language="de")
    two = [np.array([0.5, 0.5]), np.array([0.9, 0.1])]
    built = [figures.matrix_heatmap(rng.normal(size=(2, wide)), TOKENS, figure_style.dims("d", wide), **de),
             figures.qkv_panels(*(rng.normal(size=(2, wide)) for _ in range(3)), TOKENS, TOKENS, **de),
             figures.side_by_side(rng.normal(size=(2, wide)), rng.normal(size=(2, wide)), TOKENS,
                                  left_title="A", right_title="B", **de),
             figures.concat_bands(rng.normal(size=(2, 2 * wide)), TOKENS, 2, wide, **de),
             bar_figures.query_bars(WEIGHTS, 0, TOKENS, **de),
             figures.disagreement_heatmap(np.array([[0, 0.5], [0.5, 0]]), metric="l2", **de),
             bar_figures.entropy_bars(np.array([0.2, 0.95]), flat_at=0.9, **de),
             forecast_figures.answer_bars(["a"], [3], **de),
             forecast_figures.mine_vs_real_bars(*two, TOKENS, **de),
             lab_figures.weight_bars(two[1], TOKENS, [1.0, 0.0], [0.5, 0.2], **de),
             lab_figures.gap_figure(np.linspace(0, 5, 6), np.linspace(0.5, 1, 6), gap=2, weight=0.8, n_keys=4,
                                    temperature=1, **de),
             lab_figures.spread_histograms(rng.normal(size=50), rng.normal(size=50), 16, **de),
             lab_figures.largest_weight_figure([4, 16], [0.6, 0.9], [0.4, 0.4], d_k=16, n_keys=8, **de),
             model_figures.model_view([WEIGHTS], [["0.50\nmixed"]], **de),
             model_figures.head_view(np.repeat(WEIGHTS, 2, axis=1)[:, :2], [0], TOKENS, **de)]
    for fig in built:
        assert "⟨" in spec_text(fig), fig["layout"]


def test_the_cache_gives_each_reader_the_figure_in_their_own_language(monkeypatch):
    readers = iter(["de", "en", "de"])
    monkeypatch.setattr(figure_cache, "reader_language", lambda: next(readers))
    german = figure_cache.figure(figures.head_grids, WEIGHTS, TOKENS, TOKENS, kind="weights")
    english = figure_cache.figure(figures.head_grids, WEIGHTS, TOKENS, TOKENS, kind="weights")
    again = figure_cache.figure(figures.head_grids, WEIGHTS, TOKENS, TOKENS, kind="weights")
    assert german["layout"]["yaxis"]["title"]["text"] == "⟨query⟩"
    assert english["layout"]["yaxis"]["title"]["text"] == "query"
    assert "⟨" not in spec_text(english)
    assert again is german  # one figure per language, shared by the readers of that language


def test_the_app_gives_the_cache_the_reader_s_language():
    from app import i18n
    assert figure_cache.reader_language is i18n.language


def test_a_summary_in_each_language_from_one_shared_figure():
    fig = figures.head_grids(WEIGHTS, TOKENS, TOKENS, kind="weights", head_names=["A"])
    english = chart_text.of_figure(fig, "en")
    german = chart_text.of_figure(fig, "de")
    assert english.summary == "A: 'sat' attends most to 'sat' (0.90); '<b>cat</b>' is nearly flat."
    assert german.summary.startswith("A: ⟨{query} attends most to {key} ({value})⟩".format(
        query="'sat'", key="'sat'", value="0,90"))
    assert chart_text.of_figure(fig, "en") is english  # each language kept once, never the other's
    assert chart_text.of_figure(fig).summary == english.summary  # an English figure reads in English


def test_a_translated_figure_is_still_read_as_attention_and_in_its_own_language():
    fig = figures.head_grids(WEIGHTS * 2, TOKENS, TOKENS, kind="scores", language="de")  # extremes, no focus
    summary = chart_text.of_figure(fig).summary
    assert "→" in summary  # "'sat' → 'sat'": the rows are queries, the columns keys
    assert "⟨largest {high}" not in summary and "1,80" in summary
    tables = chart_text.of_figure(fig).tables()
    assert tables[0].rows[0][1][0] == "1,80"


def test_the_numbers_note_follows_the_figure_s_language():
    big = np.full((1, 20, 20), 0.05)
    fig = figures.head_grids(big, [str(i) for i in range(20)], [str(i) for i in range(20)], kind="weights",
                             language="de")
    assert heatmap_panels.numbers_note(fig).startswith("⟨No numbers on these cells")
    assert heatmap_panels.numbers_note(fig, "en").startswith(
        "No numbers on these cells: a grid with more than 12 ")


def test_a_german_student_s_bars_and_chips_write_decimal_commas():
    """Issue 40, 5: the forecast's chips ('○ 0,70') and a student's bars, theirs against the real
    softmax ('0,10 / 0,09'), written as the reader writes numbers, hover text too."""
    import streamlit as st

    from app import i18n
    from app.room.questions import chip_label

    st.session_state[i18n.LANGUAGE] = "de"  # the reader's language, as the picker keeps it
    try:
        bars = i18n.localized_figure(forecast_figures.mine_vs_real_bars(
            [0.1, 0.7, 0.2], [0.09, 0.67, 0.24], ["a", "b", "c"], language="de")).to_dict()
        assert [trace["text"] for trace in bars["data"]] == [["0,10", "0,70", "0,20"],
                                                             ["0,09", "0,67", "0,24"]]
        assert all(text.endswith(("0,09", "0,67", "0,24")) for text in bars["data"][1]["hovertext"])
        assert chip_label("2 · cat", 0, 0.7).endswith("○ 0,70")
        assert chip_label("2 · cat", 3, 0.25).endswith("●●● 0,25")
    finally:
        del st.session_state[i18n.LANGUAGE]
