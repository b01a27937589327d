"""Server CPU of one run over Streamlit's own protocol: the workbench's edit and rerun against a plain
script's rerun, one session each, in turns on one machine.

Run: PYTHONPATH=. .venv/bin/python bench/run_cpu.py [--runs 40] [--before ../before]

Each server is a real ``streamlit run`` of its checkout (its own .streamlit/config.toml), driven
by tests/st_protocol.py as a browser tab is: an edit of X's cell 'sat', d1 (sent as the frontend
sends it: a rerun of the steps' fragment when the grid is drawn in one), a plain rerun, and the
plain script bench/plain_twelve.py drawing 12 heatmaps of new numbers each run. A run's CPU is
the server process's (utime + stime from /proc) from the message sent to the run's end; one
session at a time, so it is that run's, plus the server's own threads meanwhile. ``--before``
starts a second app server from another checkout and runs it in the same turns. Means: the kernel
counts CPU in 10 ms ticks, so the runs of a kind are summed, then divided.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from app.grids.editors import editor_key  # noqa: E402
from tests.st_protocol import SAT, Session  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
PLAIN = """
import numpy as np, plotly.graph_objects as go, streamlit as st
runs = st.session_state.runs = st.session_state.get("runs", 0) + 1
rng = np.random.default_rng(runs)  # new numbers every run, as an edit gives the page
for i in range(12):
    st.plotly_chart(go.Figure(go.Heatmap(z=rng.random((3, 3)), text=rng.random((3, 3)).round(2),
                                         texttemplate="%{text}")), key=f"plain_{i}")
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


@contextlib.contextmanager
def server(root: Path, entry: Path, *options: str):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(entry), "--server.headless=true",
         "--server.address=127.0.0.1", f"--server.port={port}", "--browser.gatherUsageStats=false", *options],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


async def timed(pid: int, act) -> float:
    """The server's CPU seconds over one run (a tick is 10 ms: runs are summed, then divided)."""
    before = cpu_seconds(pid)
    run = await act()
    assert run.status in ("ok", "fragment ok") and not run.errors, (run.status, run.errors)
    return cpu_seconds(pid) - before


async def bench(apps: dict[str, tuple[str, int]], plain: tuple[str, int], runs: int) -> dict[str, float]:
    sessions = {name: Session(url) for name, (url, _) in apps.items()}
    plain_session = Session(plain[0])
    await plain_session.open()
    for session in sessions.values():
        await session.open()
        await session.edit_cell(editor_key("x", 1), SAT, 0, "1.5")  # edited: the picker's label is set
    totals: dict[str, list[float]] = {"plain script, 12 heatmaps of new numbers": []}
    for i in range(runs):
        totals["plain script, 12 heatmaps of new numbers"].append(await timed(plain[1], plain_session.rerun))
        for name, session in sessions.items():
            pid = apps[name][1]
            value = repr(round(-2 + 0.01 * i, 3))
            edit = await timed(pid, lambda s=session, v=value: s.edit_cell(editor_key("x", 1), SAT, 0, v))
            totals.setdefault(f"{name}: an edit of X", []).append(edit)
            totals.setdefault(f"{name}: a plain rerun", []).append(await timed(pid, session.rerun))
    for session in [plain_session, *sessions.values()]:
        await session.close()
    return {name: 1000 * sum(values) / len(values) for name, values in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--before", type=Path, help="another checkout, run in the same turns")
    args = parser.parse_args()
    plain_file = ROOT / "artifacts" / "plain_new_numbers.py"
    plain_file.parent.mkdir(exist_ok=True)
    plain_file.write_text(PLAIN)
    roots = {"after": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    with contextlib.ExitStack() as stack:
        apps = {name: stack.enter_context(server(root, root / "app" / "streamlit_app.py"))
                for name, root in roots.items()}
        plain = stack.enter_context(server(ROOT, plain_file))
        result = asyncio.run(bench(apps, plain, args.runs))
    reference = result["plain script, 12 heatmaps of new numbers"]
    print("| run | server CPU (mean) | / plain |")
    print("|---|---|---|")
    for name, ms in result.items():
        print(f"| {name} | {ms:.1f} ms | {ms / reference:.2f} |")


if __name__ == "__main__":
    main()
