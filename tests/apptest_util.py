"""Helpers to read what an AppTest run drew."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

ENTRY = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


def fresh_app() -> AppTest:
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.run()
    return at


def chart_specs(at: AppTest) -> dict[str, dict]:
    """Every plotly chart of the last run, by the key it was drawn with."""
    specs = {}
    for element in at.get("plotly_chart"):
        key = element.proto.id.rsplit("-", 1)[-1]
        specs[key] = json.loads(element.proto.spec)
    return specs


def decode(value) -> np.ndarray:
    """A plotly array as sent: a plain list or a {dtype, bdata[, shape]} base64 blob."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            array = array.reshape([int(s) for s in str(shape).split(",")])
        return array
    return np.array(value, dtype=float)


def heatmap_values(spec: dict) -> list[np.ndarray]:
    """The z of every heatmap trace in a figure spec, in trace order (one per head)."""
    return [decode(trace["z"]).astype(float) for trace in spec["data"] if trace["type"] == "heatmap"]


def edit_cell(at: AppTest, name: str, row: int, col: int, value, head: int | None = None) -> None:
    """Put an edit into a matrix editor's widget state, as the browser would, and rerun."""
    version = at.session_state["versions"][name]
    suffix = "" if head is None else f"_{head}"
    key = f"ed_{name}{suffix}_v{version}"
    at.session_state[key] = {"edited_rows": {row: {f"c{col}": value}}, "added_rows": [],
                              "deleted_rows": []}
    at.run()


def texts(elements) -> list[str]:
    return [element.value for element in elements]
