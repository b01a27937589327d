"""A classroom against one server: N concurrent sessions through Streamlit's websocket protocol.

Run: PYTHONPATH=. .venv/bin/python bench/load.py --sessions 50 --think 10 --duration 120

Starts one headless server on a free loopback port (tests/live_server.py, reading
.streamlit/config.toml) with --server.disconnectedSessionTTL=<--ttl>. A warm-up session makes a
few runs first. Then every session opens the page at a random moment within --ramp seconds and,
until --duration has passed, waits a random exponential think time (mean --think, seeded) and
either edits X row 2 ('sat'), column 0 to a new value or sends a plain rerun. Every run's
weights heatmap is checked against mha_core for that session's own value, so a state leak
between sessions counts as an error. Reported: run latency (BackMsg sent -> script_finished
received), errors, dropped sessions, the server process's CPU seconds per run
(/proc/<pid>/stat utime+stime over the load phase / runs) and its RSS after warm-up, at peak
(VmHWM) and after the sessions have closed and their TTL has passed.

``--plain`` puts the stack's floor under the same load: bench/run_cpu.py's plain script (12 heatmaps
of new numbers each run, nothing else), every action a rerun, checked for its status only.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

# `python bench/load.py` puts bench/ first on sys.path, where a file named like a package would shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402

from app.grids.editors import editor_key  # noqa: E402
from bench.run_cpu import PLAIN, server  # noqa: E402
from tests.live_server import ROOT, streamlit_server  # noqa: E402
from tests.st_protocol import SAT, Run, Session, drawn_weights, expected_weights  # noqa: E402

EDITOR = editor_key("x", 1)  # the X editor's key in a fresh session (edits do not bump the version)
TICK = os.sysconf("SC_CLK_TCK")


# --- the server process, from /proc ---------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine have used (for what else ran meanwhile)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICK


def status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS) in MB and the thread count."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) / 1024
        elif name == "Threads":
            out[name] = int(value)
    return out


# --- one session ----------------------------------------------------------------------------------

def problems(run: Run, value: float | None) -> list[str]:
    """What is wrong with a run: its status, error elements, or weights that are not its own."""
    found = [] if run.status in ("ok", "fragment ok") else [f"status {run.status}"]  # an edit: its steps' run
    found += run.errors
    if value == "plain":
        return found
    if "chart_weights" not in run.charts:
        return found + ["no weights chart"]
    drawn, expected = drawn_weights(run), expected_weights(value)
    if drawn.shape != expected.shape or not np.allclose(drawn, expected, atol=1e-5):
        found.append(f"weights are not this session's (X[2][0] = {value})")
    return found


@dataclasses.dataclass
class Stats:
    runs: list[tuple[str, float]] = dataclasses.field(default_factory=list)  # (open|edit|rerun, s)
    ended: dict[str, int] = dataclasses.field(default_factory=dict)  # "edit: fragment ok" -> runs
    errors: list[str] = dataclasses.field(default_factory=list)
    dropped: list[str] = dataclasses.field(default_factory=list)
    bytes: int = 0


async def session(i: int, url: str, args, load_start: float, stats: Stats) -> None:
    rng = random.Random(args.seed * 100_003 + i)
    await asyncio.sleep(max(0.0, load_start + rng.uniform(0, args.ramp) - time.monotonic()))
    end = load_start + args.duration
    client, kind = Session(url, timeout=args.timeout), "open"
    value = "plain" if args.plain else None
    try:
        run = await client.open()
        while True:
            stats.runs.append((kind, run.seconds))
            stats.ended[f"{kind}: {run.status}"] = stats.ended.get(f"{kind}: {run.status}", 0) + 1
            stats.bytes += run.bytes
            stats.errors += [f"session {i}, {kind}: {p}" for p in problems(run, value)]
            wait = rng.expovariate(1 / args.think) if args.think > 0 else 0.0
            if time.monotonic() + wait >= end:
                break
            await asyncio.sleep(wait)
            if rng.random() < args.edit_share and not args.plain:
                kind, value = "edit", round(rng.uniform(-3, 3), 3)
                run = await client.edit_cell(EDITOR, SAT, 0, repr(value))
            else:
                kind, run = "rerun", await client.rerun()
    except Exception as error:  # a timeout, a closed connection: the session is lost
        stats.dropped.append(f"session {i} during {kind}: {type(error).__name__}: {error}")
    finally:
        try:
            await asyncio.wait_for(client.close(), 10)
        except Exception:
            pass


async def open_and_close(url: str, runs: int = 0, plain: bool = False) -> None:
    client = Session(url)
    await client.open()
    for n in range(runs):
        await (client.edit_cell(EDITOR, SAT, 0, repr(1.5 + n)) if n % 2 and not plain else client.rerun())
    await client.close()


# --- the whole bench ------------------------------------------------------------------------------

def percentiles(seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {"n": 0}
    a = np.array(seconds) * 1000
    return {"n": len(a), "p50_ms": round(float(np.percentile(a, 50)), 1),
            "p95_ms": round(float(np.percentile(a, 95)), 1), "max_ms": round(float(a.max()), 1)}


async def bench(url: str, pid: int, args) -> dict:
    await open_and_close(url, runs=args.warmup, plain=args.plain)
    await asyncio.sleep(1)
    warm = status(pid)
    stats, peak = Stats(), warm["VmRSS"]
    cpu0, client0, machine0 = cpu_seconds(pid), time.process_time(), machine_busy_seconds()
    load_start = time.monotonic() + 0.5
    tasks = [asyncio.create_task(session(i, url, args, load_start, stats)) for i in range(args.sessions)]
    pending = set(tasks)
    deadline = load_start + args.ramp + args.duration + 2 * args.timeout + 30  # bounded, whatever happens
    while pending and time.monotonic() < deadline:
        _, pending = await asyncio.wait(pending, timeout=0.5)
        now = status(pid)
        peak, threads = max(peak, now["VmRSS"]), now["Threads"]
    for task in pending:
        task.cancel()
        stats.dropped.append("a session still running at the deadline")
    elapsed = time.monotonic() - load_start
    cpu, client_cpu = cpu_seconds(pid) - cpu0, time.process_time() - client0
    others = machine_busy_seconds() - machine0 - cpu - client_cpu  # neither the server nor this client
    await asyncio.sleep(args.ttl + 2)  # disconnected sessions are kept this long for reconnects
    after_ttl = status(pid)
    # Streamlit's session storage removes expired sessions only when it is next written to:
    # one more session opening and closing does that.
    await open_and_close(url)
    await asyncio.sleep(2)
    after_reap = status(pid)
    interactive = [s for kind, s in stats.runs if kind != "open"]
    return {
        "sessions": args.sessions, "think_s": args.think, "duration_s": args.duration, "ramp_s": args.ramp,
        "runs": len(stats.runs), "runs_per_s": round(len(stats.runs) / elapsed, 2),
        "interactive": percentiles(interactive),
        "opens": percentiles([s for kind, s in stats.runs if kind == "open"]),
        "all_runs": percentiles([s for _, s in stats.runs]),
        "ended_as": stats.ended,  # a whole run ("ok") or the steps' alone ("fragment ok")
        "errors": len(stats.errors), "error_samples": stats.errors[:5],
        "dropped": len(stats.dropped), "dropped_samples": stats.dropped[:5],
        "server_cpu_s": round(cpu, 2),
        "server_cpu_ms_per_run": round(1000 * cpu / max(1, len(stats.runs)), 1),
        "server_cpu_share": round(cpu / elapsed, 2),  # cores busy, on average
        "client_cpu_ms_per_run": round(1000 * client_cpu / max(1, len(stats.runs)), 1),
        "other_processes_cpu_share": round(max(0.0, others) / elapsed, 2),
        "kb_per_run": round(stats.bytes / 1024 / max(1, len(stats.runs)), 1),
        "rss_mb": {"after_warmup": round(warm["VmRSS"]), "peak_sampled": round(peak),
                   "peak_hwm": round(after_reap["VmHWM"]), "after_close_ttl": round(after_ttl["VmRSS"]),
                   "after_reap": round(after_reap["VmRSS"])},
        "threads_at_end_of_load": threads,
    }


def server_log_problems(url: str) -> list[str]:
    log = ROOT / "artifacts" / f"server-{url.rsplit(':', 1)[1]}.log"
    if not log.exists():
        return []
    return [line for line in log.read_text(errors="replace").splitlines()
            if "Traceback" in line or "ERROR" in line or "Exception" in line][:10]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--think", type=float, default=10.0, help="mean think time between runs, s")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of interaction per run")
    parser.add_argument("--ramp", type=float, default=10.0, help="sessions open within this many s")
    parser.add_argument("--edit-share", type=float, default=0.5, help="share of actions that are edits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ttl", type=int, default=5, help="server.disconnectedSessionTTL, s")
    parser.add_argument("--warmup", type=int, default=10, help="runs of one session before the load")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="a run slower than this drops its session")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="passed to streamlit run, e.g. --server-arg=--runner.postScriptGC=true")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--plain", action="store_true", help="the plain script of 12 heatmaps, not the app")
    args = parser.parse_args()
    if not (0 < args.sessions <= 1000 and 0 < args.duration <= 3600 and args.think >= 0):
        parser.error("sessions 1..1000, duration up to 3600 s, think >= 0")

    load_before = os.getloadavg()
    server_args = (f"--server.disconnectedSessionTTL={args.ttl}", *args.server_arg)
    if args.plain:
        plain_file = ROOT / "artifacts" / "plain_new_numbers.py"
        plain_file.parent.mkdir(exist_ok=True)
        plain_file.write_text(PLAIN)
        with server(ROOT, plain_file, *server_args) as (url, pid):
            result = asyncio.run(bench(url, pid, args))
    else:
        with streamlit_server(*server_args) as (url, process):
            result = asyncio.run(bench(url, process.pid, args))
            result["server_log_problems"] = server_log_problems(url)
    result.update({
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} CPUs, {cpu_model()}", "load_average_before": load_before,
        "server_args": list(server_args), "command": " ".join(sys.argv),
    })
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
