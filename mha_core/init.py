"""Seeded initialisers for embeddings and projections: random, identity/select, zeros."""

from __future__ import annotations

import numpy as np

FILLS = ("random", "identity", "zeros")


def random_matrix(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal entries with std 1/sqrt(fan_in), fan_in = shape[-2] (1 for a vector)."""
    fan_in = shape[-2] if len(shape) >= 2 else 1
    return rng.standard_normal(shape) / np.sqrt(fan_in)


def select_matrix(shape: tuple[int, ...]) -> np.ndarray:
    """0/1 "select" matrices like the chapters use.

    [a, b]: ones on the diagonal (wrapping when b > a), so a square one is the identity.
    [h, a, b]: head i picks input dimensions i*b ... i*b+b-1 (mod a), so the heads
    together tile the input, as "head 1 keeps the first two dims" does in chapter 000.
    """
    if len(shape) == 2:
        a, b = shape
        out = np.zeros(shape)
        out[np.arange(b) % a, np.arange(b)] = 1.0
        return out
    if len(shape) == 3:
        h, a, b = shape
        out = np.zeros(shape)
        for head in range(h):
            out[head, (head * b + np.arange(b)) % a, np.arange(b)] = 1.0
        return out
    if len(shape) == 1:
        return np.zeros(shape)
    raise ValueError(f"select_matrix takes a 1-, 2- or 3-D shape, got {shape}")


def fill(kind: str, shape: tuple[int, ...], rng: np.random.Generator | None = None) -> np.ndarray:
    """A new array of ``shape`` filled by ``kind``: "random", "identity" (select) or "zeros"."""
    if kind == "random":
        return random_matrix(rng if rng is not None else np.random.default_rng(0), shape)
    if kind == "identity":
        return select_matrix(shape)
    if kind == "zeros":
        return np.zeros(shape)
    raise ValueError(f"fill kind must be one of {FILLS}, got {kind!r}")


def random_weights(
    rng: np.random.Generator, d_model: int, n_heads: int, d_k: int, d_v: int
) -> dict[str, np.ndarray]:
    """w_q, w_k [h, d_model, d_k]; w_v [h, d_model, d_v]; w_o [h*d_v, d_model], all random."""
    return {
        "w_q": random_matrix(rng, (n_heads, d_model, d_k)),
        "w_k": random_matrix(rng, (n_heads, d_model, d_k)),
        "w_v": random_matrix(rng, (n_heads, d_model, d_v)),
        "w_o": random_matrix(rng, (n_heads * d_v, d_model)),
    }
