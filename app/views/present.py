"""Presenter mode (being built)."""

import streamlit as st


def render(current, inputs) -> None:
    st.title("Present")
