"""A heatmap cell opened from the keyboard: Enter (or Space) on a cell of the scores', scaled scores'
or weights' "Numbers as a table" opens the drill-down on that head, query and key, and moves the
focus to it, named by the cell it came from (issue 16: cells reachable by arrow keys, app/style.py,
and opened where a cell can be opened).

The browser says only which table, row and cell: three small integers, checked here before they
touch a selection (a scripted page can send anything); the drill-down's own pickers then keep them
within the setup's sizes.
"""

from __future__ import annotations

import json

import streamlit as st

from app.session import session_keys, state

OPENABLE = ("chart_scores", "chart_scaled", "chart_weights")  # head grids: table = head, row = query
KEY = "mha_cell_opener"
FOCUS = "drill_focus"  # session key: the drill-down takes the focus on this run
MOST_POSITIONS = 1 << 16  # more than any grid the page draws: anything beyond is not a cell

OPENER_JS = """
export default function (component) {
  const { setTriggerValue, data } = component;
  window.mhaOpenCell = setTriggerValue;  // the newest run's: an older one's would go nowhere
  if (data && data.focus) {  // this run opened the drill-down: give it the focus once it is drawn
    const started = Date.now();
    const focus = () => {
      const box = document.querySelector(".st-key-drill_down");
      if (!box) { if (Date.now() - started < 8000) setTimeout(focus, 100); return; }
      box.setAttribute("tabindex", "-1");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", window.mhaOpenedCell || "Drill-down");
      box.scrollIntoView({block: "start"});
      box.focus({preventScroll: true});
    };
    focus();
  }
  if (window.mhaCellOpener) return;  // one listener per tab
  window.mhaCellOpener = true;
  const openable = OPENABLE_CHARTS;
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const cell = event.target && event.target.closest && event.target.closest("table.chart-numbers td");
    const box = cell && cell.closest("[class*='_numbers']");
    const chart = box && openable.find((name) => box.classList.contains(`st-key-${name}_numbers`));
    if (!chart) return;
    const table = cell.closest("table");
    const row = cell.closest("tr");
    const head = Array.from(box.querySelectorAll("table.chart-numbers")).indexOf(table);
    const query = Array.from(table.querySelectorAll("tbody tr")).indexOf(row);
    const key = Array.from(row.querySelectorAll("td")).indexOf(cell);
    if (head < 0 || query < 0 || key < 0) return;
    event.preventDefault();
    window.mhaOpenedCell = `Drill-down of head ${head + 1}: ${cell.getAttribute("aria-label") || ""}`;
    window.mhaOpenCell("open", {head, query, key});
  });
}
""".replace("OPENABLE_CHARTS", json.dumps(OPENABLE))

_opener = st.components.v2.component("mha_cell_opener", html="<span></span>", js=OPENER_JS)


# The session keys this module owns (app/session/session_keys.py).
session_keys.register(session_keys.Key(FOCUS, __name__))


def cell_of(value) -> tuple[int, int, int] | None:
    """(head, query, key) from what the browser sent, or None for anything else."""
    if not isinstance(value, dict):
        return None
    cell = tuple(value.get(name) for name in ("head", "query", "key"))
    plain = all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < MOST_POSITIONS for n in cell)
    return cell if plain else None


def open_cell() -> None:
    """The browser asked to open a cell: the drill-down on it, with the focus (on_open_change)."""
    sent = st.session_state.get(KEY)
    cell = cell_of(getattr(sent, "open", None) if not isinstance(sent, dict) else sent.get("open"))
    if cell is None:
        return
    ss = st.session_state
    for name, position in zip(("drill_head", "drill_query", "drill_key"), cell, strict=True):
        ss[state.SELECTIONS][name] = position
        ss.pop(f"pick_{name}", None)  # the picker shows the selection, not its last value
    ss.drill_open = True
    ss[FOCUS] = True


def cell_opener_ui() -> None:
    """Mounted on the workbench, once per run; invisible."""
    with st.container(key="mha_cell_opener_box"):
        _opener(key=KEY, data={"focus": bool(st.session_state.pop(FOCUS, False))}, on_open_change=open_cell,
                height=0)
