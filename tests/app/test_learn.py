"""The Learn page (issue 18): training from the page, what each head became (read from the scores),
the reader's own sequence, opening a learned layer on the workbench, and example F's numbers."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from app import training
from app.training import checkpoint_scores
from mha_core import checkpoints
from mha_core.attention import softmax
from mha_core.train import Config, History, load_history, save_history, train
from tests.apptest_util import fresh_app, goto, texts, unescaped

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

TRAIN = "learn_train"


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    """An empty checkpoint cache of this module's own: a run another test (or a browser test's
    server, which shares MHA_DATA_DIR) cached is not shown in place of training."""
    folder = tmp_path_factory.mktemp("checkpoints")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MHA_CHECKPOINT_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def trained(checkpoint_dir):
    """The page after Train with its default settings (the induction task)."""
    training.runs.clear()  # nor a run this process read from a shared cache before (e.g. another page test)
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
    text = next(unescaped(t) for t in texts(at.markdown) if t.startswith("The chapter's scores (40, 8)"))
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


# --- Runs trained earlier: the checkpoint cache (mha_core/checkpoints.py) -------------------------------

def test_the_first_train_of_a_default_config_writes_the_cache(trained, checkpoint_dir):
    """"On first use": the page's default run, trained live, is saved for the next start."""
    path = checkpoint_dir / checkpoints.file_name(Config())
    config, history = load_history(path)
    assert config == Config() and len(history.losses) == 600 and len(history.checkpoints) == 25
    assert checkpoints.cached_files(Config()) == [path]


def small_page(at, config: Config) -> None:
    """The page's settings for config (its task and sizes; the rest are Config's defaults)."""
    for key, value in {"learn_task": config.task, "learn_layers": config.layers, "learn_heads": config.heads,
                       "learn_width": config.d_model, "learn_steps": config.steps,
                       "learn_scaling": config.scaling, "learn_mlp": config.mlp}.items():
        at.session_state[key] = value


def test_a_cached_run_is_shown_at_once_and_trains_again_live_on_request(monkeypatch, tmp_path):
    """A run saved earlier for the chosen settings is drawn without training (train is not called),
    with the caption and the button that trains it again; pressing it trains live, once."""
    config = Config(task="copy", layers=1, heads=1, d_model=16, steps=200)
    history = train(config)
    save_history(history, config, tmp_path / checkpoints.file_name(config))
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", str(tmp_path))
    calls = []

    def counted(*args, **kwargs):
        calls.append(args[0])
        return train(*args, **kwargs)

    monkeypatch.setattr(training, "train", counted)
    at = fresh_app()
    small_page(at, config)
    goto(at, "learn")
    assert not at.exception, [e.value for e in at.exception]
    assert calls == [] and not any("Press **Train**" in text for text in texts(at.info))
    assert any(text.startswith("Shown at once: a run trained earlier") for text in texts(at.caption))
    assert at.button(key=TRAIN).label == "Train again, live"
    assert list(at.select_slider(key="learn_checkpoint").options) == [str(s) for s, _ in history.checkpoints]
    assert at.select_slider(key="learn_checkpoint").value == 200
    table = at.table[0].value
    expected = checkpoint_scores(config, history)[-1]  # [layers, heads, 2]
    assert [float(v) for v in table["induction score"]] == pytest.approx(expected[..., 1].ravel(), abs=0.006)

    at.button(key=TRAIN).click().run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    assert calls == [config]  # trained again, live
    assert not any(text.startswith("Shown at once") for text in texts(at.caption))
    assert at.button(key=TRAIN).label == "Train"
    at.button(key=TRAIN).click().run()
    assert calls == [config]  # a live run is kept, not trained on every press


def test_a_broken_cache_file_is_skipped_and_the_page_trains_anew(monkeypatch, tmp_path):
    config = Config(task="sort", layers=1, heads=1, d_model=16, steps=200)
    save_history(train(config), config, tmp_path / "whole.npz")
    data = (tmp_path / "whole.npz").read_bytes()
    (tmp_path / checkpoints.file_name(config)).write_bytes(data[: len(data) // 2])  # truncated
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", str(tmp_path))
    at = fresh_app()
    small_page(at, config)
    goto(at, "learn")
    assert not at.exception, [e.value for e in at.exception]
    assert any("Press **Train**" in text for text in texts(at.info))
    assert at.button(key=TRAIN).label == "Train"
    at.button(key=TRAIN).click().run(timeout=120)
    assert not at.exception and len(at.select_slider(key="learn_checkpoint").options) == 25


def test_runs_write_a_finished_default_run_only_and_survive_a_disk_they_cannot_write(monkeypatch, tmp_path):
    """Runs.run saves a finished run of a pretrained config into the last cache directory; a stopped
    run and a config outside the pretrained set are not saved; an unwritable directory is no error."""
    small = Config(task="nearest_key", layers=1, heads=1, d_model=16, steps=20, batch=4)
    monkeypatch.setitem(checkpoints.PRETRAINED, "small", small)
    image, server = tmp_path / "image", tmp_path / "server"
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", f"{image}{os.pathsep}{server}")

    training.Runs().run(small, None, History())
    assert [p.name for p in server.iterdir()] == [checkpoints.file_name(small)]
    fresh = training.Runs()  # a restarted server reads it back, as a run trained earlier
    assert fresh.finished(small) is not None and fresh.earlier(small)

    longer = replace(small, steps=21)  # not in the pretrained set
    training.Runs().run(longer, None, History())
    monkeypatch.setitem(checkpoints.PRETRAINED, "stopped", replace(small, steps=22))
    stopped = training.Runs().run(replace(small, steps=22), lambda step, loss, model: step < 5, History())
    assert stopped[0].stopped
    assert [p.name for p in server.iterdir()] == [checkpoints.file_name(small)]

    (tmp_path / "a file").write_text("")
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", str(tmp_path / "a file" / "checkpoints"))  # cannot be made
    assert training.Runs().run(small, None, History()) is not None


def test_a_run_of_another_config_under_a_config_s_name_is_not_shown(monkeypatch, tmp_path):
    """The file name is a hash; the config inside the file is what counts."""
    config = Config(task="reverse", layers=1, heads=1, d_model=16, steps=20)
    other = replace(config, seed=3)
    save_history(train(other), other, tmp_path / checkpoints.file_name(config))
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", str(tmp_path))
    runs = training.Runs()
    assert runs.finished(config) is None and runs.finished(other) is None


def test_example_f_from_the_cache_is_drawn_at_once_and_can_be_trained_again(monkeypatch, tmp_path):
    from app.views import learn

    small = Config(heads=1, d_model=16, steps=20, batch=4, seed=7)  # example F's pair, small
    configs = [small, replace(small, scaling="none")]
    for config in configs:
        save_history(train(config), config, tmp_path / checkpoints.file_name(config))
    monkeypatch.setattr(learn, "EXAMPLE_F", small)
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", str(tmp_path))
    calls = []
    monkeypatch.setattr(training, "train", lambda config, **kw: calls.append(config) or train(config, **kw))
    at = fresh_app()
    goto(at, "learn")
    assert not at.exception, [e.value for e in at.exception]
    assert calls == [] and "learn_example_f" not in [b.key for b in at.button]
    assert any(text.startswith("Shown at once: a run trained earlier") for text in texts(at.caption))
    assert "runner-up weight at the end" in at.table[-1].value.columns
    at.button(key="learn_example_f_again").click().run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    assert calls == configs
    assert "learn_example_f_again" not in [b.key for b in at.button]
    assert not any(text.startswith("Shown at once") for text in texts(at.caption))


def test_another_session_watches_a_run_while_it_trains_then_sees_it_finished(checkpoint_dir):
    """The class follows the curve: while a session trains (a real run, held at step 60 on a thread),
    another page of these settings shows its progress and loss curve, then the finished run."""
    import threading

    training.runs.clear()
    reached, release = threading.Event(), threading.Event()

    def on_step(step, loss, model):
        if step == 60:
            reached.set()
            release.wait(60)

    config = Config(steps=400)  # not a default: never in the checkpoint cache
    trainer = threading.Thread(target=training.runs().run, args=(config, on_step, History()))
    trainer.start()
    try:
        assert reached.wait(60)
        watcher = fresh_app()
        watcher.session_state["learn_steps"] = 400  # as a follower receives the teacher's settings
        goto(watcher, "learn")
        assert not watcher.exception
        progress = [p.proto.text for p in watcher.get("progress")]
        assert any("Training on this server now" in t and "step 60 of 400" in t for t in progress), progress
        assert "learn_watch_curve" in str([c.proto.id for c in watcher.get("plotly_chart")])
        assert not watcher.table  # no heads yet
    finally:
        release.set()
        trainer.join(120)
    assert not trainer.is_alive()
    watcher.run()
    assert not watcher.exception and watcher.table  # the finished run, as if it trained here
