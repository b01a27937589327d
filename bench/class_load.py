"""A live class (issues 10 and 15) against real servers: one teacher, N students following over the websocket.

Run: PYTHONPATH=. .venv/bin/python bench/class_load.py --students 100 [--seconds 60] [--redis] [--servers 2]
     [--page present] [--addresses 3]

Starts --servers headless servers (tests/live_server.py) sharing one store: SQLite under a temporary
MHA_DATA_DIR, or with --redis a redis-server (tests/redis_server.py) at REDIS_URL. The servers run
with MHA_CLIENT_IP_HEADER=X-Forwarded-For, as behind the Kubernetes ingress, and every student's
websocket handshake carries its address and its own ``mha_student`` cookie: students come from
--addresses loopback addresses (3: a school's three NATs, round-robin; 0: one address per student).
Students enter the room only through the page's door (``/?room=CODE`` -> store.join, whose join rate
per address is a burst of 45, then one every 2 s). The bench process creates the room in the same
store and publishes a state (page, step, setup_json {"example": ...}, alternating between two examples)
every --interval seconds for --seconds. With --page present a real teacher session (a
FollowerSession that leads with ``?room=CODE&teacher=SECRET``, on the presenter's softmax screen)
is open all along: its room box heartbeats every 5 s, and once it has asked the room to draw a
forecast, its live answer panel (app/room/questions.py presenter_panel, "Show the answers" on, so the
class's average is drawn) reruns every second while the class follows. Without it, the bench calls
store.teacher_heartbeat every 5 s and asks the forecast itself (store.ask, kind "forecast").

Each student is a FollowerSession that opens ``/?room=CODE`` (students split round-robin between
the servers, opening within --ramp seconds) and then, as the browser's timer does for
``@st.fragment(run_every=1.0)`` (app/room/room_box.py ``poll``), sends the fragment's rerun every second;
when the room's version changed the fragment reruns the whole page, whose room box then names the
new example. One difference from a browser: a student sends its next tick only once the previous run
has ended (a browser's timer does not wait), so an overloaded server sees fewer ticks than from
browsers.

Reported: per student and change, the time from the teacher's set_state call to the end of the
first run showing the new example (a student that never shows it before the next change is a miss);
run errors (status, exception elements, st.error) and dropped sessions; the roster (every student
admitted); then a --quiet window with nothing changing, over which the servers' CPU
(/proc/<pid>/stat utime+stime) is divided per student per minute, with the fragment polls'
latency; then the forecast: every student, at a random moment within --answer-window seconds of
its page drawing the question, taps one or two keys' chip buttons and Send, as a fragment's widgets
send them (a browser's student taps up to 10 chips); tally.total must equal N exactly and the
store's mean forecast must equal the mean of the grids sent (each counted once); with --page present
also the time until the teacher's panel says "N of N answered" and its runs' duration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path

# `python bench/class_load.py` puts bench/ first on sys.path, where a file named like a package
# would shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402
from streamlit.util import calc_hash  # noqa: E402

from course.examples import all_examples  # noqa: E402
from tests.live_server import class_store, streamlit_server  # noqa: E402
from tests.st_protocol import FollowerRun, FollowerSession, element_key  # noqa: E402

EXAMPLES = ("the_cat_sat_two_heads", "cat_chases_mouse")  # the teacher alternates between these
TICK = os.sysconf("SC_CLK_TCK")
TEACHER_ADDRESS = "127.0.0.10"
TEACHER_BEAT_SECONDS = 5.0  # app/room/room_box.py's teacher box heartbeats this often
SOFTMAX_STEP = 4  # the presenter's softmax screen (from 1), where the room draws a forecast
DOOR_WORDS = ("Too many", "locked", "no room", "full")  # the door's refusals (classroom/store.py)
ANSWERED = re.compile(r"#### (\d+) of (\d+) answered")  # the presenter panel's count (app/room/questions.py)


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


def student_address(index: int, addresses: int) -> str:
    """Loopback addresses standing for a school's NATs (addresses > 0) or one per student (0)."""
    if addresses > 0:
        return f"127.1.{index % addresses}.1"
    return f"127.2.{index // 250}.{index % 250 + 1}"


class Browser(FollowerSession):
    """A FollowerSession behind X-Forwarded-For with its own cookie. It keeps each keyed element's id
    and fragment from the newest run that drew it, and sends a press of a widget drawn inside a
    fragment as the frontend does (a rerun of that fragment carrying the trigger). It also reads the
    presenter panel's "N of M answered"."""

    def __init__(self, url: str, timeout: float, address: str, cookie: str | None = None):
        headers = {"X-Forwarded-For": address, **({"Cookie": f"mha_student={cookie}"} if cookie else {})}
        super().__init__(url, timeout, headers)
        self.ids: dict[str, str] = {}  # key -> element id
        self.fragment_of: dict[str, str] = {}  # key -> the fragment that drew it ("" for none)
        self.answered: tuple[int, float] | None = None  # (count, when) of the panel's latest count
        self.door = ""  # the door's refusal, as the page said it (a warning in the room's box)

    def _read(self, msg, run) -> None:
        super()._read(msg, run)
        if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
            return
        element = msg.delta.new_element
        inner = getattr(element, element.WhichOneof("type"))
        key = element_key(getattr(inner, "id", "") or "")
        if key:
            self.ids[key], self.fragment_of[key] = inner.id, msg.delta.fragment_id
        if element.WhichOneof("type") == "alert" and any(w in element.alert.body for w in DOOR_WORDS):
            self.door = element.alert.body
        if element.WhichOneof("type") == "markdown":
            found = ANSWERED.search(element.markdown.body)
            if found:
                self.answered = (int(found.group(1)), time.monotonic())

    async def press_widget(self, key: str) -> FollowerRun:
        widget_id = self.ids[key]
        self.widgets[widget_id] = WidgetState(id=widget_id, trigger_value=True)
        try:
            return await self._rerun_where(key)
        finally:
            self.widgets.pop(widget_id, None)

    async def toggle(self, key: str, value: bool) -> FollowerRun:
        widget_id = self.ids[key]
        self.widgets[widget_id] = WidgetState(id=widget_id, bool_value=value)
        return await self._rerun_where(key)

    async def _rerun_where(self, key: str) -> FollowerRun:
        state = self._client_state(self.query_string)
        if self.fragment_of.get(key):
            state.fragment_id = self.fragment_of[key]
        return await self._send(state)


@dataclasses.dataclass
class Record:
    sent: float  # monotonic, BackMsg sent
    done: float  # monotonic, run ended
    fragment: bool  # a fragment-only run (nothing changed)
    example: str | None  # the label the room box shows (what the page shows), on a whole-page run
    question: bool


@dataclasses.dataclass
class Student:
    index: int
    address: str
    cookie: str
    runs: list[Record] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    dropped: str = ""
    refused: str = ""  # the door said no (join rate, lock, full): the page does not follow
    opened: bool = False
    drawn_at: float | None = None  # its page first drew the forecast's chip buttons
    answer_at: float | None = None  # when it taps
    sent_at: float | None = None  # Send pressed
    sent: list[float] | None = None  # the row of weights sent
    confirmed: bool = False  # its page said "Your answer is in"


@dataclasses.dataclass
class Asked:
    """The forecast once asked: its id, grid and when."""

    id: str = ""
    grid: tuple[int, int] = (0, 0)
    at: float = 0.0
    answers_from: float | None = None  # students tap from then on (the forecast window opened)

    def take(self, other: Asked) -> None:
        self.id, self.grid, self.at = other.id, other.grid, other.at


def picks(index: int, cols: int) -> list[int]:
    """The keys student index gives a chip: one, or (every second student) two neighbours."""
    first = index % cols
    return [first, (first + 1) % cols] if index % 2 == 0 and cols > 1 else [first]


async def draw_forecast(client: Browser, student: Student, asked: Asked, record) -> None:
    """Tap the chip buttons, then Send: presses of widgets inside the forecast's fragment."""
    cols = asked.grid[1]
    chosen = picks(student.index, cols)
    for col in chosen:
        sent = time.monotonic()
        record(await client.press_widget(f"chip_add_{asked.id}_0_{col}"), sent)
    sent = time.monotonic()
    run = await client.press_widget(f"forecast_send_{asked.id}")
    record(run, sent)
    student.sent_at = sent
    student.sent = [chosen.count(c) / len(chosen) for c in range(cols)]
    student.confirmed = run.answer_in


def plan_the_tap(student: Student, client: Browser, asked: Asked, args, rng: random.Random) -> None:
    """Once the student's page shows the forecast's chips and the window is open: when it taps."""
    if asked.id and student.drawn_at is None and f"forecast_send_{asked.id}" in client.ids:
        student.drawn_at = time.monotonic()
    if asked.answers_from is not None and student.drawn_at is not None and student.answer_at is None:
        opened_for_me = max(asked.answers_from, student.drawn_at)
        student.answer_at = opened_for_me + rng.uniform(0, args.answer_window)


def wake(tick: float, student: Student) -> float:
    """When the student's page acts next: its poll's tick, or the student's tap if sooner (a browser
    taps whenever its student does, not on the poll's timer)."""
    if student.answer_at is not None and student.sent is None:
        return min(tick, student.answer_at)
    return tick


async def follow(student: Student, url: str, code: str, args, start_at: float, stop: asyncio.Event,
                 asked: Asked, rng: random.Random) -> None:
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    client = Browser(url, args.timeout, student.address, student.cookie)

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
        if not client.auto_reruns and client.door:
            student.refused = client.door
            return
        student.opened = True
        stage = "poll"
        interval = next(iter(client.auto_reruns.values()), 1.0)
        tick = time.monotonic() + interval
        while not stop.is_set():
            # until the poll's tick or the student's tap: read the runs the server pushes meanwhile
            while not stop.is_set() and (left := wake(tick, student) - time.monotonic()) > 0:
                if run := await client.pushed(min(left, 0.25)):
                    record(run, time.monotonic() - run.seconds)  # the server reran the page: the room moved
                plan_the_tap(student, client, asked, args, rng)
            if stop.is_set():
                break
            now = time.monotonic()
            plan_the_tap(student, client, asked, args, rng)
            if student.answer_at is not None and student.sent is None and now >= student.answer_at:
                stage = "forecast"
                await draw_forecast(client, student, asked, record)
                stage = "poll"
            elif now >= tick:
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


class Teacher:
    """The teacher's side: a real presenter session (--page present) or the bench's heartbeats."""

    def __init__(self, url: str | None, store, code: str, secret: str, args):
        self.store, self.code, self.secret, self.args = store, code, secret, args
        self.client = Browser(url, args.timeout, TEACHER_ADDRESS) if url else None
        self.panel_runs: list[tuple[float, float]] = []  # (sent, seconds) of the answer panel's runs
        self.errors: list[str] = []
        self.stop = asyncio.Event()
        self._lock = asyncio.Lock()  # one message exchange at a time on the websocket

    async def open(self) -> None:
        if self.client is None:
            return
        self.client.page_hash = calc_hash("present")
        run = await self.client.open(f"room={self.code}&teacher={self.secret}&example={EXAMPLES[0]}"
                                     f"&step={SOFTMAX_STEP}")
        self.errors.extend(run.errors)

    async def ask(self) -> Asked:
        if self.client is None:
            cols = len(all_examples()[EXAMPLES[0]].key_tokens)
            question = await asyncio.to_thread(self.store.ask, self.code, self.secret, "Draw head 1's row",
                                               kind="forecast", grid=(1, cols))
            return Asked(question.id, question.grid, time.monotonic())
        async with self._lock:
            at = time.monotonic()
            run = await self.client.press_widget("present_draw")
            self.errors.extend(run.errors)
            run = await self.client.toggle("room_show_answers", True)  # the class's average, drawn
            self.errors.extend(run.errors)
        question = (await asyncio.to_thread(self.store.state, self.code)).question
        return Asked(question.id, question.grid, at)

    async def close_answers(self) -> None:
        if self.client is None:
            return
        async with self._lock:
            run = await self.client.press_widget("room_close")
            self.errors.extend(run.errors)

    async def beat(self) -> None:
        """Every fragment the teacher's page runs on a timer (the room box, the answer panel), or the
        bench's own heartbeat without a page."""
        next_at: dict[str, float] = {}
        while not self.stop.is_set():
            await asyncio.sleep(0.1)
            now = time.monotonic()
            if self.client is None:
                if now >= next_at.get("", 0.0):
                    await asyncio.to_thread(self.store.teacher_heartbeat, self.code, self.secret)
                    next_at[""] = now + TEACHER_BEAT_SECONDS
                continue
            for fragment_id, interval in list(self.client.auto_reruns.items()):
                if now < next_at.setdefault(fragment_id, now + interval):
                    continue
                async with self._lock:
                    sent = time.monotonic()
                    run = await self.client.rerun_fragment(fragment_id)
                    self.errors.extend(run.errors)
                    if interval < TEACHER_BEAT_SECONDS:  # the answer panel (1 s)
                        self.panel_runs.append((sent, time.monotonic() - sent))
                next_at[fragment_id] = max(next_at[fragment_id] + interval, time.monotonic())

    async def close(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.close(), 10)


def change_latencies(students: list[Student],
                     changes: list[tuple[float, str]]) -> tuple[list[float], int, list[float]]:
    """Seconds from each change to each student's first run showing it; the misses; those runs' durations."""
    latencies, missed, durations = [], 0, []
    for k, (t0, title) in enumerate(changes):
        until = changes[k + 1][0] if k + 1 < len(changes) else float("inf")
        for student in students:
            if not student.opened:
                continue
            seen = next((r for r in student.runs if t0 < r.done <= until and r.example == title), None)
            if seen is None:
                missed += 1
            else:
                latencies.append(seen.done - t0)
                durations.append(seen.done - seen.sent)
    return latencies, missed, durations


async def until(condition, seconds: float, step: float = 0.25) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(step)
    return condition()


async def lesson(urls: list[str], pids: list[int], store, args) -> dict:
    titles = {key: all_examples()[key].title for key in EXAMPLES}
    room = store.create_room(client=TEACHER_ADDRESS)
    code, secret = room.code, room.teacher_secret

    def publish(key: str) -> None:
        store.set_state(code, secret, page=args.page, step=args.step, setup_json=json.dumps({"example": key}),
                        selections={"step": args.step + 1} if args.page == "present" else {})

    teacher = Teacher(urls[0] if args.page == "present" else None, store, code, secret, args)
    await teacher.open()
    beating = asyncio.create_task(teacher.beat())
    await asyncio.to_thread(publish, EXAMPLES[0])  # after the teacher's page published its own
    n = args.students
    rng = random.Random(args.seed)
    students = [Student(i, student_address(i, args.addresses), secrets.token_urlsafe(24)) for i in range(n)]
    stop = asyncio.Event()
    asked = Asked()
    begin = time.monotonic()
    tasks = [asyncio.create_task(follow(s, urls[s.index % len(urls)], code, args,
                                        begin + rng.uniform(0, args.ramp), stop, asked,
                                        random.Random(args.seed * 1000 + s.index))) for s in students]
    await until(lambda: sum(s.opened or bool(s.dropped or s.refused) for s in students) >= n,
                args.ramp + args.timeout,
                0.5)
    opened_at = time.monotonic()
    roster = await asyncio.to_thread(store.roster, code, secret)
    members = {s.id for s in roster if not s.removed}
    await asyncio.sleep(3.0)

    if args.page == "present" and not args.ask_after:  # the panel is open while the class follows the changes
        asked.take(await teacher.ask())
        await asyncio.sleep(2.0)

    # the teacher changes the example every --interval seconds
    changes = []
    change_cpu0, change0 = sum(cpu_seconds(pid) for pid in pids), time.monotonic()
    for k in range(max(1, int(args.seconds // args.interval))):
        key = EXAMPLES[(k + 1) % 2]
        t0 = time.monotonic()
        await asyncio.to_thread(publish, key)
        changes.append((t0, titles[key]))
        await asyncio.sleep(args.interval)
    change_end = time.monotonic()
    change_cpu = sum(cpu_seconds(pid) for pid in pids) - change_cpu0
    panel_during_changes = [d for t, d in teacher.panel_runs if change0 <= t <= change_end]

    # a quiet window: everyone polls, nothing changes
    server_cpu0 = [cpu_seconds(pid) for pid in pids]
    own0, quiet0 = own_cpu_seconds(), time.monotonic()
    await asyncio.sleep(args.quiet)
    quiet1 = time.monotonic()
    server_cpu = sum(cpu_seconds(pid) - c for pid, c in zip(pids, server_cpu0, strict=True))
    own_cpu = own_cpu_seconds() - own0

    # the forecast: asked now (workbench) or before the changes (presenter, not yet drawn by anyone)
    if not asked.id:
        asked.take(await teacher.ask())
    t_ask = forecast0 = asked.answers_from = time.monotonic()  # students tap from now on
    opened = [s for s in students if s.opened and not s.dropped]
    await until(lambda: all(s.sent is not None or s.dropped for s in opened),
                args.answer_window + args.timeout)
    last_sent = max((s.sent_at for s in students if s.sent_at), default=t_ask)
    tally = await asyncio.to_thread(store.tally, code, asked.id)
    panel_all = None
    if teacher.client is not None:
        await until(lambda: teacher.client.answered is not None and teacher.client.answered[0] >= len(opened),
                    15.0)
        if teacher.client.answered and teacher.client.answered[0] >= len(opened):
            panel_all = teacher.client.answered[1] - last_sent
    panel_during_forecast = [d for t, d in teacher.panel_runs if t >= forecast0]
    await teacher.close_answers()
    await asyncio.sleep(2.0)
    followers = await asyncio.to_thread(store.followers, code)

    stop.set()
    teacher.stop.set()
    await asyncio.gather(*tasks, beating)
    await teacher.close()

    latencies, missed, durations = change_latencies(students, changes)
    quiet_polls = [r.done - r.sent for s in students for r in s.runs
                   if r.fragment and quiet0 <= r.sent and r.done <= quiet1]
    quiet_full = sum(1 for s in students for r in s.runs if not r.fragment and quiet0 <= r.sent <= quiet1)
    sent = [s for s in students if s.sent is not None]
    expected_mean = np.mean([s.sent for s in sent], axis=0) if sent else None
    stored_mean = np.asarray(tally.mean[0]) if tally.mean else None
    open_seconds = [s.runs[0].done - s.runs[0].sent for s in students if s.opened]
    return {
        "n": n, "opened": sum(s.opened for s in students), "admitted": len(members),
        "refused": [s.refused for s in students if s.refused],
        "cookies_admitted": len(members & {student_id(s.cookie) for s in students}),
        "open_p50": pct(open_seconds, 0.5), "open_max": max(open_seconds, default=0),
        "ramp_done": opened_at - begin, "changes": len(changes),
        "latencies": latencies, "missed": missed, "durations": durations,
        "run_errors": [e for s in students for e in s.errors] + teacher.errors,
        "dropped": [s.dropped for s in students if s.dropped],
        "quiet_seconds": quiet1 - quiet0, "server_cpu": server_cpu, "own_cpu": own_cpu,
        "quiet_polls": quiet_polls, "quiet_full": quiet_full,
        "asked_to_drawn": [s.drawn_at - asked.at for s in students if s.drawn_at],
        "sent": len(sent), "confirmed": sum(s.confirmed for s in sent),
        "sent_within": [s.sent_at - t_ask for s in sent], "tally_total": tally.total,
        "since_drawn": [s.sent_at - max(t_ask, s.drawn_at) for s in sent],
        "mean_error": float(np.abs(expected_mean - stored_mean).max())
        if expected_mean is not None and stored_mean is not None else float("nan"),
        "panel_all": panel_all, "panel_changes": panel_during_changes,
        "panel_forecast": panel_during_forecast,
        "followers": followers, "change_cpu": change_cpu, "change_seconds": change_end - change0,
        "change_whole_runs": sum(1 for s in students for r in s.runs
                                 if not r.fragment and change0 <= r.sent <= change_end),
    }


def student_id(cookie: str) -> str:
    from app.room.identity import student_id_of
    return student_id_of(cookie)


def report(r: dict, args, backend: str) -> str:
    n, lat = r["n"], r["latencies"]
    following = max(1, r["opened"])  # students whose pages follow (the door let them in)
    cpu_per_student_min = r["server_cpu"] / following / (r["quiet_seconds"] / 60)
    polls_per_s = len(r["quiet_polls"]) / r["quiet_seconds"]
    above_quiet = r["change_cpu"] - r["server_cpu"] / r["quiet_seconds"] * r["change_seconds"]
    per_change = above_quiet / max(1, r["changes"] * r["opened"])
    within = r["sent_within"]
    exact = "exact" if r["tally_total"] == r["sent"] == r["opened"] else "MISMATCH"
    where = "one per student" if args.addresses == 0 else f"{args.addresses} NAT address(es)"
    rows = [
        ("students (following / admitted by the door / refused by it / asked)",
         f"{r['opened']} / {r['admitted']} ({r['cookies_admitted']} of their cookies) / "
         f"{len(r['refused'])} / {n}, from {where}, {args.servers} server(s), {backend}"),
        ("first page run (p50 / max); all opened after", f"{r['open_p50']:.2f} s / {r['open_max']:.2f} s; "
                                                         f"{r['ramp_done']:.1f} s"),
        (f"teacher change -> student shows it ({r['changes']} changes, {len(lat)} samples)",
         f"p50 {pct(lat, .5):.2f} s, p95 {pct(lat, .95):.2f} s, max {max(lat, default=float('nan')):.2f} s"),
        ("of which: the poll that found it + the page's rerun (p50 / p95)",
         f"{pct(r['durations'], .5):.2f} s / {pct(r['durations'], .95):.2f} s"),
        ("server CPU per student per change (above the quiet rate)", f"{per_change * 1000:.1f} ms"),
        ("whole-page runs per student per change",
         f"{r['change_whole_runs'] / max(1, r['opened'] * r['changes']):.2f}"),
        ("changes missed (not shown before the next one)", str(r["missed"])),
        ("run errors / dropped sessions", f"{len(r['run_errors'])} / {len(r['dropped'])}"),
        (f"quiet {r['quiet_seconds']:.0f} s: fragment polls (p50 / p95)",
         f"{len(r['quiet_polls'])} polls ({polls_per_s / following:.2f} per student per s), "
         f"{pct(r['quiet_polls'], .5) * 1000:.0f} ms / {pct(r['quiet_polls'], .95) * 1000:.0f} ms; "
         f"{r['quiet_full']} whole-page runs"),
        ("quiet: server CPU per student per minute",
         f"{cpu_per_student_min * 1000:.0f} ms ({r['server_cpu'] / r['quiet_seconds'] * 100:.0f} % of a core "
         f"in all; the bench's own clients: {r['own_cpu'] / r['quiet_seconds'] * 100:.0f} %)"),
        ("forecast: asked -> chips drawn on the student's page (p50 / max)",
         f"{len(r['asked_to_drawn'])} students, {pct(r['asked_to_drawn'], .5):.2f} s / "
         f"{max(r['asked_to_drawn'], default=float('nan')):.2f} s"),
        ("forecast: Send pressed, after the window opened (p50 / max)",
         f"{len(within)} students, {pct(within, .5):.1f} s / {max(within, default=float('nan')):.1f} s "
         f"({sum(w <= 10 for w in within)} within 10 s)"),
        ("forecast: Send pressed, after the student's page drew it and the window opened (p50 / max)",
         f"{pct(r['since_drawn'], .5):.1f} s / {max(r['since_drawn'], default=float('nan')):.1f} s"),
        ("forecast: counted (tally.total / sent; pages that said 'Your answer is in')",
         f"{r['tally_total']} / {r['sent']} ({exact}); {r['confirmed']}"),
        ("forecast: store's mean - mean of the grids sent (max abs)", f"{r['mean_error']:.1e}"),
        ("followers (heartbeat within 10 s) at the end", str(r["followers"])),
    ]
    if args.page == "present":
        rows += [
            ("teacher's answer panel: last Send -> 'N of N answered' on the presenter",
             "never" if r["panel_all"] is None else f"{r['panel_all']:.2f} s"),
            ("teacher's answer panel runs (1 s timer) during the changes / the forecast, p50 / p95",
             f"{len(r['panel_changes'])}: {pct(r['panel_changes'], .5) * 1000:.0f} / "
             f"{pct(r['panel_changes'], .95) * 1000:.0f} ms; {len(r['panel_forecast'])}: "
             f"{pct(r['panel_forecast'], .5) * 1000:.0f} / {pct(r['panel_forecast'], .95) * 1000:.0f} ms"),
        ]
    out = ["| measure | value |", "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows]
    for title, items in (("run errors", r["run_errors"]), ("dropped", r["dropped"]),
                         ("refused by the door", r["refused"])):
        if items:
            out.append(f"\n{title} (first 5 of {len(items)}):\n" + "\n".join(f"- {e}" for e in items[:5]))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0, help="teacher changes for this long")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between the teacher's changes")
    parser.add_argument("--quiet", type=float, default=30.0, help="the quiet window for the CPU figure")
    parser.add_argument("--answer-window", type=float, default=8.0,
                        help="students tap and send their forecast within this many seconds")
    parser.add_argument("--ramp", type=float, default=None, help="students open within this (default N/10 s)")
    parser.add_argument("--page", default="", choices=["", "present"],
                        help="the page the teacher shows: the workbench (default) or the presenter, "
                             "with a real teacher session and its answer panel")
    parser.add_argument("--step", type=int, default=SOFTMAX_STEP - 1,
                        help="the presenter's screen (from 0), for present")
    parser.add_argument("--ask-after", action="store_true",
                        help="with present: ask the forecast after the changes (no question or panel open "
                             "during them), to see what the open question costs")
    parser.add_argument("--addresses", type=int, default=3,
                        help="students' X-Forwarded-For addresses: a school's NATs (0: one per student)")
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
        backend, store = stack.enter_context(class_store(Path(tmp), redis=args.redis))
        urls, pids = [], []
        for _ in range(args.servers):  # the servers inherit MHA_DATA_DIR / REDIS_URL from os.environ
            url, process = stack.enter_context(streamlit_server())
            urls.append(url)
            pids.append(process.pid)
        started = time.monotonic()
        load = os.getloadavg()[0]
        result = asyncio.run(lesson(urls, pids, store, args))
        page = args.page or "workbench"
        print(f"\n{args.students} students, {args.servers} server(s), {backend}, page '{page}', "
              f"{time.monotonic() - started:.0f} s, {os.cpu_count()} cores, load average {load:.1f} "
              f"at the start, {os.getloadavg()[0]:.1f} at the end\n")
        print(report(result, args, backend))


if __name__ == "__main__":
    main()
