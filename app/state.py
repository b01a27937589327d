"""Session state: the arrays' source of truth, where they came from, resizing, and the link.

Every run reads the widgets into one ``Setup`` (``build``); everything downstream takes that
Setup and its result as arguments. What lives here between runs:

* ``work``: each array's base (what its editors were given) and ``versions`` (in the editors'
  keys); pending edits stay in the editors' widget state (see app/editors.py);
* ``reservoir``: for each array, every value it has held at a larger size in this session, so
  that h 2 -> 4 -> 2 gives back exactly what was there;
* ``origin``: the example the page started from ("file", "link" or "" otherwise), which the
  picker names, with "(edited)" once anything differs;
* ``selections``: the head, query and cell the views focus on, by position.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from app import editors, i18n, result_cache, session_keys
from app.charts import figure_cache, figure_style
from course.examples import GENERATED, Example, all_examples, generated_setup
from course.i18n import N_
from mha_core import ARRAYS, MHAResult, Scaling, Setup, Sizes, Window
from mha_core.codec import (
    ConfigError,
    setup_from_json,
    setup_to_link,
)
from mha_core.init import fill
from mha_core.setup import SPECS, covering, resized

GENERATED_LABELS = {"random": N_("random (seeded)"), "blank": N_("blank (zeros)")}
YOUR_SETUP = N_("your setup")
MASK = "mask"  # the custom mask's editor: 0/1 in work, bool in the Setup
REVEALED = "present_revealed"  # the presenter's (screen, question prompt) whose answer the room has seen


# The session keys this module owns (app/session_keys.py).
session_keys.register(*(session_keys.Key(name, "state") for name in (
    "fill_kind_new", "kept_edits", "reservoir", "shown_edits", "versions", "work", "undo",
    "selections", "origin", "origin_seed", "link_notes", "result_key", REVEALED
)))


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
    """Fill session state once per session (app/address.py's open_session then opens the link); True
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
    ss.kv_heads, ss.kv_heads_for = sizes.groups, sizes.n_heads  # (app/widgets.py: KV_HEADS_FOR)
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


# ---------------------------------------------------------------------------------------------
# One Setup per run


@dataclass(frozen=True)
class Current:
    """What this run shows: the Setup read from the widgets (None while an input is at fault),
    its result, and every message, keyed by the input it belongs to."""

    setup: Setup | None
    result: MHAResult | None
    problems: dict[str, str] = field(default_factory=dict)  # array name or widget key -> message
    error: str | None = None  # the core refused the setup as a whole (e.g. its size)
    base: Setup | None = None  # the unedited example it started from
    notes: tuple[str, ...] = ()
    _links: dict = field(default_factory=dict, compare=False, repr=False)  # id(base) -> setup_link's answer

    @property
    def edited(self) -> bool:
        return self.setup is None or self.base is None or not self.setup.same_inputs(self.base)

    def setup_link(self, base: Setup | None) -> tuple[dict[str, str], bool]:
        """The setup's link parameters (as a difference from ``base``) and whether it fits in them, made
        once per run: the frame's mark and the address both ask."""
        made = self._links.get(id(base))
        if made is None:
            made = self._links[id(base)] = setup_to_link(self.setup, base)
        return dict(made[0]), made[1]


@dataclass(frozen=True)
class Inputs:
    """Everything the sidebar decided, as plain values."""

    tokens: list[str]
    kv_tokens: list[str]
    sizes: Sizes | None  # None while a size is invalid
    seed: int
    scaling: Scaling | None
    mask_kind: str
    large: bool
    errors: dict  # widget key -> message shown next to it
    window: int = 2  # the sliding window's tokens, when mask_kind is "window"


def build(inputs: Inputs) -> Current:
    """Read every present array, check it, and make this run's Setup and result."""
    tokens, kv_tokens, sizes, scaling = inputs.tokens, inputs.kv_tokens, inputs.sizes, inputs.scaling
    mask_kind, seed, errors = inputs.mask_kind, inputs.seed, inputs.errors
    ss = st.session_state
    base = base_setup(ss.origin, ss.get("origin_seed", 0))
    if sizes is None or scaling is None:
        return Current(None, None, dict(errors), base=base)
    restore_dropped_edits()
    notes = tuple(conform(sizes, mask_kind, seed))
    values, problems = {}, dict(errors)
    for spec in sizes.present():
        current = read(spec.name)
        values[spec.name] = current.value
        if current.bad or current.ignored:
            problems[spec.name] = cell_message(spec.name, current, tokens, kv_tokens, sizes)
    mask = {"none": None, "causal": "causal", "window": Window(inputs.window)}.get(mask_kind)
    if mask_kind == "custom":
        mask = read(MASK).value > 0.5  # [n_q, n_k] bool
    if problems:
        return Current(None, None, problems, base=base, notes=notes)
    setup = Setup(tokens=tuple(tokens), kv_tokens=tuple(kv_tokens) if sizes.cross else None, mask=mask,
                  scaling=scaling, origin=ss.origin, **values)
    try:
        result = computed(setup)
    except ValueError as error:
        return Current(setup, None, problems, error=str(error), base=base, notes=notes)
    return Current(setup, result, problems, base=base, notes=notes)


SPINNER_FROM = 1 << 20  # h × n_q × n_k from which the page says it is computing


def computed(setup: Setup) -> MHAResult:
    """setup.run(), shared: the result lives in the server's bounded result cache and this session
    keeps only its key (``result_key``), so an unchanged setup (a view option changed) is not
    computed again and a session keeps no result after its run. A long sequence waits for one of
    the server's LONG_RUN_SLOTS and shows a spinner while it waits and computes."""
    key, result = shared_run(setup)
    result_cache.hold(key)
    st.session_state.result_key = key
    return result


def shared_run(setup: Setup) -> tuple[bytes, MHAResult]:
    """setup.run() through the server's result cache: (its key, the result)."""
    key = result_cache.setup_key(setup)
    waiting = i18n.t("Another session is computing this same setup; it is shared when done…")
    result = result_cache.RESULTS.get_or_make(
        key, lambda: _named(key, _run(setup)), result_cache.numpy_bytes, lambda: st.spinner(waiting))
    return key, result


def _named(key: bytes, made):
    """A new shared result's (or derivation's) arrays, named by its key: its figures are keyed
    without reading them."""
    figure_cache.name_fields(key, made)
    return made


def keeper(key: bytes):
    """A StepView's ``keep`` for the result under key: its derivations live in the result cache beside
    it (each under the result's key and the derivation's name), made once per result, not per run."""
    def keep(name: str, make):
        named = key + b":" + name.encode()
        return result_cache.RESULTS.get_or_make_derived(key, name.encode(), lambda: _named(named, make()),
                                                        result_cache.numpy_bytes)
    return keep


def _run(setup: Setup) -> MHAResult:
    sizes = setup.sizes
    if sizes.n_heads * sizes.n_q * sizes.n_k < SPINNER_FROM:
        return setup.run()
    slots = result_cache.LONG_RUNS.slots
    queued = (i18n.t("Queued: the server computes {count} long sequences at a time; yours starts when one is "
                     "free…") if slots > 1 else
              i18n.t("Queued: the server computes 1 long sequence at a time; yours starts when one is free…")
              ).format(count=f"{slots:d}")
    computing = i18n.t("Computing {h} heads over {n_q} × {n_k} tokens…").format(
        h=f"{sizes.n_heads:d}", n_q=f"{sizes.n_q:d}", n_k=f"{sizes.n_k:d}")
    with result_cache.LONG_RUNS.turn(lambda: st.spinner(queued)):
        with st.spinner(computing):
            return setup.run()


def grid_labels(name: str, tokens, kv_tokens, sizes: Sizes) -> tuple[list[str], list[str]]:
    """An editor's row and column labels: tokens for token axes ('1 · the'; a mask's columns are
    the keys), d1, d2, ... for d_model, q1, k1, v1, ... for a head's width, h2·1 for W_O's rows."""
    if name == MASK:
        return row_labels(tokens), row_labels(kv_tokens)
    if name in ("x", "x_kv"):
        return row_labels(tokens if name == "x" else kv_tokens), figure_style.dims("d", sizes.d_model)
    if name == "w_o":
        heads = [f"h{i + 1}·{j + 1}" for i in range(sizes.n_heads) for j in range(sizes.d_v)]
        return heads, figure_style.dims("d", sizes.d_model)
    width = sizes.shape(name)[-1]
    if name.startswith("b_"):
        return [SPECS[name].label], figure_style.dims("o" if name == "b_o" else name[-1], width)
    return figure_style.dims("d", sizes.d_model), figure_style.dims(name[-1], width)


def row_labels(tokens) -> list[str]:
    """Unique, literal row labels: '1 · the', '5 · the'."""
    return [f"{i + 1} · {token}" for i, token in enumerate(tokens)]


def cell_message(name: str, current: Read, tokens, kv_tokens, sizes: Sizes) -> str:
    """One message naming the first cell at fault (and how many there are)."""
    label = SPECS[name].label
    if not current.bad:
        return i18n.t("{label}: {count} edit(s) named a cell this grid does not have and were ignored; the "
                      "grid's other cells keep their values.").format(label=label,
                                                                       count=f"{current.ignored:d}")
    head, cell = current.bad[0]
    rows, columns = grid_labels(name, tokens, kv_tokens, sizes)
    row = rows[cell.row] if cell.row < len(rows) else str(cell.row + 1)
    column = columns[cell.col] if cell.col < len(columns) else str(cell.col + 1)
    message = BAD_CELL[head is not None, len(current.bad) > 1]
    return i18n.t(message).format(label=label, head=f"{(head or 0) + 1:d}", row=row, column=column,
                                  reason=cell.reason, count=f"{len(current.bad):d}")


BAD_CELL = {  # (a head's grid?, more than one cell at fault?) -> the message naming the first one
    (False, False): N_(
        "{label}, row {row}, column {column}: {reason}. Type a number such as 0.5, -2 or 1e-3; the other "
        "inputs keep their values and the steps below come back once it is fixed."),
    (True, False): N_(
        "{label} of head {head}, row {row}, column {column}: {reason}. Type a number such as 0.5, -2 or "
        "1e-3; the other inputs keep their values and the steps below come back once it is fixed."),
    (False, True): N_(
        "{label}, row {row}, column {column}: {reason} ({count} cells in all). Type a number such as 0.5, "
        "-2 or 1e-3; the other inputs keep their values and the steps below come back once it is fixed."),
    (True, True): N_(
        "{label} of head {head}, row {row}, column {column}: {reason} ({count} cells in all). Type a number "
        "such as 0.5, -2 or 1e-3; the other inputs keep their values and the steps below come back once it "
        "is fixed."),
}


# ---------------------------------------------------------------------------------------------
# Opening over edits, and Undo


UNDO_MAX_BYTES = 2 * 2**20  # an edited setup kept for Undo; a bigger one is saved as a file or walked back to


def remember_shown(current: Current, label: str) -> None:
    """At the end of a run: an edited setup on screen is what a deliberate opening would replace. Kept
    only up to UNDO_MAX_BYTES of arrays: the session's memory budget counts every copy."""
    setup = current.setup
    small = setup is not None and result_cache.numpy_bytes(setup.arrays()) <= UNDO_MAX_BYTES
    st.session_state.shown_edits = (setup, label) if current.edited and small else None


def open_over_edits(load, *args) -> None:
    """A deliberate opening (the picker, Reset, "Open in the workbench", a file): an edited setup on
    screen is kept first, so that the page can offer to bring it back."""
    ss = st.session_state
    ss.undo = ss.get("shown_edits")
    load(*args)


def undo_opening() -> None:
    """Undo: the edited setup that the last opening replaced comes back."""
    setup, _ = st.session_state.pop("undo")
    load_setup(setup)
