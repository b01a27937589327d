"""The textbook's worked examples: what each teaches, and a button to replay it."""

import streamlit as st

from app import state


def open_preset(key: str) -> None:
    st.session_state.preset = key
    state.load_preset()


st.title("Worked examples")
st.caption("Every example of the textbook, ready to replay with its exact numbers.")
for key, scenario in state.scenarios().items():
    with st.container(border=True):
        st.subheader(scenario.title)
        st.caption(scenario.source)
        st.write(scenario.story)
        if scenario.choices:
            st.caption(f"Our choices where the textbook is silent: {scenario.choices}")
        if st.button("Open in the workbench", key=f"open_{key}", on_click=open_preset, args=(key,)):
            st.switch_page("views/workbench.py")
