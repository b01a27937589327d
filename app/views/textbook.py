"""The course's worked examples: what each teaches, and a button to replay it."""

import streamlit as st

from app import state
from app.widgets import md_literal


def render(workbench_page) -> None:
    st.title("Worked examples")
    st.caption("Every example of the course, ready to replay with its exact numbers.")
    for key, scenario in state.presets().items():
        with st.container(border=True):
            st.subheader(md_literal(scenario.title))
            st.caption(md_literal(scenario.source))
            st.write(md_literal(scenario.story))
            if scenario.choices:
                st.caption(f"Our choices where the chapter is silent: {md_literal(scenario.choices)}")
            if st.button("Open in the workbench", key=f"open_{key}", on_click=state.load_preset, args=(key,)):
                st.switch_page(workbench_page)
