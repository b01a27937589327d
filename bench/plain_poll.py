"""Baseline for bench/follower_cost.py: a page with a title and an empty fragment that reruns every
second, what Streamlit itself costs per poll and per whole-page run."""

import streamlit as st


@st.fragment(run_every=1.0)
def poll() -> None:
    pass


st.title("A room")
poll()
