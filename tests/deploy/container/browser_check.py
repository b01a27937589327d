"""Load the containerised app in headless Chromium and check it rendered; used by `make container-test`.

    python tests/deploy/container/browser_check.py URL SCREENSHOT

Drives Debian's /usr/bin/chromium through Playwright (never `playwright install`). Waits for the
first script run to finish, then fails (exit 1) when the attention-weights heatmap is missing, an
exception box is shown, or the page asked for anything outside the app's own origin. Prints one
JSON line with what it saw.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
WEIGHTS = ".st-key-chart_weights .js-plotly-plot"
EXCEPTION = "[data-testid='stException']"
LOCAL_SCHEMES = {"data", "blob", "about", "chrome", "chrome-extension", "devtools"}


def check(url: str, screenshot: Path, timeout_ms: int = 90_000) -> dict:
    origin = urlsplit(url).netloc
    foreign: list[str] = []

    def note(request_url: str) -> None:
        parts = urlsplit(request_url)
        if parts.scheme not in LOCAL_SCHEMES and parts.netloc != origin:
            foreign.append(request_url)

    screenshot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)  # fresh profile
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 2400})
            context.on("request", lambda request: note(request.url))
            page = context.new_page()
            page.on("websocket", lambda ws: note(ws.url))
            started = time.perf_counter()
            page.goto(url, timeout=timeout_ms)
            page.wait_for_selector(WEIGHTS, timeout=timeout_ms)
            page.wait_for_selector(IDLE, timeout=timeout_ms)
            page.wait_for_timeout(500)  # the debounce Streamlit's own e2e tests use before asserting
            page.wait_for_selector(IDLE, timeout=timeout_ms)
            seconds = time.perf_counter() - started
            page.screenshot(path=str(screenshot))
            result = {
                "url": url,
                "seconds_to_idle": round(seconds, 2),
                "weights_heatmaps": page.locator(WEIGHTS).count(),
                "exceptions": page.locator(EXCEPTION).count(),
                "foreign_requests": sorted(set(foreign)),
                "screenshot": str(screenshot),
            }
        finally:
            browser.close()
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    result = check(argv[1], Path(argv[2]))
    print(json.dumps(result))
    problems = []
    if result["weights_heatmaps"] < 1:
        problems.append("no attention-weights heatmap (.st-key-chart_weights .js-plotly-plot)")
    if result["exceptions"]:
        problems.append(f"{result['exceptions']} exception box(es) on the page")
    if result["foreign_requests"]:
        problems.append(f"requests outside the app's origin: {result['foreign_requests']}")
    for problem in problems:
        print(f"browser check FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
