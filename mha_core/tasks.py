"""What the tiny decoder (mha_core/train.py) learns: tasks that make batches of token sequences, each
with the positions whose next token can be known (the solution a trained model should find is said
in each generator's docstring, and to the reader in course/learn.py).

A batch is ``tokens [B, T]`` (ints below the vocabulary's size) and ``scored [B, T - 1]``: True where
predicting ``tokens[:, t + 1]`` from ``tokens[:, :t + 1]`` is possible at all; the loss is taken
there only. Every generator is a pure function of its random generator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Batch:
    tokens: np.ndarray  # [B, T] int
    scored: np.ndarray  # [B, T - 1] bool: the prediction from position t of token t + 1 counts


@dataclass(frozen=True)
class Task:
    name: str
    make: Callable[[int, int, int, np.random.Generator], Batch]  # (batch, seq_len, vocab, rng)
    min_vocab: int
    min_seq_len: int


def _segments(batch: int, length: int, vocab: int, rng: np.random.Generator) -> np.ndarray:
    """[batch, length] tokens, no token twice in a row (a repeat is then found by its content only)."""
    return np.stack([rng.permutation(vocab)[:length] for _ in range(batch)])


def induction(batch: int, seq_len: int, vocab: int, rng: np.random.Generator) -> Batch:
    """Random tokens, then a random segment S of length m, then S again: ``… S S``. Predicting the second
    S needs a previous-token head in one layer and an induction head in the next (find the earlier
    occurrence of the current token, copy the token after it). m varies from sequence to sequence, so
    no fixed positional offset solves it."""
    tokens = rng.integers(0, vocab, size=(batch, seq_len))
    scored = np.zeros((batch, seq_len - 1), dtype=bool)
    for row in range(batch):
        m = int(rng.integers(max(2, seq_len // 4), seq_len // 2 + 1))
        start = seq_len - 2 * m
        segment = _segments(1, m, vocab, rng)[0]
        tokens[row, start:start + m] = segment
        tokens[row, start + m:] = segment
        scored[row, start + m:] = True  # predictions of the repeat's tokens 2..m (from positions start+m..)
    return Batch(tokens, scored)


def _separated(batch: int, seq_len: int, vocab: int, rng: np.random.Generator,
               answer: Callable[[np.ndarray], np.ndarray]) -> Batch:
    """n random tokens, the separator (the vocabulary's last token), then answer(those n tokens)."""
    n = (seq_len - 1) // 2
    given = rng.integers(0, vocab - 1, size=(batch, n))
    separator = np.full((batch, 1), vocab - 1)
    tokens = np.concatenate([given, separator, answer(given)], axis=1)
    scored = np.zeros((batch, 2 * n), dtype=bool)
    scored[:, n:] = True  # from the separator on, every next token is known
    return Batch(tokens, scored)


def copy(batch, seq_len, vocab, rng) -> Batch:
    """Each answer position attends to the given token n + 1 places back."""
    return _separated(batch, seq_len, vocab, rng, lambda given: given)


def reverse(batch, seq_len, vocab, rng) -> Batch:
    """Answer position j attends to the given token mirrored around the separator."""
    return _separated(batch, seq_len, vocab, rng, lambda given: given[:, ::-1])


def sort(batch, seq_len, vocab, rng) -> Batch:
    """Each answer position attends to the smallest given token not yet written (as llm-viz's sorter)."""
    return _separated(batch, seq_len, vocab, rng, lambda given: np.sort(given, axis=1))


def nearest_key(batch: int, seq_len: int, vocab: int, rng: np.random.Generator) -> Batch:
    """Pairs ``k₁ v₁ k₂ v₂ … kₙ vₙ`` (keys from the vocabulary's first half, values from its second), then
    one of the keys again: the next token is its value. A head of layer 1 writes each key into its value's
position; a head of the last layer matches the query to it and copies the value."""
    n = (seq_len - 2) // 2
    half = vocab // 2
    keys = _segments(batch, n, half, rng)
    values = rng.integers(half, vocab, size=(batch, n))
    asked = rng.integers(0, n, size=batch)
    rows = np.arange(batch)
    pairs = np.stack([keys, values], axis=2).reshape(batch, 2 * n)
    tokens = np.concatenate([pairs, keys[rows, asked][:, None], values[rows, asked][:, None]], axis=1)
    scored = np.zeros((batch, 2 * n + 1), dtype=bool)
    scored[:, -1] = True
    return Batch(tokens, scored)


TASKS: dict[str, Task] = {task.name: task for task in (
    Task("induction", induction, min_vocab=8, min_seq_len=8),
    Task("copy", copy, min_vocab=3, min_seq_len=5),
    Task("reverse", reverse, min_vocab=3, min_seq_len=5),
    Task("sort", sort, min_vocab=3, min_seq_len=5),
    Task("nearest_key", nearest_key, min_vocab=4, min_seq_len=6),
)}
