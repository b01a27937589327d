"""A whole attention setup as JSON: save it, share it, load it back (pure Python + NumPy).

The loader refuses anything oversized before it allocates arrays: the text length is capped
first, then every declared size is checked against the limits while walking the lists.
Every refusal is a ConfigError (a ValueError) whose message names the field at fault.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

FORMAT = "mha-visualizer/setup-v1"
ARRAYS = ("x", "x_kv", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
OPTIONAL = ("x_kv", "b_q", "b_k", "b_v", "b_o")


class ConfigError(ValueError):
    """A setup that cannot be loaded; the message says which field and why."""


@dataclass(frozen=True)
class SetupLimits:
    max_bytes: int = 2_000_000  # of JSON text, checked before parsing
    tokens: int = 24
    d_model: int = 512
    n_heads: int = 16
    d_head: int = 128
    token_chars: int = 40


@dataclass(frozen=True)
class Setup:
    """Tokens, every matrix and the options: everything needed to redraw a page."""

    tokens: tuple[str, ...]
    x: np.ndarray  # [n_q, d_model]
    w_q: np.ndarray  # [h, d_model, d_k]
    w_k: np.ndarray  # [h, d_model, d_k]
    w_v: np.ndarray  # [h, d_model, d_v]
    w_o: np.ndarray  # [h*d_v, d_model]
    kv_tokens: tuple[str, ...] | None = None
    x_kv: np.ndarray | None = None  # [n_k, d_model]
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None
    mask: str | np.ndarray | None = None  # None | "causal" | bool [n_q, n_k]
    scale: str | float = "sqrt"
    extra: dict = field(default_factory=dict)  # e.g. the preset it came from


def setup_to_json(setup: Setup) -> str:
    """The setup as JSON text that setup_from_json reads back exactly."""
    out: dict = {"format": FORMAT, "tokens": list(setup.tokens), "scale": setup.scale}
    if setup.kv_tokens is not None:
        out["kv_tokens"] = list(setup.kv_tokens)
    for name in ARRAYS:
        value = getattr(setup, name)
        if value is not None:
            out[name] = np.asarray(value, dtype=float).tolist()
    if isinstance(setup.mask, np.ndarray):
        out["mask"] = setup.mask.astype(bool).tolist()
    elif setup.mask is not None:
        out["mask"] = setup.mask
    out.update({"extra": setup.extra} if setup.extra else {})
    return json.dumps(out)


def setup_from_json(text: str | bytes, limits: SetupLimits = SetupLimits()) -> Setup:
    """Parse and check a setup; raise ConfigError naming the field at fault."""
    if len(text) > limits.max_bytes:
        raise ConfigError(f"the file is {len(text):,} bytes; the limit is {limits.max_bytes:,}")
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise ConfigError(f"not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise ConfigError(f"format must be {FORMAT!r}, got {data.get('format')!r}")
    tokens = _tokens("tokens", data.get("tokens"), limits)
    kv_tokens = None if data.get("kv_tokens") is None else _tokens("kv_tokens", data["kv_tokens"], limits)
    arrays = {name: _array(name, data.get(name), limits) for name in ARRAYS
              if data.get(name) is not None or name not in OPTIONAL}
    setup = Setup(tokens=tokens, kv_tokens=kv_tokens, mask=_mask(data.get("mask"), limits),
                  scale=_scale(data.get("scale", "sqrt")), extra=_extra(data.get("extra")), **arrays)
    _check_consistent(setup, limits)
    return setup


def _refuse_constant(name: str):
    raise ConfigError(f"{name} is not a number this app accepts (NaN and Infinity are refused)")


def _tokens(name: str, value, limits: SetupLimits) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{name} must be a non-empty list of strings")
    if len(value) > limits.tokens:
        raise ConfigError(f"{name} has {len(value)} tokens; the limit is {limits.tokens}")
    for token in value:
        if not isinstance(token, str) or not token.strip() or len(token) > limits.token_chars:
            raise ConfigError(f"{name} must hold non-blank strings of at most {limits.token_chars} "
                              f"characters, got {str(token)[:50]!r}")
        if any(c.isspace() for c in token):
            raise ConfigError(f"{name}: a token cannot contain spaces, got {token!r}")
    return tuple(value)


def _shape_of(name: str, value, limits: SetupLimits) -> tuple[int, ...]:
    """The shape of a nested list, checked to be rectangular and within the limits, without
    building an array."""
    shape: list[int] = []
    level = value
    while isinstance(level, list):
        if not level:
            raise ConfigError(f"{name} has an empty axis")
        shape.append(len(level))
        if len(shape) > 3:
            raise ConfigError(f"{name} has more than 3 axes")
        level = level[0]
    cap = max(limits.tokens, limits.d_model, limits.n_heads * limits.d_head)
    for axis, size in enumerate(shape):
        if size > cap:
            raise ConfigError(f"{name} axis {axis} has {size} entries; the limit is {cap}")
    if math.prod(shape) > limits.n_heads * limits.d_model * limits.d_head:
        raise ConfigError(f"{name} has {math.prod(shape):,} entries, too many")
    return tuple(shape)


def _array(name: str, value, limits: SetupLimits) -> np.ndarray:
    if value is None:
        raise ConfigError(f"{name} is missing")
    if not isinstance(value, list):
        raise ConfigError(f"{name} must be a (nested) list of numbers, got {type(value).__name__}")
    shape = _shape_of(name, value, limits)
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a rectangular (nested) list of numbers") from None
    if array.shape != shape:
        raise ConfigError(f"{name} is not rectangular (expected shape {list(shape)})")
    if not np.isfinite(array).all():
        raise ConfigError(f"{name} holds a number too large to represent (e.g. 1e309)")
    return array


def _mask(value, limits: SetupLimits):
    if value is None or value == "causal":
        return value
    if not isinstance(value, list):
        raise ConfigError(f"mask must be null, 'causal' or a grid of true/false, got {value!r}"[:200])
    shape = _shape_of("mask", value, limits)
    if len(shape) != 2:
        raise ConfigError(f"mask must be a 2-D grid of true/false, got {len(shape)} axes")
    if not all(isinstance(row, list) and len(row) == shape[1] and all(isinstance(v, bool) for v in row)
               for row in value):
        raise ConfigError("mask must be a rectangular grid of true/false")
    return np.array(value, dtype=bool)


def _scale(value):
    if value in ("sqrt", "none"):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e6:
        raise ConfigError(f"scale must be 'sqrt', 'none' or a number in (0, 1e6), got {value!r}"[:200])
    return float(value)


def _extra(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float)) for v in value.values()):
        raise ConfigError("extra must be an object of plain values")
    return value


def _check_consistent(setup: Setup, limits: SetupLimits) -> None:
    """Shapes must fit together and stay within the limits (the core checks the rest)."""
    x, w_q, w_v = setup.x, setup.w_q, setup.w_v
    if x.ndim != 2 or x.shape[0] != len(setup.tokens):
        raise ConfigError(f"x must have one row per token ({len(setup.tokens)}), got shape {list(x.shape)}")
    if x.shape[1] > limits.d_model:
        raise ConfigError(f"d_model = {x.shape[1]} is over the limit {limits.d_model}")
    if w_q.ndim != 3 or w_q.shape[0] > limits.n_heads or max(w_q.shape[2], w_v.shape[-1]) > limits.d_head:
        raise ConfigError(f"w_q has shape {list(w_q.shape)}: at most {limits.n_heads} heads of width "
                          f"{limits.d_head}")
    if (setup.x_kv is None) != (setup.kv_tokens is None):
        raise ConfigError("x_kv and kv_tokens come together (cross-attention) or not at all")
    if setup.x_kv is not None and setup.x_kv.shape[0] != len(setup.kv_tokens):
        raise ConfigError(f"x_kv must have one row per kv token ({len(setup.kv_tokens)}), "
                          f"got shape {list(setup.x_kv.shape)}")
    from mha_core.attention import multi_head_attention  # the core's own shape checks

    try:
        multi_head_attention(setup.x, setup.w_q, setup.w_k, setup.w_v, setup.w_o, x_kv=setup.x_kv,
                             mask=setup.mask, scale=setup.scale, b_q=setup.b_q, b_k=setup.b_k,
                             b_v=setup.b_v, b_o=setup.b_o)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _link_ranges(limits: SetupLimits) -> dict[str, tuple[int, int]]:
    return {"d_model": (1, limits.d_model), "heads": (1, limits.n_heads), "seed": (0, 1_000_000)}


def settings_from_link(params: dict, limits: SetupLimits = SetupLimits(),
                       presets: tuple[str, ...] = ()) -> tuple[dict, list[str]]:
    """Read ?preset=...&tokens=...&d_model=...&heads=...&seed=... from a shared link.

    Returns the accepted settings and a message for each refused one; sizes over the limits
    are refused here, before anything is allocated for them.
    """
    settings, refused = {}, []
    for name, raw in params.items():
        value = raw[-1] if isinstance(raw, list) and raw else raw
        if not isinstance(value, str) or len(value) > 1000:
            refused.append(f"link parameter {name!r}: too long or not text")
        elif name == "preset":
            if value in presets:
                settings["preset"] = value
            else:
                refused.append(f"link parameter preset={value[:40]!r}: no such example")
        elif name == "tokens":
            tokens = value.split()
            if not tokens or len(tokens) > limits.tokens:
                refused.append(f"link parameter tokens: {len(tokens)} tokens, allowed 1 to {limits.tokens}")
            else:
                settings["tokens"] = tokens
        elif name in _link_ranges(limits):
            low, high = _link_ranges(limits)[name]
            number = int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else None
            if number is None or not low <= number <= high:
                refused.append(f"link parameter {name}={value[:20]!r}: must be a whole number from "
                               f"{low} to {high}")
            else:
                settings[name] = number
        else:
            refused.append(f"link parameter {name[:40]!r} is not one this app reads")
    return settings, refused
