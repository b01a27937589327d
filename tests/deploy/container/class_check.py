"""A live class across two app containers sharing one Redis container; used by `make container-test`.

    python tests/deploy/container/class_check.py URL_A URL_B REDIS_CONTAINER ARTIFACTS_DIR

In headless Chromium (Debian's, through Playwright): a teacher starts a room on app A (with
MHA_TEACHER_KEY in this script's environment, the apps' teacher key: a wrong key is refused next to
the input first, then the right one starts the room) and opens the presenter; a student opens the join
link on app B, so the room can only reach B through Redis. The teacher's Next must reach the student's
screen within 3 s. Then Redis is stopped for 10 s (`podman stop`): the student's page must say that
the class connection is lost, and once Redis is back (`podman start`, its append-only file on the
container's disk) the same room goes on by itself: the teacher's next step reaches the student again,
with nothing clicked on the student's side.
Prints one JSON line with the timings; exit 1 on any failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from browser_check import CHROMIUM, EXCEPTION, FLAGS, IDLE
from playwright.sync_api import sync_playwright

from course.steps import screen_position  # make container-test puts the repository on PYTHONPATH
from tests import browser_env

SCREEN = """(label) => Array.from(document.querySelectorAll('[data-testid="stMarkdownContainer"]'))
    .some(el => el.innerText.includes(label))"""
LOST = "connection is lost"  # app/room/room_box.py poll()'s warning
FOLLOW_SECONDS = 3.0  # the browser budget
REDIS_DOWN_SECONDS = 10.0


def settle(page, selector: str) -> None:
    browser_env.settle(page, selector, timeout=90_000)


def shown_within(page, label: str, seconds: float) -> float:
    """Seconds until the page shows label (fails after `seconds`)."""
    started = time.perf_counter()
    page.wait_for_function(SCREEN, arg=label, timeout=seconds * 1000)
    return time.perf_counter() - started


def next_step(teacher) -> None:
    teacher.locator(".st-key-present_next button").click()


def start_with_the_key(teacher, key: str) -> bool | None:
    """Start a room; with a key, first try a wrong one (True if the page refused it, next to the
    input). None when the apps have no key."""
    if not key:
        teacher.locator(".st-key-live_start button").click()
        return None
    field = teacher.locator(".st-key-live_teacher_key input")
    field.fill(key + "-wrong")
    teacher.locator(".st-key-live_start button").click()
    teacher.wait_for_function("() => document.body.innerText.includes(\"not this server's teacher key\")",
                              timeout=30_000)
    refused = teacher.locator("[data-testid='stAlertContentError']").count() == 1
    field.fill(key)
    teacher.locator(".st-key-live_start button").click()
    return refused


def podman(*args: str) -> None:
    subprocess.run(["podman", *args], check=True, capture_output=True, timeout=60)


def check(url_a: str, url_b: str, redis_container: str, artifacts: Path) -> dict:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            teacher = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            teacher.goto(f"{url_a}/class", timeout=90_000)
            settle(teacher, ".st-key-live_start")
            key_refused = start_with_the_key(teacher, os.environ.get("MHA_TEACHER_KEY", ""))
            code = browser_env.room_code(teacher, timeout=30_000)  # the door keeps it out of the address
            teacher.locator("[data-testid='stSidebarNav'] a:has-text('Present')").click()
            settle(teacher, ".st-key-present_next")

            student = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            student.goto(f"{url_b}/?room={code}", timeout=90_000)
            student.wait_for_function("(c) => document.body.innerText.includes('Room ' + c)", arg=code,
                                      timeout=60_000)
            settle(student, ".st-key-present_next")
            next_step(teacher)
            across = shown_within(student, browser_env.screen_heading(1), FOLLOW_SECONDS)  # the second screen
            student.screenshot(path=str(artifacts / "container-class-student.png"))

            podman("stop", "--time", "1", redis_container)
            stopped = time.perf_counter()
            student.wait_for_function(f"() => document.body.innerText.includes('{LOST}')", timeout=8_000)
            noticed = time.perf_counter() - stopped
            student.screenshot(path=str(artifacts / "container-class-redis-down.png"))
            time.sleep(max(0.0, REDIS_DOWN_SECONDS - (time.perf_counter() - stopped)))
            podman("start", redis_container)
            restarted = time.perf_counter()
            # the teacher moves on as soon as the class is back; the student's page follows by itself
            deadline = restarted + 30
            while True:
                next_step(teacher)
                teacher.wait_for_timeout(500)
                teacher.wait_for_selector(IDLE, timeout=30_000)
                warned = teacher.locator("text=Could not update the room").count()
                if not warned or time.perf_counter() > deadline:
                    break
                teacher.wait_for_timeout(1000)
            name = teacher.evaluate("() => new URL(location.href).searchParams.get('step')")
            position = screen_position(name)  # the address names the screen (?step=softmax)
            step = position + 1
            recovered = shown_within(student, browser_env.screen_heading(position), 15)
            settle(student, ".st-key-present_next")
            lost_still_shown = student.evaluate(f"() => document.body.innerText.includes('{LOST}')")
            student.screenshot(path=str(artifacts / "container-class-recovered.png"))
            exceptions = student.locator(EXCEPTION).count() + teacher.locator(EXCEPTION).count()
            return {"room": code, "wrong_teacher_key_refused": key_refused,
                    "b_follows_a_seconds": round(across, 2),
                    "redis_down_noticed_seconds": round(noticed, 2),
                    "followed_again_after_restart_seconds": round(time.perf_counter() - restarted, 2),
                    "step_after_restart": step, "recovered_wait_seconds": round(recovered, 2),
                    "lost_message_still_shown": lost_still_shown, "exceptions": exceptions}
        finally:
            browser.close()


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    artifacts = Path(argv[4])
    artifacts.mkdir(parents=True, exist_ok=True)
    try:
        result = check(argv[1], argv[2], argv[3], artifacts)
    except Exception as error:  # a timeout names what was not seen
        print(f"class check FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    problems = [name for name in ("exceptions", "lost_message_still_shown") if result[name]]
    if result["wrong_teacher_key_refused"] is False:
        problems.append("wrong_teacher_key_refused")
    for problem in problems:
        print(f"class check FAILED: {problem} = {result[problem]}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
