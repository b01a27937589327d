"""The matrix editors drawn: each array's st.data_editor (or the same numbers as a table), the steps'
Edit toggles, and the sidebar's "Fill a matrix". Their rules (keys, cells parsed) are app/grids/editors.py's;
their labels app/grids/editor_labels.py's."""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.charts import number_text
from app.grids import editors
from app.safe import lit
from app.session import session_keys, state
from app.widgets import choice_ui, following
from course.i18n import N_, number_marks
from mha_core import LIMITS, Sizes
from mha_core.init import FILLS
from mha_core.setup import SPECS

FILL_LABELS = {"random": N_("random"), "identity": N_("identity"), "zeros": N_("zeros")}  # mha_core's FILLS
FILL_OPEN = "fill_open"  # the sidebar's "Fill a matrix" expander, open or not
EDIT_PROJECTIONS, EDIT_OUTPUT_MIX = "edit_projections", "edit_output_mix"  # projections' and concatenation's
EDITOR_FRAMES = "editor_frames"
session_keys.register(session_keys.Key(EDIT_PROJECTIONS, __name__, False),
                      session_keys.Key(EDIT_OUTPUT_MIX, __name__, False),
                      session_keys.Key(FILL_OPEN, __name__, False),
                      session_keys.Key(EDITOR_FRAMES, __name__))


def fill_ui(sizes: Sizes, seed: int) -> None:
    """Fill a chosen array (or one head of it) with random, identity/select or zeros."""
    with st.sidebar.expander(i18n.t("Fill a matrix"), key=FILL_OPEN, on_change="rerun") as box:
        if not box.open:  # its contents run only while it is open (a closed one cost every run its widgets)
            return
        targets = [spec.name for spec in sizes.present() if not spec.name.startswith("b_")]
        target = st.selectbox(i18n.t("matrix"), targets, key="fill_target",
                              format_func=lambda n: SPECS[n].label)
        head = None
        if SPECS[target].per_head:
            grouped = target != "w_q" and sizes.groups < sizes.n_heads  # W_K, W_V are [g, ...]
            count, name = ((sizes.groups, N_("key/value head {number}")) if grouped
                           else (sizes.n_heads, N_("head {number}")))
            heads = [i18n.t("all heads")] + [i18n.t(name).format(number=f"{i + 1:d}") for i in range(count)]
            head = choice_ui(st, i18n.t("which head"), heads, "fill_head") - 1
            head = None if head < 0 else head
        kind = st.radio(i18n.t("with"), FILLS, key="fill_kind", horizontal=True,
                        format_func=i18n.labels(FILL_LABELS))
        st.button(i18n.t("Fill"), key="fill_go", on_click=state.fill_array, args=(target, kind, seed, head))


def editor_ui(name: str, rows: list[str], columns: list[str], *, head: int | None = None,
              boolean: bool = False, editable: bool = True) -> None:
    """An st.data_editor on the array's base (one head of it for per-head arrays); its edits are
    read back through session state (state.read), never from its return value. Not ``editable``
    (or for a student following a room): the same numbers as a table."""
    base = st.session_state[state.WORK][name]
    grid = editors.as_grid(base[head] if head is not None else base)
    n_rows, n_cols = grid.shape
    if max(n_rows, n_cols) > LIMITS.editable:
        st.caption(i18n.t("{rows} × {columns}: too large to edit cell by cell (limit {limit}); use 'Fill a "
                          "matrix' in the sidebar.").format(rows=f"{n_rows:d}", columns=f"{n_cols:d}",
                                                            limit=f"{LIMITS.editable:d}"))
        return
    if following() or not editable:  # a following student reads the teacher's grids, not edits them
        st.markdown(read_only_grid(grid, rows, columns, boolean))
        return
    labelled = zip((editors.column_name(j) for j in range(n_cols)), columns, strict=True)
    if boolean:
        config = {key: st.column_config.CheckboxColumn(label) for key, label in labelled}
    else:
        config = {key: st.column_config.TextColumn(label, width="small") for key, label in labelled}
    config[editors.ROW_LABELS] = st.column_config.TextColumn("", disabled=True)
    key = state.key_of(name, head)
    try:
        st.data_editor(_frame(key, grid, rows, boolean), key=key, column_config=config, hide_index=True,
                       width="content", on_change=state.keep_edits, args=(name, key))
    except Exception:  # noqa: BLE001 - Streamlit applies the sent edits itself and can fail on any
        # edit a grid could not have sent (row 9 of 3, a column it does not have): the page has
        # read what it could (state.read, whose message says what was ignored), so the editor
        # starts again from that.
        state.set_base(name, state.read(name).value)
        editor_ui(name, rows, columns, head=head, boolean=boolean)


EDIT_LABEL = N_("Edit {matrices}")


def edit_toggle_ui(key: str, matrices: str) -> bool:
    """'Edit W_Q, W_K, W_V': a step's weights are tables until this is on, then editors (each editor
    drawn costs every rerun about a millisecond and its grid's script in the browser; X, the one
    edited most, is always an editor). A following student has nothing to edit."""
    if following():
        return False
    return st.toggle(i18n.t(EDIT_LABEL).format(matrices=lit(matrices)), key=key)


def read_only_grid(grid, rows: list[str], columns: list[str], boolean: bool = False) -> str:
    """An editor's grid [r, c] as a Markdown table: the cells as the editor shows them (shortened to
    four decimals when longer) written as the reader's language writes numbers, as the editor's are
    (read back with a point or a comma, mha_core.setup.parse_number), labels literal. Drawn for a following
    student instead of the editors, it took the follower's workbench script from 25.6 to 15.3 ms (a
    whole class reruns at once when the teacher changes something).
    """
    def cell(value: float) -> str:
        if boolean:
            return "✓" if value else "·"
        text = editors.cell_text(value)
        return i18n.numbers_in(text if len(text) <= 10 else number_text.format_number(value, 4))

    header = "| | " + " | ".join(lit(c) for c in columns) + " |"
    rule = "| --- |" + " ---: |" * len(columns)
    body = ["| " + lit(label) + " | " + " | ".join(cell(v) for v in row) + " |"
            for label, row in zip(rows, grid.tolist(), strict=True)]
    return "\n".join([header, rule, *body])


def _frame(key: str, grid, rows: list[str], boolean: bool):
    """The editor's input frame, built once per base version, row labels and decimal mark (a key names
    a version of the base, so the frame can only change with its row labels and the reader's language)."""
    cache = st.session_state.setdefault("editor_frames", {})
    cached = cache.get(key)
    mark = number_marks(i18n.language())[0]
    if cached is None or cached[0] != (rows, mark):
        if len(cache) > 64:  # old versions' frames
            cache.clear()
        cached = cache[key] = ((list(rows), mark), editors.grid_frame(grid, rows, boolean, mark))
    return cached[1]
