"""Server CPU of one rerun of the default workbench against a plain 8-heatmap script, interleaved.

Run: PYTHONPATH=. .venv/bin/python bench/rerun_cpu.py [--runs 40]
AppTest runs the script in-process exactly as the server would. The page and bench/plain_heatmaps.py
run alternately in one process (a plain rerun of each, then an edit of X's cell 'sat', d1 on the
page, which no cached figure serves), and each run is timed twice: wall time, and the process's CPU
time (time.process_time), which a busy neighbour on a shared machine inflates far less. Medians.
Copy it into another checkout to measure that one the same way.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.grids.editors import editor_key

ROOT = Path(__file__).resolve().parents[1]
APP, PLAIN = ROOT / "app" / "streamlit_app.py", ROOT / "bench" / "plain_heatmaps.py"


def timed(at: AppTest) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    at.run()
    return time.perf_counter() - wall, time.process_time() - cpu


def edit(at: AppTest, i: int) -> None:
    key = editor_key("x", at.session_state["versions"]["x"])
    at.session_state[key] = {"edited_rows": {2: {"c0": repr(1.0 + 0.001 * i)}}, "added_rows": [],
                             "deleted_rows": []}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    page = AppTest.from_file(str(APP), default_timeout=120)
    plain = AppTest.from_file(str(PLAIN), default_timeout=120)
    for at in (page, plain, page, plain):
        at.run()
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "rerun": [], "edit": []}
    for i in range(args.runs):
        times["plain"].append(timed(plain))
        times["rerun"].append(timed(page))
        edit(page, i)
        times["edit"].append(timed(page))
    assert not page.exception, page.exception
    median = {name: (statistics.median(w for w, _ in runs) * 1e3, statistics.median(c for _, c in runs) * 1e3)
              for name, runs in times.items()}
    print("| run | wall | CPU | CPU / plain |")
    print("|---|---|---|---|")
    for name, label in (("plain", "plain script, 8 heatmaps"), ("rerun", "workbench, plain rerun"),
                        ("edit", "workbench, an edit of X")):
        wall, cpu = median[name]
        print(f"| {label} | {wall:.1f} ms | {cpu:.1f} ms | {cpu / median['plain'][1]:.2f} |")


if __name__ == "__main__":
    main()
