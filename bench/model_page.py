"""Server cost of the real-model page (issue 9) at 16, 128 and 512 word pieces.

Run: PYTHONPATH=. .venv/bin/python bench/model_page.py
AppTest runs the page as the server would. For each length: the first run of a new text (the model
runs, then every figure is built), the median of RERUNS reruns of the same page (a view option
changed: the trace and figures come from the caches), and the chart bytes one run sends.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
RERUNS = 5
LENGTHS = (16, 128, 512)  # word pieces, [CLS] and [SEP] included


def text_of(pieces: int) -> str:
    return " ".join(["word"] * (pieces - 2))  # "word" is one word piece


def main() -> None:
    print("| word pieces | first run (s) | rerun, median (s) | charts per run (MB) |")
    print("| ---: | ---: | ---: | ---: |")
    for pieces in LENGTHS:
        at = AppTest.from_file(str(APP), default_timeout=300)
        at._page_hash = calc_hash("model")
        at.run()
        started = time.perf_counter()
        at.text_area(key="model_text").set_value(text_of(pieces)).run()
        first = time.perf_counter() - started
        assert not at.exception, at.exception
        times = []
        for i in range(RERUNS):
            started = time.perf_counter()
            at.button_group(key="pick_model_layer").set_value(f"layer {i % 6 + 1}").run()
            times.append(time.perf_counter() - started)
        megabytes = sum(len(chart.proto.spec) for chart in at.get("plotly_chart")) / 1e6
        print(f"| {pieces} | {first:.2f} | {statistics.median(times):.2f} | {megabytes:.2f} |")


if __name__ == "__main__":
    main()
