"""Session state: the arrays' source of truth, where they came from, resizing, and reading edits back.

Every run reads the widgets into one ``Setup`` (app/session/this_run.py's ``build``); everything downstream
takes that Setup and its result as arguments. What lives here between runs:

* ``work``: each array's base (what its editors were given) and ``versions`` (in the editors'
  keys); pending edits stay in the editors' widget state (see app/grids/editors.py);
* ``reservoir``: for each array, every value it has held at a larger size in this session, so
  that h 2 -> 4 -> 2 gives back exactly what was there;
* ``origin``: the example the page started from ("file", "link" or "" otherwise), which the
  picker names, with "(edited)" once anything differs;
* ``selections``: the head, query and cell the views focus on, by position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from app import i18n, result_cache
from app.grids import editors
from app.session import session_keys
from course.examples import GENERATED, Example, all_examples, generated_setup
from course.i18n import N_
from mha_core import ARRAYS, Setup, Sizes
from mha_core.codec import (
    ConfigError,
    setup_from_json,
)
from mha_core.init import fill
from mha_core.setup import SPECS, covering, resized

GENERATED_LABELS = {"random": N_("random (seeded)"), "blank": N_("blank (zeros)")}
YOUR_SETUP = N_("your setup")
MASK = "mask"  # the custom mask's editor: 0/1 in work, bool in the Setup
REVEALED = "present_revealed"  # the presenter's (screen, question prompt) whose answer the room has seen


# The session keys this module owns (app/session/session_keys.py).
FILL_KIND_NEW, KEPT_EDITS, RESERVOIR = "fill_kind_new", "kept_edits", "reservoir"
VERSIONS, WORK = "versions", "work"
SELECTIONS, ORIGIN, ORIGIN_SEED, LINK_NOTES = "selections", "origin", "origin_seed", "link_notes"
session_keys.register(*(session_keys.Key(name, __name__) for name in (
    FILL_KIND_NEW, KEPT_EDITS, RESERVOIR, VERSIONS, WORK, SELECTIONS, ORIGIN, ORIGIN_SEED, LINK_NOTES,
    REVEALED
)))
# The settings: the sidebar's widgets (app/sidebar_inputs.py draws them) and load_setup write them,
# links (app/session/address.py), the fixes (app/setting_fixes.py) and the labs read them: kept here,
# below them all.
MODE, TOKENS_TEXT, KV_TOKENS_TEXT = "mode", "tokens_text", "kv_tokens_text"
D_MODEL, N_HEADS = "d_model", "n_heads"
CUSTOM_HEAD_WIDTH, D_K, D_V, SEED = "custom_head_width", "d_k", "d_v", "seed"
SCALE_KIND, SCALE_SQRT_OF, SCALE_MULTIPLIER = "scale_kind", "scale_sqrt_of", "scale_multiplier"
MASK_KIND, USE_BIAS, LARGE_TYPE, KV_HEADS, WINDOW_SIZE = "mask_kind", "use_bias", "large_type", "kv_heads", \
    "window_size"
SIDEBAR_KEYS = (MODE, TOKENS_TEXT, KV_TOKENS_TEXT, D_MODEL, N_HEADS, CUSTOM_HEAD_WIDTH, D_K, D_V, SEED,
                SCALE_KIND, SCALE_SQRT_OF, SCALE_MULTIPLIER, MASK_KIND, USE_BIAS, LARGE_TYPE, KV_HEADS,
                WINDOW_SIZE)
KV_HEADS_FOR = "kv_heads_for"  # the h the key/value heads were chosen for: standard (g = h) follows h
session_keys.register(*(session_keys.Key(name, __name__) for name in (*SIDEBAR_KEYS, KV_HEADS_FOR)))


@st.cache_resource
def examples() -> dict[str, Example]:
    return all_examples()


def label_of(origin: str) -> str:
    """The name of what the page started from, in the reader's language."""
    example = examples().get(origin)
    return i18n.t(example.title if example else GENERATED_LABELS.get(origin, YOUR_SETUP))


def base_setup(origin: str, seed: int) -> Setup | None:
    """The unedited setup the page started from, or None for a file or link of its own."""
    if origin in examples():
        return examples()[origin]
    if origin in GENERATED:
        return generated_setup(origin, seed)
    return None


# ---------------------------------------------------------------------------------------------
# Loading a whole setup


def init_state() -> bool:
    """Fill session state once per session (app/session/address.py's open_session then opens the link); True
    when this run did."""
    if "work" in st.session_state:
        return False
    ss = st.session_state
    ss.work, ss.versions, ss.kept_edits, ss.reservoir = {}, {}, {}, {}
    ss.selections, ss.link_notes = {}, []
    ss.seed = 0
    return True


def load_setup(setup: Setup, seed: int | None = None) -> None:
    """Write a whole setup (an example, a file, a link) into the widgets' state and the bases."""
    ss = st.session_state
    sizes = setup.sizes
    ss.tokens_text = " ".join(setup.tokens)
    ss.kv_tokens_text = " ".join(setup.key_tokens)
    ss.mode = "cross-attention" if sizes.cross else "self-attention"
    ss.d_model, ss.n_heads, ss.d_k, ss.d_v = sizes.d_model, sizes.n_heads, sizes.d_k, sizes.d_v
    ss.custom_head_width = sizes.d_model % sizes.n_heads != 0 or sizes.d_k * sizes.n_heads != sizes.d_model \
        or sizes.d_v != sizes.d_k
    ss.mask_kind = setup.mask_kind
    ss.kv_heads, ss.kv_heads_for = sizes.groups, sizes.n_heads  # (app/sidebar_inputs.py reads KV_HEADS_FOR)
    if setup.mask_kind == "window":
        ss.window_size = setup.mask.size
    ss.scale_kind = setup.scaling.kind
    if setup.scaling.kind == "multiply":
        ss.scale_multiplier = float(setup.scaling.value)
    if setup.scaling.kind == "sqrt_of":
        ss.scale_sqrt_of = int(setup.scaling.value)
    ss.use_bias = sizes.bias
    ss.origin = setup.origin
    ss.origin_seed = ss.seed if seed is None else seed
    ss.reservoir = {}  # a new setup: nothing cut from it to remember
    ss.fill_kind_new = "zeros" if setup.origin == "blank" else "random"
    for spec in ARRAYS:
        set_base(spec.name, getattr(setup, spec.name))
    set_base(MASK, setup.mask.astype(float) if setup.mask_kind == "custom" else None)
    if isinstance(setup, Example):
        ss.selections = {"focus_query": setup.focus_query}


def load_example(origin: str) -> None:
    """Load an example exactly as it is (also a reset to it)."""
    ss = st.session_state
    if origin in GENERATED:  # a reset draws with the seed it was drawn with; a new pick with the box's
        seed = ss.origin_seed if ss.get("origin") == origin else ss.seed
        load_setup(generated_setup(origin, seed), seed=seed)
    else:
        load_setup(examples()[origin])


def load_file(data: bytes, name: str) -> str | None:
    """Apply a saved setup; a message saying what is wrong with it, or None."""
    try:
        setup = setup_from_json(data)
    except ConfigError as error:
        return f"{name}: {error}"
    known = setup.origin in examples()
    load_setup(setup.with_origin(setup.origin if known else "file"))
    return None


# ---------------------------------------------------------------------------------------------
# Bases, versions and resizing


def set_base(name: str, array: np.ndarray | None) -> None:
    """A new base for an array; its editors get fresh keys and its kept edits are spent."""
    ss = st.session_state
    ss.work[name] = None if array is None else np.array(array, dtype=float)
    for key in [key for key, (owner, _) in ss.kept_edits.items() if owner == name]:
        del ss.kept_edits[key]
    ss.versions[name] = ss.versions.get(name, 0) + 1


def key_of(name: str, head: int | None = None) -> str:
    return editors.editor_key(name, st.session_state.versions.get(name, 0), head)


def conform(sizes: Sizes, mask_kind: str, seed: int) -> list[str]:
    """Give every present array the current sizes, reversibly; one note naming the new cells.

    What is cut is remembered for the session (``reservoir``), so changing a size and changing
    it back restores the values; cells never held before are filled deterministically (the
    same seed gives the same numbers) and the note says so.
    """
    ss = st.session_state
    shapes = {spec.name: spec.shape(sizes) for spec in sizes.present()}
    if mask_kind == "custom":
        shapes[MASK] = (sizes.n_q, sizes.n_k)
    grown: dict[str, int] = {}
    for name, shape in shapes.items():
        base = ss.work.get(name)
        if base is not None and base.shape == shape:
            continue
        if base is not None:
            now = read(name).value
            now = np.where(np.isnan(now), base, now)  # a cell typed as a non-number keeps its number
            kept = ss.reservoir.get(name)
            ss.reservoir[name] = now if kept is None or kept.ndim != now.ndim else covering(kept, now)
        kept = ss.reservoir.get(name)
        if kept is not None and kept.ndim != len(shape):
            kept = None
        new_cells = int(np.prod(shape)) - (0 if kept is None else int(np.prod(
            [min(a, b) for a, b in zip(kept.shape, shape, strict=True)])))
        set_base(name, resized(kept, shape, _new_entries(name, shape, ss.fill_kind_new, seed)))
        if new_cells and base is not None:
            grown[_label(name)] = new_cells
    forgotten = _forget_beyond_budget()
    budget = f"{result_cache.SESSION_BUDGET_BYTES // 2**20:d}"
    notes = [i18n.t("The values cut from {arrays} are not remembered at these sizes (with them this session "
                    "would keep more than {mib} MiB): a larger size fills them anew.").format(
        arrays=", ".join(forgotten), mib=budget)] if forgotten else []
    if not grown:
        return notes
    cells = ", ".join(f"{label} {i18n.number(count)}" for label, count in grown.items())
    return [i18n.t(NEW_CELLS[ss.fill_kind_new]).format(cells=cells, seed=f"{seed:d}"), *notes]


NEW_CELLS = {  # the note on the cells a larger size adds, by what fills them
    "random": N_("New cells ({cells}) are filled with random numbers (seed {seed}), biases with zeros and a "
                 "custom mask with ticks; values cut by a smaller size come back when the size does."),
    "zeros": N_("New cells ({cells}) are filled with zeros, biases with zeros and a custom mask with ticks; "
                "values cut by a smaller size come back when the size does."),
}


def _forget_beyond_budget() -> list[str]:
    """Drop what resizing remembers, largest first, while the session would keep more than its
    budget (the inputs themselves always stay); the labels of what was dropped."""
    ss = st.session_state
    forgotten = []
    while ss.reservoir and result_cache.numpy_bytes(ss.to_dict()) > result_cache.SESSION_BUDGET_BYTES:
        name = max(ss.reservoir, key=lambda n: ss.reservoir[n].nbytes)
        del ss.reservoir[name]
        forgotten.append(_label(name))
    return forgotten


def _label(name: str) -> str:
    return "mask" if name == MASK else SPECS[name].label


def _new_entries(name: str, shape: tuple[int, ...], kind: str, seed: int) -> np.ndarray:
    """What fills cells an array never held: a mask allows every pair, biases start at zero, and
    a blank start keeps W_O the identity so that the output still shows the heads. The same
    (seed, array) always gives the same numbers."""
    if name == MASK:
        return np.ones(shape)
    if name.startswith("b_"):
        return np.zeros(shape)
    if kind == "zeros" and name == "w_o":
        return fill("identity", shape)
    index = [spec.name for spec in ARRAYS].index(name)
    return np.round(fill(kind, shape, np.random.default_rng([seed, index])), 2)


# ---------------------------------------------------------------------------------------------
# Reading the arrays back


@dataclass(frozen=True)
class Read:
    value: np.ndarray  # the base with the pending edits; NaN where a typed cell is not a number
    bad: list[tuple[int | None, editors.BadCell]]  # (head, cell) of every cell at fault
    ignored: int  # edits that named no cell


def read(name: str) -> Read:
    """An array as the user sees it now: its base plus the pending edits of its editors."""
    ss = st.session_state
    base = ss.work[name]
    per_head = name in SPECS and SPECS[name].per_head
    boolean = name == MASK
    heads = range(base.shape[0]) if per_head else [None]
    pending = {head: editors.pending_edits(ss.get(key_of(name, head)), ss.kept_edits, key_of(name, head))
               for head in heads}
    if not any(pending.values()):  # no copy: the run's Setup shares the session's base (read-only)
        unchanged = base.view()
        unchanged.flags.writeable = False
        return Read(unchanged, [], 0)
    parts, bad, ignored = [], [], 0
    for head in heads:
        grid = editors.as_grid(base[head] if head is not None else base)
        values, cells, skipped = editors.apply_edits(grid, pending[head], boolean)
        parts.append(values.reshape(base[head].shape if head is not None else base.shape))
        bad += [(head, cell) for cell in cells]
        ignored += skipped
    return Read(np.stack(parts) if per_head else parts[0], bad, ignored)


def keep_edits(name: str, key: str) -> None:
    """on_change of every editor: copy its edits where widget clean-up cannot reach them."""
    state = st.session_state.get(key)
    edited = state.get("edited_rows", {}) if isinstance(state, dict) else {}
    st.session_state.kept_edits[key] = (name, dict(edited) if isinstance(edited, dict) else {})


def restore_dropped_edits() -> None:
    """Fold kept edits into the base of any array whose editor state Streamlit dropped.

    Run before anything reads an array: the new base holds the edits, and the new version
    gives its editors fresh keys, so the grid and the numbers agree again. Cells at fault
    stay pending (they are not folded in) so that their message stays.
    """
    ss = st.session_state
    dropped = {name for key, (name, rows) in ss.kept_edits.items() if rows and key not in ss}
    for name in dropped:
        current = read(name)
        if not current.bad and ss.work.get(name) is not None:
            set_base(name, current.value)


def fill_array(name: str, kind: str, seed: int, head: int | None = None) -> None:
    """Replace an array (or one head of it) by a fill, keeping every other array as it is."""
    current = read(name).value
    new = fill(kind, current.shape, np.random.default_rng(seed))
    if head is not None:  # only this head changes; its identity pattern is its own slice
        new, new[head] = current.copy(), new[head]
    set_base(name, new)
