"""A Setup as JSON (a saved file) and as a link (the page's address): both ways, strictly.

Both codecs read the one table of input arrays (``mha_core.setup.ARRAYS``) and the one set of
limits (``LIMITS``). Reading refuses anything oversized before it allocates arrays: the text
length first, then every list's length while walking it. Every refusal is a ConfigError (a
ValueError) whose message names the field at fault and says what was found there.

A link is ``?example=<key>`` while the page shows an example unchanged; otherwise ``?s=<state>``,
the setup as JSON with every array that equals the example's left out and every array that
differs in a few cells written as those cells, deflated and base64url-encoded, behind a version
prefix ("1."). A state too long for a link (LIMITS.link_chars) falls back to the example.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from dataclasses import replace
from itertools import chain

import numpy as np

from mha_core.setup import (
    ARRAYS,
    LIMITS,
    Limits,
    Scaling,
    Setup,
    Sizes,
    attention_size_problem,
    size_problem,
    token_problem,
)
from mha_core.validation import Window

FORMAT = "mha-visualizer/setup-v2"
FORMAT_V1 = "mha-visualizer/setup-v1"  # "scale": "sqrt" | "none" | a multiplier; still read
LINK_VERSION = "1."
LEGACY_LINK = ("example", "tokens", "d_model", "heads", "seed")  # links from before the state link
OLD_LINK_NAMES = {"preset": "example"}  # a parameter's name in older links -> its name now


def current_names(params: dict) -> dict:
    """A link's parameters under today's names (``?preset=`` is ``?example=``); a parameter given
    under both names keeps today's."""
    renamed = {OLD_LINK_NAMES.get(name, name): value for name, value in params.items()
               if name not in OLD_LINK_NAMES or OLD_LINK_NAMES[name] not in params}
    return renamed


class ConfigError(ValueError):
    """A setup that cannot be loaded; the message says which field and why."""


# ---------------------------------------------------------------------------------------------
# Setup <-> document (a plain dict of lists), shared by both codecs


def setup_to_document(setup: Setup) -> dict:
    out: dict = {"format": FORMAT, "tokens": list(setup.tokens), "scaling": _scaling_out(setup.scaling)}
    if setup.kv_tokens is not None:
        out["kv_tokens"] = list(setup.kv_tokens)
    for name, value in setup.arrays().items():
        out[name] = np.asarray(value, dtype=float).tolist()
    if setup.mask_kind == "custom":
        out["mask"] = np.asarray(setup.mask, dtype=bool).tolist()
    elif setup.mask_kind == "window":
        out["mask"] = {"window": setup.mask.size}
    elif setup.mask is not None:
        out["mask"] = setup.mask
    if setup.origin:
        out["origin"] = setup.origin
    return out


def setup_from_document(data, limits: Limits = LIMITS) -> Setup:
    """Check a parsed document and build its Setup; ConfigError names the field at fault.

    Every limit is checked on the lists' lengths before any array is built, and nothing is run:
    an oversized setup costs its refusal, not its computation."""
    return _checked_setup(data, limits, filled={})


def _checked_setup(data, limits: Limits, filled: dict[str, np.ndarray]) -> Setup:
    """setup_from_document, with some arrays given already built (a link's from its example)."""
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a JSON object, got {_kind(data)}")
    if data.get("format") not in (FORMAT, FORMAT_V1):
        raise ConfigError(f"format must be {FORMAT!r}, got {_short(data.get('format'))}")
    known = {"format", "tokens", "kv_tokens", "mask", "scaling", "scale", "origin", "extra",
             *(spec.name for spec in ARRAYS)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ConfigError(f"unknown field {_short(unknown[0])}: this app reads only {sorted(known)}")
    tokens = _tokens("tokens", data.get("tokens"))
    kv_tokens = None if data.get("kv_tokens") is None else _tokens("kv_tokens", data["kv_tokens"])
    given = {spec.name: filled.get(spec.name, data.get(spec.name)) for spec in ARRAYS}
    entries = {name: _entries(name, value, limits) for name, value in given.items()  # checked, not built
               if value is not None and not isinstance(value, np.ndarray)}
    for name in ("x", "w_q", "w_k", "w_v", "w_o"):
        if given[name] is None:
            raise ConfigError(f"{name} is missing")
    shapes = {name: shape for name, (shape, _) in entries.items()} | {
        name: value.shape for name, value in filled.items()}
    sizes = _sizes(tokens, kv_tokens, shapes, limits)  # every limit, before any array is built
    arrays = {name: np.array(leaves, dtype=float).reshape(shape) for name, (shape, leaves) in entries.items()}
    arrays |= filled
    if sizes.bias:  # a file may give some biases only: the others are zero
        arrays = {**{s.name: np.zeros(sizes.shape(s.name)) for s in ARRAYS if s.when == "bias"}, **arrays}
    for spec in sizes.present():
        if arrays[spec.name].shape != spec.shape(sizes):
            raise ConfigError(f"{spec.name} must have shape {list(spec.shape(sizes))} for these tokens and "
                              f"sizes, got {list(arrays[spec.name].shape)}")
    if "scale" in data and "scaling" in data:
        raise ConfigError("give either scaling or the older scale, not both")
    scaling = _scale_v1(data) if "scale" in data else _scaling_in(data)
    # Not run here: within LIMITS (max_abs, d_model, d_head) no score, weight or output can overflow,
    # and the page runs it once, after these checks.
    return Setup(tokens=tokens, kv_tokens=kv_tokens, mask=_mask(data.get("mask"), sizes),
                 scaling=scaling, origin=_origin(data.get("origin")), **arrays)


def _sizes(tokens, kv_tokens, shapes: dict[str, tuple[int, ...]], limits: Limits) -> Sizes:
    """The setup's sizes from its arrays' shapes, refused if over any limit (nothing is built yet)."""
    x, w_q, w_v = shapes["x"], shapes["w_q"], shapes["w_v"]
    if len(x) != 2 or len(w_q) != 3 or len(w_v) != 3:
        raise ConfigError(f"x must be 2-D [tokens, d_model] and w_q, w_v 3-D [h, d_model, d]; got "
                          f"{list(x)}, {list(w_q)}, {list(w_v)}")
    if ("x_kv" in shapes) != (kv_tokens is not None):
        raise ConfigError("x_kv and kv_tokens come together (cross-attention) or not at all")
    h, d_model, d_k = w_q
    g = shapes["w_k"][0] if len(shapes.get("w_k", ())) == 3 else h  # grouped-query: g key/value heads
    sizes = Sizes(n_q=len(tokens), n_k=len(kv_tokens or tokens), d_model=d_model, n_heads=h, d_k=d_k,
                  d_v=w_v[2], cross=kv_tokens is not None,
                  bias=any(s.name in shapes for s in ARRAYS if s.when == "bias"), kv_heads=g if g != h else 0)
    problem = size_problem(sizes, limits)
    if problem:
        raise ConfigError(problem)
    return sizes


def _kind(value) -> str:
    return {bool: "true/false", str: "a string", type(None): "null", list: "a list", dict: "an object",
            int: "a number", float: "a number", _Huge: "a number"}.get(type(value), type(value).__name__)


def _short(value) -> str:
    """A value from a document as a message shows it: JSON-like, cut at 60 characters (a number too
    long to read is described, never shown as a Python object)."""
    return repr(value)[:60]


def _tokens(name: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ConfigError(f"{name} must be a list of strings, got {_kind(value)}")
    problem = token_problem(value, name)
    if problem:
        raise ConfigError(problem)
    return tuple(value)


def _shape_of(name: str, value, limits: Limits) -> tuple[int, ...]:
    """The shape of a nested list (by its first elements) within the limits, without building it."""
    if not isinstance(value, list):
        raise ConfigError(f"{name} must be a (nested) list of numbers, got {_kind(value)}")
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
    most = limits.n_heads * limits.d_model * limits.d_head
    if math.prod(shape) > most:
        raise ConfigError(f"{name} has {math.prod(shape):,} entries; the limit is {most:,} (heads × d_model "
                          "× d_head at their limits)")
    return tuple(shape)


def _leaves(value, shape: tuple[int, ...]) -> list | None:
    """Every entry of a nested list of exactly ``shape`` (never more), or None if it is not that."""
    level = [value]
    for size in shape:
        if not all(isinstance(row, list) and len(row) == size for row in level):
            return None
        level = list(chain.from_iterable(level))
    return level


def _entries(name: str, value, limits: Limits) -> tuple[tuple[int, ...], list]:
    """A nested list's shape and its entries in order, each checked to be a number within limits
    (no array is built: that waits until the sizes are known to be within the limits)."""
    shape = _shape_of(name, value, limits)
    leaves = _leaves(value, shape)
    if leaves is None:
        raise ConfigError(f"{name} is not rectangular (expected shape {list(shape)})")
    for index, entry in enumerate(leaves):
        if type(entry) not in (int, float):  # bool, str, null, a list, a huge integer
            what = f"a whole number of {len(entry.digits)} digits" if isinstance(entry, _Huge) else (
                f"{_kind(entry)} {_short(entry)}" if isinstance(entry, str) else _kind(entry))
            raise ConfigError(f"{name} holds {what} at entry {index + 1}; it must hold numbers within "
                              f"±{limits.max_abs:,.0f}")
        if not math.isfinite(entry):
            raise ConfigError(f"{name} holds a number too large to represent ({entry}) at entry {index + 1}")
        if not abs(entry) <= limits.max_abs:
            raise ConfigError(f"{name} holds {entry:g} at entry {index + 1}, outside ±{limits.max_abs:,.0f}")
    return shape, leaves


def _mask(value, sizes: Sizes):
    if value is None or value in ("none", "causal"):
        return None if value == "none" else value
    if isinstance(value, dict) and list(value) == ["window"]:
        size = value["window"]
        if type(size) is not int or not 1 <= size <= LIMITS.tokens:
            raise ConfigError(f"mask's window must be a whole number of tokens from 1 to {LIMITS.tokens}, "
                              f"got {_short(size)}")
        return Window(size)
    if not isinstance(value, list):
        raise ConfigError(f"mask must be null, 'causal', {{\"window\": n}} or a grid of true/false, "
                          f"got {_short(value)}")
    rows = [row for row in value if isinstance(row, list)]
    if len(rows) != len(value) or [len(r) for r in rows] != [sizes.n_k] * sizes.n_q or not all(
            type(v) is bool for v in chain.from_iterable(rows)):
        raise ConfigError(f"mask must be a {sizes.n_q} × {sizes.n_k} grid of true/false (queries × keys)")
    return np.array(value, dtype=bool)


def _scaling_out(scaling: Scaling):
    return scaling.kind if scaling.value is None else {scaling.kind: scaling.value}


def _scaling_in(data: dict) -> Scaling:
    value = data.get("scaling", "sqrt")
    kind, number = (value, None) if isinstance(value, str) else (
        next(iter(value.items())) if isinstance(value, dict) and len(value) == 1 else (None, None))
    try:
        return Scaling(kind, number)
    except ValueError as error:
        raise ConfigError(f"scaling: {error}") from None


def _scale_v1(data: dict) -> Scaling:
    """The first format's "scale": 'sqrt', 'none' or the multiplier itself."""
    value = data.get("scale", "sqrt")
    try:
        return Scaling(value) if isinstance(value, str) else Scaling("multiply", value)
    except ValueError:
        low, high = LIMITS.multiplier
        raise ConfigError(f"scale must be 'sqrt', 'none' or a multiplier from {low:g} to {high:g}, "
                          f"got {_short(value)}") from None


def _origin(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 40:
        raise ConfigError(f"origin must be a short string, got {_kind(value)}")
    return value


# ---------------------------------------------------------------------------------------------
# JSON text


class _Huge:
    """An integer too long to read as a number (Python refuses over 4300 digits)."""

    def __init__(self, digits: str):
        self.digits = digits

    def __repr__(self) -> str:  # what a message shows for it (never "<…_Huge object at 0x…>")
        return f"<a whole number of {len(self.digits)} digits>"


def _parse_int(text: str):
    return _Huge(text) if len(text) > 20 else int(text)


def _refuse_constant(name: str):
    raise ConfigError(f"{name} is not a number this app accepts (NaN and Infinity are refused)")


def setup_to_json(setup: Setup) -> str:
    """The setup as JSON text that setup_from_json reads back exactly."""
    return json.dumps(setup_to_document(setup))


def setup_from_json(text: str | bytes, limits: Limits = LIMITS) -> Setup:
    """Parse and check a saved setup; raise ConfigError naming the field at fault."""
    if len(text) > limits.file_bytes:
        raise ConfigError(f"the file is {len(text):,} bytes; the limit is {limits.file_bytes:,}")
    return setup_from_document(_parse(text), limits)


def _parse(text: str | bytes):
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_int=_parse_int)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise ConfigError(f"not valid JSON: {error}") from None


def save_problem(setup: Setup | None) -> str | None:
    """Why the page cannot be saved as a file now (None: it can): a file must load back."""
    if setup is None:
        return "fix the inputs marked ⚠️ first: a file must load back"
    if setup.number_count() > LIMITS.save_numbers:
        return (f"{setup.number_count():,} numbers is too many to save as a file (limit "
                f"{LIMITS.save_numbers:,}); the page's link opens the example instead")
    if _json_bytes_at_most(setup) > LIMITS.file_bytes:  # rare (a large custom mask): measure it
        size = len(setup_to_json(setup))
        if size > LIMITS.file_bytes:
            return (f"the file would be {size:,} bytes, over the limit of {LIMITS.file_bytes:,} (a large "
                    "custom mask takes about 6 bytes a cell)")
    return None


def _json_bytes_at_most(setup: Setup) -> int:
    """An upper bound of len(setup_to_json(setup)), cheap: a float's repr is at most 24 characters,
    a mask cell's "false, " 7, and a token's character at most 6 ("\\uXXXX")."""
    mask_cells = setup.mask.size if setup.mask_kind == "custom" else 0
    tokens = chain(setup.tokens, setup.kv_tokens or ())
    return 1_000 + 26 * setup.number_count() + 7 * mask_cells + sum(6 * len(t) + 4 for t in tokens)


# ---------------------------------------------------------------------------------------------
# Links


def setup_to_link(setup: Setup, base: Setup | None) -> tuple[dict[str, str], bool]:
    """Query parameters that reopen ``setup``, and whether they hold all of it.

    base: the example the setup came from (its arrays are left out where equal), or None.
    """
    if base is not None and setup.same_inputs(base):
        return {"example": base.origin}, True
    deltas = {name: _delta(value, getattr(base, name) if base is not None else None)
              for name, value in setup.arrays().items()}
    numbers = sum(value.size if deltas[name] is None else len(deltas[name].get("cells", ()))
                  if isinstance(deltas[name], dict) else 0 for name, value in setup.arrays().items())
    if numbers > LIMITS.link_chars:  # every number costs at least a character: too big, unwritten
        return ({"example": base.origin} if base is not None else {}), False
    document = setup_to_document(setup)
    if base is not None:
        document["base"] = base.origin
        document.update({name: delta for name, delta in deltas.items() if delta is not None})
    text = json.dumps(document, separators=(",", ":"))
    if len(text) > LIMITS.file_bytes:  # e.g. a 1024 × 1024 custom mask: it would pack small, but not load
        return ({"example": base.origin} if base is not None else {}), False
    state = LINK_VERSION + base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")
    if len(state) <= LIMITS.link_chars:
        return {"s": state}, True
    return ({"example": base.origin} if base is not None else {}), False


def _delta(value: np.ndarray, base: np.ndarray | None):
    """What to write for an array given the example's: "=" if equal, a few cells, or None (all)."""
    if base is None or base.shape != value.shape:
        return None
    changed = np.flatnonzero(value.ravel() != base.ravel())
    if changed.size == 0:
        return "="
    if changed.size * 3 < value.size:
        return {"cells": [[int(i), float(value.flat[i])] for i in changed]}
    return None


def setup_from_link(state: str, examples: dict[str, Setup]) -> Setup:
    """The Setup a state parameter ``s`` describes; ConfigError says what was refused."""
    if not isinstance(state, str) or not state.startswith(LINK_VERSION):
        raise ConfigError("the link's state is not one this version of the app wrote (it should start "
                          f"with {LINK_VERSION!r})")
    if len(state) > LIMITS.link_chars * 2:  # twice what the page writes: room for other writers' links
        raise ConfigError(f"the link's state is {len(state):,} characters; the limit is "
                          f"{LIMITS.link_chars * 2:,}")
    body = state[len(LINK_VERSION):]
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj()
        text = inflater.decompress(packed, LIMITS.file_bytes)  # a deflate bomb stops here
        if inflater.unconsumed_tail:
            raise ConfigError(f"the link's state unpacks to more than {LIMITS.file_bytes:,} bytes, the limit "
                              "of a saved setup")
        if not inflater.eof:
            raise ConfigError("the link's state is truncated (it may have been cut)")
    except (binascii.Error, ValueError, zlib.error) as error:
        if isinstance(error, ConfigError):
            raise
        raise ConfigError("the link's state is damaged (it may have been cut or changed)") from None
    document = _parse(text)
    filled = _from_base(document, examples) if isinstance(document, dict) and "base" in document else {}
    return _checked_setup(document, LIMITS, filled)


def _from_base(document: dict, examples: dict[str, Setup]) -> dict[str, np.ndarray]:
    """The arrays a link left out ("=" or a few cells), from the example it names (removes "base").

    Built from the example's arrays directly: a large example's arrays never become lists."""
    base = examples.get(document.pop("base")) if isinstance(document.get("base"), str) else None
    if base is None:
        raise ConfigError("the link names an example this app does not have")
    filled = {}
    for spec in ARRAYS:
        value = document.get(spec.name)
        original = getattr(base, spec.name)
        if value == "=" or isinstance(value, dict):
            if original is None:
                raise ConfigError(f"{spec.name}: the link refers to the example's, which has none")
            filled[spec.name] = _apply_cells(spec.name, value, original)
    return filled


def _apply_cells(name: str, value, original: np.ndarray) -> np.ndarray:
    """The example's array with the link's changed cells ([position, number] pairs) written in."""
    out = np.array(original, dtype=float)  # a copy: the example stays as it is
    if value == "=":
        return out
    cells = value.get("cells")
    if set(value) != {"cells"} or not isinstance(cells, list):
        raise ConfigError(f"{name}: the link's changed cells are malformed (expected "
                          '{"cells": [[position, number], ...]})')
    if len(cells) > out.size:
        raise ConfigError(f"{name}: the link changes {len(cells):,} cells; {name} has only {out.size:,}")
    flat = out.reshape(-1)  # [size] view
    for number, cell in enumerate(cells, start=1):
        position = _cell_position(name, number, cell, out.size)  # first: it checks that cell is a pair
        flat[position] = _cell_value(name, number, cell)
    return out


def _cell_position(name: str, number: int, cell, size: int) -> int:
    if not (isinstance(cell, list) and len(cell) == 2):
        raise ConfigError(f"{name}: the link's changed cell {number} is not a [position, number] pair "
                          f"(got {_kind(cell)})")
    position = cell[0]
    if type(position) is not int or not 0 <= position < size:
        found = (f"a whole number of {len(position.digits)} digits" if isinstance(position, _Huge)
                 else _short(position) if type(position) in (int, float) else _kind(position))
        raise ConfigError(f"{name}: the link's changed cell {number} names position {found}; {name} has "
                          f"positions 0 to {size - 1:,}")
    return position


def _cell_value(name: str, number: int, cell: list) -> float:
    value = cell[1]
    if type(value) not in (int, float) or not math.isfinite(value) or not abs(value) <= LIMITS.max_abs:
        found = (f"a whole number of {len(value.digits)} digits" if isinstance(value, _Huge)
                 else _short(value) if type(value) in (int, float) else _kind(value))
        raise ConfigError(f"{name}: the link's changed cell {number} holds {found}; it must be a number "
                          f"within ±{LIMITS.max_abs:,.0f}")
    return float(value)


def _link_ranges(limits: Limits) -> dict[str, tuple[int, int]]:
    return {"d_model": (1, limits.d_model), "heads": (1, limits.n_heads), "seed": (0, 1_000_000)}


def settings_from_link(params: dict, limits: Limits = LIMITS,
                       examples: tuple[str, ...] = ()) -> tuple[dict, list[str]]:
    """Read the links of before the state link: ?example=...&tokens=...&d_model=...&heads=...&seed=...

    Returns the accepted settings and a message for each refused one; sizes over the limits
    are refused here, before anything is allocated for them. Parameters that are not these
    are left to the caller.
    """
    settings, refused = {}, []
    for name, raw in params.items():
        if name not in LEGACY_LINK:
            continue
        value = raw[-1] if isinstance(raw, list) and raw else raw
        if not isinstance(value, str) or len(value) > limits.token_text:
            refused.append(f"link parameter {name!r}: too long or not text")
        elif name == "example":
            if value in examples:
                settings["example"] = value
            else:
                refused.append(f"link parameter example={value[:40]!r}: no such example")
        elif name == "tokens":
            problem = token_problem(value.split(), "link parameter tokens")
            if problem:
                refused.append(problem)
            else:
                settings["tokens"] = value.split()
        else:
            low, high = _link_ranges(limits)[name]
            number = int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else None
            if number is None or not low <= number <= high:
                refused.append(f"link parameter {name}={value[:20]!r}: must be a whole number from "
                               f"{low} to {high}")
            else:
                settings[name] = number
    if "tokens" in settings and "heads" in settings:  # together they may ask for too much attention
        n = len(settings["tokens"])
        problem = attention_size_problem(settings["heads"], n, n, limits)
        if problem:
            del settings["tokens"], settings["heads"]
            refused.append(f"link parameters tokens and heads: {problem}")
    return settings, refused


def limits_with(**changes) -> Limits:
    """LIMITS with some values changed (tests use a larger file limit, for example)."""
    return replace(LIMITS, **changes)


__all__ = ["FORMAT", "ConfigError", "limits_with", "save_problem", "settings_from_link",
           "setup_from_document", "setup_from_json", "setup_from_link", "setup_to_document", "setup_to_json",
           "setup_to_link"]
