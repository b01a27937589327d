"""The Real model page says its model's shape as the model's config.json gives it (issue 40, finding 9):
it wrote 6 layers, 12 heads, d_model 384 and 512 word pieces into its text and its widgets."""

from __future__ import annotations

import dataclasses
import json

import pytest

from app.views import model as model_page
from mha_core import pretrained
from tests.apptest_util import fresh_app, goto, texts

SMALLER = dataclasses.replace(pretrained.SHIPPED_CONFIG, n_layers=4, n_heads=8, d_model=256, d_ff=1024,
                              max_positions=128)


def test_the_page_says_the_shape_its_config_gives(monkeypatch):
    """Another config (read, as the page reads it, through pretrained.model_config): the page's words
    change with it. The model itself is left out (its weights are the shipped model's)."""
    def missing(*_args, **_kwargs):
        raise pretrained.ModelNotInstalled("not here", reason=pretrained.NO_PACKAGE,
                                           details={"package": pretrained.PACKAGE})

    model_page.model.clear()
    monkeypatch.setattr(model_page, "load_minilm", missing)
    monkeypatch.setattr(pretrained, "model_config", lambda: SMALLER)
    try:
        at = fresh_app()
        goto(at, "model")
        assert not at.exception
        said = " ".join(texts(at.caption))
        parameters = f"{SMALLER.parameters / 1e6:.1f}"
        assert f"4 layers × 8 heads, d_model 256, {parameters} M parameters" in said, said
        assert "384" not in said and "12 heads" not in said
    finally:
        model_page.model.clear()


def test_the_pages_widgets_have_the_models_layers_heads_and_length():
    """With the model installed: the layer picker, the text box's limit and the heads the page offers are
    config.json's (6, 512, 12 for the shipped model)."""
    try:
        raw = json.loads((pretrained.model_folder() / "config.json").read_text())
    except pretrained.ModelNotInstalled:
        pytest.skip("the model package is not installed (make venv installs it)")
    at = fresh_app()
    goto(at, "model")
    assert not at.exception
    said = " ".join(texts(at.caption))
    assert (f"{raw['num_hidden_layers']} layers × {raw['num_attention_heads']} heads, "
            f"d_model {raw['hidden_size']}") in said
    assert at.text_area(key=model_page.MODEL_TEXT).label == (
        f"Text (up to {raw['max_position_embeddings']} word pieces)")
    layers = at.button_group(key="pick_model_layer")
    assert len(layers.options) == raw["num_hidden_layers"]
    heads = at.button_group(key="pick_model_head")
    assert len(heads.options) == raw["num_attention_heads"]
    assert f"heads 1 to {raw['num_attention_heads']} in reading order" in said  # the overview's caption
