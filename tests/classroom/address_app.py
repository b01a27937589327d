"""The script tests/classroom/test_client_address.py serves: who the live class's limits take this
session for (identity.client_address) and the unnamed proxy the server has seen so far
(proxy.unconfigured), each run passing live.follower_turn as the app's runs do."""

import streamlit as st

from app.room import identity, live, proxy
from app.safe import lit

with live.follower_turn():
    st.markdown(lit(f"client: {identity.client_address()}"))
    st.markdown(lit(f"unnamed proxy: {proxy.unconfigured()}"))
