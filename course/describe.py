"""What a chart shows, as facts a sentence can be written from: where each attention row looks,
which rows are flat, a matrix's largest and smallest cells, a series' highest and lowest bar.

Pure NumPy and no words: ``app/charts/chart_text.py`` turns these facts into the sentences a screen
reader reads and the tables shown on request. Masked cells are NaN and take no part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mha_core.analysis import FLAT_AT


@dataclass(frozen=True)
class Cell:
    """One cell of a matrix: its row, its column (0-based) and its value."""

    row: int
    col: int
    value: float


@dataclass(frozen=True)
class RowFocus:
    """Where one attention row looks: the key it weights most and how spread out it is."""

    row: int
    col: int  # the key with the largest weight (the first of equals)
    value: float  # that weight
    spread: float  # normalised entropy over the keys it may attend to: 0 one-hot, 1 uniform
    flat: bool  # spread >= FLAT_AT: the row says little about any one key


@dataclass(frozen=True)
class WeightsFacts:
    """One head's weights [n_q, n_k]: every row's focus, the most focused row, the flat rows."""

    rows: tuple[RowFocus, ...]  # rows with at least one key to attend to, in order

    @property
    def sharpest(self) -> RowFocus | None:
        """The row whose top weight is largest (the first of equals); None without rows."""
        return max(self.rows, key=lambda r: r.value, default=None)

    @property
    def flat(self) -> tuple[RowFocus, ...]:
        return tuple(r for r in self.rows if r.flat)


@dataclass(frozen=True)
class MatrixFacts:
    """A matrix's extremes over its finite cells; None for both when it has none."""

    shape: tuple[int, int]
    largest: Cell | None
    smallest: Cell | None
    masked: int  # cells that are not finite (masked, NaN)


@dataclass(frozen=True)
class SeriesFacts:
    """A series of bars or points: its highest and lowest (positions 0-based), over finite values."""

    size: int
    highest: Cell | None  # row 0, col = position
    lowest: Cell | None


def matrix_facts(values) -> MatrixFacts:  # [n_rows, n_cols] -> facts
    """The largest and smallest finite cell (the first in reading order of equals)."""
    values = np.asarray(values, dtype=float)  # [n_rows, n_cols]
    if values.ndim != 2:
        raise ValueError(f"a matrix has two axes, got shape {values.shape}")
    finite = np.isfinite(values)  # [n_rows, n_cols]
    masked = int(values.size - finite.sum())
    if not finite.any():
        return MatrixFacts(values.shape, None, None, masked)
    high = np.where(finite, values, -np.inf).argmax()  # flat index, first of equals
    low = np.where(finite, values, np.inf).argmin()
    return MatrixFacts(values.shape, _cell(values, high), _cell(values, low), masked)


def _cell(values: np.ndarray, flat_index: int) -> Cell:
    row, col = np.unravel_index(int(flat_index), values.shape)
    return Cell(int(row), int(col), float(values[row, col]))


def weights_facts(weights, flat_at: float = FLAT_AT) -> WeightsFacts:  # [n_q, n_k] -> facts
    """Each row's top key and spread. A row's spread counts only its finite (unmasked) keys, so a
    causal row that may see two keys and weights them 0.5/0.5 is flat; a row with one key to see
    has spread 0 and is never flat; a row with none is left out."""
    weights = np.asarray(weights, dtype=float)  # [n_q, n_k]
    if weights.ndim != 2:
        raise ValueError(f"weights have two axes (queries, keys), got shape {weights.shape}")
    finite = np.isfinite(weights)  # [n_q, n_k]
    seen = finite.sum(axis=1)  # [n_q]: keys each row may attend to
    kept = np.where(finite, np.clip(weights, 0.0, None), 0.0)  # [n_q, n_k]
    terms = np.where(kept > 0, kept * np.log(np.where(kept > 0, kept, 1.0)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(seen > 1, -terms.sum(axis=1) / np.log(np.maximum(seen, 2)), 0.0)  # [n_q]
    spread = np.clip(spread, 0.0, 1.0)  # rounding can overshoot 1 by an ulp
    cols = np.where(finite, weights, -np.inf).argmax(axis=1)  # [n_q], first of equals
    rows = [RowFocus(int(i), int(cols[i]), float(weights[i, cols[i]]), float(spread[i]),
                     bool(seen[i] > 1 and spread[i] >= flat_at)) for i in np.flatnonzero(seen)]
    return WeightsFacts(tuple(rows))


def looks_like_weights(values, tolerance: float = 1e-4) -> bool:  # [..., n_k] -> bool
    """Every row's finite entries are in [0, 1] and sum to 1 (within tolerance): attention weights."""
    values = np.asarray(values, dtype=float)
    if values.ndim < 2 or values.size == 0:
        return False
    finite = np.isfinite(values)
    rows = finite.any(axis=-1)  # [...]: rows with something to sum
    if not rows.any():
        return False
    kept = np.where(finite, values, 0.0)
    if kept.min() < -tolerance or kept.max() > 1 + tolerance:
        return False
    return bool(np.all(np.abs(kept.sum(axis=-1)[rows] - 1.0) <= tolerance))


def series_facts(values) -> SeriesFacts:  # [n] -> facts
    """The highest and lowest finite value of a series (the first of equals)."""
    values = np.asarray(values, dtype=float).reshape(1, -1)  # [1, n]
    facts = matrix_facts(values)
    return SeriesFacts(values.shape[1], facts.largest, facts.smallest)


def looks_like_distances(values, tolerance: float = 1e-9) -> bool:  # [n, n] -> bool
    """Square, symmetric, zero on the diagonal, nowhere negative, at least two rows: distances."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != values.shape[1] or values.shape[0] < 2:
        return False
    if not np.all(np.isfinite(values)) or values.min() < -tolerance:
        return False
    symmetric = np.allclose(values, values.T, atol=tolerance)
    return bool(symmetric and np.all(np.abs(np.diag(values)) <= tolerance))


def pair_facts(distances) -> tuple[Cell, Cell]:  # [n, n] -> (furthest pair, closest pair), row < col
    """The furthest and the closest two different items (the first pair of equals, row < col)."""
    distances = np.asarray(distances, dtype=float)  # [n, n]
    rows, cols = np.triu_indices(distances.shape[0], k=1)  # [pairs]
    pairs = distances[rows, cols]  # [pairs]
    far, near = int(pairs.argmax()), int(pairs.argmin())
    return (Cell(int(rows[far]), int(cols[far]), float(pairs[far])),
            Cell(int(rows[near]), int(cols[near]), float(pairs[near])))
