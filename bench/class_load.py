"""A live class (issue 10) against real servers: one teacher, N students following over the websocket.

Run: PYTHONPATH=. .venv/bin/python bench/class_load.py --students 100 [--seconds 60] [--redis] [--servers 2]

Starts --servers headless servers (tests/live_server.py) sharing one store: SQLite under a temporary
MHA_DATA_DIR, or with --redis a redis-server (tests/redis_server.py) at REDIS_URL. The bench process
is the teacher: it creates a room in the same store and publishes a state (page "", step 0,
setup_json {"preset": ...}, alternating between two presets) every --interval seconds for
--seconds. Each student is a tests/st_protocol.FollowerSession that opens ``/?room=CODE`` (students
split round-robin between the servers, opening within --ramp seconds) and then, as the browser's
timer does for ``@st.fragment(run_every=1.0)`` (app/live.py ``poll``), sends the fragment's rerun
every second; when the room's version changed the fragment reruns the whole page, whose room box
then names the new preset. One difference from a browser: a student sends its next tick only
once the previous run has ended (a browser's timer does not wait), so an overloaded server sees
fewer ticks than from browsers.

Reported: per student and change, the time from the teacher's set_state call to the end of the
first run showing the new preset (a student that never shows it before the next change is a miss);
run errors (status, exception elements, st.error) and dropped sessions; then a --quiet window with
nothing changing, over which the servers' CPU (/proc/<pid>/stat utime+stime) is divided per student
per minute, with the fragment polls' latency; then the teacher asks a question (store.ask, choices
A/B/C), each student's answer is sent through store.answer from the bench at a random moment within
--answer-window seconds (what the page's Send does), and tally.total must equal N exactly; the time
until every student's page draws the question is reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

# `python bench/class_load.py` puts bench/ first on sys.path, where a file named like a package
# would shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from mha_core import all_scenarios  # noqa: E402
from tests.live_server import streamlit_server  # noqa: E402
from tests.st_protocol import FollowerRun, FollowerSession  # noqa: E402

PRESETS = ("the_cat_sat_two_heads", "cat_chases_mouse")  # the teacher alternates between these
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclasses.dataclass
class Record:
    sent: float  # monotonic, BackMsg sent
    done: float  # monotonic, run ended
    fragment: bool  # a fragment-only run (nothing changed)
    preset: str | None  # the label the room box shows (what the page shows), on a whole-page run
    question: bool


@dataclasses.dataclass
class Student:
    index: int
    runs: list[Record] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    dropped: str = ""
    opened: bool = False


async def follow(student: Student, url: str, code: str, args, start_at: float, stop: asyncio.Event) -> None:
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    client = FollowerSession(url, timeout=args.timeout)

    def record(run: FollowerRun, sent: float) -> None:
        student.runs.append(Record(sent, time.monotonic(), run.fragment_run, run.following,
                                   run.question_seen))
        if run.status not in ("ok", "fragment ok"):
            student.errors.append(f"status {run.status}")
        student.errors.extend(run.errors)

    stage = "open"
    try:
        sent = time.monotonic()
        record(await client.open(f"room={code}"), sent)
        student.opened = True
        stage = "poll"
        interval = next(iter(client.auto_reruns.values()), 1.0)
        tick = time.monotonic() + interval
        while not stop.is_set():
            await asyncio.sleep(max(0.0, tick - time.monotonic()))
            if stop.is_set():
                break
            sent = time.monotonic()
            record(await client.rerun_fragment(), sent)
            tick += interval
            if tick < time.monotonic():  # the run outlasted the interval: the next tick goes now
                tick = time.monotonic()
    except Exception as error:  # a timeout, a closed connection, no fragment: the session is lost
        student.dropped = f"during {stage}: {type(error).__name__}: {error}"
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.close(), 10)


def change_latencies(students: list[Student],
                     changes: list[tuple[float, str]]) -> tuple[list[float], int, list[float]]:
    """Seconds from each change to each student's first run showing it; the misses; those runs' durations."""
    latencies, missed, durations = [], 0, []
    for k, (t0, title) in enumerate(changes):
        until = changes[k + 1][0] if k + 1 < len(changes) else float("inf")
        for student in students:
            if not student.opened:
                continue
            seen = next((r for r in student.runs if t0 < r.done <= until and r.preset == title), None)
            if seen is None:
                missed += 1
            else:
                latencies.append(seen.done - t0)
                durations.append(seen.done - seen.sent)
    return latencies, missed, durations


async def lesson(urls: list[str], pids: list[int], store, args) -> dict:
    titles = {key: all_scenarios()[key].title for key in PRESETS}
    room = store.create_room()
    code, secret = room.code, room.teacher_secret

    def publish(key: str) -> None:
        store.set_state(code, secret, page=args.page, step=args.step, setup_json=json.dumps({"preset": key}),
                        selections={"step": args.step + 1} if args.page == "present" else {})

    publish(PRESETS[0])
    n = args.students
    students = [Student(i) for i in range(n)]
    stop = asyncio.Event()
    rng = random.Random(args.seed)
    begin = time.monotonic()
    tasks = [asyncio.create_task(follow(s, urls[s.index % len(urls)], code, args,
                                        begin + rng.uniform(0, args.ramp), stop)) for s in students]
    # all opened (or lost), then a few polls to settle
    while time.monotonic() < begin + args.ramp + args.timeout and \
            sum(s.opened or bool(s.dropped) for s in students) < n:
        await asyncio.sleep(0.5)
    opened_at = time.monotonic()
    await asyncio.sleep(3.0)

    # the teacher changes the preset every --interval seconds
    changes = []
    change_cpu0, change0 = sum(cpu_seconds(pid) for pid in pids), time.monotonic()
    for k in range(max(1, int(args.seconds // args.interval))):
        key = PRESETS[(k + 1) % 2]
        t0 = time.monotonic()
        await asyncio.to_thread(publish, key)
        changes.append((t0, titles[key]))
        await asyncio.sleep(args.interval)
    change_end = time.monotonic()
    change_cpu = sum(cpu_seconds(pid) for pid in pids) - change_cpu0

    # a quiet window: everyone polls, nothing changes
    server_cpu0 = [cpu_seconds(pid) for pid in pids]
    own0, quiet0 = own_cpu_seconds(), time.monotonic()
    await asyncio.sleep(args.quiet)
    quiet1 = time.monotonic()
    server_cpu = sum(cpu_seconds(pid) - c for pid, c in zip(pids, server_cpu0, strict=True))
    own_cpu = own_cpu_seconds() - own0

    # the teacher asks; every student answers within --answer-window seconds
    t_ask = time.monotonic()
    question = await asyncio.to_thread(store.ask, code, secret, "Which head attends to 'sat'?",
                                       ["A", "B", "C"], "poll")
    answer_errors: list[str] = []
    accepted = 0

    async def answer(i: int) -> None:
        nonlocal accepted
        await asyncio.sleep(rng.uniform(0, args.answer_window))
        try:
            ok = await asyncio.to_thread(store.answer, code, question.id, f"bench-student-{i}",
                                         "ABC"[i % 3], f"s{i}")
            accepted += bool(ok)
        except Exception as error:
            answer_errors.append(f"student {i}: {type(error).__name__}: {error}")

    await asyncio.gather(*(answer(i) for i in range(n)))
    answered_in = time.monotonic() - t_ask
    tally = await asyncio.to_thread(store.tally, code, question.id)
    await asyncio.sleep(max(0.0, t_ask + args.answer_window + 3.0 - time.monotonic()))
    followers = await asyncio.to_thread(store.followers, code)

    stop.set()
    await asyncio.gather(*tasks)

    latencies, missed, durations = change_latencies(students, changes)
    seen_question = []
    for s in students:
        t = next((r.done for r in s.runs if r.done > t_ask and r.question), None)
        if t is not None:
            seen_question.append(t - t_ask)
    quiet_polls = [r.done - r.sent for s in students for r in s.runs
                   if r.fragment and quiet0 <= r.sent and r.done <= quiet1]
    quiet_full = sum(1 for s in students for r in s.runs if not r.fragment and quiet0 <= r.sent <= quiet1)
    quiet_seconds = quiet1 - quiet0
    opened = sum(s.opened for s in students)
    open_seconds = [s.runs[0].done - s.runs[0].sent for s in students if s.opened]
    return {
        "n": n, "opened": opened, "open_p50": pct(open_seconds, 0.5),
        "open_max": max(open_seconds, default=0), "ramp_done": opened_at - begin, "changes": len(changes),
        "latencies": latencies, "missed": missed, "durations": durations,
        "run_errors": [e for s in students for e in s.errors],
        "dropped": [s.dropped for s in students if s.dropped],
        "quiet_seconds": quiet_seconds, "server_cpu": server_cpu, "own_cpu": own_cpu,
        "quiet_polls": quiet_polls, "quiet_full": quiet_full,
        "tally_total": tally.total, "tally_counts": tally.counts, "accepted": accepted,
        "answer_errors": answer_errors, "answered_in": answered_in,
        "seen_question": seen_question, "followers": followers, "change_end": change_end,
        "change_cpu": change_cpu, "change_seconds": change_end - change0,
    }


def report(r: dict, args, backend: str) -> str:
    n, lat = r["n"], r["latencies"]
    cpu_per_student_min = r["server_cpu"] / n / (r["quiet_seconds"] / 60)
    polls_per_s = len(r["quiet_polls"]) / r["quiet_seconds"]
    q = r["seen_question"]
    above_quiet = r["change_cpu"] - r["server_cpu"] / r["quiet_seconds"] * r["change_seconds"]
    per_change = above_quiet / max(1, r["changes"] * r["opened"])
    rows = [
        ("students (opened / asked)", f"{r['opened']} / {n}, {args.servers} server(s), {backend}"),
        ("first page run (p50 / max)", f"{r['open_p50']:.2f} s / {r['open_max']:.2f} s"),
        (f"teacher change -> student shows it ({r['changes']} changes, {len(lat)} samples)",
         f"p50 {pct(lat, .5):.2f} s, p95 {pct(lat, .95):.2f} s, max {max(lat, default=float('nan')):.2f} s"),
        ("of which: the poll that found it + the page's rerun (p50 / p95)",
         f"{pct(r['durations'], .5):.2f} s / {pct(r['durations'], .95):.2f} s"),
        ("server CPU per student per change (above the quiet rate)", f"{per_change * 1000:.1f} ms"),
        ("changes missed (not shown before the next one)", str(r["missed"])),
        ("run errors / dropped sessions", f"{len(r['run_errors'])} / {len(r['dropped'])}"),
        (f"quiet {r['quiet_seconds']:.0f} s: fragment polls (p50 / p95)",
         f"{len(r['quiet_polls'])} polls ({polls_per_s / n:.2f} per student per s), "
         f"{pct(r['quiet_polls'], .5) * 1000:.0f} ms / {pct(r['quiet_polls'], .95) * 1000:.0f} ms; "
         f"{r['quiet_full']} whole-page runs"),
        ("quiet: server CPU per student per minute",
         f"{cpu_per_student_min * 1000:.0f} ms ({r['server_cpu'] / r['quiet_seconds'] * 100:.0f} % of a core "
         f"in all; the bench's own clients: {r['own_cpu'] / r['quiet_seconds'] * 100:.0f} %)"),
        ("question: answers counted (tally.total / N)",
         f"{r['tally_total']} / {n} ({'exact' if r['tally_total'] == n else 'MISMATCH'}), "
         f"sent within {r['answered_in']:.1f} s, {len(r['answer_errors'])} errors, "
         f"counts {r['tally_counts']}"),
        ("question: ask -> drawn on the student's page",
         f"{len(q)} / {r['opened']} students, p50 {pct(q, .5):.2f} s, p95 {pct(q, .95):.2f} s, "
         f"max {max(q, default=float('nan')):.2f} s"),
        ("followers (heartbeat within 10 s) at the end", str(r["followers"])),
    ]
    out = ["| measure | value |", "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows]
    for title, items in (("run errors", r["run_errors"]), ("dropped", r["dropped"]),
                         ("answer errors", r["answer_errors"])):
        if items:
            out.append(f"\n{title} (first 5 of {len(items)}):\n" + "\n".join(f"- {e}" for e in items[:5]))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0, help="teacher changes for this long")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between the teacher's changes")
    parser.add_argument("--quiet", type=float, default=30.0, help="the quiet window for the CPU figure")
    parser.add_argument("--answer-window", type=float, default=5.0)
    parser.add_argument("--ramp", type=float, default=None, help="students open within this (default N/10 s)")
    parser.add_argument("--page", default="", choices=["", "present"],
                        help="the page the teacher shows: the workbench (default) or the presenter")
    parser.add_argument("--step", type=int, default=3, help="the presenter's screen (from 0), for present")
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--redis", action="store_true", help="share rooms through a redis-server")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.ramp is None:
        args.ramp = max(2.0, args.students / 10)
    if args.servers > 1 and not args.redis:
        print("note: the servers share the SQLite file (the store allows it; Redis is the deployed way)")

    with tempfile.TemporaryDirectory(prefix="class-load-") as tmp, contextlib.ExitStack() as stack:
        os.environ["MHA_DATA_DIR"] = str(Path(tmp) / "data")
        os.environ.pop("REDIS_URL", None)
        backend = "SQLite"
        if args.redis:
            from tests.redis_server import RedisServer
            server = RedisServer(Path(tmp) / "redis")
            server.start()
            stack.callback(server.stop)
            os.environ["REDIS_URL"] = server.url
            backend = "Redis"
        from classroom.store import open_store
        store = open_store()
        stack.callback(store.close)
        urls, pids = [], []
        for _ in range(args.servers):  # the servers inherit MHA_DATA_DIR / REDIS_URL from os.environ
            url, process = stack.enter_context(streamlit_server())
            urls.append(url)
            pids.append(process.pid)
        started = time.monotonic()
        result = asyncio.run(lesson(urls, pids, store, args))
        page = args.page or "workbench"
        print(f"\n{args.students} students, {args.servers} server(s), {backend}, page '{page}', "
              f"{time.monotonic() - started:.0f} s, {os.cpu_count()} cores\n")
        print(report(result, args, backend))


if __name__ == "__main__":
    main()
