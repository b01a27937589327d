"""Quiz: questions generated from the live setup (being built)."""

import streamlit as st


def render(current, workbench_page) -> None:
    st.title("Quiz")
