"""Does the class's page stay responsive while the teacher trains? Followers' latency on the Learn page with
and without a model training on the same server, over Streamlit's own websocket protocol.

Run: PYTHONPATH=. .venv/bin/python bench/learn_load.py [--students 30] [--steps 2000] [--think 1.0]

One server (tests/live_server.py) with an empty checkpoint cache, a room in its SQLite store showing the
Learn page, and N FollowerSessions (tests/st_protocol.py), each with its own student cookie and address.
Each follower alternates a whole-page run and a poll of the room (the ``run_every`` fragment) with
``--think`` seconds between requests; a request's latency is from the BackMsg sent to its
script_finished. Phase 1: nobody trains (the baseline). Phase 2: a teacher's tab on the same server
presses **Train** on the Learn page with ``--steps`` steps; the phase lasts while it trains. Printed:
p50 and p95 of each phase, the training's wall time, and the same training alone on the quiet
server (its own process), so what the class costs the training is seen too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from streamlit.util import calc_hash

from tests.live_server import class_store, streamlit_server
from tests.st_protocol import FollowerSession, Session

TRAIN_KEY = "learn_train"  # app/views/learn.py


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def follow(tab: FollowerSession, think: float, stop: asyncio.Event, latencies: list[float],
                 watched: set[int]) -> None:
    """Whole-page runs and ticks of the page's timers (the room's poll and, while a run trains, the
    Learn page's watch of it), in turn, until stop; every latency recorded (seconds)."""
    whole, tick = True, 0
    while not stop.is_set():
        timers = list(tab.auto_reruns)
        if len(timers) > 1:  # the Learn page's watch of the run, beside the room's poll
            watched.add(id(tab))
        if whole or not timers:
            run = await tab.rerun()
        else:
            run = await tab.rerun_fragment(timers[tick % len(timers)])
            tick += 1
        latencies.append(run.seconds)
        whole = not whole
        try:
            await asyncio.wait_for(stop.wait(), think)
        except TimeoutError:
            pass


async def train_on_learn_page(url: str, steps: int) -> float:
    """A teacher's tab opens Learn, picks the steps and presses Train; seconds until the run ends."""
    teacher = Session(url, timeout=600)
    teacher.page_hash = calc_hash("learn")
    await teacher.open()
    teacher.set_string("learn_steps", str(steps))
    started = time.perf_counter()
    run = await teacher.press(TRAIN_KEY)
    seconds = time.perf_counter() - started
    assert not run.errors, run.errors
    await teacher.close()
    return seconds


async def lesson(url: str, code: str, args) -> dict:
    tabs = []
    for index in range(args.students):
        headers = {"Cookie": f"mha_student={secrets.token_urlsafe(24)}",
                   "X-Forwarded-For": f"10.0.{index // 250}.{index % 250 + 1}"}
        tab = FollowerSession(url, headers=headers)
        await tab.open(f"room={code}")
        tabs.append(tab)
    result = {}
    for phase in ("quiet", "training"):
        latencies: list[float] = []
        watched: set[int] = set()
        stop = asyncio.Event()
        followers = [asyncio.create_task(follow(tab, args.think, stop, latencies, watched)) for tab in tabs]
        if phase == "quiet":
            await asyncio.sleep(args.quiet)
        else:
            result["training_seconds"] = await train_on_learn_page(url, args.steps)
        stop.set()
        await asyncio.gather(*followers)
        result[phase], result[f"{phase}_watched"] = latencies, len(watched)
    for tab in tabs:
        await tab.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--steps", type=int, default=2000, choices=[200, 400, 600, 1000, 2000])
    parser.add_argument("--think", type=float, default=1.0, help="seconds between a follower's requests")
    parser.add_argument("--quiet", type=float, default=20.0, help="seconds of the baseline phase")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    os.environ["MHA_CHECKPOINT_DIR"] = str(folder / "alone")
    with streamlit_server() as (url, _):
        alone = asyncio.run(train_on_learn_page(url, args.steps))
    os.environ["MHA_CHECKPOINT_DIR"] = str(folder / "class")  # empty again: the class's run trains anew
    with class_store(folder) as (_, store), streamlit_server() as (url, _):
        room = store.create_room(client="teacher")
        store.set_state(room.code, room.teacher_secret, page="learn", step=0,
                        setup_json=json.dumps({"example": "the_cat_sat_two_heads"}),
                        selections={"inputs": {"learn_steps": args.steps}})  # the teacher's settings
        result = asyncio.run(lesson(url, room.code, args))
    print(f"{args.students} followers on the Learn page, a request every {args.think:g} s each; "
          f"training {args.steps} steps of the default model")
    print("| phase | requests | p50 | p95 | max |")
    print("|---|---|---|---|---|")
    for phase in ("quiet", "training"):
        values = result[phase]
        print(f"| {phase} | {len(values)} | {statistics.median(values):.3f} s | {pct(values, 0.95):.3f} s | "
              f"{max(values):.3f} s |")
    print(f"training: {result['training_seconds']:.1f} s with the class, {alone:.1f} s alone; "
          f"{result['training_watched']} of {args.students} followers watched its curve")


if __name__ == "__main__":
    main()
