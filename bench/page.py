"""Server-side cost of the page: the workbench against a plain 8-heatmap script, and chart bytes.

Run: PYTHONPATH=. .venv/bin/python bench/page.py
AppTest runs the script in-process exactly as the server would (same ScriptRunner), without a
browser; the medians are wall time of `at.run()` over 20 reruns after two warm-up runs.
"""

from __future__ import annotations

import datetime
import platform
import statistics
import time
from pathlib import Path

import streamlit
from streamlit.testing.v1 import AppTest

from app.grids.editors import editor_key

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app" / "streamlit_app.py"
PLAIN = ROOT / "bench" / "plain_heatmaps.py"
RERUNS = 20


def median_rerun(at: AppTest) -> float:
    at.run()
    at.run()
    times = []
    for _ in range(RERUNS):
        started = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def median_edit_rerun(at: AppTest) -> float:
    """Reruns that each carry a new embedding value, so no figure comes from the cache."""
    at.run()
    times = []
    for i in range(RERUNS):
        key = editor_key("x", at.session_state["versions"]["x"])
        at.session_state[key] = {"edited_rows": {2: {"c0": repr(1.0 + 0.01 * i)}}, "added_rows": [],
                                 "deleted_rows": []}
        started = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def chart_bytes(at: AppTest) -> int:
    return sum(len(chart.proto.spec) for chart in at.get("plotly_chart"))


def classroom_app(n: int, h: int, d_model: int) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.selectbox(key="example_picker").set_value("random (seeded)").run()
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(n))).run()
    at.number_input(key="d_model").set_value(d_model).run()
    at.number_input(key="n_heads").set_value(h).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def main() -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"# bench/page.py  {datetime.date.today()}  {cpu}  streamlit {streamlit.__version__}")
    page = AppTest.from_file(str(APP), default_timeout=120)
    plain = AppTest.from_file(str(PLAIN), default_timeout=120)
    page_s, plain_s = median_rerun(page), median_rerun(plain)
    print(f"| default example (the cat sat, n=3, h=2) | {page_s * 1e3:.1f} ms | plain 8 heatmaps "
          f"{plain_s * 1e3:.1f} ms | ratio {page_s / plain_s:.2f} (target <= 2) | "
          f"{chart_bytes(page) / 1e3:.1f} kB chart data |")
    edited = median_edit_rerun(AppTest.from_file(str(APP), default_timeout=120))
    print(f"| default example, every rerun an edit (no cached figures) | {edited * 1e3:.1f} ms | | "
          f"ratio {edited / plain_s:.2f} | |")
    for n, h, d_model in ((8, 4, 16), (16, 8, 32)):
        at = classroom_app(n, h, d_model)
        seconds = median_rerun(at)
        print(f"| random, n={n}, h={h}, d_model={d_model} | {seconds * 1e3:.1f} ms | | | "
              f"{chart_bytes(at) / 1e3:.1f} kB chart data (target < 300) |")


if __name__ == "__main__":
    main()
