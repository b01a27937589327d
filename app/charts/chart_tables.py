"""A chart's numbers as tables: the Table a text alternative holds, tables cut by rows to a budget
of cells, and tables as HTML for the page (every label and cell through html_text)."""

from __future__ import annotations

from dataclasses import dataclass

from app.safe import html_text
from course.i18n import ENGLISH, N_, translator

TABLE_LABEL = N_("Numbers as a table")
TABLE_CUT = N_("The first {shown} of {total} rows.")

MAX_TABLE_CELLS = 5000  # cells of all of a chart's tables together; longer tables are cut by rows


@dataclass(frozen=True)
class Table:
    """One table: a caption, column labels, and per row a label and its cells (all plain text)."""

    caption: str
    columns: list[str]
    rows: list[tuple[str, list[str]]]
    note: str = ""


def cut_tables(tables: list[Table], budget: int = MAX_TABLE_CELLS, *, language: str = ENGLISH) -> list[Table]:
    """Tables cut by rows so that all of them together hold at most ``budget`` cells."""
    cut = []
    for table in tables:
        width = max(1, len(table.columns))
        keep = max(1, budget // width) if budget > 0 else 0
        if keep < len(table.rows):
            table = Table(table.caption, table.columns, table.rows[:keep],
                          translator(language)(TABLE_CUT).format(shown=keep, total=len(table.rows)))
        budget -= width * len(table.rows)
        cut.append(table)
    return cut


def table_html(tables: list[Table]) -> str:
    """Tables as HTML for st.markdown(..., unsafe_allow_html=True): every label through html_text,
    headers as <th scope>, a caption per table."""
    out = []
    for table in tables:
        head = "".join(f'<th scope="col">{html_text(c)}</th>' for c in table.columns)
        # a header for the row labels' column too, or an empty corner above them
        labelled = bool(table.rows) and len(table.rows[0][1]) < len(table.columns)
        corner = "" if labelled else "<td></td>"
        body = "".join(f'<tr><th scope="row">{html_text(label)}</th>'
                       + "".join(f"<td>{html_text(cell)}</td>" for cell in cells) + "</tr>"
                       for label, cells in table.rows)
        note = f"<p>{html_text(table.note)}</p>" if table.note else ""
        out.append(f'<table class="chart-numbers"><caption>{html_text(table.caption)}</caption>'
                   f"<thead><tr>{corner}{head}</tr></thead><tbody>{body}</tbody></table>{note}")
    return "\n".join(out)
