"""Server-side cost of the lesson pages (issue 8): each presenter screen, the labs, the quiz.

Run: PYTHONPATH=. .venv/bin/python bench/lesson.py
AppTest runs the script in-process as the server would; each figure is the median wall time of
`at.run()` over 20 reruns after two warm-up runs, and the chart bytes sent by that run.
Also: generating a quiz and a worksheet for the largest examples, in the core alone.
"""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from app.views.present import SCREENS
from bench.page import median_rerun  # 20 reruns after two warm-up runs
from course.examples import all_examples
from course.quiz import generate
from course.worksheet import worksheet_html

APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
EXAMPLES = ("the_cat_sat_two_heads", "ex_h_cross_attention")


def opened(url_path: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for name, value in params.items():
        at.query_params[name] = value
    at._page_hash = calc_hash(url_path)
    at.run()
    return at


def chart_kib(at: AppTest) -> float:
    return sum(len(chart.proto.spec) for chart in at.get("plotly_chart")) / 1024


def reveal(at: AppTest) -> None:
    if any(button.key == "present_reveal" for button in at.button):
        at.button(key="present_reveal").click().run()


def main() -> None:
    print("| page | example | median rerun (ms) | charts (KiB) |")
    print("| --- | --- | ---: | ---: |")
    for example in EXAMPLES:
        for screen in range(1, len(SCREENS) + 1):
            at = opened("present", {"example": example, "step": str(screen)})
            reveal(at)
            print(f"| present {screen}/{len(SCREENS)} | {example} | {1000 * median_rerun(at):.0f} | "
                  f"{chart_kib(at):.0f} |")
        for page in ("labs", "quiz", "workbench"):
            at = opened(page, {"example": example})
            print(f"| {page} | {example} | {1000 * median_rerun(at):.0f} | {chart_kib(at):.0f} |")
    examples = all_examples()
    for key in ("ex_h_cross_attention", "ex_i_parameter_count"):
        setup = examples[key]
        result = setup.run()
        started = time.perf_counter()
        for seed in range(20):
            generate(setup, result, seed)
        quiz_ms = 1000 * (time.perf_counter() - started) / 20
        started = time.perf_counter()
        html = worksheet_html(setup, result, title=key, seed=0)
        sheet_ms = 1000 * (time.perf_counter() - started)
        print(f"\n{key}: 10 quiz questions {quiz_ms:.1f} ms; worksheet {sheet_ms:.1f} ms, "
              f"{len(html) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
