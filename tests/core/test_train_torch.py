"""Issue 18: the tiny decoder's loss and gradients against PyTorch autograd on the same weights, in
float64 (test-only; the same torch rule as tests/core/test_torch_parity.py: CI sets REQUIRE_TORCH=1).

The reference is written with torch ops from the description of the model, not from our backward
pass: embeddings, causal scaled_dot_product_attention per head, ReLU MLP, torch's layer_norm, the
unembedding and cross_entropy over the scored predictions.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from mha_core.train import Config, Model, batches
from tests.torch_reference import torch_decoder_loss

if os.environ.get("REQUIRE_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip("torch", reason="torch not installed; CI installs torch==2.13.0")

CONFIGS = [
    Config(batch=4),
    Config(batch=4, mlp=True, layer_norm=True, layers=3, heads=4),
    Config(batch=4, scaling="none", task="sort", vocab=10, seq_len=15, d_model=16),
]


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "mlp-norm-3-layers", "unscaled-sort"])
def test_loss_and_every_gradient_match_torch_autograd(config):
    model = Model.init(config)
    batch = batches(config, np.random.default_rng(7))
    loss, grads = model.loss_and_grads(batch.tokens, batch.scored)
    expected_loss, expected = torch_decoder_loss(config, model.params, batch.tokens, batch.scored)
    assert loss == pytest.approx(expected_loss, rel=1e-12)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, expected[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_a_trained_model_still_matches_torch():
    """After training the weights are far from their init: the same agreement holds."""
    from mha_core.train import train

    config = Config(steps=40, batch=8, mlp=True, layer_norm=True)
    model = train(config).checkpoints[-1][1]
    batch = batches(replace(config, batch=4), np.random.default_rng(8))
    loss, grads = model.loss_and_grads(batch.tokens, batch.scored)
    expected_loss, expected = torch_decoder_loss(config, model.params, batch.tokens, batch.scored)
    assert loss == pytest.approx(expected_loss, rel=1e-12)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, expected[name], rtol=1e-9, atol=1e-12, err_msg=name)
