"""Session state: the inputs' source of truth, presets, resizing and the editors' edits.

Each editable matrix has a *base* array (what its st.data_editor was given) and a version
number in its widget key. The current value is the base with the editor's pending
``edited_rows`` applied; the editor's returned frame is never fed back in (streamlit
issue 7749). Loading a preset, filling or resizing writes a new base and bumps the version.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from mha_core import DEFAULT_SCENARIO, Scenario, all_scenarios, fill
from mha_core.config import ConfigError, Setup, SetupLimits, settings_from_link, setup_from_json

RANDOM = "random (seeded)"
BLANK = "blank (zeros)"


@dataclass(frozen=True)
class Limits:
    """Sizes the page accepts; a classroom needs far less, and the page stays quick within them."""

    tokens: int = 24  # per side; heatmap cells keep their numbers up to 12
    d_model: int = 512  # seed 001's examples H and I use 512
    n_heads: int = 16
    d_head: int = 128  # d_k and d_v
    editable: int = 32  # a grid wider or taller than this is shown read-only (use the fill helper)


LIMITS = Limits()
SETUP_LIMITS = SetupLimits(tokens=LIMITS.tokens, d_model=LIMITS.d_model, n_heads=LIMITS.n_heads,
                           d_head=LIMITS.d_head)
PER_HEAD = ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v")  # edited one head at a time
MATRICES = ("x", "x_kv", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "mask")


@st.cache_resource
def scenarios() -> dict[str, Scenario]:
    return all_scenarios()


def preset_names() -> list[str]:
    return [*scenarios(), RANDOM, BLANK]


def preset_label(key: str) -> str:
    scenario = scenarios().get(key)
    return scenario.title if scenario else key


def init_state() -> None:
    """Fill session state once per session with the default preset."""
    if "bases" not in st.session_state:
        st.session_state.bases = {}
        st.session_state.versions = dict.fromkeys(MATRICES, 0)
        st.session_state.kept_edits = {}  # editor key -> edited_rows, safe from widget clean-up
        st.session_state.preset = DEFAULT_SCENARIO
        load_preset()
        st.session_state.link_messages = apply_link(st.query_params.to_dict())


def bump(name: str) -> None:
    st.session_state.versions[name] += 1


def editor_key(name: str, head: int | None = None) -> str:
    suffix = "" if head is None else f"_{head}"
    return f"ed_{name}{suffix}_v{st.session_state.versions[name]}"


def set_base(name: str, array: np.ndarray | None) -> None:
    """A new base for a matrix; its editors get fresh keys and its kept edits are spent."""
    st.session_state.bases[name] = None if array is None else np.array(array, dtype=float)
    kept = st.session_state.kept_edits
    for key in [key for key, (owner, _) in kept.items() if owner == name]:
        del kept[key]
    bump(name)


def load_preset() -> None:
    """on_change of the preset picker: write the preset's inputs and options into state."""
    key = st.session_state.preset
    scenario = scenarios().get(key)
    if scenario is None:
        _load_generated(blank=key == BLANK)
        return
    apply_setup(scenario)
    st.session_state.focus_query = scenario.focus_query


def apply_setup(setup: Setup) -> None:
    """Write a whole setup (a preset or a loaded file) into the widgets' state and the bases."""
    widgets = st.session_state
    h, d_model, d_k = setup.w_q.shape
    d_v = setup.w_v.shape[2]
    cross = setup.x_kv is not None
    widgets.tokens_text = " ".join(setup.tokens)
    widgets.kv_tokens_text = " ".join(setup.kv_tokens or setup.tokens)
    widgets.mode = "cross-attention" if cross else "self-attention"
    widgets.d_model, widgets.n_heads, widgets.d_k, widgets.d_v = d_model, h, d_k, d_v
    widgets.custom_head_width = d_model % h != 0 or d_k * h != d_model or d_v != d_k
    custom_mask = isinstance(setup.mask, np.ndarray)
    widgets.mask_kind = "custom" if custom_mask else ("causal" if setup.mask == "causal" else "none")
    if setup.scale in ("sqrt", "none"):
        widgets.scale_mode, widgets.temperature = setup.scale, 1.0
    else:
        widgets.scale_mode, widgets.temperature = "temperature", round(1.0 / float(setup.scale), 6)
    biases = {name: getattr(setup, name) for name in ("b_q", "b_k", "b_v", "b_o")}
    widgets.use_bias = any(value is not None for value in biases.values())
    for name in ("x", "w_q", "w_k", "w_v", "w_o"):
        set_base(name, getattr(setup, name))
    set_base("x_kv", setup.x_kv if cross else setup.x)
    for name, value in biases.items():
        set_base(name, value)  # None: conform() makes zeros of the right shape
    set_base("mask", setup.mask if custom_mask else None)


def current_setup(tokens, kv_tokens, values: dict, mask, scale) -> Setup:
    """What the page shows now, as a Setup (for saving)."""
    return Setup(tokens=tuple(tokens), kv_tokens=tuple(kv_tokens) if "x_kv" in values else None,
                 mask=mask, scale=scale, **{name: values.get(name) for name in
                                            ("x", "x_kv", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k",
                                             "b_v", "b_o")})


def load_uploaded() -> None:
    """on_change of the file uploader: apply a saved setup, or say what is wrong with it."""
    uploaded = st.session_state.get("setup_file")
    st.session_state.load_message = None
    if uploaded is None:
        return
    try:
        apply_setup(setup_from_json(uploaded.getvalue(), SETUP_LIMITS))
    except ConfigError as error:
        st.session_state.load_message = f"{uploaded.name}: {error}"


def apply_link(params: dict) -> list[str]:
    """Settings from a shared link (?preset=...&tokens=...&d_model=...&heads=...&seed=...)."""
    settings, refused = settings_from_link(params, SETUP_LIMITS, tuple(scenarios()))
    if "preset" in settings:
        st.session_state.preset = settings["preset"]
        load_preset()
    if "tokens" in settings:
        st.session_state.tokens_text = " ".join(settings["tokens"])
    for name, key in (("d_model", "d_model"), ("heads", "n_heads"), ("seed", "seed")):
        if name in settings:
            st.session_state[key] = settings[name]
    return refused


def _load_generated(blank: bool) -> None:
    widgets = st.session_state
    widgets.tokens_text = "the cat sat on the mat"
    widgets.kv_tokens_text = "le chat est assis sur le tapis"
    widgets.mode, widgets.mask_kind, widgets.scale_mode = "self-attention", "none", "sqrt"
    widgets.d_model, widgets.n_heads, widgets.d_k, widgets.d_v = 8, 2, 4, 4
    widgets.custom_head_width, widgets.use_bias, widgets.temperature = False, False, 1.0
    widgets.focus_query = 0
    for name in MATRICES:
        set_base(name, None)  # conform() fills every missing matrix
    st.session_state.new_fill = "zeros" if blank else "random"


@dataclass(frozen=True)
class Shapes:
    n_q: int
    n_k: int
    d_model: int
    n_heads: int
    d_k: int
    d_v: int
    cross: bool
    use_bias: bool

    def of(self, name: str) -> tuple[int, ...] | None:
        h = self.n_heads
        table = {
            "x": (self.n_q, self.d_model), "x_kv": (self.n_k, self.d_model),
            "w_q": (h, self.d_model, self.d_k), "w_k": (h, self.d_model, self.d_k),
            "w_v": (h, self.d_model, self.d_v), "w_o": (h * self.d_v, self.d_model),
            "b_q": (h, self.d_k), "b_k": (h, self.d_k), "b_v": (h, self.d_v), "b_o": (self.d_model,),
            "mask": (self.n_q, self.n_k),
        }
        return table[name]


def resized(old: np.ndarray | None, shape: tuple[int, ...], filler: np.ndarray) -> np.ndarray:
    """``filler`` of ``shape`` with the entries of ``old`` that still fit copied in."""
    out = filler.copy()
    if old is not None and old.ndim == len(shape):
        overlap = tuple(slice(0, min(a, b)) for a, b in zip(old.shape, shape, strict=True))
        out[overlap] = old[overlap]
    return out


def conform(shapes: Shapes, seed: int) -> None:
    """Resize every base to the current sizes, keeping what fits (pending edits included)."""
    rng = np.random.default_rng(seed)
    kind = st.session_state.pop("new_fill", "random")
    for name in MATRICES:
        shape = shapes.of(name)
        base = st.session_state.bases.get(name)
        if base is not None and base.shape == shape:
            continue
        current = None if base is None else current_value(name)
        set_base(name, resized(current, shape, _new_entries(name, shape, kind, rng)))


def _new_entries(name: str, shape: tuple[int, ...], kind: str, rng: np.random.Generator) -> np.ndarray:
    """What fills cells that did not exist before: a mask allows every pair, biases start at
    zero, and a blank start keeps W_O the identity so that the output still shows the heads."""
    if name == "mask":
        return np.ones(shape)
    if name.startswith("b_"):
        return np.zeros(shape)
    if kind == "zeros" and name == "w_o":
        return fill("identity", shape)
    return fill(kind, shape, rng)


def apply_edits(base: np.ndarray, edited_rows: dict) -> np.ndarray:  # [rows, cols] -> same
    """The editor's pending edits ({row: {"c<j>": value}}) applied to a copy of base; None -> NaN."""
    out = base.astype(float).copy()
    for row, changes in edited_rows.items():
        for column, value in changes.items():
            j = int(str(column).lstrip("c"))
            out[int(row), j] = np.nan if value is None else float(value)
    return out


def _edits(key: str) -> dict:
    """An editor's pending edits: from its widget state, or, once Streamlit has dropped that
    (the editor was not drawn in a run: another page, another head), from our own copy."""
    state = st.session_state.get(key)
    if isinstance(state, dict):
        return state.get("edited_rows", {})
    return st.session_state.kept_edits.get(key, (None, {}))[1]


def keep_edits(name: str, key: str) -> None:
    """on_change of every editor: copy its edits where widget clean-up cannot reach them."""
    st.session_state.kept_edits[key] = (name, dict(st.session_state[key].get("edited_rows", {})))


def restore_dropped_edits() -> None:
    """Fold kept edits into the base of any matrix whose editor state Streamlit dropped.

    Run before anything reads a matrix: the new base holds the edits, and the new version
    gives its editors fresh keys, so the grid and the numbers agree again.
    """
    kept = st.session_state.kept_edits
    dropped = {name for key, (name, rows) in kept.items() if rows and key not in st.session_state}
    for name in dropped:
        set_base(name, current_value(name))


def as_grid(array: np.ndarray) -> np.ndarray:  # [d] -> [1, d]; [r, c] unchanged
    """What an editor shows: a vector (a bias) is a one-row grid."""
    return array[None, :] if array.ndim == 1 else array


def current_value(name: str) -> np.ndarray:
    """The matrix as the user sees it now: base plus pending edits (one editor per head for
    the per-head weights and biases)."""
    base = st.session_state.bases[name]
    if name in PER_HEAD:
        return np.stack([apply_edits(as_grid(base[head]), _edits(editor_key(name, head)))
                         .reshape(base[head].shape) for head in range(base.shape[0])])
    return apply_edits(as_grid(base), _edits(editor_key(name))).reshape(base.shape)


def fill_matrix(name: str, kind: str, seed: int, head: int | None = None) -> None:
    """Replace a matrix (or one head of it) by a fill, keeping every other matrix as it is."""
    base = current_value(name)
    rng = np.random.default_rng(seed)
    new = fill(kind, base.shape, rng)
    if head is not None:  # only this head changes; its identity pattern is its own slice
        new, new[head] = base.copy(), new[head]
    set_base(name, new)
