"""This run's Setup and result: the sidebar's Inputs and the editors' arrays read into one Setup
(``build``), checked, and computed once per distinct setup through the server's result cache
(``shared_run``), which also keeps a result's derivations (``keeper``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from app import i18n, result_cache
from app.charts import figure_cache
from app.grids import editor_labels
from app.session import session_keys, state
from mha_core import MHAResult, Scaling, Setup, Sizes, Window
from mha_core.codec import setup_to_link

# The session keys this module owns (app/session/session_keys.py).
session_keys.register(session_keys.Key("result_key", "this_run"))


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
    base = state.base_setup(ss.origin, ss.get("origin_seed", 0))
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
