"""The editors' row and column labels (tokens, d1, q1, h2·1) and the message naming a grid's first
cell at fault."""

from __future__ import annotations

from app import i18n
from app.charts import figure_style
from app.session import state
from course.answers import refusal
from course.i18n import N_
from mha_core import Sizes
from mha_core.setup import SPECS


def grid_labels(name: str, tokens, kv_tokens, sizes: Sizes) -> tuple[list[str], list[str]]:
    """An editor's row and column labels: tokens for token axes ('1 · the'; a mask's columns are
    the keys), d1, d2, ... for d_model, q1, k1, v1, ... for a head's width, h2·1 for W_O's rows."""
    if name == state.MASK:
        return row_labels(tokens), row_labels(kv_tokens)
    if name in ("x", "x_kv"):
        return row_labels(tokens if name == "x" else kv_tokens), figure_style.dims("d", sizes.d_model)
    if name == "w_o":
        heads = [f"h{i + 1}·{j + 1}" for i in range(sizes.n_heads) for j in range(sizes.d_v)]
        return heads, figure_style.dims("d", sizes.d_model)
    width = sizes.shape(name)[-1]
    if name.startswith("b_"):
        return [SPECS[name].label], figure_style.dims("o" if name == "b_o" else name[-1], width)
    return figure_style.dims("d", sizes.d_model), figure_style.dims(name[-1], width)


def row_labels(tokens) -> list[str]:
    """Unique, literal row labels: '1 · the', '5 · the'."""
    return [f"{i + 1} · {token}" for i, token in enumerate(tokens)]


def cell_message(name: str, current: state.Read, tokens, kv_tokens, sizes: Sizes) -> str:
    """One message naming the first cell at fault (and how many there are)."""
    label = SPECS[name].label
    if not current.bad:
        return i18n.t("{label}: {count} edit(s) named a cell this grid does not have and were ignored; the "
                      "grid's other cells keep their values.").format(label=label,
                                                                       count=f"{current.ignored:d}")
    head, cell = current.bad[0]
    rows, columns = grid_labels(name, tokens, kv_tokens, sizes)
    row = rows[cell.row] if cell.row < len(rows) else str(cell.row + 1)
    column = columns[cell.col] if cell.col < len(columns) else str(cell.col + 1)
    message = BAD_CELL[head is not None, len(current.bad) > 1]
    return i18n.t(message).format(label=label, head=f"{(head or 0) + 1:d}", row=row, column=column,
                                  reason=refusal(cell.refused, i18n.language()),
                                  count=f"{len(current.bad):d}")


BAD_CELL = {  # (a head's grid?, more than one cell at fault?) -> the message naming the first one
    (False, False): N_(
        "{label}, row {row}, column {column}: {reason}. Type a number such as 0.5, -2 or 1e-3; the other "
        "inputs keep their values and the steps below come back once it is fixed."),
    (True, False): N_(
        "{label} of head {head}, row {row}, column {column}: {reason}. Type a number such as 0.5, -2 or "
        "1e-3; the other inputs keep their values and the steps below come back once it is fixed."),
    (False, True): N_(
        "{label}, row {row}, column {column}: {reason} ({count} cells in all). Type a number such as 0.5, "
        "-2 or 1e-3; the other inputs keep their values and the steps below come back once it is fixed."),
    (True, True): N_(
        "{label} of head {head}, row {row}, column {column}: {reason} ({count} cells in all). Type a number "
        "such as 0.5, -2 or 1e-3; the other inputs keep their values and the steps below come back once it "
        "is fixed."),
}
