"""What a person waits for in Chromium: a cell edit until the weights change, and a preset switch
until every chart has painted.

Run: PYTHONPATH=. .venv/bin/python bench/browser.py [--edits 10]

Starts one server (tests/live_server.py) and Debian's Chromium (Playwright) at 1280 x 720. Edit:
click X's cell ('sat', d1), type a new value, press Enter; the clock runs from Enter until the
weights heatmap's data in the page differ from before. Switch: pick a preset in the picker; the
clock runs from the click on its option until every chart of the page has painted (example H and
I are the 512-wide ones). A fresh load of a link is timed too (a new browser context: the app's
own JavaScript loads first). Medians and ranges are printed; a quiet machine is assumed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from playwright.sync_api import sync_playwright

from tests.live_server import streamlit_server
from tests.test_browser import CHROMIUM, FLAGS, IDLE, READ_WEIGHTS, WEIGHTS, click_cell

ALL_PAINTED = """() => {
    const plots = document.querySelectorAll("[class*='st-key-chart_'] .js-plotly-plot");
    return plots.length >= 8 && Array.from(plots).every(p => p._fullLayout && p.querySelector(
        ".heatmaplayer image, .heatmaplayer .hm, .barlayer .point, .plot .trace"));
}"""
SWITCHES = ("H: cross-attention", "I: count the parameters", "The cat sat: two heads")


def edit_seconds(page, value: str) -> float:
    before = page.evaluate(f"() => JSON.stringify(({READ_WEIGHTS})())")
    click_cell(page, editor_index=0, row=2, col_from_right=2)  # X: row 'sat', column d1
    page.wait_for_timeout(300)
    page.keyboard.type(value, delay=50)
    page.wait_for_timeout(200)
    started = time.perf_counter()
    page.keyboard.press("Enter")
    page.wait_for_function(f"(old) => JSON.stringify(({READ_WEIGHTS})()) !== old", arg=before,
                           timeout=20_000)
    seconds = time.perf_counter() - started
    page.wait_for_selector(IDLE, timeout=20_000)
    page.wait_for_timeout(500)
    return seconds


def switch_seconds(page, title: str) -> float:
    page.locator(".st-key-preset_picker input").click()
    option = page.get_by_role("option", name=title).first
    option.wait_for(timeout=10_000)
    started = time.perf_counter()
    option.click()
    page.wait_for_function(f"() => document.querySelector('.st-key-preset_picker input').value"
                           f".startsWith({title!r})", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    page.wait_for_function(ALL_PAINTED, timeout=30_000)
    seconds = time.perf_counter() - started
    page.wait_for_timeout(500)
    return seconds


def summary(name: str, seconds: list[float]) -> str:
    return (f"| {name} | {statistics.median(seconds):.2f} s | {min(seconds):.2f} to {max(seconds):.2f} s | "
            f"{len(seconds)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--loads", type=int, default=3)
    args = parser.parse_args()
    with streamlit_server() as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.goto(url)
        page.wait_for_selector(WEIGHTS, timeout=60_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        page.set_viewport_size({"width": 1280, "height": 3000})  # the X grid and the weights in view
        page.wait_for_timeout(1000)
        edits = [edit_seconds(page, str(1.5 + 0.25 * i)) for i in range(args.edits)]
        page.set_viewport_size({"width": 1280, "height": 720})
        switches = {title: [] for title in SWITCHES}
        for _ in range(3):  # each switch leaves another preset
            for title in SWITCHES:
                switches[title].append(switch_seconds(page, title))
        loads = []
        for _ in range(args.loads):
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            fresh = context.new_page()
            started = time.perf_counter()
            fresh.goto(f"{url}/?preset=ex_h_cross_attention")
            fresh.wait_for_function(ALL_PAINTED, timeout=60_000)
            loads.append(time.perf_counter() - started)
            context.close()
        browser.close()
    print("| measure | median | range | n |")
    print("|---|---|---|---|")
    print(summary("cell edit: Enter until the weights change", edits))
    for title, seconds in switches.items():
        print(summary(f"switch to '{title}': click until every chart painted", seconds))
    print(summary("fresh browser context, ?preset=ex_h_cross_attention, until every chart painted", loads))


if __name__ == "__main__":
    main()
