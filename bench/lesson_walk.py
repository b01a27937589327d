"""Walk the whole lesson as a class does, against a running server, and keep the screenshots.

Run: PYTHONPATH=. .venv/bin/python bench/lesson_walk.py URL OUT LANG [--screens N]
     (e.g. http://127.0.0.1:8501 artifacts/lesson-de de; LANG is a course language code, zh_CN too)

A teacher at 1280 x 720 starts a room on the Class page and presents; three phones (390 x 844, touch,
the third at 4x CPU throttling) join with ``?room=CODE&lang=LANG``. On every screen the teacher asks
the room (or has it draw a forecast), every phone answers (chips, a choice or a typed answer), the
teacher presses Reveal, then Next; at the end the teacher reloads. Every shot is checked for an
exception box, a literal ``**`` or ``\\_``, a page whose ``lang`` is not LANG, and a teacher's screen
taller than 720 px; the PNGs are for a person to look at (issue 40's "Done means"). Checks nothing else.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser_env import CHROMIUM, FLAGS, IDLE, settle

PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
CHIPS = "[class*='st-key-chip_add_'] button"
QUESTION = ("[class*='st-key-chip_add_'] button, .st-key-live_value input, "
            "[data-testid='stForm'] [role='radiogroup'] label")
SEND = "[data-testid='stFormSubmitButton'] button"


class Walk:
    def __init__(self, out: Path, language: str):
        self.out, self.language, self.problems = out, language, []

    def shot(self, page, name: str) -> None:
        lang = page.evaluate("() => document.documentElement.lang")
        if not lang.replace("-", "_").startswith(self.language[:2]):
            self.problems.append(f"{name}: the page's lang is {lang!r}")
        if page.locator("[data-testid='stException']").count():
            self.problems.append(f"{name}: an exception box")
        text = page.evaluate("() => document.body.innerText")
        self.problems += [f"{name}: {mark!r} in the text" for mark in ("**", "\\_") if mark in text]
        page.screenshot(path=str(self.out / f"{name}.png"))


def calm(page, timeout: float = 120_000) -> None:
    page.wait_for_timeout(500)
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_timeout(500)


def room_code(page) -> str:
    """The room's code, from the Class page's link for students (the teacher's address keeps it out)."""
    page.wait_for_function("() => /room=[A-Z0-9]{4}/.test(document.body.innerText)", timeout=60_000)
    return re.search(r"room=([A-Z0-9]{4})", page.evaluate("() => document.body.innerText"))[1]


def answer(walk: Walk, phone, number: int, name: str) -> None:
    try:
        phone.wait_for_function(f"() => document.querySelector({QUESTION!r})", timeout=20_000)
    except Exception:  # noqa: BLE001 - a missed question is a finding, not the walk's end
        walk.problems.append(f"{name}: phone {number} never saw the question")
        return
    calm(phone)
    if phone.locator(CHIPS).count():
        for key in (0, 0, 1):
            phone.locator(CHIPS).nth(min(key + number, phone.locator(CHIPS).count() - 1)).click()
            calm(phone)
        phone.locator("[class*='st-key-forecast_send_'] button").click()
    elif phone.locator(".st-key-live_value input[type='radio']").count():
        phone.locator(".st-key-live_value label").nth(number % 2).click()
        calm(phone)
        phone.locator(SEND).first.click()
    elif phone.locator(".st-key-live_value input").count():
        phone.locator(".st-key-live_value input").fill(["3x3", "0,5", "2"][number])
        phone.keyboard.press("Enter")
        calm(phone)
        if phone.locator(SEND).count():
            phone.locator(SEND).first.click()
    else:
        phone.locator("[data-testid='stForm'] [role='radiogroup'] label").nth(number % 2).click()
        calm(phone)
        phone.locator(SEND).first.click()
    calm(phone)


def screen(walk: Walk, teacher, phones, name: str) -> None:
    walk.shot(teacher, f"{name}-teacher")
    asked = next((key for key in ("present_draw", "present_ask")
                  if teacher.locator(f".st-key-{key} button").count()), None)
    if asked:
        teacher.locator(f".st-key-{asked} button").click()
        calm(teacher)
        for number, phone in enumerate(phones):
            answer(walk, phone, number, name)
        walk.shot(teacher, f"{name}-teacher-asked")
    for number, phone in enumerate(phones):
        calm(phone)
        walk.shot(phone, f"{name}-phone{number}")
    if teacher.locator(".st-key-present_reveal button").count():
        teacher.locator(".st-key-present_reveal button").click()
        calm(teacher)
        walk.shot(teacher, f"{name}-teacher-revealed")
        for number, phone in enumerate(phones):
            phone.wait_for_timeout(1500)
            calm(phone)
            walk.shot(phone, f"{name}-phone{number}-revealed")
    height = teacher.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    if height > 720:
        walk.problems.append(f"{name}: the teacher's screen is {height} px tall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url"), parser.add_argument("out", type=Path), parser.add_argument("language")
    parser.add_argument("--screens", type=int, default=99)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    walk, url = Walk(args.out, args.language), args.url.rstrip("/")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        teacher = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        teacher.goto(f"{url}/class?lang={args.language}")
        settle(teacher, ".st-key-live_start")
        teacher.locator(".st-key-live_start button").click()
        code = room_code(teacher)
        phones = []
        for number in range(3):
            context = browser.new_context(**PHONE)
            phone = context.new_page()
            if number == 2:
                context.new_cdp_session(phone).send("Emulation.setCPUThrottlingRate", {"rate": 4})
            phone.goto(f"{url}/?room={code}&lang={args.language}")
            phones.append(phone)
        for number, phone in enumerate(phones):
            phone.wait_for_function("(c) => document.body.innerText.includes(c)", arg=code, timeout=120_000)
            calm(phone)
            walk.shot(phone, f"phone{number}-joined")
        teacher.locator("[data-testid='stSidebarNav'] a[href$='/present']").click()
        settle(teacher, ".st-key-present_next")
        for position in range(args.screens):
            started = time.perf_counter()
            screen(walk, teacher, phones, f"s{position + 1}")
            print(f"screen {position + 1}: {time.perf_counter() - started:.1f} s")
            following = teacher.locator(".st-key-present_next button")
            if not following.count() or not following.is_enabled():
                break
            following.click()
            calm(teacher)
        teacher.reload()
        settle(teacher, ".st-key-present_next")
        walk.shot(teacher, "after-reload-teacher")
        browser.close()
    print("\n".join(walk.problems) or "no problems found")


if __name__ == "__main__":
    main()
