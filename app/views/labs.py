"""Labs: the score lab, the scaling lab, size and cost (being built)."""

import streamlit as st


def render() -> None:
    st.title("Labs")
