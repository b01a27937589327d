"""The Learn page (issue 18): training from the page, what each head became (read from the scores),
the reader's own sequence, opening a learned layer on the workbench, and example F's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from app import training
from app.training import checkpoint_scores
from mha_core.attention import softmax
from mha_core.train import Config, History, train
from tests.apptest_util import fresh_app, goto, texts

TRAIN = "FormSubmitter:learn_settings-Train"


@pytest.fixture(scope="module")
def trained():
    """The page after Train with its default settings (the induction task)."""
    at = fresh_app()
    goto(at, "learn")
    assert not at.exception
    assert any("Press **Train**" in text for text in texts(at.info))
    at.button(key=TRAIN).click().run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    return at


def roles(at) -> dict[tuple[int, int], str]:
    table = at.table[0].value
    return {(int(layer), int(row["head"])): row["role"] for layer, row in table.iterrows()}


def test_the_page_names_the_induction_head_from_the_scores(trained):
    found = roles(trained)
    assert sorted(found) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert "induction head" in {found[(2, 1)], found[(2, 2)]}  # layer 2 copies, as the task needs
    assert "previous-token head" in {found[(1, 1)], found[(1, 2)]}
    expected = checkpoint_scores(Config(), train(Config()))[-1]  # [layers, heads, 2], computed again
    table = trained.table[0].value
    assert [float(v) for v in table["induction score"]] == pytest.approx(expected[..., 1].ravel(), abs=0.006)


def test_an_early_checkpoint_has_no_induction_head_yet(trained):
    trained.select_slider(key="learn_checkpoint").set_value(0).run()
    assert set(roles(trained).values()) == {"no clear role yet"}
    assert "shown: step 0" in str(trained.get("plotly_chart")[0].proto.spec)
    trained.select_slider(key="learn_checkpoint").set_value(600).run()


def test_the_reader_s_sequence_is_continued_and_a_wrong_letter_is_named(trained):
    trained.text_input(key="learn_prompt").set_value("C F B Q C F").run()
    continued = [t for t in texts(trained.markdown) if t.startswith("The model continues: ")]
    assert continued and continued[0].split(": ")[1].split()[:2] == ["B", "Q"]  # the induction it learned
    trained.text_input(key="learn_prompt").set_value("C F zz").run()
    assert any("not ZZ" in e.value for e in trained.error) and not trained.exception
    trained.text_input(key="learn_prompt").set_value("").run()


def test_a_learned_layer_opens_on_the_workbench(trained):
    trained.selectbox(key="learn_open_layer").set_value(1).run()
    trained.button(key="learn_open").click().run()
    assert not trained.exception
    assert trained.session_state.n_heads == 2 and trained.session_state.d_model == 32
    assert trained.session_state.mask_kind == "causal"
    assert trained.session_state.tokens_text.split()[0].isalpha()


def test_example_f_quotes_the_chapter_s_numbers_at_their_precision():
    at = fresh_app()
    goto(at, "learn")
    text = next(t for t in texts(at.markdown) if t.startswith("The chapter's scores (40, 8)"))
    scaled = softmax(np.array([5.0, 1.0]))[1]
    assert f"**{scaled:.3f}**" == "**0.018**" and "**0.018**" in text  # the chapter prints 0.018
    assert f"{scaled * (1 - scaled):.4f}" in text and "1.3e-14" in text


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_the_server_s_training_budget_refuses_a_run_then_refills(monkeypatch):
    """However many tabs press Train, the server trains at most REFILL of one core over time."""
    clock = Clock()
    monkeypatch.setattr(training, "time", clock)
    monkeypatch.setattr(training, "BUDGET_SECONDS", 10.0)
    runs = training.Runs()
    assert runs.wait_before_training() == 0

    def slow_step(step, loss, model):
        clock.now += 1.0  # each step costs a second of the fake clock

    runs.run(Config(steps=30, batch=2), slow_step, History())  # 30 s from a 10 s bucket, 15 s refilled
    assert runs.wait_before_training() == pytest.approx(5 / training.REFILL + 1)
    clock.now += 5 / training.REFILL + 0.5
    assert runs.wait_before_training() == 0
    assert runs.finished(Config(steps=30, batch=2)) is not None


def test_a_stopped_run_is_shown_with_its_steps_and_scored_once():
    """Stop ends a run mid-way: the page shows what was done, says where it stopped, and scores the
    checkpoints once, not on every rerun."""
    config = Config(steps=1000)
    history = History()
    with pytest.raises(KeyboardInterrupt):
        train(config, on_step=lambda step, loss, model: (_ for _ in ()).throw(KeyboardInterrupt)
              if step == 60 else None, history=history)
    at = fresh_app()
    at.session_state["learn_steps"] = 1000
    at.session_state["learn_run"] = (config, history)
    goto(at, "learn")
    assert not at.exception
    assert any("Stopped at step 60 of 1000." in w for w in texts(at.warning))
    scored = at.session_state["learn_stopped_scores"]
    at.run()
    assert at.session_state["learn_stopped_scores"] is scored and len(at.table) == 1
