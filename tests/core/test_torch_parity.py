"""Parity with PyTorch: every intermediate of ``multi_head_attention`` against torch, in float64.

The reference is written with torch ops only: explicit matmul/softmax for q, k, v, scores and weights,
``torch.nn.functional.scaled_dot_product_attention`` for the head outputs, and a separate test maps
our per-head arrays onto ``torch.nn.MultiheadAttention``'s packed parameters.

torch is optional on a laptop (the module is skipped), but CI installs torch==2.13.0 and sets
REQUIRE_TORCH=1, and then a missing torch is an error, never a silent skip.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from mha_core import multi_head_attention, random_weights
from mha_core.packing import from_packed, to_packed
from tests.torch_reference import torch_mha

SKIP_REASON = "torch not installed; CI installs torch==2.13.0 and sets REQUIRE_TORCH=1"

if os.environ.get("REQUIRE_TORCH") == "1":
    try:
        import torch
    except ImportError as error:  # fail loudly: CI must never skip the parity tests
        raise RuntimeError(f"REQUIRE_TORCH=1 but torch cannot be imported: {error}") from error
else:
    torch = pytest.importorskip("torch", reason=SKIP_REASON)

F = torch.nn.functional

# float64 on both sides: the two implementations do the same arithmetic in a different order
# (different BLAS, different summation order), which moves results by ~1e-15 relative.  1e-10
# leaves a wide margin for that, while a wrong head order, transpose, scale or mask convention
# gives errors of order 1e-2 .. 1.
RTOL = 1e-10
ATOL = 1e-10

# (n_q, n_k, d_model, h, d_k, d_v); n_k is None for self-attention.
SHAPES = {
    "self-h1": (6, None, 8, 1, 8, 8),
    "self-h2-dk!=dv": (7, None, 16, 2, 4, 6),
    "self-h4": (9, None, 16, 4, 4, 4),
    "self-h8-narrow": (16, None, 32, 8, 3, 5),
    "cross-h3-nq<nk": (5, 11, 12, 3, 5, 3),
    "cross-h4-nq>nk": (10, 4, 8, 4, 2, 7),
}
MASKS = ["none", "causal", "random"]
SCALES = ["sqrt", "none", 0.3]


def _case(rng: np.random.Generator, shape, bias: bool):
    """Random inputs and per-head weights (float64) for one shape."""
    n_q, n_k, d_model, h, d_k, d_v = shape
    x = rng.standard_normal((n_q, d_model))
    x_kv = None if n_k is None else rng.standard_normal((n_k, d_model))
    params = random_weights(rng, d_model, h, d_k, d_v)
    if bias:
        params.update(
            b_q=rng.standard_normal((h, d_k)),
            b_k=rng.standard_normal((h, d_k)),
            b_v=rng.standard_normal((h, d_v)),
            b_o=rng.standard_normal(d_model),
        )
    return x, x_kv, params


def _random_mask(rng: np.random.Generator, n_q: int, n_k: int) -> np.ndarray:
    """bool [n_q, n_k], True = may attend, with at least one allowed key in every row."""
    mask = rng.random((n_q, n_k)) < 0.5
    mask[np.arange(n_q), rng.integers(0, n_k, size=n_q)] = True
    return mask


def _multiplier(scale, d_k: int) -> float:
    return {"sqrt": 1.0 / np.sqrt(d_k), "none": 1.0}.get(scale, scale)


def _torch_reference(x, x_kv, params, mask, scale):
    """The same computation with torch ops; mask is a bool array (True = may attend) or None."""
    t = {name: torch.from_numpy(np.asarray(a)) for name, a in params.items()}
    tx = torch.from_numpy(x)
    tkv = tx if x_kv is None else torch.from_numpy(x_kv)
    h, _, d_k = t["w_q"].shape
    zeros = torch.zeros
    q = tx @ t["w_q"] + t.get("b_q", zeros(h, d_k, dtype=tx.dtype))[:, None, :]  # [h, n_q, d_k]
    k = tkv @ t["w_k"] + t.get("b_k", zeros(h, d_k, dtype=tx.dtype))[:, None, :]  # [h, n_k, d_k]
    d_v = t["w_v"].shape[-1]
    v = tkv @ t["w_v"] + t.get("b_v", zeros(h, d_v, dtype=tx.dtype))[:, None, :]  # [h, n_k, d_v]

    scores = q @ k.transpose(-2, -1)  # [h, n_q, n_k]
    multiplier = _multiplier(scale, d_k)
    scaled = scores * multiplier
    attn_mask = None if mask is None else torch.from_numpy(mask)
    if attn_mask is not None:
        scaled = scaled.masked_fill(~attn_mask, float("-inf"))
    weights = torch.softmax(scaled, dim=-1)  # a fully masked row is NaN here; callers skip it

    # SDPA's bool attn_mask has our convention (True = takes part) and its default scale is
    # 1/sqrt(q.size(-1)) = 1/sqrt(d_k), so "sqrt" is passed as scale=None to check that too.
    head_outputs = F.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, scale=None if scale == "sqrt" else multiplier
    )  # [h, n_q, d_v]
    concat = head_outputs.transpose(0, 1).reshape(x.shape[0], h * d_v)  # [n_q, h*d_v]
    output = concat @ t["w_o"]
    if "b_o" in t:
        output = output + t["b_o"]
    return {
        name: value.numpy()
        for name, value in dict(
            q=q, k=k, v=v, scores=scores, scaled=scaled, weights=weights,
            head_outputs=head_outputs, concat=concat, output=output,
        ).items()
    }


def _assert_fields_match(ours, ref, fields, rows=slice(None)):
    for field in fields:
        mine = getattr(ours, field)
        if field in ("scaled", "weights", "head_outputs"):  # [h, n_q, ...]: select query rows
            mine, theirs = mine[:, rows], ref[field][:, rows]
        elif field in ("concat", "output"):  # [n_q, ...]
            mine, theirs = mine[rows], ref[field][rows]
        else:
            theirs = ref[field]
        assert mine.shape == theirs.shape, field
        np.testing.assert_allclose(mine, theirs, rtol=RTOL, atol=ATOL, err_msg=field)


ALL_FIELDS = ("q", "k", "v", "scores", "scaled", "weights", "head_outputs", "concat", "output")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_matches_torch_ops(shape, mask_kind, bias, seed):
    rng = np.random.default_rng(seed)
    x, x_kv, params = _case(rng, shape, bias)
    n_q, n_k = x.shape[0], (x if x_kv is None else x_kv).shape[0]
    scale = SCALES[seed % len(SCALES)]
    if mask_kind == "none":
        mask_arg, mask = None, None
    elif mask_kind == "causal":  # top-left aligned, like torch's is_causal: key j <= query i
        mask_arg, mask = "causal", np.tril(np.ones((n_q, n_k), dtype=bool))
    else:
        mask_arg = mask = _random_mask(rng, n_q, n_k)

    ours = multi_head_attention(x, x_kv=x_kv, mask=mask_arg, scale=scale, **params)
    ref = _torch_reference(x, x_kv, params, mask, scale)

    assert ours.output.dtype == np.float64
    _assert_fields_match(ours, ref, ALL_FIELDS)
    np.testing.assert_allclose(ours.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("shape", [SHAPES["self-h2-dk!=dv"], SHAPES["cross-h3-nq<nk"]], ids=["self", "cross"])
def test_causal_matches_sdpa_is_causal(shape, seed):
    """Our "causal" string means what torch's is_causal=True means, for n_q == n_k and n_q != n_k."""
    rng = np.random.default_rng(seed)
    x, x_kv, params = _case(rng, shape, bias=True)
    ours = multi_head_attention(x, x_kv=x_kv, mask="causal", **params)
    q, k, v = (torch.tensor(a) for a in (ours.q, ours.k, ours.v))  # copies: ours are read-only
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    np.testing.assert_allclose(ours.head_outputs, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", [SHAPES["self-h4"], SHAPES["cross-h4-nq>nk"]], ids=["self", "cross"])
def test_fully_masked_row_gives_zero_weights(shape, seed):
    rng = np.random.default_rng(seed)
    x, x_kv, params = _case(rng, shape, bias=True)
    n_q, n_k = x.shape[0], (x if x_kv is None else x_kv).shape[0]
    mask = _random_mask(rng, n_q, n_k)
    blocked = int(rng.integers(0, n_q))
    mask[blocked] = False  # this query may attend to nothing

    ours = multi_head_attention(x, x_kv=x_kv, mask=mask, **params)
    ref = _torch_reference(x, x_kv, params, mask, "sqrt")

    # Our convention: a row with no allowed key has all-zero weights (not NaN) ...
    assert np.all(ours.weights[:, blocked] == 0.0)
    assert np.all(np.isneginf(ours.scaled[:, blocked]))
    assert np.all(ours.head_outputs[:, blocked] == 0.0)
    np.testing.assert_allclose(ours.output[blocked], params["b_o"], rtol=RTOL, atol=ATOL)
    # ... which is also what SDPA returns for such a row (plain torch.softmax would give NaN).
    np.testing.assert_allclose(ours.head_outputs, ref["head_outputs"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ours.output, ref["output"], rtol=RTOL, atol=ATOL)
    # Every other row matches torch field by field.
    others = np.arange(n_q) != blocked
    _assert_fields_match(ours, ref, ALL_FIELDS, rows=others)


def _to_torch_mha(params, d_model: int, h: int) -> torch.nn.MultiheadAttention:
    """torch.nn.MultiheadAttention holding our per-head weights in its packed layout.

    in_proj_weight is [3*d_model, d_model] = [W_Q; W_K; W_V] stacked, each block in torch's
    [out, in] layout, with head i in rows i*d_k:(i+1)*d_k of its block.  Our w_q[i] is
    [d_model(in), d_k(out)], so the block is w_q transposed per head and stacked head by head.
    out_proj.weight is [out, in] = w_o.T.  Our x_kv shares x's d_model, so kdim = vdim = embed_dim
    and torch uses the packed in_proj_weight (not separate q/k/v_proj_weight).
    """
    mha = torch_mha(params, d_model, h, dtype=torch.float64)  # the mapping under test: mha_core.packing
    assert mha._qkv_same_embed_dim and mha.in_proj_weight is not None
    return mha


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize(
    "n_q, n_k, d_model, h",
    [(6, None, 8, 1), (7, None, 12, 3), (9, None, 16, 4), (5, 8, 16, 8), (9, 4, 16, 2)],
    ids=["self-h1", "self-h3", "self-h4", "cross-h8", "cross-h2"],
)
def test_per_head_layout_maps_onto_nn_multihead_attention(n_q, n_k, d_model, h, mask_kind, seed):
    rng = np.random.default_rng(seed)
    d_head = d_model // h  # nn.MultiheadAttention requires d_k = d_v = embed_dim / num_heads
    x, x_kv, params = _case(rng, (n_q, n_k, d_model, h, d_head, d_head), bias=True)
    kv = x if x_kv is None else x_kv
    if mask_kind == "none":
        mask = None
    elif mask_kind == "causal":
        mask = np.tril(np.ones((n_q, kv.shape[0]), dtype=bool))
    else:
        mask = _random_mask(rng, n_q, kv.shape[0])

    ours = multi_head_attention(x, x_kv=x_kv, mask=mask, **params)

    mha = _to_torch_mha(params, d_model, h)
    tx, tkv = torch.from_numpy(x)[None], torch.from_numpy(kv)[None]  # batch of one
    # nn.MultiheadAttention's bool attn_mask has the OPPOSITE convention to ours and SDPA's:
    # True = blocked (may NOT attend).  So it gets the negation of our "may attend" mask.
    attn_mask = None if mask is None else torch.from_numpy(~mask)
    with torch.no_grad():
        out, attn = mha(
            tx, tkv, tkv, attn_mask=attn_mask, need_weights=True, average_attn_weights=False
        )
    assert tuple(attn.shape) == (1, h, n_q, kv.shape[0])
    np.testing.assert_allclose(ours.weights, attn[0].numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ours.output, out[0].numpy(), rtol=RTOL, atol=ATOL)


def test_wrong_mask_convention_would_be_caught():
    """Guard for the test above: passing our mask to nn.MultiheadAttention unnegated differs."""
    rng = np.random.default_rng(7)
    n, d_model, h = 6, 8, 2
    x, _, params = _case(rng, (n, None, d_model, h, d_model // h, d_model // h), bias=True)
    mask = ~np.eye(n, dtype=bool)  # every key but itself: no row is all-True or all-False
    ours = multi_head_attention(x, mask=mask, **params)
    mha = _to_torch_mha(params, d_model, h)
    with torch.no_grad():
        _, attn = mha(
            *(torch.from_numpy(x)[None],) * 3, attn_mask=torch.from_numpy(mask),
            need_weights=True, average_attn_weights=False,
        )
    assert torch.isfinite(attn).all()
    assert np.max(np.abs(ours.weights - attn[0].numpy())) > 1e-3


def test_from_packed_inverts_to_packed_and_reads_a_torch_module():
    rng = np.random.default_rng(3)
    mha = torch.nn.MultiheadAttention(12, 3, bias=True, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.copy_(torch.from_numpy(rng.normal(size=36)))
    state = {name: value.detach().numpy() for name, value in mha.named_parameters()}
    ours = from_packed(state["in_proj_weight"], state["in_proj_bias"], state["out_proj.weight"],
                       state["out_proj.bias"], n_heads=3)
    x = rng.normal(size=(5, 12))
    expected, _ = mha(torch.from_numpy(x)[None], torch.from_numpy(x)[None], torch.from_numpy(x)[None])
    result = multi_head_attention(x, **ours)
    np.testing.assert_allclose(result.output, expected[0].detach().numpy(), rtol=RTOL, atol=ATOL)
    again = to_packed(**ours)
    np.testing.assert_array_equal(again["in_proj_weight"], state["in_proj_weight"])
    np.testing.assert_array_equal(again["out_proj_weight"], state["out_proj.weight"])


@pytest.mark.parametrize("h, g", [(4, 2), (4, 1), (6, 3), (8, 2)])
@pytest.mark.parametrize("window", [None, 3], ids=["full", "window-3"])
def test_grouped_query_attention_matches_torch_enable_gqa(h, g, window):
    """Grouped-query attention against SDPA's own enable_gqa (torch repeats each key/value head for h/g
    query heads in a row), with the sliding window built in torch as a band of the causal mask."""
    from mha_core import Window

    rng = np.random.default_rng(h * 10 + g)
    n, d_model, d_k, d_v = 9, 12, 3, 4
    x = rng.standard_normal((n, d_model))
    params = random_weights(rng, d_model, h, d_k, d_v)
    params["w_k"], params["w_v"] = params["w_k"][:g], params["w_v"][:g]
    ours = multi_head_attention(x, **params, mask=None if window is None else Window(window))

    tx = torch.from_numpy(x)
    q = tx @ torch.from_numpy(params["w_q"])  # [h, n, d_k]
    k = tx @ torch.from_numpy(params["w_k"])  # [g, n, d_k]
    v = tx @ torch.from_numpy(params["w_v"])  # [g, n, d_v]
    band = None
    if window is not None:
        ones = torch.ones(n, n, dtype=torch.bool)
        band = torch.tril(ones) & torch.triu(ones, diagonal=-(window - 1))  # [n, n] True = may attend
    heads = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=band, enable_gqa=True)[0]
    output = heads.transpose(0, 1).reshape(n, h * d_v) @ torch.from_numpy(params["w_o"])
    np.testing.assert_allclose(ours.head_outputs, heads.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ours.output, output.numpy(), rtol=RTOL, atol=ATOL)
