"""A real browser (Debian's Chromium through Playwright) against a real Streamlit server.

Skips when Chromium or Playwright is missing, unless REQUIRE_BROWSER=1 (CI), where that fails.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.live_server import ROOT, streamlit_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("REQUIRE_BROWSER") == "1"
ARTIFACTS = ROOT / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
WEIGHTS = ".st-key-chart_weights .js-plotly-plot"
READ_WEIGHTS = f"""() => {{
    const el = document.querySelector("{WEIGHTS}");
    return el ? Array.from(el.data, t => t.z._inputArray || t.z) : null;
}}"""

if not Path(CHROMIUM).exists():
    if REQUIRED:
        raise RuntimeError("REQUIRE_BROWSER=1 but no Chromium: apt-get install chromium")
    pytest.skip("no Chromium found (apt-get install chromium); CI installs it and sets REQUIRE_BROWSER=1",
                allow_module_level=True)
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    if REQUIRED:
        raise
    pytest.skip("playwright is not installed (requirements-dev.txt)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser_page():
    ARTIFACTS.mkdir(exist_ok=True)
    with streamlit_server() as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=FLAGS)  # launch() gives a fresh temporary profile
        page = browser.new_page(viewport={"width": 1400, "height": 5000})
        page.goto(url)
        page.wait_for_selector(WEIGHTS, timeout=60_000)
        page.wait_for_selector(IDLE, timeout=60_000)
        yield page
        browser.close()


def click_cell(page, editor_index: int, row: int, col_from_right: int) -> None:
    """Click a data-editor cell: rows and the header are 35 px, the number columns ~50 px wide."""
    box = page.locator("[data-testid='stDataFrame']").nth(editor_index).bounding_box()
    page.mouse.click(box["x"] + box["width"] - 50 * col_from_right + 25, box["y"] + 35 * (row + 1) + 17)


def test_editing_an_embedding_cell_updates_the_heatmap(browser_page):
    page = browser_page
    before = page.evaluate(READ_WEIGHTS)
    assert before is not None and abs(before[0][2][0] - 0.6652) < 1e-3  # seed 002: 'sat' row, head A
    click_cell(page, editor_index=0, row=2, col_from_right=2)  # X: row 'sat', column d1
    page.wait_for_timeout(300)  # the grid selects the cell first; typing then opens its editor
    page.keyboard.type("3")
    page.wait_for_timeout(300)
    started = time.perf_counter()
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"(old) => {{ const z = ({READ_WEIGHTS})(); return z && Math.abs(z[0][2][0] - old) > 1e-6; }}",
        arg=before[0][2][0], timeout=10_000)
    seconds = time.perf_counter() - started
    page.wait_for_selector(IDLE)
    after = page.evaluate(READ_WEIGHTS)
    page.screenshot(path=str(ARTIFACTS / "browser-after-edit.png"))
    # 'sat' = (3, 1): head A scores it 9 against 'the''s 6, so 'sat' now attends mostly to itself.
    assert max(range(3), key=lambda j: after[0][2][j]) == 2
    assert all(abs(sum(row) - 1) < 1e-6 for head in after for row in head)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    (ARTIFACTS / "browser-edit-seconds.txt").write_text(f"{seconds:.3f}\n")


def test_an_edit_survives_a_visit_to_another_page(browser_page):
    """Streamlit drops the state of widgets a run does not draw; the edit must not go with it."""
    page = browser_page
    edited = page.evaluate(READ_WEIGHTS)
    assert max(range(3), key=lambda j: edited[0][2][j]) == 2  # the previous test's edit is live
    page.get_by_role("link", name="Worked examples").click()
    page.wait_for_selector("text=Open in the workbench", timeout=20_000)
    page.wait_for_selector(IDLE)
    page.get_by_role("link", name="Workbench").click()
    page.wait_for_selector(WEIGHTS, timeout=20_000)
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(500)
    back = page.evaluate(READ_WEIGHTS)
    assert all(abs(a - b) < 1e-9 for a, b in zip(back[0][2], edited[0][2], strict=True))
    page.screenshot(path=str(ARTIFACTS / "browser-after-navigation.png"))


def upload(page, name: str, text: str) -> None:
    page.get_by_text("Save or load this setup").click()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        files=[{"name": name, "mimeType": "application/json", "buffer": text.encode()}])
    page.wait_for_timeout(500)
    page.wait_for_selector(IDLE, timeout=20_000)


def test_loading_a_saved_setup_and_refusing_a_bad_one(browser_page):
    import json

    from mha_core import all_scenarios
    from mha_core.config import setup_to_json
    page = browser_page
    before = page.evaluate(READ_WEIGHTS)
    example_a = setup_to_json(all_scenarios()["ex_a_single_head"])
    bad = {**json.loads(example_a), "tokens": ["w"] * 30}
    upload(page, "bad.json", json.dumps(bad))
    assert page.get_by_text("Could not load bad.json").count() == 1
    assert page.evaluate(READ_WEIGHTS) == before  # nothing on the page changed
    upload(page, "a.json", example_a)
    page.wait_for_function(f"() => {{ const z = ({READ_WEIGHTS})(); return z && z.length === 1; }}",
                           timeout=10_000)
    weights = page.evaluate(READ_WEIGHTS)
    assert abs(weights[0][0][0] - 0.6698) < 5e-5  # seed 001, example A
    assert page.locator("[data-testid='stException']").count() == 0
