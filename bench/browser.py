"""What a person waits for in Chromium: a cell edit until the weights change, and an example switch
until every chart has painted.

Run: PYTHONPATH=. .venv/bin/python bench/browser.py [--edits 10]
     PYTHONPATH=. .venv/bin/python bench/browser.py --first-chart 5   (issues 16, 27: the app's first
         chart and whole page in a fresh browser against bench/plain_twelve.py's, interleaved, both
         servers warm, and the kilobytes each received)
     PYTHONPATH=. .venv/bin/python bench/browser.py --phone 5   (the same at 390 x 844, 4x CPU
         throttling, then a tokens edit)

Starts one server (tests/live_server.py) and Debian's Chromium (Playwright) at 1280 x 720. Edit:
click X's cell ('sat', d1), type a new value, press Enter; the clock runs from Enter until the
weights heatmap's data in the page differ from before. Switch: pick an example in the picker; the
clock runs from the click on its option until every chart of the page has painted (example H and
I are the 512-wide ones). A fresh load of a link is timed too (a new browser context: the app's
own JavaScript loads first). Medians and ranges are printed; a quiet machine is assumed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from playwright.sync_api import sync_playwright

from tests.app.test_browser import CHROMIUM, FLAGS, IDLE, READ_WEIGHTS, WEIGHTS, click_cell
from tests.browser_env import PHONE_AGENT
from tests.live_server import ROOT, streamlit_server

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
    page.locator(".st-key-example_picker input").click()
    option = page.get_by_role("option", name=title).first
    option.wait_for(timeout=10_000)
    started = time.perf_counter()
    option.click()
    page.wait_for_function(f"() => document.querySelector('.st-key-example_picker input').value"
                           f".startsWith({title!r})", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    page.wait_for_function(ALL_PAINTED, timeout=30_000)
    seconds = time.perf_counter() - started
    page.wait_for_timeout(500)
    return seconds


FIRST_CHART = "() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(p => p._fullLayout)"
WHOLE_PAGE = ("(n) => { const plots = document.querySelectorAll('.js-plotly-plot'); "
              "return plots.length >= n && Array.from(plots).every(p => p._fullLayout); }")
FIRST_PAINT = "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null"
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 3, "user_agent": PHONE_AGENT}  # a phone's Chrome says it is one
DESKTOP = {"viewport": {"width": 1280, "height": 720}}
PAGE_CHARTS = 12  # the default workbench's charts, as many as bench/plain_twelve.py draws


@dataclass
class Opened:
    first_chart: float  # s from goto until a chart has painted
    whole_page: float  # s until all PAGE_CHARTS charts have painted
    paint: float  # the browser's own first contentful paint, s
    kilobytes: float  # what reached the browser: HTTP bodies and websocket frames


def open_fresh(browser, url: str, throttle: float = 1, context_options=None) -> Opened:
    """A fresh context (nothing cached) opening url, timed to its first chart and to its whole page."""
    context = browser.new_context(**(context_options or DESKTOP))
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    if throttle != 1:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    received = []
    cdp.send("Network.enable")
    cdp.on("Network.loadingFinished", lambda event: received.append(event.get("encodedDataLength", 0)))
    cdp.on("Network.webSocketFrameReceived",
           lambda event: received.append(len(event["response"].get("payloadData", "")) * 3 / 4))  # base64
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_function(FIRST_CHART, timeout=180_000, polling=50)
    first = time.perf_counter() - started
    page.wait_for_function(WHOLE_PAGE, arg=PAGE_CHARTS, timeout=180_000, polling=50)
    whole = time.perf_counter() - started
    paint = page.evaluate(FIRST_PAINT) or float("nan")
    context.close()
    return Opened(first, whole, paint / 1000, sum(received) / 1000)


def against_plain(browser, url: str, runs: int, name: str, throttle: float = 1, context_options=None) -> None:
    """The app against bench/plain_twelve.py in fresh contexts, taken in turns, both servers warm."""
    with streamlit_server(entry=ROOT / "bench" / "plain_twelve.py") as (plain_url, _):
        for warm in (url, plain_url):
            open_fresh(browser, warm, throttle, context_options)
        app, plain = [], []
        for _ in range(runs):
            app.append(open_fresh(browser, url, throttle, context_options))
            plain.append(open_fresh(browser, plain_url, throttle, context_options))
    print(f"| {name} | median | range | n |")
    print("|---|---|---|---|")
    for what, field in (("first chart", "first_chart"), ("whole page (12 charts)", "whole_page"),
                        ("first contentful paint", "paint")):
        print(summary(f"the app (default example): {what}", [getattr(o, field) for o in app]))
        print(summary(f"plain script, 12 small heatmaps: {what}", [getattr(o, field) for o in plain]))
    for what, field in (("first chart", "first_chart"), ("whole page", "whole_page")):
        ratio = statistics.median(getattr(o, field) for o in app) / statistics.median(
            getattr(o, field) for o in plain)
        print(f"ratio of medians, {what}: {ratio:.2f}")
    print(f"received: the app {statistics.median(o.kilobytes for o in app):.0f} kB, the plain script "
          f"{statistics.median(o.kilobytes for o in plain):.0f} kB (median)")


def first_chart(browser, url: str, runs: int) -> None:
    against_plain(browser, url, runs, "fresh browser, 1280 x 720")


def phone(browser, url: str, runs: int) -> None:
    """A mid-range phone: 390 x 844, touch, 4x CPU throttling, against the plain script on the same
    profile; then an edit of the tokens until the weights change."""
    against_plain(browser, url, runs, "390 x 844 phone, 4x CPU throttling", throttle=4, context_options=PHONE)
    edits = []
    context = browser.new_context(**PHONE)
    page = context.new_page()
    context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": 4})
    page.goto(url)
    page.wait_for_selector(WEIGHTS, timeout=120_000)
    page.wait_for_selector(IDLE, timeout=120_000)
    for words in ("the dog sat down", "a cat", "the cat sat")[:runs]:  # new lengths: new rows, new weights
        before = page.evaluate(f"() => JSON.stringify(({READ_WEIGHTS})())")
        box = page.locator("input[aria-label*='Tokens (queries)' i]")
        if not box.is_visible():  # the sidebar starts closed on a phone
            page.locator("[data-testid='stExpandSidebarButton']").tap()
            box.wait_for(state="visible", timeout=30_000)
        box.fill(words)
        started = time.perf_counter()
        box.press("Enter")
        page.wait_for_function(f"(old) => JSON.stringify(({READ_WEIGHTS})()) !== old", arg=before,
                               timeout=60_000)
        edits.append(time.perf_counter() - started)
        page.wait_for_selector(IDLE, timeout=60_000)
    context.close()
    print(summary("phone: tokens edited, Enter until the weights change", edits))


def summary(name: str, seconds: list[float]) -> str:
    return (f"| {name} | {statistics.median(seconds):.2f} s | {min(seconds):.2f} to {max(seconds):.2f} s | "
            f"{len(seconds)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--first-chart", type=int, default=0, help="runs of the first-chart comparison only")
    parser.add_argument("--phone", type=int, default=0, help="runs of the throttled phone only")
    args = parser.parse_args()
    with streamlit_server() as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        if args.first_chart or args.phone:
            if args.first_chart:
                first_chart(browser, url, args.first_chart)
            if args.phone:
                phone(browser, url, args.phone)
            return
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.goto(url)
        page.wait_for_selector(WEIGHTS, timeout=60_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        page.set_viewport_size({"width": 1280, "height": 3000})  # the X grid and the weights in view
        page.wait_for_timeout(1000)
        edits = [edit_seconds(page, str(1.5 + 0.25 * i)) for i in range(args.edits)]
        page.set_viewport_size({"width": 1280, "height": 720})
        switches = {title: [] for title in SWITCHES}
        for _ in range(3):  # each switch leaves another example
            for title in SWITCHES:
                switches[title].append(switch_seconds(page, title))
        loads = []
        for _ in range(args.loads):
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            fresh = context.new_page()
            started = time.perf_counter()
            fresh.goto(f"{url}/?example=ex_h_cross_attention")
            fresh.wait_for_function(ALL_PAINTED, timeout=60_000)
            loads.append(time.perf_counter() - started)
            context.close()
        browser.close()
    print("| measure | median | range | n |")
    print("|---|---|---|---|")
    print(summary("cell edit: Enter until the weights change", edits))
    for title, seconds in switches.items():
        print(summary(f"switch to '{title}': click until every chart painted", seconds))
    print(summary("fresh browser context, ?example=ex_h_cross_attention, until every chart painted", loads))


if __name__ == "__main__":
    main()
