"""This run's Setup and result: the sidebar's Inputs and the editors' arrays read into one Setup
(``build``), checked, admitted by the server's budget for runs in flight (``app/admission.py``: the
run's estimated working set, held from ``build`` to the end of the run, ``run_scope``), and computed
once per distinct setup through the server's result cache (``shared_run``), which also keeps a
result's derivations (``keeper``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import streamlit as st

from app import admission, i18n, result_cache
from app.charts import figure_cache
from app.grids import editor_labels
from app.session import session_keys, state
from mha_core import MHAResult, Scaling, Setup, Sizes, Window
from mha_core.codec import setup_to_link
from mha_core.setup import run_bytes, run_itemsize

# The session keys this module owns (app/session/session_keys.py).
RESULT_KEY = "result_key"
session_keys.register(session_keys.Key(RESULT_KEY, __name__))


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
    base = state.base_setup(ss[state.ORIGIN], ss.get(state.ORIGIN_SEED, 0))
    if sizes is None or scaling is None:
        return Current(None, None, dict(errors), base=base)
    state.restore_dropped_edits()
    notes = tuple(state.conform(sizes, mask_kind, seed))
    values, problems = {}, dict(errors)
    for spec in sizes.present():
        current = state.read(spec.name)
        values[spec.name] = current.value
        if current.bad or current.ignored:
            problems[spec.name] = editor_labels.cell_message(spec.name, current, tokens, kv_tokens, sizes)
    mask = {"none": None, "causal": "causal", "window": Window(inputs.window)}.get(mask_kind)
    if mask_kind == "custom":
        mask = state.read(state.MASK).value > 0.5  # [n_q, n_k] bool
    if problems:
        return Current(None, None, problems, base=base, notes=notes)
    setup = Setup(tokens=tuple(tokens), kv_tokens=tuple(kv_tokens) if sizes.cross else None, mask=mask,
                  scaling=scaling, origin=ss[state.ORIGIN], **values)
    try:
        admitted(setup)
        result = computed(setup)
    except admission.Refused as refused:
        return Current(setup, None, problems, error=refusal(refused), base=base, notes=notes)
    except ValueError as error:
        return Current(setup, None, problems, error=str(error), base=base, notes=notes)
    return Current(setup, result, problems, base=base, notes=notes)


# --- The server's budget for runs in flight (app/admission.py) -----------------------------------------

# [h, n_q, n_k] grids a page's drawing holds besides the result at its peak (a heatmap's copy, a
# derivation being made): at 1,024 tokens, d_model 768, 12 heads, tracemalloc's peak of the whole run
# was 250 MiB, the core's 172 (run_bytes says 177); with these, the estimate is 273.
DRAWING_GRIDS = 2
ALSO_COMPUTED: list[Callable[[], Setup | None]] = []  # other setups a run may compute (compare's pinned A)
_scope = threading.local()  # .tickets: this run's admissions, while run_scope is open on this thread


def working_set(setup: Setup) -> int:
    """The bytes computing and drawing this setup holds at its peak, from its shapes (nothing computed)."""
    return working_set_of(setup.sizes, masked=setup.mask is not None)


def working_set_of(sizes: Sizes, masked: bool = False) -> int:
    """working_set at these sizes: the core's run (run_bytes) and DRAWING_GRIDS grids of the page's."""
    grid = sizes.n_heads * sizes.n_q * sizes.n_k * run_itemsize(sizes)  # bytes of one [h, n_q, n_k] grid
    return run_bytes(sizes, masked) + DRAWING_GRIDS * grid


@contextlib.contextmanager
def run_scope() -> Iterator[None]:
    """Around a whole run of the page: what build admits is held until the run ends (its figures drawn,
    its result dropped but for the shared cache's copy), whichever way it ends."""
    _scope.tickets = []
    try:
        yield
    finally:
        tickets, _scope.tickets = _scope.tickets, None
        for ticket in tickets:
            admission.GATE.leave(ticket)


def admitted(setup: Setup) -> None:
    """Wait until the server's budget for runs in flight has room for this run (and for what else it may
    compute: a pinned setup), saying so on the page meanwhile; raises admission.Refused. Outside
    run_scope (a test calling build alone), nothing is held."""
    tickets = getattr(_scope, "tickets", None)
    if tickets is None:
        return
    for ticket in tickets:  # a second build in one run (none today) replaces the first's admission
        admission.GATE.leave(ticket)
    tickets.clear()
    others = (also() for also in ALSO_COMPUTED)
    need = working_set(setup) + sum(working_set(other) for other in others if other is not None)
    slot = []  # the waiting note, made only if this run waits (a page's elements are counted)
    try:
        tickets.append(admission.GATE.admit(need, lambda before, waited: _say_waiting(slot, before)))
    finally:
        for made in slot:
            made.empty()


def _say_waiting(slot: list, before: int) -> None:
    """The page's word while it waits (rewritten every second: Streamlit may stop the run here); before:
    the runs inside and those ahead of this one in line."""
    if not slot:
        slot.append(st.empty())
    slot[0].info(i18n.t("Waiting for the server to have room for this page (heavy pages computed or waiting "
                        "before it: {count})…").format(count=i18n.number(before)),
                 icon=":material/hourglass_top:")


def refusal(refused: admission.Refused) -> str:
    """Why the gate did not let this run in, in the reader's language."""
    need, budget = i18n.number(refused.need / 2**20), i18n.number(refused.budget / 2**20)
    if refused.waited is None:
        return i18n.t("these sizes need about {need} MiB to compute and draw, more than this server allows "
                      "for all pages computed at once ({budget} MiB, {setting}): use fewer tokens or "
                      "heads.").format(need=need, budget=budget, setting=admission.BUDGET_ENV)
    return i18n.t("the server is busy: this page waited {seconds} s for room (heavy pages being computed: "
                  "{count}). Try again in a moment, or use fewer tokens or heads.").format(
        count=i18n.number(refused.inside), seconds=i18n.number(refused.waited))


SPINNER_FROM = 1 << 20  # h × n_q × n_k from which the page says it is computing


def computed(setup: Setup) -> MHAResult:
    """setup.run(), shared: the result lives in the server's bounded result cache and this session
    keeps only its key (``result_key``), so an unchanged setup (a view option changed) is not
    computed again and a session keeps no result after its run. A long sequence shows a spinner while
    it computes (build has admitted it: ``admitted``)."""
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
    computing = i18n.t("Computing {h} heads over {n_q} × {n_k} tokens…").format(
        h=f"{sizes.n_heads:d}", n_q=f"{sizes.n_q:d}", n_k=f"{sizes.n_k:d}")
    with st.spinner(computing):
        return setup.run()
