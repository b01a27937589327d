"""The figures: pure builders (arrays and labels in, plotly specs out), their pixel layout, their text
alternatives and number text, and the cache that builds each once per result (figure_cache)."""
