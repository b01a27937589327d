"""torch.nn.MultiheadAttention holding our per-head weights, for the parity tests and bench/core.py; the
tiny decoder of mha_core/train.py written in torch ops, for its parity test and bench/train.py.

Imports torch only when called, so that importing this module never needs torch.
"""

from __future__ import annotations

from mha_core.packing import to_packed

WEIGHTS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


def torch_mha(params: dict, d_model: int, h: int, dtype=None):
    """nn.MultiheadAttention(d_model, h) in eval mode with params' weights in its packed layout
    (mha_core.packing.to_packed); params holds w_q ... b_o (other keys are ignored)."""
    import torch

    mha = torch.nn.MultiheadAttention(d_model, h, bias=True, batch_first=True, dtype=dtype)
    packed = to_packed(**{name: params[name] for name in WEIGHTS})
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(packed["in_proj_weight"]))
        mha.in_proj_bias.copy_(torch.from_numpy(packed["in_proj_bias"]))
        mha.out_proj.weight.copy_(torch.from_numpy(packed["out_proj_weight"]))
        mha.out_proj.bias.copy_(torch.from_numpy(packed["out_proj_bias"]))
    return mha.eval()


def decoder_loss(config, p: dict, tokens, scored):
    """The tiny decoder's loss (mha_core/train.py) in torch ops, from its description: embeddings,
    causal scaled_dot_product_attention per head, ReLU MLP, torch's layer_norm, the unembedding and
    cross_entropy over the scored predictions. p: name -> torch tensor; tokens, scored: torch tensors."""
    import torch
    from torch.nn import functional

    batch, length = tokens.shape
    x = p["embed"][tokens] + p["position"][:length]

    def norm(x, name):
        if not config.layer_norm:
            return x
        return functional.layer_norm(x, (config.d_model,), p[f"{name}.gain"], p[f"{name}.bias"], eps=1e-5)

    for layer in range(config.layers):
        inp = norm(x, f"{layer}.norm_attn")
        q, k, v = (torch.einsum("btd,hde->bhte", inp, p[f"{layer}.{name}"]) for name in ("w_q", "w_k", "w_v"))
        heads = functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=config.scale)
        x = x + heads.transpose(1, 2).reshape(batch, length, -1) @ p[f"{layer}.w_o"]
        if config.mlp:
            inp = norm(x, f"{layer}.norm_mlp")
            x = x + torch.relu(inp @ p[f"{layer}.w_in"] + p[f"{layer}.b_in"]) @ p[f"{layer}.w_out"] \
                + p[f"{layer}.b_out"]
    logits = norm(x, "final") @ p["unembed"]
    each = functional.cross_entropy(logits[:, :-1].reshape(-1, config.vocab), tokens[:, 1:].reshape(-1),
                                    reduction="none")
    mask = scored.reshape(-1).to(logits.dtype)
    return (each * mask).sum() / mask.sum()


def torch_decoder_loss(config, params: dict, tokens, scored):
    """(loss, gradients) of decoder_loss on NumPy params, by torch autograd in float64."""
    import torch

    p = {name: torch.tensor(value, requires_grad=True) for name, value in params.items()}
    loss = decoder_loss(config, p, torch.tensor(tokens), torch.tensor(scored))
    loss.backward()
    return float(loss.detach()), {name: tensor.grad.numpy() for name, tensor in p.items()}
