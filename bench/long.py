"""The workbench with long sequences (issue 9): server time and chart bytes per rerun at
n = 512 (h = 8, d_model 512) and n = 1024 (h = 12, d_model 768), and what the same weights would
cost as per-cell heatmaps (every cell a number, as before the pictures).

Run: PYTHONPATH=. .venv/bin/python bench/long.py
AppTest runs the page as the server would: the first run after typing the tokens (compute and
build every figure), then the median of RERUNS reruns with nothing changed (the last result and
the figures come from their caches), then the chart bytes one run sends.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from unittest import mock

from streamlit.testing.v1 import AppTest

from app import result_cache
from app.charts import figures

APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
RERUNS = 5
CASES = ((512, 8, 512), (1024, 12, 768))  # n, h, d_model


def opened(n: int, h: int, d_model: int) -> tuple[AppTest, float]:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.run()
    at.selectbox(key="example_picker").set_value("random (seeded)").run()
    at.number_input(key="n_heads").set_value(h).run()
    at.number_input(key="d_model").set_value(d_model).run()
    started = time.perf_counter()
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(n))).run()
    return at, time.perf_counter() - started


def main() -> None:
    print("| n | h | d_model | first run (s) | rerun, median (s) | charts per run (MB) "
          "| weights as cells (MB) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, h, d_model in CASES:
        at, first = opened(n, h, d_model)
        assert not at.exception and not at.error, at.error
        times = []
        for _ in range(RERUNS):
            started = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - started)
        sent = sum(len(chart.proto.spec) for chart in at.get("plotly_chart")) / 1e6
        result = result_cache.result_of(at.session_state["result_key"])
        labels = [f"w{i}" for i in range(n)]
        with mock.patch.object(figures, "IMAGE_FROM_CELLS", 10**12):  # every cell as a number
            naive = figures.head_grids(result.weights, labels, labels, kind="weights")
        naive_mb = len(json.dumps(naive.to_dict())) / 1e6
        print(f"| {n} | {h} | {d_model} | {first:.2f} | {statistics.median(times):.2f} | {sent:.2f} | "
              f"{naive_mb:.1f} |")


if __name__ == "__main__":
    main()
