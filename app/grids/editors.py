"""The rules of the matrix editors, in one place: widget keys, columns, reading edits back.

Each editable array has a *base* (what its st.data_editor was given) and a version number
in its widget key. The value the page uses is the base with the editor's pending
``edited_rows`` applied; the editor's returned frame is never fed back in (streamlit issue
7749). Cells are text columns, written with the reader's decimal mark (0,29 in German); what a
person typed is read here by the one reader (mha_core/typed_number.py's ``read_cell`` through
``parse_number``: "1,5" and "1.5" are 1.5 in every language), so "1e308" or "0x10" get a message
naming the cell, in the reader's language, instead of being silently read as something else.
Edits are checked on the server: a browser, or anything speaking its websocket protocol, can send
any row, column or value.

Streamlit drops the state of a widget that a run does not draw (another head, another
page); ``keep_edits`` copies the edits on every change, and ``restore_dropped_edits``
folds them into the base when that happens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mha_core.setup import parse_number
from mha_core.typed_number import Refused

_COLUMN = re.compile(r"c(\d{1,4})")


def editor_key(name: str, version: int, head: int | None = None) -> str:
    """The widget key of an array's editor (one per head for per-head arrays)."""
    suffix = "" if head is None else f"_{head}"
    return f"ed_{name}{suffix}_v{version}"


def column_name(j: int) -> str:
    return f"c{j}"


def as_grid(array: np.ndarray) -> np.ndarray:  # [d] -> [1, d]; [r, c] unchanged
    """What an editor shows: a vector (a bias) is a one-row grid."""
    return array[None, :] if array.ndim == 1 else array


def cell_text(value: float, decimal_mark: str = ".") -> str:
    """A number as an editor shows it: exact (shortest round-trip), without a trailing '.0', with the
    reader's decimal mark (read back by ``parse_number`` either way)."""
    text = repr(float(value))
    return (text[:-2] if text.endswith(".0") else text).replace(".", decimal_mark)


ROW_LABELS = "row"  # the read-only first column that names the rows


def grid_frame(grid: np.ndarray, rows: list[str], boolean: bool = False,
               decimal_mark: str = ".") -> pd.DataFrame:
    """The editor's input: the row labels, then one text column per matrix column (check boxes
    for a mask), numbers with the reader's ``decimal_mark``. The labels are a column rather than the
    index: Streamlit hashes a non-range index on every run (half of an editor's cost), and a changed
    index would reset the edits."""
    columns = [column_name(j) for j in range(grid.shape[1])]
    cells = (grid.astype(bool) if boolean
             else [[cell_text(v, decimal_mark) for v in row] for row in grid.tolist()])
    frame = pd.DataFrame(cells, columns=pd.Index(columns, dtype=object), dtype=None if boolean else object)
    frame.insert(0, ROW_LABELS, pd.Series(rows, dtype=object))
    frame.columns = pd.Index(frame.columns, dtype=object)  # pandas' Arrow strings are slow to check here
    return frame


@dataclass(frozen=True)
class BadCell:
    row: int
    col: int
    refused: Refused  # why: its kind and what was typed (course/answers.py's refusal words it)


def apply_edits(grid: np.ndarray, edited_rows, boolean: bool = False) -> tuple[np.ndarray, list[BadCell],
                                                                                 int]:
    """grid [r, c] with the editor's edits ({row: {"c<j>": value}}) applied to a copy.

    Returns the new grid (NaN where a typed cell is not a number), the cells at fault, and
    how many edits named no cell of this grid (ignored).
    """
    out = grid.astype(float).copy()
    bad, ignored = [], 0
    rows, cols = grid.shape
    for row, changes in (edited_rows.items() if isinstance(edited_rows, dict) else ()):
        i = _index(row, rows)
        if i is None or not isinstance(changes, dict):
            ignored += 1
            continue
        for column, value in changes.items():
            match = _COLUMN.fullmatch(str(column))
            j = int(match.group(1)) if match else None
            if j is None or j >= cols:
                ignored += 1
                continue
            if boolean:
                out[i, j] = 1.0 if value is True else 0.0
                ignored += value not in (True, False)
                continue
            try:
                out[i, j] = parse_number(_typed(value))
            except Refused as error:
                out[i, j] = np.nan
                bad.append(BadCell(i, j, error))
    return out, bad, ignored


def _index(row, n: int) -> int | None:
    try:
        i = int(row)
    except (TypeError, ValueError):
        return None
    return i if 0 <= i < n and str(row).strip().lstrip("+").isdigit() else None


def _typed(value) -> str:
    """What the person typed, as text (a client may send a number or nothing)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return repr(value)
    return str(value)


def pending_edits(widget_state, kept: dict, key: str) -> dict:
    """An editor's pending edits: from its widget state, or, once Streamlit has dropped that
    (the editor was not drawn in a run), from our kept copy."""
    if isinstance(widget_state, dict):
        edited = widget_state.get("edited_rows", {})
        return edited if isinstance(edited, dict) else {}
    return kept.get(key, (None, {}))[1]
