"""The plotly spec a chart builder returns: a plain dict kept as it was built (FigureSpec), its arrays
as typed arrays, every text in INK. app/charts/figures.py and the other figure modules build through
``figure_spec``."""

from __future__ import annotations

import base64
import re

import numpy as np
import plotly.graph_objects as go

# Every text on a chart: Streamlit's body text, 12.6:1 on white. st.plotly_chart's theme replaces a
# figure's template with its own, whose ticks and axis titles are #808495 (3.7:1, under WCAG AA's 4.5:1);
# colours set on the figure's own layout win over the template (see inked).
INK = "#31333F"


class FigureSpec(go.Figure):
    """A figure kept as the plain spec it was built as: ``fig["data"]``, ``fig["layout"]`` and
    ``to_dict()`` give that spec itself.

    st.plotly_chart asks a figure only for ``to_dict()``; a go.Figure would build one object per
    trace and axis (most of a build, for a 16-panel grid) and deep-copy it all again on every
    run. So the constructor of go.Figure never runs here: this is a plotly figure to isinstance
    checks and plotly.io, and a dict otherwise. Specs are never changed after they are built.
    """

    def __init__(self, spec: dict):  # deliberately not go.Figure.__init__ (see above)
        object.__setattr__(self, "_spec", spec)

    def to_dict(self) -> dict:
        return self._spec

    to_plotly_json = to_dict

    def __getitem__(self, key: str):
        return self._spec[key]


# NumPy dtype -> plotly.js's typed array name (plotly.py's own table; int64 is narrowed first).
TYPED = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4",
         "float32": "f4", "float64": "f8"}
NARROWER = {"i": (np.int8, np.int16, np.int32), "u": (np.uint8, np.uint16, np.uint32)}


def typed_array(values: np.ndarray):
    """An array as plotly.js's typed array spec, the same as go.Figure makes of it (plotly.py's
    ``to_typed_array_spec``, tests/app/test_figure_spec.py), without its checks of every value's
    type, which were a tenth of a chart's build: {"dtype": "f4", "bdata": base64, "shape": "2, 3"}."""
    if values.size == 0:
        return values
    if values.dtype in (np.int64, np.uint64):  # plotly.js has no 64-bit integers: the narrowest that holds
        low, high = values.min(), values.max()
        fits = [kind for kind in NARROWER[values.dtype.kind]
                if np.iinfo(kind).min <= low and high <= np.iinfo(kind).max]
        if not fits:
            return values
        values = values.astype(fits[0])
    name = TYPED.get(str(values.dtype))
    if name is None:
        return values
    spec = {"dtype": name, "bdata": base64.b64encode(np.ascontiguousarray(values)).decode("ascii")}
    if values.ndim > 1:
        spec["shape"] = str(values.shape)[1:-1]
    return spec


def figure_spec(data: list[dict], layout: dict) -> FigureSpec:
    """The spec as plotly.js reads it: NumPy arrays as base64 typed arrays (what go.Figure would
    make of them; plain JSON lists are about twice the bytes), and an empty template, as
    st.plotly_chart's theme styles the figure in the browser."""
    for trace in data:
        for name, value in trace.items():
            if isinstance(value, np.ndarray):
                trace[name] = typed_array(value)
    return FigureSpec({"data": data, "layout": inked({"template": {}, **layout})})


def _inked_font(font: dict | None) -> dict:
    return {**(font or {}), "color": INK}


def inked(layout: dict) -> dict:
    """A copy of ``layout`` with every text in INK: the figure's font (panel titles, colour bars and
    annotations inherit it), each axis's tick labels and title, the legend and the hover labels. A layout
    that names no axis gets plain ``xaxis``/``yaxis``, so the theme's grey reaches none."""
    out = dict(layout, font=_inked_font(layout.get("font")))
    for name in ("legend", "hoverlabel"):
        out[name] = dict(layout.get(name) or {}, font=_inked_font((layout.get(name) or {}).get("font")))
    for name in {*(k for k in layout if re.fullmatch(r"[xy]axis\d*", k))} or {"xaxis", "yaxis"}:
        axis = dict(layout.get(name) or {})
        title = axis.get("title") or {}
        title = {"text": title} if isinstance(title, str) else dict(title)
        axis.update(tickfont=_inked_font(axis.get("tickfont")),
                    title=dict(title, font=_inked_font(title.get("font"))))
        out[name] = axis
    return out
