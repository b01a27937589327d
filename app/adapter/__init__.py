"""The Streamlit adapter: every private Streamlit name (streamlit_door), the app's one way to make a
fragment, and what runs in the browser beyond drawing (components v2: page_scripts, cell_opener)."""
