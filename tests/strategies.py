"""Hypothesis strategies shared by the tests: random Setups of every kind."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from mha_core import Scaling, Setup, Sizes, Window

SCALINGS = [Scaling("sqrt"), Scaling("none"), Scaling("sqrt_of", 64), Scaling("multiply", 0.3),
            Scaling("multiply", 999.0)]
WORDS = ["the", "cat", "<b>", "a*b", "$x$", "猫"]  # repeats on purpose: labels must stay unambiguous


@st.composite
def random_setups(draw, *, max_tokens: int = 4, max_d_model: int = 5, max_heads: int = 3, max_width: int = 3,
                  spreads=(2.0,), words: bool = False) -> Setup:
    """Masks (none, causal, a sliding window, custom rows that may block every key), cross-attention,
    biases, grouped key/value heads (any g dividing h), every scaling; entries normal times a spread
    drawn from ``spreads`` (0: every row uniform, ties
    everywhere); tokens t0, t1, ... or, with ``words``, repeated words and markup."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    cross, bias = draw(st.booleans()), draw(st.booleans())
    n_q, n_k = draw(st.integers(1, max_tokens)), draw(st.integers(1, max_tokens))
    n_heads = draw(st.integers(1, max_heads))
    kv_heads = draw(st.sampled_from([g for g in range(1, n_heads + 1) if n_heads % g == 0]))
    sizes = Sizes(n_q=n_q, n_k=n_k if cross else n_q, d_model=draw(st.integers(1, max_d_model)),
                  n_heads=n_heads, d_k=draw(st.integers(1, max_width)), d_v=draw(st.integers(1, 3)),
                  cross=cross, bias=bias, kv_heads=kv_heads if kv_heads < n_heads else 0)
    mask_kind = draw(st.sampled_from(["none", "causal", "window", "custom"]))
    mask = {"none": None, "causal": "causal", "window": Window(draw(st.integers(1, 3)))}.get(mask_kind)
    if mask_kind == "custom":
        mask = rng.random((sizes.n_q, sizes.n_k)) < 0.6
    scaling = draw(st.sampled_from(SCALINGS))
    spread = draw(st.sampled_from(spreads))
    arrays = {spec.name: rng.normal(size=spec.shape(sizes)) * spread for spec in sizes.present()}
    if words:
        drawn = draw(st.lists(st.sampled_from(WORDS), min_size=n_q + n_k, max_size=n_q + n_k))
        tokens, kv_tokens = tuple(drawn[:n_q]), tuple(drawn[n_q:])
    else:
        tokens, kv_tokens = tuple(f"t{i}" for i in range(n_q)), tuple(f"k{i}" for i in range(n_k))
    return Setup(tokens=tokens, kv_tokens=kv_tokens if cross else None, mask=mask, scaling=scaling, **arrays)
