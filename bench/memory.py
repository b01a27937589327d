"""Server memory per session (issues 15 and 40): a real server's RSS while many sessions open the
heaviest link at once, with 1, 6 and 12 long-sequence sessions open one after another, after they
close, and with 4 different 512-piece texts traced at once on the Real model page.

Run: PYTHONPATH=. .venv/bin/python bench/memory.py [--attack 8,20] [--sessions 1,6,12] [--texts 4]
     [--watch 45] [--only attack|workbench|model]

0. The attack (issue 40, finding 10). For each count N of --attack, a fresh server: one default
   session first (imports loaded), then N sessions open ``?seed=<i>&d_model=768&heads=12&tokens=<1024
   tokens>`` at the same moment (each seed another draw of the random example: the shared result
   cache never hits). RSS is sampled from /proc every 0.1 s until every session has its page drawn
   (its run finished, or refused with a message); reported: the peak (VmHWM and sampled), the seconds
   to each drawn page, and how many were drawn, refused or failed.

Two more servers (tests/live_server.py, with the repository's .streamlit/config.toml), each driven over
Streamlit's websocket protocol (tests/st_protocol.Session), RSS read from /proc/<pid>/status:

1. The workbench. After one default session (numpy, pandas, plotly loaded), sessions open one
   after another with ``?seed=<i>&d_model=768&heads=12&tokens=<1024 tokens>``: 1024 tokens, d_model
   768, 12 heads (float32), each seed another draw, so no two sessions share a result. RSS once 1,
   6 and 12 are open; then all close at once: RSS 2 s later, and --watch seconds later (past
   server.disconnectedSessionTTL); then one more session opens and closes (Streamlit reaps expired
   sessions only when its session storage is next written) and RSS is read until it is back within
   the figure cache's 64 MiB of the level before the long sessions (at most 10 s).
2. The Real model page. A session opens it (the model loads, the first sentence is traced), then
   --texts sessions each set a different 512-piece text at the same moment; RSS is sampled every
   0.2 s while they run; each session's time is reported (the ones that waited their turn show it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
import tomllib
from pathlib import Path

# `python bench/memory.py` puts bench/ first on sys.path, where a file named like a package would shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from streamlit.util import calc_hash  # noqa: E402

from tests.live_server import ROOT, streamlit_server  # noqa: E402
from tests.st_protocol import Run, Session  # noqa: E402

LONG = {"d_model": "768", "heads": "12", "tokens": " ".join(f"w{i}" for i in range(1024))}
FIGURES_MB = 64 * 2**20 / 1e6  # built figures the server keeps for every session (app/charts/figure_cache.py)
WORDS = ("cat", "dog", "sun", "sea", "tree", "book", "car", "bird")  # one word piece each


def rss_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (the peak) of the process, in MB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) / 1024
    return out


def checked(run: Run, what: str) -> Run:
    if run.status != "ok" or run.errors:
        raise RuntimeError(f"{what}: status {run.status!r}, errors {run.errors[:3]}")
    return run


async def open_and_close(url: str, page: str = "") -> None:
    session = Session(url, timeout=300)
    if page:
        session.page_hash = calc_hash(page)
    checked(await session.open(), "a default session")
    await session.close()


async def long_session(url: str, seed: int) -> Session:
    from urllib.parse import urlencode

    session = Session(url, timeout=600)
    checked(await session.open(urlencode({"seed": str(seed), **LONG})), f"long session {seed}")
    return session


async def workbench(counts: list[int], watch: float) -> dict:
    with streamlit_server(timeout=120) as (url, process):
        pid = process.pid
        await open_and_close(url)
        await asyncio.sleep(1)
        before = rss_mb(pid)["VmRSS"]
        sessions, open_rss = [], {}
        for count in counts:
            while len(sessions) < count:
                sessions.append(await long_session(url, seed=len(sessions)))
            await asyncio.sleep(1)
            open_rss[count] = round(rss_mb(pid)["VmRSS"])
            print(f"  {count} long sessions open: {open_rss[count]} MB", flush=True)
        peak, high = rss_mb(pid)["VmHWM"], rss_mb(pid)["VmRSS"]
        closed_at = time.monotonic()
        await asyncio.gather(*(session.close() for session in sessions))
        await asyncio.sleep(2)
        after_close = rss_mb(pid)["VmRSS"]
        await asyncio.sleep(max(0.0, watch - (time.monotonic() - closed_at)))
        after_watch = rss_mb(pid)["VmRSS"]
        await open_and_close(url)  # writes Streamlit's session storage: expired sessions are reaped
        reaped_at, back_after = time.monotonic(), None
        while time.monotonic() - reaped_at < 10:
            await asyncio.sleep(0.5)
            if rss_mb(pid)["VmRSS"] <= before + FIGURES_MB:
                back_after = round(time.monotonic() - reaped_at, 1)
                break
        after_reap = rss_mb(pid)["VmRSS"]
        return {"before_long_sessions_mb": round(before), "open_mb": open_rss, "peak_hwm_mb": round(peak),
                "at_close_mb": round(high), "2_s_after_close_mb": round(after_close),
                "watch_s": watch, "after_watch_mb": round(after_watch),
                "after_reap_mb": round(after_reap), "back_s_after_reap": back_after}


HEAVY_WORDS = ("Computing", "Queued", "Waiting for the server", "heavy pages")  # what a waiting page says


async def heavy_at_once(url: str, seed: int, started: float) -> dict:
    """One session opening the heaviest link: when its page was drawn, and how it ended."""
    session = Session(url, timeout=600)
    try:
        run = await long_session_run(session, seed)
        drawn = "chart_weights" in run.charts
        return {"seconds": time.monotonic() - started, "drawn": drawn, "status": run.status,
                "errors": run.errors[:2],
                "said": [s for s in session.said if "heavy" in s or "server" in s][:2]}
    except Exception as error:  # noqa: BLE001 - a bench reports what broke and goes on
        return {"seconds": time.monotonic() - started, "drawn": False, "status": "failed",
                "errors": [f"{type(error).__name__}: {error}"[:200]], "said": []}
    finally:
        with contextlib.suppress(Exception):
            await session.close()


async def long_session_run(session: Session, seed: int) -> Run:
    from urllib.parse import urlencode

    return await session.open(urlencode({"seed": str(seed), **LONG}))


async def attack(count: int, extra_args: tuple[str, ...] = (), env: dict | None = None) -> dict:
    """count sessions open the heaviest link at once on a fresh server; its peak RSS and the pages."""
    with streamlit_server(*extra_args, timeout=120, env=env) as (url, process):
        pid = process.pid
        await open_and_close(url)
        await asyncio.sleep(1)
        before = rss_mb(pid)["VmRSS"]
        started = time.monotonic()
        tasks = [asyncio.create_task(heavy_at_once(url, 1000 + i, started)) for i in range(count)]
        peak_sampled, samples = before, []
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0.1)
            now = rss_mb(pid)["VmRSS"]
            peak_sampled = max(peak_sampled, now)
            samples.append((round(time.monotonic() - started, 1), round(now)))
        pages = [task.result() for task in tasks]
        hwm = rss_mb(pid)["VmHWM"]
        drawn = sorted(round(p["seconds"], 1) for p in pages if p["drawn"])
        refused = [p for p in pages if not p["drawn"] and p["status"] == "ok" and not p["errors"]]
        failed = [p for p in pages if p not in refused and not p["drawn"]]
        return {"sessions": count, "before_mb": round(before), "peak_hwm_mb": round(hwm),
                "peak_sampled_mb": round(peak_sampled), "drawn": len(drawn), "refused": len(refused),
                "failed": len(failed), "failures": [p["errors"] for p in failed][:3],
                "refused_said": [p["said"] for p in refused][:2],
                "first_drawn_s": drawn[0] if drawn else None,
                "median_drawn_s": drawn[len(drawn) // 2] if drawn else None,
                "last_drawn_s": drawn[-1] if drawn else None,
                "rss_every_2_s": [mb for t, mb in samples[::20]]}


def text_of(word: str, pieces: int = 512) -> str:
    return " ".join([word] * (pieces - 2))


async def model_session(url: str) -> Session:
    session = Session(url, timeout=600)
    session.page_hash = calc_hash("model")
    checked(await session.open(), "a model page session")
    return session


async def traced_at_once(session: Session, text: str) -> float:
    session.set_string("model_text", text)
    started = time.perf_counter()
    checked(await session.rerun(), "a 512-piece trace")
    return time.perf_counter() - started


async def model_page(n_texts: int) -> dict:
    with streamlit_server(timeout=120) as (url, process):
        pid = process.pid
        sessions = [await model_session(url) for _ in range(n_texts)]
        await asyncio.sleep(1)
        before = rss_mb(pid)["VmRSS"]
        peak_sampled = before
        texts = [text_of(WORDS[i % len(WORDS)] + ("" if i < len(WORDS) else str(i))) for i in range(n_texts)]
        tasks = [asyncio.create_task(traced_at_once(s, t)) for s, t in zip(sessions, texts, strict=True)]
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0.2)
            peak_sampled = max(peak_sampled, rss_mb(pid)["VmRSS"])
        seconds = sorted(round(task.result(), 1) for task in tasks)
        await asyncio.sleep(1)
        after = rss_mb(pid)
        await asyncio.gather(*(session.close() for session in sessions))
        return {"texts": n_texts, "before_mb": round(before), "peak_sampled_mb": round(peak_sampled),
                "peak_hwm_mb": round(after["VmHWM"]), "after_mb": round(after["VmRSS"]),
                "seconds_each": seconds}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attack", default="8,20",
                        help="sessions opening the heaviest link at once, per server")
    parser.add_argument("--sessions", default="1,6,12", help="long sessions open at each reading")
    parser.add_argument("--texts", type=int, default=4, help="512-piece texts traced at once")
    parser.add_argument("--watch", type=float, default=35.0,
                        help="seconds after closing until one more session comes and goes (a reap)")
    parser.add_argument("--only", default="attack,workbench,model", help="the parts to run, comma-separated")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    report = {"disconnected_session_ttl_s": config.get("server", {}).get("disconnectedSessionTTL", 120)}
    if "attack" in parts:
        report["attack"] = []
        for count in (int(c) for c in args.attack.split(",") if c):
            print(f"attack: {count} sessions open the heaviest link at once:", flush=True)
            report["attack"].append(await attack(count))
            print(json.dumps(report["attack"][-1]), flush=True)
    if "workbench" in parts:
        print("workbench, 1024 tokens, d_model 768, 12 heads:", flush=True)
        report["workbench"] = await workbench(sorted(int(c) for c in args.sessions.split(",")), args.watch)
    if "model" in parts:
        print(f"model page, {args.texts} texts of 512 pieces at once:", flush=True)
        report["model_page"] = await model_page(args.texts)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
