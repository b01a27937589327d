"""Entry point (placeholder until the workbench lands): one preset through the core, one heatmap."""

import plotly.express as px
import streamlit as st

from mha_core import DEFAULT_SCENARIO, all_scenarios

st.set_page_config(page_title="Multi-head attention", layout="wide")
scenario = all_scenarios()[DEFAULT_SCENARIO]
result = scenario.run()
st.title(scenario.title)
st.plotly_chart(px.imshow(result.weights[0], zmin=0, zmax=1))
