"""Issue 40, 9: the attention formula is written once, mha_core.attention.attention (with its
softmax_rows). The tiny decoder's trainer (mha_core/train.py) computes with it, and the exported script
(course/export.py) carries its very source; neither writes a softmax of its own. (The lean core,
multi_head_attention, is held to it in tests/core/test_core_reference.py.)
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from course import export
from mha_core import attention as core
from mha_core import train
from mha_core.train import Config, Model

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("config", [Config(d_model=4, heads=2, vocab=8, seq_len=8, batch=2, layers=2),
                                    Config(d_model=6, heads=3, vocab=8, seq_len=9, batch=3, scaling="none")],
                         ids=["sqrt", "none"])
def test_the_trainer_s_attention_is_the_core_s_formula(monkeypatch, config):
    """Each layer's forward pass calls the core's function, causal, with the config's scale, and keeps
    exactly what it returned (the weights the backward pass and the head scores read)."""
    calls = []

    def spy(q, k, v, scale, allowed=True):
        returned = core.attention(q, k, v, scale, allowed)
        calls.append(((q, k, v, scale, allowed), returned))
        return returned

    monkeypatch.setattr(train, "attention", spy)
    model = Model.init(config)
    tokens = np.random.default_rng(3).integers(config.vocab, size=(config.batch, config.seq_len))
    _, (layers, _, _) = model._forward(tokens)
    assert len(calls) == config.layers
    for (arguments, (heads, weights)), cache in zip(calls, layers, strict=True):
        q, k, v, scale, allowed = arguments
        assert scale == config.scale
        assert np.array_equal(allowed, np.tril(np.ones((config.seq_len, config.seq_len), bool)))
        assert cache["attn"]["weights"] is weights
        np.testing.assert_array_equal(cache["attn"]["concat"],
                                      heads.transpose(0, 2, 1, 3).reshape(config.batch, config.seq_len, -1))


def calls_of(path: Path, name: str) -> dict[str, int]:
    """How often each function (by its qualified name in the file) calls ``name`` (np.exp: an
    attribute called exp)."""
    found: dict[str, int] = {}

    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            inner = f"{where}.{child.name}" if isinstance(child, (ast.FunctionDef, ast.ClassDef)) else where
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and child.func.attr == name):
                found[where] = found.get(where, 0) + 1
            walk(child, inner)

    walk(ast.parse(path.read_text()), "")
    return found


def test_no_softmax_is_written_outside_the_core():
    """The trainer's only exp is its loss's (a softmax over the vocabulary, not attention); the export
    writes none (its script's softmax is the core's source)."""
    assert set(calls_of(ROOT / "mha_core" / "train.py", "exp")) == {".Model.loss_and_grads"}
    assert calls_of(ROOT / "course" / "export.py", "exp") == {}
    code = "".join(export.STEP_CODE.values()) + export.FOOTER
    assert "exp(" not in code and "softmax" not in code and "attention(" in code


def test_the_exported_formula_is_the_core_s_source_and_computes_its_numbers_bit_for_bit():
    source = export.formula_source()
    assert source == inspect.getsource(core.softmax_rows) + "\n\n" + inspect.getsource(core.attention)
    defined: dict = {"np": np}
    exec(compile(source, "exported formula", "exec"), defined)  # what the script defines, NumPy alone
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(2, 3, 6, 2))
    allowed = np.tril(np.ones((4, 6), bool))
    allowed[2] = False  # a query that may attend to nothing: all zeros
    for mask in (True, allowed):
        for ours, theirs in zip(defined["attention"](q, k, v, 0.4, mask), core.attention(q, k, v, 0.4, mask),
                                strict=True):
            assert np.array_equal(ours, theirs)
    assert not defined["attention"](q, k, v, 0.4, allowed)[1][..., 2, :].any()
