"""Server CPU of one following student over Streamlit's websocket protocol: per poll (the
``run_every`` fragment, app/room/room_box.py ``poll``) and per whole-page run on the presenter's softmax
screen, against bench/plain_poll.py (a title and an empty fragment: Streamlit's own floor).

Run: PYTHONPATH=. .venv/bin/python bench/follower_cost.py [--polls 300] [--runs 100]

One server at a time (tests/live_server.py), one FollowerSession (tests/st_protocol.py) with its own
``mha_student`` cookie, in a room made in the server's SQLite store and showing "present" step 4 of
the default example; server CPU is read from /proc/<pid>/stat (10-ms ticks) around the polls, then
around the whole-page runs. A quiet machine is assumed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import tempfile
from pathlib import Path

from tests.live_server import ROOT, class_store, streamlit_server
from tests.st_protocol import FollowerSession

WARM_UP = 10


def server_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def per_run(pid: int, run, count: int) -> float:
    """Milliseconds of server CPU per call of run()."""
    for _ in range(WARM_UP):
        await run()
    started = server_cpu(pid)
    for _ in range(count):
        await run()
    return (server_cpu(pid) - started) / count * 1000


async def follower(url: str, pid: int, query: str, headers: dict, polls: int,
                   runs: int) -> tuple[float, float]:
    """Milliseconds of server CPU per poll and per whole-page run of one follower."""
    tab = FollowerSession(url, headers=headers)
    await tab.open(query)
    fragment = next(iter(tab.auto_reruns))
    poll = await per_run(pid, lambda: tab.rerun_fragment(fragment), polls)
    page = await per_run(pid, tab.rerun, runs)
    await tab.close()
    return poll, page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    with streamlit_server(entry=ROOT / "bench" / "plain_poll.py") as (url, process):
        floor = asyncio.run(follower(url, process.pid, "", {}, args.polls, args.runs))
    with class_store(Path(tempfile.mkdtemp())) as (_, store), streamlit_server() as (url, process):
        room = store.create_room(client="teacher")
        store.set_state(room.code, room.teacher_secret, page="present", step=3,
                        setup_json=json.dumps({"example": "the_cat_sat_two_heads"}), selections={})
        headers = {"Cookie": f"mha_student={secrets.token_urlsafe(24)}", "X-Forwarded-For": "10.0.0.1"}
        ours = asyncio.run(follower(url, process.pid, f"room={room.code}", headers, args.polls, args.runs))
    print("| server CPU, ms | per poll | per whole-page run |")
    print("|---|---|---|")
    print(f"| bench/plain_poll.py (Streamlit's floor) | {floor[0]:.2f} | {floor[1]:.2f} |")
    print(f"| a follower on the presenter's screen 4 | {ours[0]:.2f} | {ours[1]:.2f} |")


if __name__ == "__main__":
    main()
