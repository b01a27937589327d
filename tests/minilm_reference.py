"""transformers' BertModel on the same model folder, for tests/core/test_pretrained.py and bench/model.py.

Imports torch and transformers only when called, so that importing this module never needs them.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

# Common one-piece words, so that a text of exactly n word pieces is easy to build.
WORDS = ("the model reads every word of this sentence and each head looks at the others in its own way "
         "before the next layer mixes what they found").split()


def text_of_pieces(model, n: int) -> str:
    """A text that model.tokenize turns into exactly n word pieces ([CLS] and [SEP] included)."""
    words = [WORDS[i % len(WORDS)] for i in range(n - 2)]
    text = " ".join(words)
    tokens = model.tokenize(text).tokens
    if len(tokens) != n:
        raise AssertionError(f"expected {n} word pieces, got {len(tokens)}")
    return text


def reference_bert(folder: Path):
    """BertModel with eager attention (so it returns the weights), in eval mode, float32."""
    from transformers import BertModel

    return BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()


def reference_trace(bert, ids: np.ndarray, zero_heads: Collection[tuple[int, int]] = (),
                    attention_mask: np.ndarray | None = None):
    """(hidden states [layers + 1, n, d], attention weights [layers, h, n, n]) as numpy arrays.

    attention_mask: [n], 1 for a real word piece and 0 for padding (default: all real).

    zero_heads: (layer, head) pairs whose slice of the concatenation is set to 0 before the output
    projection (BertModel 5.x has no head_mask), by a forward pre-hook on that layer's
    attention.output.dense.
    """
    import torch

    d_head = bert.config.hidden_size // bert.config.num_attention_heads
    handles = []
    for layer in {layer for layer, _ in zero_heads}:
        heads = [head for at, head in zero_heads if at == layer]

        def zero(module, inputs, heads=heads):
            (concat,) = inputs  # [1, n, h * d_head]
            concat = concat.clone()
            for head in heads:
                concat[..., head * d_head:(head + 1) * d_head] = 0
            return (concat,)

        dense = bert.encoder.layer[layer].attention.output.dense
        handles.append(dense.register_forward_pre_hook(zero))
    mask = None if attention_mask is None else torch.from_numpy(np.array(attention_mask, np.int64))[None]
    try:
        with torch.no_grad():
            out = bert(torch.from_numpy(np.array(ids, dtype=np.int64))[None], attention_mask=mask,
                       output_attentions=True, output_hidden_states=True)
    finally:
        for handle in handles:
            handle.remove()
    hidden = np.stack([h[0].numpy() for h in out.hidden_states])
    weights = np.stack([a[0].numpy() for a in out.attentions])
    return hidden, weights
