"""Argument checks for mha_core: every failure is a ValueError naming the argument."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

FLOAT_DTYPES = (np.float32, np.float64)


def as_float_array(name: str, value, dtype=None) -> np.ndarray:
    """value as a finite float32/float64 array (float64 unless value or dtype says float32)."""
    if value is None:
        raise ValueError(f"{name} is required, got None")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:  # ragged lists and the like
        raise ValueError(f"{name} must be a numeric array: {error}") from None
    kind = array.dtype.kind  # b bool, i/u integers, f floats, c complex; anything else is not numeric
    if kind == "c":
        raise ValueError(f"{name} must be real, got dtype {array.dtype}")
    if kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}")
    target = dtype if dtype is not None else (
        array.dtype if array.dtype in FLOAT_DTYPES else np.float64
    )
    source = array
    if array.dtype != target:  # a narrowing cast can overflow to inf: told apart from a real inf below
        with np.errstate(over="ignore"):
            array = array.astype(target)
    if not np.isfinite(array).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        if np.isfinite(source[bad]):  # finite as given, so the cast overflowed
            target = np.dtype(target)
            raise ValueError(
                f"{name} holds {source[bad]!s} at index {bad}, outside {target.name}'s range "
                f"(±{np.finfo(target).max:.2g})"
            )
        raise ValueError(f"{name} must be finite, found {array[bad]} at index {bad}")
    return array


def check_max_bytes(max_bytes) -> int | None:
    """None (no limit) or a byte count >= 0; numpy integers are accepted, bools are not."""
    if max_bytes is None or (max_bytes.__class__ is int and max_bytes >= 0):  # the common cases, fast
        return max_bytes
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral):
        raise ValueError(f"max_bytes must be None or a whole number of bytes, got {max_bytes!r}")
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0 (or None for no limit), got {max_bytes!r}")
    return int(max_bytes)


def check_matrix(name: str, value, dtype=None, d_model: int | None = None) -> np.ndarray:
    """A finite [n, d_model] matrix with n >= 1 and d_model >= 1."""
    array = as_float_array(name, value, dtype)
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(
            f"{name} must be a non-empty 2-D array [n, d_model], got shape {list(array.shape)}"
        )
    if d_model is not None and array.shape[1] != d_model:
        raise ValueError(
            f"{name} must have d_model={d_model} columns like x, got shape {list(array.shape)}"
        )
    return array


def check_projection(
    name: str, value, d_model: int, dtype, h: int | None = None, d: int | None = None,
    d_name: str = "", h_name: str = "h={h} heads like w_q",
) -> np.ndarray:
    """A finite [h, d_model, d] per-head projection consistent with the others."""
    array = as_float_array(name, value, dtype)
    if array.ndim != 3 or 0 in array.shape:
        raise ValueError(
            f"{name} must be a 3-D array [h, d_model, d] with no empty axis, "
            f"got shape {list(array.shape)}"
        )
    if array.shape[1] != d_model:
        raise ValueError(
            f"{name} must have shape [h, d_model={d_model}, d] to match x, got {list(array.shape)}"
        )
    if h is not None and array.shape[0] != h:
        raise ValueError(f"{name} must have {h_name.format(h=h)}, got shape {list(array.shape)}")
    if d is not None and array.shape[2] != d:
        raise ValueError(f"{name} must have last axis {d_name}={d}, got shape {list(array.shape)}")
    return array


def check_bias(name: str, value, shape: tuple[int, ...], dtype) -> np.ndarray | None:
    """None, or a finite array of exactly ``shape``."""
    if value is None:
        return None
    array = as_float_array(name, value, dtype)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {list(shape)}, got {list(array.shape)}")
    return array


@dataclass(frozen=True)
class Window:
    """A sliding window of ``size`` tokens: query i sees keys i - size + 1 to i (causal, as Mistral's)."""

    size: int

    def __post_init__(self):
        if isinstance(self.size, bool) or not isinstance(self.size, numbers.Integral) or self.size < 1:
            raise ValueError(f"a sliding window needs a whole number of tokens >= 1, got {self.size!r}")

    def allowed(self, n_q: int, n_k: int) -> np.ndarray:  # -> [n_q, n_k] bool
        offset = np.arange(n_q)[:, None] - np.arange(n_k)[None, :]  # [n_q, n_k] i - j
        return (offset >= 0) & (offset < self.size)


def resolve_mask(mask, n_q: int, n_k: int) -> np.ndarray | None:  # -> [n_q, n_k] bool or None
    """None (all allowed), "causal" (key j <= query i), a Window, or a bool [n_q, n_k] array, True =
    may attend."""
    if mask is None:
        return None
    if isinstance(mask, Window):
        return mask.allowed(n_q, n_k)
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"mask must be None, 'causal' or a bool array, got the string {mask!r}")
        return np.tril(np.ones((n_q, n_k), dtype=bool))
    array = np.asarray(mask)
    if array.dtype != bool:
        raise ValueError(
            f"mask must be a bool array (True = may attend), got dtype {array.dtype}"
        )
    if array.shape != (n_q, n_k):
        raise ValueError(
            f"mask must have shape [n_q, n_k] = [{n_q}, {n_k}], got {list(array.shape)}"
        )
    return array.copy()


def resolve_scale(scale, d_k: int, dtype=np.float64) -> float:
    """The multiplier for the scores: "sqrt" -> 1/sqrt(d_k), "none" -> 1, or a positive float
    that stays finite and non-zero in the compute dtype."""
    if isinstance(scale, str):
        if scale == "sqrt":
            return 1.0 / float(np.sqrt(d_k))
        if scale == "none":
            return 1.0
        raise ValueError(f"scale must be 'sqrt', 'none' or a positive number, got {scale!r}")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise ValueError(f"scale must be 'sqrt', 'none' or a positive number, got {scale!r}")
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    info = np.finfo(dtype)
    if not info.tiny <= scale <= info.max:
        raise ValueError(f"scale={scale!r} is outside what {np.dtype(dtype).name} can hold "
                         f"(from {info.tiny:.3g} to {info.max:.3g})")
    return float(scale)
