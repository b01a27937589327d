"""Baseline page for bench/page.py: eight unadorned n x n heatmaps and nothing else."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

n = int(st.session_state.get("n", 3))
rng = np.random.default_rng(0)
for i in range(8):
    st.plotly_chart(go.Figure(go.Heatmap(z=rng.random((n, n)))), key=f"plain_{i}")
