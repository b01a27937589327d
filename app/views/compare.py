"""Compare two setups on the workbench: pin the current one as A, change anything, see A against B.

The pinned Setup lives in ``st.session_state.pinned`` (frozen, so nothing can change it behind
the user's back); B is always the live setup.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import i18n, result_cache
from app.charts import figure_layout, figures, number_text
from app.charts.figure_cache import figure
from app.safe import lit, md
from app.session import session_keys, state, this_run
from app.session.this_run import Current
from app.widgets import chart
from mha_core import largest_change
from mha_core.setup import Setup

PINNED = "pinned"
PARTNERS = {"ex_f_unscaled": "ex_f_scaled", "ex_f_scaled": "ex_f_unscaled"}  # one click apart


PIN_REQUESTED = "compare_pin_requested"  # set by the pin button; the next run pins its own Setup


# The session keys this module owns (app/session/session_keys.py).
session_keys.register(*(session_keys.Key(name, __name__) for name in (PIN_REQUESTED, PINNED)))
# A run may compute the pinned A too: the server admits each run with room for it (app/admission.py).
this_run.ALSO_COMPUTED.append(lambda: st.session_state.get(PINNED))


def pin(setup: Setup) -> None:
    st.session_state[PINNED] = setup


def request_pin() -> None:
    """on_click of the pin button. A callback's arguments stay in the session with the widget, so
    the button carries no Setup: the next run (same inputs) pins its own."""
    st.session_state[PIN_REQUESTED] = True


def unpin() -> None:
    st.session_state.pop(PINNED, None)


def pin_and_open(origin: str, partner: str) -> None:
    """Pin this example (unedited: the shared example itself) as A and load its partner as B
    (example F scaled against unscaled)."""
    pin(state.examples()[origin])
    state.load_example(partner)


def render(current: Current) -> None:
    """The pin bar, and A against B while something is pinned."""
    if st.session_state.pop(PIN_REQUESTED, False) and current.setup is not None:
        pin(current.setup)
    pinned = st.session_state.get(PINNED)
    if current.setup is None:
        return
    if pinned is None:
        buttons(current)
        return
    with st.container(border=True):
        pinned_label = lit(label(pinned))
        st.markdown(i18n.t("**A** (pinned): {a} · **B**: the page as it is now").format(a=pinned_label))
        st.button(i18n.t("Unpin A"), key="compare_unpin", on_click=unpin)
        if current.result is None:
            st.info(i18n.t("B is waiting for valid input."))
            return
        difference(pinned, this_run.shared_run(pinned)[1], current)


def buttons(current: Current) -> None:
    left, right = st.columns(2)
    pinned_bytes = result_cache.numpy_bytes(current.setup.arrays())  # a copy of every input
    fits = 2 * pinned_bytes <= result_cache.SESSION_BUDGET_BYTES  # the inputs and their pinned copy
    left.button(i18n.t("Pin as A, then change anything to compare"), key="compare_pin", on_click=request_pin,
                icon=":material/push_pin:", use_container_width=True, disabled=not fits)
    if not fits:
        budget = result_cache.SESSION_BUDGET_BYTES // 2**20
        left.caption(md(i18n.t("Too large to pin: A would keep another {size} MiB of inputs in this session "
                               "(a session keeps at most {budget} MiB). Save this setup to a file instead, "
                               "and open it later."),
                        size=i18n.number(pinned_bytes / 2**20), budget=i18n.number(budget)))
    partner = PARTNERS.get(current.setup.origin)
    if partner is not None and not current.edited:
        right.button(md(i18n.t("Compare with '{example}'"), example=state.label_of(partner)),
                     key="compare_partner", on_click=pin_and_open, args=(current.setup.origin, partner),
                     use_container_width=True)


def label(setup: Setup) -> str:
    return state.label_of(setup.origin) if setup.origin in state.examples() else i18n.t(state.YOUR_SETUP)


def weight(value: float) -> str:
    """A weight in the reader's way: 0,19; 1 − 1,3e-14, not 1,00."""
    return i18n.numbers_in(number_text.format_number(value, near_one=True))


def output_number(value: float) -> str:
    return i18n.numbers_in(number_text.format_number(value))


def difference(pinned: Setup, a, current: Current) -> None:
    """Weights and output of A and B side by side, and B − A cell by cell with its largest change."""
    b, tokens, kv_tokens = current.result, current.setup.tokens, current.setup.key_tokens
    if a.weights.shape != b.weights.shape or a.output.shape != b.output.shape:
        st.warning(md(i18n.t("A's sizes differ from B's (weights {a} against {b}): cells can only be "
                             "compared between setups of one shape. Unpin A, or change the sizes back."),
                      a=" × ".join(map(str, a.weights.shape)), b=" × ".join(map(str, b.weights.shape))),
                   icon=":material/warning:")
        return
    if pinned.tokens != current.setup.tokens:
        st.caption(i18n.t("The tokens differ: cells are labelled with B's tokens."))
    (head, query, key), before, after = largest_change(a.weights, b.weights)
    if before == after:
        st.markdown(i18n.t("A and B give the same attention weights in every cell."))
    else:
        st.markdown(md(i18n.t("**Largest change in the weights:** head {head}, query '{query}', key '{key}': "
                              "**{before} → {after}**"),
                       head=f"{head + 1:d}", query=tokens[query], key=kv_tokens[key], before=weight(before),
                       after=weight(after)))
    heads = [i18n.t("head {number}").format(number=i + 1) for i in range(b.n_heads)]
    for column, (name, result) in zip(st.columns(2), (("A", a), ("B", b)), strict=True):
        with column:
            chart(figure(figures.head_grids, result.weights, tokens, kv_tokens, kind="weights",
                         mask=result.mask,
                         head_names=[i18n.t("{setup}: {head}").format(setup=name, head=h) for h in heads],
                         width=figure_layout.HALF_WIDTH),
                  key=f"compare_weights_{name}")
    delta = b.weights - a.weights  # [h, n_q, n_k]
    chart(figure(figures.head_grids, delta, tokens, kv_tokens, kind="signed",
                 head_names=[i18n.t("B − A: {head}").format(head=h) for h in heads]),
          key="compare_weights_delta")
    (row, column), out_before, out_after = largest_change(a.output, b.output)
    gap = float(np.max(np.abs(b.output - a.output)))
    output_change = (i18n.t("**Output:** the outputs are equal in every cell.") if gap == 0 else
                     md(i18n.t("**Output:** largest change at token '{token}', column {column}: "
                               "{before} → {after}"),
                        token=tokens[row], column=f"{column + 1:d}", before=output_number(out_before),
                        after=output_number(out_after)))
    st.markdown(output_change)
    chart(figure(figures.side_by_side, a.output, b.output, tokens, left_title=i18n.t("A: output"),
                 right_title=i18n.t("B: output")),
          key="compare_output")
