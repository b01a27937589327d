"""A live class survives its server being killed in the middle of a question (issue 10, faults).

Run: PYTHONPATH=. .venv/bin/python bench/class_faults.py [--students 40] [--redis]

One headless server (tests/live_server.py) on the embedded store (SQLite under a temporary
MHA_DATA_DIR), or with --redis on a redis-server the bench starts. It counts clients by
X-Forwarded-For (MHA_CLIENT_IP_HEADER, as behind the Kubernetes ingress) and every student sends its
own (from 127.0.0.1 without one they would all be one address, whose join rate makes some wait).
The bench is the teacher: it starts a room, shows an example and asks a question (A, B or C). N
students follow over Streamlit's websocket protocol (tests/st_protocol.FollowerSession) and answer
through the page (the form's radio and Send), at random moments within --answer-window seconds;
--kill-at seconds in, the server gets SIGKILL. A second server then starts on the same store.
Every student reconnects with the address its page had and its ``mha_student`` cookie (as a browser
does after a restart) and sends its answer again, as a student unsure whether it went through would.

Checked and reported: the room, its version and its state are what they were before the kill; every
answer whose page said "Your answer is in" before the kill is stored with the value first sent;
after the retries every student counts exactly once (tally.total == N), whatever happened to its
first try.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from app.room.identity import student_id_of  # noqa: E402
from tests.live_server import streamlit_server  # noqa: E402
from tests.st_protocol import FollowerSession  # noqa: E402

CHOICES = ["A", "B", "C"]


async def answer(client: FollowerSession, question_id: str, value: str) -> bool:
    """Choose value in the room's question form and press Send; True if the page confirmed it."""
    client.set_string("live_value", value)
    run = await client.press(f"FormSubmitter:live_answer_{question_id}-Send")
    return run.answer_in


def student_address(i: int) -> str:
    """Student i's own address (its X-Forwarded-For, kept when it reconnects)."""
    return f"10.0.{i // 250}.{i % 250 + 1}"


async def first_server(url: str, code: str, question_id: str, args, rng) -> tuple[list, dict, list]:
    """Students join, then answer (tasks still running) while the server is killed under them."""
    cookies = [f"mha_student={secrets.token_urlsafe(24)}" for _ in range(args.students)]  # one browser each
    clients = [FollowerSession(url, timeout=20, headers={"Cookie": cookie,
                                                         "X-Forwarded-For": student_address(i)})
               for i, cookie in enumerate(cookies)]
    opened = await asyncio.gather(*(c.open(f"room={code}") for c in clients))
    assert all(run.question_seen for run in opened), "a student did not see the question"
    outcome: dict[int, str] = {}

    async def one(i: int) -> None:
        await asyncio.sleep(rng.uniform(0, args.answer_window))
        try:
            confirmed = await answer(clients[i], question_id, CHOICES[i % 3])
            outcome[i] = "confirmed" if confirmed else "unconfirmed"
        except Exception as error:  # the server died mid-answer: the browser shows it reconnecting
            outcome[i] = f"lost: {type(error).__name__}"
    return clients, outcome, [asyncio.create_task(one(i)) for i in range(args.students)]


async def reconnect(url: str, old: FollowerSession, question_id: str, value: str) -> tuple[bool, str]:
    """A browser reconnecting to the restarted server with its address, then sending its answer again."""
    client = FollowerSession(url, timeout=30, headers=old.headers)  # the same browser: its cookie
    try:
        run = await client.open(old.query_string)
        if run.answer_in:
            return True, "shown as answered"
        if not run.question_seen:
            return False, "question not shown"
        await answer(client, question_id, value)
        return True, "sent again"
    finally:
        with contextlib.suppress(Exception):
            await client.close()


def run(args) -> dict:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="class-faults-") as tmp, contextlib.ExitStack() as stack:
        os.environ.update(MHA_DATA_DIR=str(Path(tmp) / "data"), MHA_CLIENT_IP_HEADER="X-Forwarded-For")
        os.environ.pop("REDIS_URL", None)
        if args.redis:
            from tests.redis_server import RedisServer
            redis = RedisServer(Path(tmp) / "redis")
            redis.start()
            stack.callback(redis.stop)
            os.environ["REDIS_URL"] = redis.url
        from classroom.backends import open_store
        store = open_store()
        stack.callback(store.close)
        room = store.create_room()
        store.set_state(room.code, room.teacher_secret, page="", step=0,
                        setup_json=json.dumps({"example": "the_cat_sat_two_heads"}), selections={})
        question = store.ask(room.code, room.teacher_secret, "Which head attends to 'the'?", CHOICES, "poll")
        before = store.state(room.code)

        async def lesson() -> dict:
            with streamlit_server() as (url, process):
                clients, outcome, tasks = await first_server(url, room.code, question.id, args, rng)
                await asyncio.sleep(args.kill_at)
                process.kill()  # SIGKILL: no shutdown, no flush
                killed_at = time.monotonic()
                await asyncio.gather(*tasks)
                for client in clients:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(client.close(), 2)
            acknowledged = dict(store.tally(room.code, question.id).counts)
            with streamlit_server() as (url, _):
                restarted = time.monotonic() - killed_at
                retries = await asyncio.gather(*(reconnect(url, clients[i], question.id, CHOICES[i % 3])
                                                 for i in range(args.students)))
            return {"outcome": outcome, "acknowledged_at_kill": acknowledged, "retries": retries,
                    "restart_seconds": restarted, "clients": clients}

        result = asyncio.run(lesson())
        after = store.state(room.code)
        stored = {a.student_id: a.value for q, answers in store.answers(room.code, room.teacher_secret)
                  for a in answers if q.id == question.id}
        tally = store.tally(room.code, question.id)
    me = [student_id_of(c.headers["Cookie"].split("=", 1)[1]) for c in result["clients"]]
    confirmed = [i for i, o in result["outcome"].items() if o == "confirmed"]
    result.update(
        backend="Redis" if args.redis else "SQLite", before=before, after=after, tally=tally,
        confirmed=len(confirmed),
        confirmed_kept=sum(stored.get(me[i]) == CHOICES[i % 3] for i in confirmed),
        lost_first_tries=sum(o.startswith("lost") for o in result["outcome"].values()),
        retry_problems=[why for ok, why in result["retries"] if not ok],
        distinct_students=len(set(me)))
    return result


def report(r: dict, args) -> str:
    same = (r["before"].version, r["before"].setup_json, r["before"].question) == \
           (r["after"].version, r["after"].setup_json, r["after"].question)
    exact = "exact" if r["tally"].total == args.students else "MISMATCH"
    rows = [
        ("students, store", f"{args.students}, {r['backend']} (server killed {args.kill_at:.1f} s into "
                            f"a {args.answer_window:.0f} s answer window)"),
        ("answers confirmed on the page before the kill", str(r["confirmed"])),
        ("of those, stored with the value sent", f"{r['confirmed_kept']} / {r['confirmed']}"),
        ("first tries cut off by the kill", str(r["lost_first_tries"])),
        ("answers in the store right after the kill", str(sum(r["acknowledged_at_kill"].values()))),
        ("room, version, state and question after the restart", "unchanged" if same else "CHANGED"),
        ("second server healthy after the kill", f"{r['restart_seconds']:.1f} s"),
        ("after every student's retry: tally.total / N", f"{r['tally'].total} / {args.students} ({exact})"),
        ("retries that could not answer", str(len(r["retry_problems"]))),
        ("distinct students (cookies)", str(r["distinct_students"])),
    ]
    return "\n".join(["| measure | value |", "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--answer-window", type=float, default=4.0)
    parser.add_argument("--kill-at", type=float, default=2.0, help="seconds into the answer window")
    parser.add_argument("--redis", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    result = run(args)
    print(report(result, args))
    if result["retry_problems"]:
        print("\nretry problems:", sorted(set(result["retry_problems"])))


if __name__ == "__main__":
    main()
