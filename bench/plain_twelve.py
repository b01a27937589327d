"""Baseline for the first chart in a fresh browser (bench/browser.py --first-chart): a plain
Streamlit script drawing 12 small heatmaps, nothing else."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

rng = np.random.default_rng(0)
for i in range(12):
    st.plotly_chart(go.Figure(go.Heatmap(z=rng.random((3, 3)))), key=f"plain_{i}")
