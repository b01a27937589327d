"""Issue 18: a training run saved to one .npz file and read back (mha_core/train.py), the checkpoint
cache's directories and file names, and `python -m mha_core.checkpoints` (mha_core/checkpoints.py).

A cached file is outside input: every way it can be wrong (truncated, not an archive, a pickle, a
parameter of the wrong shape, a NaN, a config Config refuses, an array far larger than it should
be) is a ValueError, never another exception and never a Model built from it.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from mha_core import checkpoints
from mha_core.train import Config, History, load_history, save_history, train

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

ROOT = Path(__file__).resolve().parents[2]
SMALL = Config(d_model=4, heads=2, vocab=8, seq_len=8, batch=2, steps=30, mlp=True, layer_norm=True)


@pytest.fixture(scope="module")
def run() -> History:
    return train(SMALL)


@pytest.fixture
def saved(tmp_path, run) -> Path:
    path = tmp_path / "run.npz"
    save_history(run, SMALL, path)
    return path


def arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def rewrite(path: Path, **changed) -> Path:
    """The saved file again with some arrays replaced (None: removed)."""
    values = {**arrays(path), **changed}
    with open(path, "wb") as file:
        np.savez_compressed(file, **{name: value for name, value in values.items() if value is not None})
    return path


def test_a_saved_run_loads_back_equal(saved, run):
    config, loaded = load_history(saved)
    assert config == SMALL and loaded.stopped is False
    assert loaded.losses == run.losses
    assert [step for step, _ in loaded.checkpoints] == [step for step, _ in run.checkpoints]
    for (_, got), (_, want) in zip(loaded.checkpoints, run.checkpoints, strict=True):
        assert got.config == SMALL and set(got.params) == set(want.params)
        for name, value in want.params.items():
            np.testing.assert_array_equal(got.params[name], value, err_msg=name)
    tokens = np.arange(SMALL.seq_len) % SMALL.vocab
    last, trained = loaded.checkpoints[-1][1], run.checkpoints[-1][1]
    np.testing.assert_array_equal(last.logits(tokens), trained.logits(tokens))


def test_a_stopped_run_keeps_its_steps_and_says_it_stopped(tmp_path):
    history = train(SMALL, on_step=lambda step, loss, model: step < 7)
    save_history(history, SMALL, tmp_path / "stopped")  # a name without .npz is used as given
    config, loaded = load_history(tmp_path / "stopped")
    assert loaded.stopped and len(loaded.losses) == 7 and loaded.checkpoints[-1][0] == 7


@pytest.mark.parametrize("kept", [0.0, 0.1, 0.5, 0.9, 0.999])
def test_a_truncated_file_is_a_value_error(saved, kept):
    data = saved.read_bytes()
    saved.write_bytes(data[:int(len(data) * kept)])
    with pytest.raises(ValueError, match="not a saved run"):
        load_history(saved)


def test_bytes_that_are_no_archive_and_a_single_array_are_value_errors(tmp_path):
    (tmp_path / "noise").write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(ValueError, match="not a saved run"):
        load_history(tmp_path / "noise")
    np.save(tmp_path / "single.npy", np.zeros(3))
    with pytest.raises(ValueError, match="single array"):
        load_history(tmp_path / "single.npy")


def test_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_history(tmp_path / "nothing.npz")


def test_a_parameter_of_the_wrong_shape_is_refused(saved):
    rewrite(saved, **{"c3/0.w_q": np.zeros((2, 4, 3))})  # [h, D, d_k] is [2, 4, 2]
    with pytest.raises(ValueError, match=r"c3/0\.w_q .*shape"):
        load_history(saved)


def test_a_missing_and_an_extra_parameter_are_refused(saved):
    rewrite(saved, **{"c0/unembed": None})
    with pytest.raises(ValueError, match="missing: \\['c0/unembed'\\]"):
        load_history(saved)
    rewrite(saved, **{"c0/unembed": np.zeros((4, 8)), "c0/9.w_q": np.zeros((2, 4, 2))})
    with pytest.raises(ValueError, match="unknown: \\['c0/9.w_q'\\]"):
        load_history(saved)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_value_that_is_not_finite_is_refused(saved, value):
    weights = arrays(saved)["c5/1.w_in"].copy()
    weights[1, 2] = value
    rewrite(saved, **{"c5/1.w_in": weights})
    with pytest.raises(ValueError, match=r"1\.w_in has a value that is not finite"):
        load_history(saved)


def test_a_loss_that_is_not_finite_is_refused(saved):
    losses = arrays(saved)["losses"].copy()
    losses[3] = np.nan
    rewrite(saved, losses=losses)
    with pytest.raises(ValueError, match="loss is not finite"):
        load_history(saved)


@pytest.mark.parametrize("change, message", [
    ({"layers": 9}, "layers must be 1 to 4"),
    ({"lr": 5.0}, "lr must be in"),
    ({"task": "chess"}, "task must be one of"),
    ({"layers": "2"}, "layers must be a int"),
    ({"mlp": 1}, "mlp must be a bool"),
    ({"heads": True}, "heads must be a int"),
    ({"colour": "red"}, "exactly the fields"),
])
def test_a_config_out_of_range_or_of_the_wrong_type_is_refused(saved, change, message):
    config = {**json.loads(str(arrays(saved)["config"])), **change}
    rewrite(saved, config=np.array(json.dumps(config)))
    with pytest.raises(ValueError, match=message):
        load_history(saved)


def test_a_config_that_is_not_json_or_a_pickle_is_refused(saved):
    rewrite(saved, config=np.array("{layers: 2"))
    with pytest.raises(ValueError, match="not JSON"):
        load_history(saved)
    rewrite(saved, config=np.array([{"layers": 2}], dtype=object))  # needs pickle to read
    with pytest.raises(ValueError, match="not a saved run"):
        load_history(saved)


def test_steps_that_do_not_agree_with_the_config_or_losses_are_refused(saved):
    steps = arrays(saved)["steps"]
    rewrite(saved, steps=steps[::-1].copy())
    with pytest.raises(ValueError, match="must rise from 0"):
        load_history(saved)
    rewrite(saved, steps=steps[:-1].copy())  # a finished run ends at config.steps
    with pytest.raises(ValueError, match="finished run ends at step 30"):
        load_history(saved)
    rewrite(saved, steps=steps, losses=np.zeros(29))
    with pytest.raises(ValueError, match="losses"):
        load_history(saved)


def test_an_array_far_larger_than_its_shape_is_refused_before_it_is_read(saved):
    """A few kilobytes of zeros that would inflate to 80 MB: refused by its size in the archive."""
    rewrite(saved, **{"c0/embed": np.zeros((10_000, 1_000))})
    assert saved.stat().st_size < 1_000_000
    with pytest.raises(ValueError, match="more than 32 numbers"):
        load_history(saved)


def test_the_file_name_is_stable_and_names_every_field():
    assert checkpoints.file_name(Config()) == checkpoints.file_name(Config())
    assert checkpoints.file_name(Config()).startswith("induction-")
    names = {checkpoints.file_name(config) for config in (
        Config(), replace(Config(), seed=1), replace(Config(), lr=0.002), replace(Config(), batch=31),
        replace(Config(), layer_norm=True), replace(Config(), scaling="none"))}
    assert len(names) == 6


def test_the_cache_directories_follow_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    assert checkpoints.cache_dirs() == [tmp_path / "a", tmp_path / "b"]
    monkeypatch.delenv("MHA_CHECKPOINT_DIR")
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path / "data"))
    assert checkpoints.cache_dirs() == [tmp_path / "data" / "checkpoints"]
    monkeypatch.delenv("MHA_DATA_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert checkpoints.cache_dirs() == [tmp_path / "home" / ".cache" / "mha-visualizer" / "checkpoints"]


def test_a_cached_run_is_written_atomically_and_found_in_the_list(monkeypatch, tmp_path, run):
    read_only, writable = tmp_path / "image", tmp_path / "server"
    monkeypatch.setenv("MHA_CHECKPOINT_DIR", f"{read_only}{os.pathsep}{writable}")
    assert checkpoints.cached_files(SMALL) == []
    path = checkpoints.store(SMALL, run)
    assert path.parent == writable and checkpoints.cached_files(SMALL) == [path]
    assert [p.name for p in writable.iterdir()] == [path.name]  # no temporary file left behind
    assert path.stat().st_mode & 0o777 == 0o644
    checkpoints.store(SMALL, run, read_only)
    assert checkpoints.cached_files(SMALL) == [read_only / path.name, path]  # the image's first
    assert load_history(path)[0] == SMALL


def test_a_failed_write_leaves_no_file(monkeypatch, tmp_path, run):
    def broken(history, config, file):
        file.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(checkpoints, "save_history", broken)
    with pytest.raises(OSError, match="disk full"):
        checkpoints.store(SMALL, run, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_pretrain_writes_runs_the_loader_reads_and_keeps_them(tmp_path, capsys):
    assert checkpoints.main(["--dir", str(tmp_path), "--only", "copy", "--only", "sort", "--steps", "4"]) == 0
    made = capsys.readouterr().out
    for task in ("copy", "sort"):
        config = replace(Config(task=task), steps=4)
        config_read, history = load_history(tmp_path / checkpoints.file_name(config))
        assert config_read == config and len(history.losses) == 4 and not history.stopped
        assert f"made  {tmp_path / checkpoints.file_name(config)} ({task}: 4 steps" in made
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        checkpoints.file_name(replace(Config(task=task), steps=4)) for task in ("copy", "sort"))
    checkpoints.main(["--dir", str(tmp_path), "--only", "copy", "--steps", "4"])
    assert "kept" in capsys.readouterr().out


def test_pretrain_as_a_command(tmp_path):
    """`python -m mha_core.checkpoints`, as the Dockerfile runs it (here with a small run)."""
    done = subprocess.run([sys.executable, "-m", "mha_core.checkpoints", "--dir", str(tmp_path / "new"),
                           "--only", "example-f-unscaled", "--steps", "3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    config = replace(checkpoints.EXAMPLE_F, scaling="none", steps=3)
    assert load_history(tmp_path / "new" / checkpoints.file_name(config))[0] == config
    assert "done in" in done.stdout


def test_the_pretrained_set_is_each_task_s_default_and_example_f():
    from mha_core.tasks import TASKS

    assert {config.task for config in checkpoints.PRETRAINED.values()} == set(TASKS)
    assert all(checkpoints.is_pretrained(Config(task=task)) for task in TASKS)
    assert checkpoints.is_pretrained(replace(checkpoints.EXAMPLE_F, scaling="none"))
    assert not checkpoints.is_pretrained(replace(Config(), steps=200))


def test_save_history_takes_an_open_file(run):
    buffer = io.BytesIO()
    save_history(run, SMALL, buffer)
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as npz:
        assert npz["steps"].tolist() == [step for step, _ in run.checkpoints]
        assert npz["losses"].tolist() == run.losses
