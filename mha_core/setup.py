"""One attention setup: tokens, every input array, the mask and the scaling (NumPy only).

``ARRAYS`` declares each input array once: its name, its label, its shape formula, whether
it is edited one head at a time, and when it is present. Shapes, the page's editors, the JSON
and link codecs and the tests all derive from that table, so adding an input is a new row
there, a field on ``Setup`` and, if it is new to the core, an argument of the call in ``run``.

``LIMITS`` is the one declaration of the sizes every route (the page, a file, a link) accepts.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

import numpy as np

from mha_core.attention import DEFAULT_MAX_BYTES, MHAResult, attention_bytes, multi_head_attention
from mha_core.typed_number import read_cell
from mha_core.validation import Window


@dataclass(frozen=True)
class Limits:
    """What every route into a Setup accepts; a classroom needs far less, and the page stays quick."""

    tokens: int = 1024  # per side; cells keep their numbers up to 12, editors up to `editable`
    token_chars: int = 40  # a longer "token" is a paste gone wrong, and costs chart bytes per label
    d_model: int = 768  # chapter 001's examples H and I use 512; BERT-base 768
    n_heads: int = 16
    d_head: int = 128  # d_k and d_v
    max_abs: float = 1e6  # |entry|: in float64 no score, weight or output can overflow below this
    editable: int = 32  # a grid wider or taller than this is shown read-only (use "fill a matrix")
    file_bytes: int = 1_000_000  # a saved setup; the same as the page's upload limit
    save_numbers: int = 40_000  # about 0.8 MB of JSON, inside file_bytes
    link_chars: int = 8_000  # a state link longer than this holds only the example (browsers cut ~8 kB)
    multiplier: tuple[float, float] = (1e-3, 1e3)  # a scaling typed as "multiply the scores by s"
    sqrt_of: tuple[int, int] = (1, 1_000_000)  # a scaling typed as "divide by √d" with d given
    attention_cells: int = 12 * 1024 * 1024  # h × n_q × n_k: 12 heads over 1024 tokens, ~150 MB in float32
    float32_from: int = 1 << 20  # h × n_q × n_k from which a Setup runs in float32 (half the memory)

    @property
    def token_text(self) -> int:
        """Characters of a whole token box: every token at its longest, one space between."""
        return self.tokens * (self.token_chars + 1)


LIMITS = Limits()


@dataclass(frozen=True)
class Sizes:
    """Every dimension of a setup; the shape formulas of ``ARRAYS`` read these."""

    n_q: int
    n_k: int
    d_model: int
    n_heads: int
    d_k: int
    d_v: int
    cross: bool = False  # keys and values from their own tokens (x_kv)
    bias: bool = False  # b_Q, b_K, b_V, b_O present
    kv_heads: int = 0  # key/value heads g dividing n_heads (grouped-query attention); 0: one per head

    @property
    def groups(self) -> int:
        """Key/value heads: n_heads for standard multi-head attention, 1 for multi-query attention."""
        return self.kv_heads or self.n_heads

    def shape(self, name: str) -> tuple[int, ...]:
        return SPECS[name].shape(self)

    def present(self) -> tuple[ArraySpec, ...]:
        return tuple(spec for spec in ARRAYS if spec.present(self))


@dataclass(frozen=True)
class ArraySpec:
    """One input array: declared once, read by shapes, editors, codecs and tests."""

    name: str  # the core's argument name
    label: str  # what the page calls it
    shape: Callable[[Sizes], tuple[int, ...]]
    per_head: bool  # edited one head at a time (axis 0 is the head)
    when: str  # "always", "cross" or "bias"

    def present(self, sizes: Sizes) -> bool:
        return self.when == "always" or (self.when == "cross" and sizes.cross) or (
            self.when == "bias" and sizes.bias)


ARRAYS = (
    ArraySpec("x", "X", lambda s: (s.n_q, s.d_model), False, "always"),
    ArraySpec("x_kv", "X_kv", lambda s: (s.n_k, s.d_model), False, "cross"),
    ArraySpec("w_q", "W_Q", lambda s: (s.n_heads, s.d_model, s.d_k), True, "always"),
    ArraySpec("w_k", "W_K", lambda s: (s.groups, s.d_model, s.d_k), True, "always"),
    ArraySpec("w_v", "W_V", lambda s: (s.groups, s.d_model, s.d_v), True, "always"),
    ArraySpec("w_o", "W_O", lambda s: (s.n_heads * s.d_v, s.d_model), False, "always"),
    ArraySpec("b_q", "b_Q", lambda s: (s.n_heads, s.d_k), True, "bias"),
    ArraySpec("b_k", "b_K", lambda s: (s.groups, s.d_k), True, "bias"),
    ArraySpec("b_v", "b_V", lambda s: (s.groups, s.d_v), True, "bias"),
    ArraySpec("b_o", "b_O", lambda s: (s.d_model,), False, "bias"),
)
SPECS = {spec.name: spec for spec in ARRAYS}
MASK_KINDS = ("none", "causal", "window", "custom")


@dataclass(frozen=True)
class Scaling:
    """What multiplies the scores before the softmax.

    "sqrt": 1/√d_k (the standard); "none": 1; "sqrt_of": 1/√value for a d named by the text
    (example F divides by √64 on a one-column toy); "multiply": the scores times value.
    """

    kind: str = "sqrt"
    value: float | None = None

    def __post_init__(self):
        low, high = (LIMITS.sqrt_of if self.kind == "sqrt_of" else LIMITS.multiplier)
        if self.kind in ("sqrt", "none"):
            if self.value is not None:
                raise ValueError(f"scaling {self.kind!r} takes no value, got {self.value!r}")
        elif self.kind in ("sqrt_of", "multiply"):
            if isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not (
                    low <= self.value <= high):
                raise ValueError(f"scaling {self.kind!r} needs a value from {low:g} to {high:g}, "
                                 f"got {self.value!r}")
            if self.kind == "sqrt_of" and float(self.value) != int(self.value):
                raise ValueError(f"scaling 'sqrt_of' needs a whole number d, got {self.value!r}")
        else:
            raise ValueError(f"scaling kind must be 'sqrt', 'none', 'sqrt_of' or 'multiply', "
                             f"got {self.kind!r}")

    def core_argument(self) -> str | float:
        """The core's ``scale`` argument."""
        if self.kind in ("sqrt", "none"):
            return self.kind
        return 1.0 / math.sqrt(self.value) if self.kind == "sqrt_of" else float(self.value)

    def multiplier(self, d_k: int) -> float:
        return {"sqrt": 1.0 / math.sqrt(d_k), "none": 1.0}.get(self.kind) or float(self.core_argument())

    def latex(self, d_k: int) -> str:
        """The scaled score as the page's formula writes it, with the numbers in use."""
        if self.kind == "sqrt":
            return rf"\frac{{Q_i K_i^{{\top}}}}{{\sqrt{{d_k}}}} = \frac{{Q_i K_i^{{\top}}}}{{\sqrt{{{d_k}}}}}"
        if self.kind == "sqrt_of":
            return rf"\frac{{Q_i K_i^{{\top}}}}{{\sqrt{{{int(self.value)}}}}}"
        if self.kind == "none":
            return r"Q_i K_i^{\top}"
        return rf"{self.value:g}\; Q_i K_i^{{\top}}"

    def describe(self, d_k: int) -> str:
        """One line for captions: what is applied and its value."""
        times = f"× {self.multiplier(d_k):.4g}"
        if self.kind == "sqrt":
            return f"divided by √d_k = √{d_k} ({times})"
        if self.kind == "sqrt_of":
            return f"divided by √{int(self.value)} ({times})"
        return "not scaled (× 1)" if self.kind == "none" else f"multiplied by {self.value:g}"


@dataclass(frozen=True, kw_only=True)
class Setup:
    """Tokens, every input array and the options: everything needed to redraw a page.

    origin says where it came from: an example key, "file", "link", or "" for a setup built on
    the page. It is not part of what the setup computes (see ``same_inputs``).
    """

    tokens: tuple[str, ...]
    x: np.ndarray  # [n_q, d_model]
    w_q: np.ndarray  # [h, d_model, d_k]
    w_k: np.ndarray  # [g, d_model, d_k]  g key/value heads dividing h (g = h: standard)
    w_v: np.ndarray  # [g, d_model, d_v]
    w_o: np.ndarray  # [h*d_v, d_model]
    kv_tokens: tuple[str, ...] | None = None  # cross-attention: the key/value side's tokens
    x_kv: np.ndarray | None = None  # [n_k, d_model]
    b_q: np.ndarray | None = None  # [h, d_k]
    b_k: np.ndarray | None = None  # [g, d_k]
    b_v: np.ndarray | None = None  # [g, d_v]
    b_o: np.ndarray | None = None  # [d_model]
    mask: str | Window | np.ndarray | None = None  # None | "causal" | Window | bool [n_q, n_k] (True: attend)
    scaling: Scaling = field(default_factory=Scaling)
    origin: str = ""

    @property
    def cross(self) -> bool:
        return self.x_kv is not None

    @property
    def key_tokens(self) -> tuple[str, ...]:
        return self.kv_tokens if self.kv_tokens is not None else self.tokens

    @property
    def sizes(self) -> Sizes:
        h, d_model, d_k = self.w_q.shape
        g = self.w_k.shape[0]
        return Sizes(n_q=len(self.tokens), n_k=len(self.key_tokens), d_model=d_model, n_heads=h,
                     d_k=d_k, d_v=self.w_v.shape[2], cross=self.cross, bias=self.b_q is not None,
                     kv_heads=g if g < h else 0)

    @property
    def mask_kind(self) -> str:
        if isinstance(self.mask, Window):
            return "window"
        return "custom" if isinstance(self.mask, np.ndarray) else (self.mask or "none")

    def arrays(self) -> dict[str, np.ndarray]:
        """Every input array present, by name, in the table's order."""
        present = ((spec.name, getattr(self, spec.name)) for spec in ARRAYS)
        return {name: value for name, value in present if value is not None}

    def run(self, max_bytes: int | None = DEFAULT_MAX_BYTES) -> MHAResult:
        """The core on these inputs; max_bytes as multi_head_attention's (None: no limit).

        Long sequences (h × n_q × n_k at least LIMITS.float32_from) run in float32: their grids are
        drawn as pictures, and float64 would double the largest arrays of a session."""
        arrays = self.arrays()
        sizes = self.sizes
        if run_itemsize(sizes) == 4:
            arrays = {name: np.asarray(a, dtype=np.float32) for name, a in arrays.items()}
        return multi_head_attention(mask=self.mask, scale=self.scaling.core_argument(), max_bytes=max_bytes,
                                    **arrays)

    def run_bytes(self) -> int:
        """The most bytes run() allocates, from the shapes alone (nothing is computed): see run_bytes."""
        return run_bytes(self.sizes, masked=self.mask is not None)

    def same_inputs(self, other: Setup) -> bool:
        """Everything that changes a result is equal (tokens, arrays, mask, scaling)."""
        if (self.tokens, self.kv_tokens, self.scaling, self.mask_kind) != (
                other.tokens, other.kv_tokens, other.scaling, other.mask_kind):
            return False
        mine, theirs = self.arrays(), other.arrays()
        if mine.keys() != theirs.keys() or not all(_equal(mine[k], theirs[k]) for k in mine):
            return False
        if self.mask_kind == "window":
            return self.mask == other.mask
        return self.mask_kind != "custom" or _equal(self.mask, other.mask)

    def with_origin(self, origin: str) -> Setup:
        return replace(self, origin=origin)

    def number_count(self) -> int:
        return sum(a.size for a in self.arrays().values())


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b))


def setup_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Setup))


# Characters that hide or reorder text around them: zero-width, BOM, bidirectional controls
# (U+202E turns "cat" into "tac"), and every other format or control character.
INVISIBLE_CATEGORIES = ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")


def invisible(character: str) -> bool:
    """A character that hides or reorders the text around it (INVISIBLE_CATEGORIES)."""
    return unicodedata.category(character) in INVISIBLE_CATEGORIES


def without_invisible(text: str) -> str:
    """text with every invisible character removed (what token_problem refuses)."""
    return "".join(c for c in text if not invisible(c))


def run_itemsize(sizes: Sizes, limits: Limits = LIMITS) -> int:
    """Bytes per number of a run at these sizes: float32 from limits.float32_from cells, else float64."""
    return 4 if sizes.n_heads * sizes.n_q * sizes.n_k >= limits.float32_from else 8


def input_numbers(sizes: Sizes) -> int:
    """Numbers in every input array present at these sizes."""
    return sum(math.prod(spec.shape(sizes)) for spec in sizes.present())


def run_bytes(sizes: Sizes, masked: bool = False, limits: Limits = LIMITS) -> int:
    """The most bytes Setup.run allocates at these sizes (a server admits a run by it before computing):
    the core's call (attention_bytes: its arrays and largest temporary) and, in float32, the inputs'
    copies. 12 heads over 1,024 tokens, d_model 768: about 176 MiB (the result alone is 159 MiB)."""
    itemsize = run_itemsize(sizes, limits)
    core = attention_bytes(sizes.n_q, sizes.n_k, sizes.n_heads, sizes.d_k, sizes.d_v, sizes.d_model, itemsize,
                           masked=masked, kv_heads=sizes.groups)
    return core + (input_numbers(sizes) * itemsize if itemsize == 4 else 0)


def attention_size_problem(n_heads: int, n_q: int, n_k: int, limits: Limits = LIMITS) -> str | None:
    """Why h × n_q × n_k attention cells are too many for one setup, or None."""
    cells = n_heads * n_q * n_k
    if cells <= limits.attention_cells:
        return None
    return (f"h × n_q × n_k = {n_heads} × {n_q} × {n_k} = {cells:,} attention cells is over the limit of "
            f"{limits.attention_cells:,} (12 heads over 1,024 tokens): use fewer heads or tokens.")


def size_problem(sizes: Sizes, limits: Limits = LIMITS) -> str | None:
    """Which limit these sizes break (the first one, in words), or None. Every route into a Setup
    (box, file, link, room) checks this before it builds an array or runs anything."""
    for name, size, limit in (("query tokens", sizes.n_q, limits.tokens),
                              ("key/value tokens", sizes.n_k, limits.tokens), ("d_model", sizes.d_model,
                              limits.d_model), ("heads", sizes.n_heads, limits.n_heads),
                              ("d_k", sizes.d_k, limits.d_head), ("d_v", sizes.d_v, limits.d_head)):
        if size > limit:
            return f"{name} = {size:,} is over the limit of {limit:,}"
    if sizes.n_heads % sizes.groups:
        return (f"key/value heads = {sizes.groups} must divide the {sizes.n_heads} query heads "
                "(grouped-query attention shares each key/value head among h/g query heads)")
    return attention_size_problem(sizes.n_heads, sizes.n_q, sizes.n_k, limits)


def token_problem(tokens: tuple[str, ...] | list[str], what: str = "tokens") -> str | None:
    """Why a token list cannot be used (naming the token), or None. Shared by box, file and link."""
    if not tokens:
        return f"{what}: type at least one token (words separated by spaces)."
    if len(tokens) > LIMITS.tokens:
        return (f"{what}: {len(tokens)} tokens is over the limit of {LIMITS.tokens}; the grids would be "
                "too large to read. Remove some tokens.")
    for position, token in enumerate(tokens, start=1):
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            return f"{what}: token {position} must be a word without spaces, got {str(token)[:40]!r}."
        if len(token) > LIMITS.token_chars:
            return (f"{what}: token {position} has {len(token):,} characters; the limit is "
                    f"{LIMITS.token_chars}.")
        hidden = next((c for c in token if invisible(c)), None)
        if hidden is not None:
            name = unicodedata.name(hidden, "a control character")
            return (f"{what}: token {position} holds U+{ord(hidden):04X} ({name}), an invisible character "
                    "that would hide or reverse the labels. Remove it.")
    return None


def parse_number(text: str) -> float:
    """A number typed by a person into a cell, within LIMITS (mha_core/typed_number.py's ``read_cell``:
    a decimal point or comma; "0x10", "inf", "1e308" and "1e-400" refused, saying what was found)."""
    return read_cell(text, limit=LIMITS.max_abs)


def resized(old: np.ndarray | None, shape: tuple[int, ...], filler: np.ndarray) -> np.ndarray:
    """``filler`` of ``shape`` with the entries of ``old`` that still fit copied in."""
    out = np.array(filler, dtype=float, copy=True)
    if old is not None and old.ndim == len(shape):
        overlap = tuple(slice(0, min(a, b)) for a, b in zip(old.shape, shape, strict=True))
        out[overlap] = old[overlap]
    return out


def covering(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An array as large as both on every axis: b's entries over a's (a's beyond b's reach)."""
    shape = tuple(max(i, j) for i, j in zip(a.shape, b.shape, strict=True))
    out = np.zeros(shape)
    out[tuple(slice(0, n) for n in a.shape)] = a
    out[tuple(slice(0, n) for n in b.shape)] = b
    return out
