"""The course's worked examples: what each teaches, and a button to replay it."""

import streamlit as st

from app import state
from app.safe import lit


def render(workbench_page) -> None:
    st.title("Worked examples")
    st.caption("Every example of the course, ready to replay with its exact numbers.")
    for key, scenario in state.presets().items():
        with st.container(border=True):
            st.subheader(lit(scenario.title))
            st.caption(lit(scenario.source))
            st.write(lit(scenario.story))
            if scenario.choices:
                st.caption(f"Our choices where the chapter is silent: {lit(scenario.choices)}")
            if st.button("Open in the workbench", key=f"open_{key}", on_click=state.open_over_edits,
                         args=(state.load_preset, key)):
                state.switch_page(workbench_page)
