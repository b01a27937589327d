"""The script tests/app/test_taps.py serves: a timer fragment that ticks every 0.1 s (a follower's
poll, a teacher's heartbeat), a button in a fragment of its own (a forecast's chip) and a button
outside every fragment (the presenter's Next), each counting its clicks in an on_click callback."""

import streamlit as st

from app.adapter import streamlit_door
from app.adapter.fragments import fragment

streamlit_door.install_race_fixes()
TICK_SECONDS = 0.1  # shorter than the test's long task, so a tick is queued when it clicks


def count(name: str) -> None:
    st.session_state[f"{name}_count"] = st.session_state.get(f"{name}_count", 0) + 1


@fragment(run_every=TICK_SECONDS)
def ticker() -> None:
    st.caption("ticks")


@fragment
def chips() -> None:
    st.button(f"chip {st.session_state.get('chip_count', 0)}", key="chip", on_click=count, args=("chip",))


ticker()
chips()
st.button(f"next {st.session_state.get('next_count', 0)}", key="next", on_click=count, args=("next",))
