"""Entry point, a picture frame: page config, state initialised once, navigation."""

import streamlit as st

from app import state, widgets

st.set_page_config(page_title="Multi-head attention, step by step", page_icon="🔭", layout="wide")
state.init_state()
st.session_state.inputs = widgets.sidebar_ui()  # shared by every page, so its state survives navigation
page = st.navigation([
    st.Page("views/workbench.py", title="Workbench", icon="🧮", default=True),
    st.Page("views/textbook.py", title="Worked examples", icon="📖"),
])
page.run()
