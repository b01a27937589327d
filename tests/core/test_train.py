"""Issue 18: the tiny decoder (mha_core/train.py) and its tasks (mha_core/tasks.py).

Gradients against central finite differences in float64 for every entry of every parameter, on small
models of every shape option; the trained model's trace against the workbench's own Setup.run(); a
short training run; the tasks' batches against what each task says. Gradients against PyTorch
autograd are in tests/core/test_train_torch.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mha_core.tasks import TASKS
from mha_core.train import (
    Config,
    History,
    Model,
    batches,
    checkpoint_steps,
    head_scores,
    induction_score,
    previous_token_score,
    probe,
    train,
)

SMALL = Config(d_model=4, heads=2, vocab=8, seq_len=8, batch=2)
SHAPES = [
    SMALL,
    replace(SMALL, layers=1, heads=1),
    replace(SMALL, mlp=True),
    replace(SMALL, layer_norm=True),
    replace(SMALL, mlp=True, layer_norm=True, layers=3),
    replace(SMALL, scaling="none", heads=4),
    replace(SMALL, task="sort", vocab=5, seq_len=7, layer_norm=True),
    replace(SMALL, task="nearest_key", mlp=True),
]
EPS = 1e-5


def numerical_gradient(model: Model, name: str, tokens, scored) -> np.ndarray:
    value = model.params[name]  # changed in place and restored: the model reads it on every call
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        kept = value[index]
        value[index] = kept + EPS
        above, _ = model.loss_and_grads(tokens, scored)
        value[index] = kept - EPS
        below, _ = model.loss_and_grads(tokens, scored)
        value[index] = kept
        grad[index] = (above - below) / (2 * EPS)
    return grad


@pytest.mark.parametrize("config", SHAPES, ids=lambda c: f"{c.task}-L{c.layers}-h{c.heads}-mlp{c.mlp:d}-"
                         f"norm{c.layer_norm:d}-{c.scaling}")
def test_every_gradient_matches_central_differences(config):
    model = Model.init(config)
    for name in model.params:  # a random model, not the init's zeros and ones
        model.params[name] += np.random.default_rng(len(name)).normal(0, 0.1, model.params[name].shape)
    batch = batches(config, np.random.default_rng(3))
    loss, grads = model.loss_and_grads(batch.tokens, batch.scored)
    assert np.isfinite(loss) and sorted(grads) == sorted(model.params)
    for name, value in model.params.items():
        assert grads[name].shape == value.shape, name
        numerical = numerical_gradient(model, name, batch.tokens, batch.scored)
        scale = np.abs(numerical) + np.abs(grads[name])
        error = np.abs(numerical - grads[name]) / np.maximum(scale, 1e-4)
        assert error.max() <= 1e-5, (name, float(error.max()))
        assert np.abs(grads[name]).max() > 0 or name.endswith("position"), name  # every weight learns


def test_the_trace_is_the_workbench_s_setup_layer_by_layer():
    """A learned layer opened on the workbench computes exactly what the model computed."""
    config = replace(SMALL, layers=3, mlp=True, layer_norm=True, d_model=8)
    model = Model.init(config)
    tokens = probe(config)
    for layer, traced in enumerate(model.trace(tokens)):
        setup = model.layer_setup(tokens, layer)
        assert setup.mask == "causal" and setup.sizes.n_heads == config.heads
        opened = setup.run(max_bytes=None)
        for name in ("q", "k", "v", "scores", "weights", "head_outputs", "concat", "output"):
            np.testing.assert_allclose(getattr(opened, name), getattr(traced, name), rtol=1e-12, atol=1e-12)
        assert np.allclose(np.triu(traced.weights, 1), 0)  # causal: nothing from a later token


def test_the_logits_are_the_residual_stream_read_out():
    """Without MLP or norms, the logits are (embeddings + every layer's output) @ unembed."""
    model = Model.init(SMALL)
    tokens = probe(SMALL)
    stream = model.params["embed"][tokens] + model.params["position"][: len(tokens)]
    for result in model.trace(tokens):
        stream = stream + result.output
    np.testing.assert_allclose(model.logits(tokens), stream @ model.params["unembed"], atol=1e-12)


def test_a_short_run_learns_to_copy_and_can_be_stopped():
    config = Config(task="copy", layers=1, d_model=16, heads=2, vocab=8, seq_len=9, steps=250, lr=1e-2)
    history = train(config)
    assert len(history.losses) == 250 and not history.stopped
    assert np.mean(history.losses[-20:]) < 0.2 * np.mean(history.losses[:5])
    steps = [step for step, _ in history.checkpoints]
    assert steps[0] == 0 and steps[-1] == 250 and steps == sorted(steps)
    first, last = history.checkpoints[0][1], history.checkpoints[-1][1]
    assert not np.allclose(first.params["0.w_q"], last.params["0.w_q"])  # checkpoints are copies
    given = [3, 1, 4, 1]
    assert last.generate(given + [7], 4)[-4:] == given  # the separator, then the copy

    seen = []
    stopped = train(config, on_step=lambda step, loss, model: seen.append(step) or step < 3)
    assert stopped.stopped and seen == [1, 2, 3] and len(stopped.losses) == 3
    assert stopped.checkpoints[-1][0] == 3


def test_the_head_scores_read_what_a_head_does():
    tokens = [5, 6, 7, 5, 6, 7]
    previous = np.eye(6, k=-1)
    previous[0, 0] = 1
    induction = np.zeros((6, 6))
    induction[:3, 0] = 1
    for t in (3, 4, 5):
        induction[t, t - 2] = 1  # the token after the previous occurrence of tokens[t]
    assert previous_token_score(previous) == 1 and induction_score(previous, tokens) == 0
    assert induction_score(induction, tokens) == 1 and previous_token_score(induction) < 0.5


@pytest.mark.parametrize("name", list(TASKS))
def test_each_task_scores_only_predictions_its_rule_determines(name):
    config = replace(SMALL, task=name, vocab=12, seq_len=13, batch=64)
    batch = batches(config, np.random.default_rng(0))
    tokens, scored = batch.tokens, batch.scored
    assert tokens.shape[0] == 64 and tokens.shape[1] <= config.seq_len and tokens.max() < config.vocab
    assert scored.shape == (64, tokens.shape[1] - 1) and scored.any(axis=1).all()
    for row, marks in zip(tokens, scored, strict=True):
        for t in np.flatnonzero(marks):
            assert row[t + 1] == expected_next(name, list(row[: t + 1]), config.vocab), (name, row, t)


def expected_next(task: str, seen: list[int], vocab: int) -> int:
    """The task's rule written independently: the next token from the tokens so far."""
    if task == "induction":
        earlier = [i for i in range(len(seen) - 1) if seen[i] == seen[-1]]
        return seen[earlier[-1] + 1]
    if task == "nearest_key":
        return seen[seen.index(seen[-1]) + 1]
    separator = seen.index(vocab - 1)
    given, answered = seen[:separator], seen[separator + 1:]
    answer = {"copy": given, "reverse": given[::-1], "sort": sorted(given)}[task]
    return answer[len(answered)]


REFUSED = [
    ({"task": "chess"}, "task"), ({"layers": 5}, "layers"), ({"d_model": 30, "heads": 4}, "d_model"),
    ({"scaling": "cube"}, "scaling"), ({"vocab": 500}, "vocab"), ({"steps": 0}, "steps"),
    ({"batch": 0}, "batch"), ({"lr": 0}, "lr"), ({"seq_len": 4}, "seq_len"),
]


@pytest.mark.parametrize(("changes", "word"), REFUSED)
def test_a_config_outside_its_limits_is_refused_with_its_name(changes, word):
    with pytest.raises(ValueError, match=word):
        Config(**changes)


def test_head_scores_name_each_layer_and_head():
    model = Model.init(SMALL)
    scores = head_scores(model, probe(SMALL))
    assert len(scores) == SMALL.layers and all(len(layer) == SMALL.heads for layer in scores)
    assert all(0 <= a <= 1 and 0 <= b <= 1 for layer in scores for a, b in layer)


def test_a_stopped_run_keeps_its_steps():
    """train() fills the page's history as it goes: an interrupted run leaves what it did."""
    history = History()

    def interrupt(step, loss, model):
        if step == 30:
            raise KeyboardInterrupt  # what Streamlit's StopException does to a run of the page

    with pytest.raises(KeyboardInterrupt):
        train(Config(steps=100), on_step=interrupt, history=history)
    assert len(history.losses) == 30 and history.checkpoints[0][0] == 0
    assert [step for step, _ in history.checkpoints] == sorted(s for s in checkpoint_steps(100) if s <= 30)
