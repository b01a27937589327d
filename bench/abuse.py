"""Issue 15's hostile student, replayed against a real server: the figures after the fix.

Run: PYTHONPATH=. .venv/bin/python bench/abuse.py [--redis] [--only flood,fill,...]

One headless server (tests/live_server.py) with MHA_CLIENT_IP_HEADER=X-Forwarded-For, as the
Kubernetes manifests run it behind the ingress, on SQLite under a temporary MHA_DATA_DIR or, with
--redis, on a redis-server the bench starts (tests/redis_server.py). Every simulated browser is a
tests/st_protocol session whose websocket handshake carries X-Forwarded-For (the address the
ingress would write) and, where it has one, the ``mha_student`` cookie. Every address is a loopback
one (127.x.y.z) and every connection goes to 127.0.0.1. The bench's own store object (the same
SQLite file or Redis) plays the teacher where the teacher's page is not the point, and reads rosters
and tallies to check what the pages said.

The cases (issue 15, "What a hostile student did"; the figures before are the issue's):
- flood: 205 sessions from one address each press "Start a room"; then a teacher from another.
- fill: 300 sessions open /?room=CODE from one address, each a fresh browser; a real student from
  another address; then the teacher locks the room and 20 more try.
- impersonation: ``?room=CODE&me=<a classmate's id>``, and the classmate's copied address bar,
  answer a question; the classmate then answers.
- guessing: one websocket tries room codes as fast as the server answers; then the right code, from
  that websocket, from a new one at the same address, and from another address.
- ballot: one browser (one cookie) answers one question from 20 tabs; one address without cookies
  answers from 60 fresh sessions, then after the teacher locks the room from 10 more.
- export: ``python -m course.export`` on the issue's file name, and the script it prints run.
- markup: tokens from a ``?s=`` link and a nickname holding ``![i](http://127.0.0.1:<port>/p.png)
  **BOLD**``; Chromium opens every page, leads a room and asks, reveals; a local HTTP listener counts
  the requests it receives (target 0; a control fetch proves it counts).
- no_address (issue 29, item 4): a server that names no header (MHA_CLIENT_IP_HEADER unset, as
  ``make run`` or a proxy on the same host that nobody configured), on a SQLite store of its own for
  each source: 30 sessions press "Start a room", fresh sessions try one wrong room code each for
  GUESS_SECONDS, 200 fresh browsers open /?room=CODE. The sources: the websocket from 127.0.0.1
  (Streamlit gives no address), from 127.0.0.2 (the socket is bound to it: Streamlit gives the peer),
  and from 127.0.0.1 with a fresh X-Forwarded-For per session (uvicorn copies that header into the
  peer address when the peer is 127.0.0.1 or ::1: a script on the host, or a proxy there passing the
  browser's own header on). Each source must keep to one address's limits.
- wrong_kind (issue 40, 13): a value in another field than the widget's own over the protocol: NaN,
  a number or true to a select box (mask_kind, the example picker) and a radio (mode), true or false
  to d_model and the heads. Each must end in a page with no exception, the box's sizes unchanged and
  the refusal said.
- shared_address (issue 40, 13): 8 fresh browsers from one address answer a question. The store's
  answer_networks must give them one network, and the teacher's panel's rule
  (room_answers.shared_from_one_address, whose note tests/classroom/test_answer_networks.py checks on
  the page) must count all 8 (and nothing before they came).
- direct_header (issue 40, 13, last: its note stays for the server's life): a request whose
  X-Forwarded-For ends in a global address (uvicorn takes it for the peer from 127.0.0.1) and names
  another first, as a client reaching the server without the proxy would. The teacher's Class page
  must warn, and must not before.

Each case ends with "held: yes" or the rules it broke (failures()); the bench exits non-zero if any broke.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# `python bench/abuse.py` puts bench/ first on sys.path, where a file named like a package would shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from streamlit.util import calc_hash  # noqa: E402

from tests.live_server import ROOT, class_store, streamlit_server  # noqa: E402
from tests.st_protocol import FollowerSession  # noqa: E402
from tests.st_protocol import many as at_once  # noqa: E402

ATTACKER, TEACHER, STUDENT, CLASSMATE = "127.0.0.66", "127.0.0.10", "127.0.0.20", "127.0.0.21"
AT_ONCE = 8  # sessions the bench keeps open at the same time in a flood
CASES = ("flood", "fill", "impersonation", "guessing", "ballot", "export", "markup", "no_address",
         "wrong_kind", "shared_address", "direct_header")
NAN = float("nan")
WRONG_KIND = [("mask_kind", "double_value", NAN, "nan"), ("example_picker", "double_value", NAN, "nan"),
              ("mask_kind", "int_value", 3, "3"), ("mask_kind", "bool_value", True, "True"),
              ("mode", "double_value", float("nan"), "nan"), ("d_model", "bool_value", True, "True"),
              ("n_heads", "bool_value", False, "False")]
DIRECT_NOTE = "reach it straight from the internet"  # app/views/classroom.py, DIRECT_NOTE
GLOBAL_PEER = "93.184.216.34"  # a global address (uvicorn's peer: X-Forwarded-For's last from 127.0.0.1)
SOURCES = {"127.0.0.1": ("127.0.0.1", False), "127.0.0.2": ("127.0.0.2", False),  # name: (bound to,
           "127.0.0.1 forging X-Forwarded-For": ("127.0.0.1", True)}  # a fresh X-Forwarded-For a session)
GUESS_SECONDS = 20.0  # the no_address case's guessing, fresh sessions one wrong code each
ISSUE_FILE_NAME = 'x""";import os;os.system("touch PWNED");""".json'
CHOICES = ["A", "B", "C"]


# --- A browser tab that keeps what its pages said --------------------------------------------------


class Tab(FollowerSession):
    """A session from one address (and, where it has one, one browser's cookie) that keeps every
    alert and Markdown text it was sent (``said``, escapes undone)."""

    def __init__(self, url: str, address: str | None, cookie: str | None = None, source: str | None = None):
        headers = {**({"X-Forwarded-For": address} if address else {}),
                   **({"Cookie": f"mha_student={cookie}"} if cookie else {})}
        super().__init__(url, timeout=120.0, headers=headers)
        self.source = source  # None: 127.0.0.1

    def saw(self, words: str) -> bool:
        return any(words in text for text in self.said)

    async def open_page(self, query: str, page: str | None = None):
        if page:
            self.page_hash = calc_hash(page)
        return await self.open(query)


async def visit(url: str, query: str, address: str | None, cookie: str | None = None, page: str | None = None,
                press: str | None = None, source: str | None = None) -> Tab:
    """Open a tab, optionally press a button by key, close it; the tab keeps what was said."""
    tab = Tab(url, address, cookie, source)
    try:
        await tab.open_page(query, page)
        if press:
            await tab.press(press)
    finally:
        with contextlib.suppress(Exception):
            await tab.close()
    return tab


async def many(count: int, make) -> tuple[list[Tab], float]:
    """make(i) -> a visit coroutine, count of them, AT_ONCE at a time; the tabs and the seconds."""
    return await at_once(count, make, AT_ONCE)


def fresh_cookie() -> str:
    return secrets.token_urlsafe(24)


def exceptions(tabs) -> int:
    return sum(any(e.startswith(("exception", "compilation")) for e in (t.last.errors if t.last else []))
               for t in tabs)


# --- The cases -------------------------------------------------------------------------------------


async def room_flood(url: str, store) -> dict:
    tabs, seconds = await many(205, lambda i: visit(url, "", ATTACKER, page="class", press="live_start"))
    teacher = await visit(url, "", TEACHER, page="class", press="live_start")
    return {"sessions": len(tabs), "seconds": seconds,
            "rooms": sum(t.saw("you lead it") for t in tabs),
            "refused": sum(t.saw("Too many rooms started from your address") for t in tabs),
            "exceptions": exceptions([*tabs, teacher]),
            "teacher": "leads a room" if teacher.saw("you lead it") else " / ".join(teacher.said[-2:])}


async def class_fill(url: str, store) -> dict:
    room = store.create_room(client=TEACHER)
    link = f"room={room.code}"

    def members() -> int:
        return sum(not s.removed for s in store.roster(room.code, room.teacher_secret))

    tabs, seconds = await many(300, lambda i: visit(url, link, ATTACKER, fresh_cookie()))
    admitted = members()
    real = fresh_cookie()
    student = await visit(url, link, STUDENT, real)
    from app.room.identity import student_id_of
    real_in = student_id_of(real) in {s.id for s in store.roster(room.code, room.teacher_secret)}
    store.lock(room.code, room.teacher_secret)
    after, _ = await many(20, lambda i: visit(url, link, ATTACKER, fresh_cookie()))
    back = await visit(url, link, STUDENT, real)  # a member reconnecting to the locked room
    return {"sessions": len(tabs), "seconds": seconds, "admitted": admitted,
            "refused": sum(t.saw("Too many students joined from your network")  # told to wait: the page
                           or t.saw("Many students are joining from your network") for t in tabs),  # knocks
            "real_student": "admitted" if real_in and not student.saw("Too many") else "REFUSED",
            "after_lock": members() - admitted - real_in,
            "locked_message": sum(t.saw("The room is locked") for t in after),
            "member_back": not back.saw("locked"), "exceptions": exceptions([*tabs, *after, student, back])}


async def send_answer(tab: Tab, question_id: str, value: str):
    tab.set_string("live_value", value)
    return await tab.press(f"FormSubmitter:live_answer_{question_id}-Send")


async def impersonation(url: str, store) -> dict:
    from app.room.identity import student_id_of
    room = store.create_room(client=TEACHER)
    question = store.ask(room.code, room.teacher_secret, "Which head?", CHOICES)
    victim_cookie = fresh_cookie()
    victim = Tab(url, CLASSMATE, victim_cookie)
    await victim.open(f"room={room.code}")
    victim_id = student_id_of(victim_cookie)
    address_bar = victim.query_string  # what a projected screen or a glance shows
    results = {}
    for name, query, cookie in (("me= link", f"room={room.code}&me={victim_id}", fresh_cookie()),
                                ("copied address bar, attacker's browser", address_bar, fresh_cookie()),
                                ("copied address bar, no cookie", address_bar, None)):
        tab = Tab(url, ATTACKER, cookie)
        await tab.open(query)
        await send_answer(tab, question.id, "C")
        await tab.close()
        counted = tab.saw("Your answer is in")
        results[name] = "counted for the attacker" if counted else " / ".join(tab.said[-2:])
    await send_answer(victim, question.id, "A")
    await victim.close()
    mine = store.my_answer(room.code, question.id, victim_id)
    return {"attempts": results, "address_bar": address_bar,
            "secret_or_id_in_address": victim_cookie in address_bar or victim_id in address_bar,
            "victim_answer": mine.value if mine else None,
            "victim_told_already": victim.saw("You had already answered"),
            "tally": store.tally(room.code, question.id).counts}


def wrong_code(store, rng: random.Random) -> str:
    from classroom.store import CODE_ALPHABET, CODE_LENGTH
    while True:
        code = "".join(rng.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        if not store.room_exists(code):  # the bench's check; the app never asks this oracle
            return code


async def code_guessing(url: str, store, seconds: float = 20.0) -> dict:
    """One websocket tries codes for `seconds`; then new websockets from one address, one code each."""
    rng = random.Random(15)
    room = store.create_room(client=TEACHER)
    guesser = Tab(url, "127.0.0.30", fresh_cookie())
    await guesser.open("")
    tried = checked = refused = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        guesser.said.clear()
        await guesser.rerun(f"room={wrong_code(store, rng)}")
        tried += 1
        checked += guesser.saw("There is no room")
        refused += guesser.saw("Too many room codes tried")
    elapsed = time.monotonic() - started
    guesser.said.clear()
    await guesser.rerun(f"room={room.code}")
    same_socket = door_word(guesser, room.code)
    await guesser.close()
    started = time.monotonic()
    sockets, _ = await many(30, lambda i: visit(url, f"room={wrong_code(store, rng)}", "127.0.0.31",
                                                fresh_cookie()))
    right_after = await visit(url, f"room={room.code}", "127.0.0.31", fresh_cookie())
    sockets_seconds = time.monotonic() - started
    other = await visit(url, f"room={room.code}", "127.0.0.32", fresh_cookie())
    return {"one_socket_tried": tried, "one_socket_per_second": tried / elapsed,
            "one_socket_seconds": elapsed, "one_socket_checked": checked, "one_socket_refused": refused,
            "then_right_code_same_socket": same_socket,
            "new_sockets_tried": len(sockets), "new_sockets_seconds": sockets_seconds,
            "new_sockets_checked": sum(t.saw("There is no room") for t in sockets),
            "new_sockets_refused": sum(t.saw("Too many room codes tried") for t in sockets),
            "then_right_code_new_socket_same_address": door_word(right_after, room.code),
            "right_code_other_address": door_word(other, room.code)}


def door_word(tab: Tab, code: str) -> str:
    """'admitted', or the door's refusal as the page said it."""
    refusals = [s for s in tab.said if "Too many" in s or "no room" in s or "locked" in s]
    if refusals:
        return "refused: " + refusals[-1]
    return "admitted" if tab.saw(f"Room {code}") else "unclear: " + " / ".join(tab.said[-2:])


async def answer_from(url: str, code: str, question_id: str, address: str, cookie: str | None,
                      value: str) -> Tab:
    tab = Tab(url, address, cookie)
    try:
        await tab.open(f"room={code}")
        if f"FormSubmitter:live_answer_{question_id}-Send" in tab.last.widget_ids:
            await send_answer(tab, question_id, value)
    finally:
        with contextlib.suppress(Exception):
            await tab.close()
    return tab


async def ballot_stuffing(url: str, store) -> dict:
    room = store.create_room(client=TEACHER)
    question = store.ask(room.code, room.teacher_secret, "Which head?", CHOICES)
    browser = fresh_cookie()
    tabs, _ = await many(20, lambda i: answer_from(url, room.code, question.id, "127.0.0.40", browser,
                                                   CHOICES[i % 3]))
    one_browser = store.tally(room.code, question.id).total
    started = time.monotonic()
    fresh, seconds = await many(60, lambda i: answer_from(url, room.code, question.id, "127.0.0.41", None,
                                                          "C"))
    counted = store.tally(room.code, question.id).total - one_browser
    store.lock(room.code, room.teacher_secret)
    locked, _ = await many(10, lambda i: answer_from(url, room.code, question.id, "127.0.0.41", None, "C"))
    after_lock = store.tally(room.code, question.id).total - one_browser - counted
    from classroom.store import JOIN_BURST, JOIN_PER_SECOND
    return {"one_browser_tabs": len(tabs), "one_browser_counted": one_browser,
            "fresh_sessions": len(fresh), "fresh_seconds": seconds, "fresh_counted": counted,
            "join_bound": JOIN_BURST + JOIN_PER_SECOND * (time.monotonic() - started),
            "after_lock_counted": after_lock, "exceptions": exceptions([*tabs, *fresh, *locked])}


async def wrong_kind(url: str, store) -> dict:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    def caption(said: list[str]) -> str:
        return next((t for t in reversed(said) if t.startswith("d_k = d_v = d_model / h =")), "")

    results = {}
    for key, field, value, shown_as in WRONG_KIND:
        tab = Tab(url, "127.0.0.50")
        try:
            await tab.open("")
            before, said_before = caption(tab.said), len(tab.said)
            widget_id = tab.widget_ids[key]
            tab.widgets[widget_id] = WidgetState(id=widget_id, **{field: value})
            run = await tab.rerun()
        finally:
            with contextlib.suppress(Exception):
                await tab.close()
        said = tab.said[said_before:]
        results[f"{key} {field} {shown_as}"] = {
            "exception": any(e.startswith(("exception", "compilation")) for e in run.errors),
            "sizes_kept": caption(said) == before,
            "refusal_said": any(f"({shown_as}) is not one it accepts and was refused" in t for t in said)}
    return results


async def shared_address(url: str, store) -> dict:
    from app.room.room_answers import shared_from_one_address

    room = store.create_room(client=TEACHER)
    question = store.ask(room.code, room.teacher_secret, "Which head?", CHOICES)
    before = shared_from_one_address(store.answer_networks(room.code, room.teacher_secret, question.id))
    tabs, seconds = await many(8, lambda i: answer_from(url, room.code, question.id, "127.0.0.42", None, "C"))
    networks = store.answer_networks(room.code, room.teacher_secret, question.id)
    return {"answers": store.tally(room.code, question.id).total, "answers_seconds": seconds,
            "shared_before_answers": before, "shared": shared_from_one_address(networks),
            "exceptions": exceptions(tabs)}


async def direct_header(url: str, store) -> dict:
    before = await visit(url, "", TEACHER, page="class")
    await visit(url, "", f"10.0.0.8, {GLOBAL_PEER}")  # the workbench: the request is what counts
    after = await visit(url, "", TEACHER, page="class")
    return {"note_before": before.saw(DIRECT_NOTE), "note_after": after.saw(DIRECT_NOTE),
            "exceptions": exceptions([before, after])}


def export_file_name() -> dict:
    from course.examples import all_examples
    from mha_core.codec import setup_to_json
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="abuse-export-") as tmp:
        work = Path(tmp)
        (work / ISSUE_FILE_NAME).write_text(setup_to_json(all_examples()["cat_chases_mouse"]))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        made = subprocess.run([python, "-m", "course.export", ISSUE_FILE_NAME], cwd=work, env=env,
                              capture_output=True, text=True, timeout=120)
        (work / "script.py").write_text(made.stdout)
        ran = subprocess.run([python, "script.py"], cwd=work, env=env, capture_output=True, text=True,
                             timeout=120)
        return {"export_exit": made.returncode, "script_exit": ran.returncode,
                "pwned_created": (work / "PWNED").exists(),
                "name_in_script": ISSUE_FILE_NAME in made.stdout or repr(ISSUE_FILE_NAME) in made.stdout}


# --- No address: a server that names no header, reached from the host itself -------------------------


def forged(forge: bool) -> str | None:
    """A fresh X-Forwarded-For (a documentation address) when the source forges one, else None."""
    return f"198.51.{random.randrange(100, 114)}.{random.randrange(1, 255)}" if forge else None


async def from_source(url: str, store, source: str, forge: bool) -> dict:
    """The three attacks from one source: rooms by 30 sessions, wrong codes for GUESS_SECONDS from fresh
    sessions, 200 fresh browsers into one room."""
    rooms, room_seconds = await many(30, lambda i: visit(url, "", forged(forge), page="class",
                                                         press="live_start", source=source))
    rng, tried, answered, started = random.Random(29), 0, 0, time.monotonic()
    while time.monotonic() - started < GUESS_SECONDS:
        tabs, _ = await many(AT_ONCE, lambda i: visit(url, f"room={wrong_code(store, rng)}", forged(forge),
                                                      source=source))
        tried += len(tabs)
        answered += sum(t.saw("There is no room") for t in tabs)
    guess_seconds = time.monotonic() - started
    room = store.create_room(client=TEACHER)
    joins, join_seconds = await many(200, lambda i: visit(url, f"room={room.code}", forged(forge),
                                                          fresh_cookie(), source=source))
    return {"rooms": sum(t.saw("you lead it") for t in rooms), "room_seconds": room_seconds,
            "guesses_tried": tried, "guesses_answered": answered, "guess_seconds": guess_seconds,
            "answered_per_minute": answered * 60 / guess_seconds,
            "joins_tried": len(joins), "join_seconds": join_seconds,
            "admitted": sum(not s.removed for s in store.roster(room.code, room.teacher_secret)),
            "exceptions": exceptions([*rooms, *joins])}


def no_address(url: str, store) -> dict:
    """Each source on a server and SQLite store of its own, MHA_CLIENT_IP_HEADER unset."""
    from classroom.sqlite_store import SqliteStore

    results = {}
    for name, (source, forge) in SOURCES.items():
        with tempfile.TemporaryDirectory(prefix="abuse-local-") as tmp, \
                streamlit_server(env={"MHA_CLIENT_IP_HEADER": None, "REDIS_URL": None,
                                      "MHA_DATA_DIR": tmp}) as (local_url, _):
            local_store = SqliteStore(tmp)
            asyncio.run(visit(local_url, "", None, source=source))  # the first run imports: not timed
            results[name] = asyncio.run(from_source(local_url, local_store, source, forge))
            local_store.release()
    return results


# --- Markup: count what a browser fetches ----------------------------------------------------------


class Listener:
    """An HTTP server on 127.0.0.1 that counts the requests it receives (and answers 404)."""

    def __init__(self):
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                paths.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def hostile_tokens(port: int) -> list[str]:
    image = f"![i](http://127.0.0.1:{port}/p.png)"
    return [image, "**BOLD**", f"<img/src=http://127.0.0.1:{port}/h.png>", "$x$", ":red[x]", "sat"]


def hostile_link(tokens: list[str]) -> str:
    from urllib.parse import urlencode

    import numpy as np

    from course.examples import DEFAULT_EXAMPLE, all_examples
    from mha_core.codec import setup_from_document, setup_to_document, setup_to_link

    document = setup_to_document(all_examples()[DEFAULT_EXAMPLE])
    document.pop("origin", None)
    document["tokens"] = tokens
    document["x"] = np.random.default_rng(0).normal(size=(len(tokens), 2)).round(3).tolist()
    params, _ = setup_to_link(setup_from_document(document), None)
    return urlencode(params)


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
PAGES = ("workbench", "present", "labs", "quiz", "model", "class", "examples")


def settle(page, ms: int = 1500) -> None:
    page.wait_for_timeout(500)
    page.wait_for_selector(IDLE, timeout=90_000)
    page.wait_for_timeout(ms)


def markup(url: str, store) -> dict:
    from playwright.sync_api import sync_playwright

    listener = Listener()
    tokens = hostile_tokens(listener.port)
    link = hostile_link(tokens)
    # the issue's nickname is 43 characters with a 5-digit port, over the box's 40: protocol-relative
    nickname = f"![i](//127.0.0.1:{listener.port}/n.png) **BOLD**"
    room = store.create_room(client=TEACHER)
    seen: dict[str, int] = {}
    try:
        # a student joins with the nickname through the Class page's join box
        async def name_student():
            tab = Tab(url, STUDENT, fresh_cookie())
            await tab.open_page("", "class")
            tab.set_string("live_join_code", room.code)
            tab.set_string("live_join_nickname", nickname)
            await tab.press("FormSubmitter:live_join-Join")
            await tab.close()
            return door_word(tab, room.code)
        joined = asyncio.run(name_student())
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            try:
                teacher = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                for name in PAGES:  # every page with the link's tokens
                    teacher.goto(f"{url}/{name}?{link}", timeout=120_000)
                    settle(teacher)
                    seen[f"page {name}"] = len(listener.paths)
                # the teacher leads the room: roster with the nickname, then asks on the presenter
                teacher.goto(f"{url}/class?room={room.code}&teacher={room.teacher_secret}", timeout=120_000)
                settle(teacher, 4000)
                seen["class page: roster"] = len(listener.paths)
                # lit puts an invisible word joiner after "http:" so the URL is not made a link
                nickname_literal = nickname in teacher.inner_text("body").replace("\u2060", "")
                student = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                              has_touch=True).new_page()
                lead = f"room={room.code}&teacher={room.teacher_secret}"  # a new page load is a new session
                teacher.goto(f"{url}/present?{link}&step=4&{lead}", timeout=120_000)  # "attends to most"
                settle(teacher)
                teacher.locator(".st-key-present_ask button").click()
                settle(teacher)
                student.goto(f"{url}/?room={room.code}", timeout=120_000)
                settle(student, 3000)
                seen["student: question asked"] = len(listener.paths)
                question = store.state(room.code).question
                choice = question.choices[0] if question and question.choices else None
                if choice is not None:  # the first key: the image token
                    student.wait_for_function("() => document.body.innerText.includes('Your teacher asks')",
                                              timeout=30_000)
                    student.locator("[data-testid='stRadio'] [role='radiogroup'] label").first.click()
                    student.locator("[data-testid='stFormSubmitButton'] button").first.click()
                    student.wait_for_function("() => document.body.innerText.includes('Your answer is in')",
                                              timeout=30_000)
                    settle(student)
                teacher.locator(".st-key-present_reveal button").first.click()
                settle(teacher, 2000)
                settle(student, 4000)
                seen["student: revealed"] = len(listener.paths)
                teacher.goto(f"{url}/class?{lead}", timeout=120_000)
                settle(teacher, 3000)
                seen["class page: answers"] = len(listener.paths)
                revealed_text = student.inner_text("body")
                before_control = len(listener.paths)
                teacher.evaluate(f"() => fetch('http://127.0.0.1:{listener.port}/control').catch(() => null)")
                teacher.wait_for_timeout(1000)
                control = len(listener.paths) - before_control
            finally:
                browser.close()
    finally:
        listener.close()
    return {"requests": before_control, "paths": listener.paths[:before_control], "after_each": seen,
            "control_fetch_counted": control, "asked": question.prompt if question else None,
            "answers_in_room": store.tally(room.code, question.id).total if question else 0,
            "student_told_right_or_wrong": "You answered" in revealed_text,
            "bold_shown_literally": "**BOLD**" in revealed_text, "nickname_shown_literally": nickname_literal,
            "nickname_join": joined}


# --- What must hold (issue 15, "Threat model and what must hold") ----------------------------------


def failures(name: str, r: dict) -> list[str]:
    """The rules a case broke; [] when it held."""
    from classroom.store import JOIN_BURST, JOIN_PER_SECOND, ROOMS_PER_CLIENT, WRONG_CODES_PER_MINUTE

    def refill(per_minute: float, seconds: float) -> int:
        return int(per_minute * seconds / 60) + 1  # tokens back during the flood, and one of slack

    def local(source: dict) -> list[tuple[bool, str]]:
        return [(source["rooms"] <= ROOMS_PER_CLIENT + refill(ROOMS_PER_CLIENT, source["room_seconds"]),
                 "more rooms than one address may start"),
                (source["guesses_answered"] <= WRONG_CODES_PER_MINUTE
                 + refill(WRONG_CODES_PER_MINUTE, source["guess_seconds"]),
                 "more codes answered than one address"),
                (source["admitted"] <= JOIN_BURST + JOIN_PER_SECOND * source["join_seconds"] + 1,
                 "more admitted than one address's join rate"),
                (source["exceptions"] == 0, "an exception on a page")]

    checks = {
        "no_address": [(held, f"{source}: {why}") for source, measured in r.items()
                       if name == "no_address" and isinstance(measured, dict)
                       for held, why in local(measured)],
        "flood": [(r.get("rooms", 0) <= ROOMS_PER_CLIENT + refill(ROOMS_PER_CLIENT, r.get("seconds", 0)),
                   "more rooms than the per-address limit"),
                  (r.get("teacher") == "leads a room", "the teacher from another address got no room"),
                  (r.get("exceptions") == 0, "an exception on a page")],
        "fill": [(r.get("admitted", 0) <= JOIN_BURST + JOIN_PER_SECOND * r.get("seconds", 0) + 1,
                  "more admitted than the join rate"),
                 (r.get("real_student") == "admitted", "the real student was refused"),
                 (r.get("after_lock") == 0, "admitted after Lock"),
                 (r.get("member_back"), "a member locked out"),
                 (r.get("exceptions") == 0, "an exception on a page")],
        "impersonation": [(r.get("victim_answer") == "A", "the classmate's answer is not the one counted"),
                          (not r.get("victim_told_already"), "the classmate was told they had answered"),
                          (not r.get("secret_or_id_in_address"), "the address bar holds the id or secret")],
        "guessing": [(r.get("one_socket_checked", 99) <= WRONG_CODES_PER_MINUTE
                      + refill(WRONG_CODES_PER_MINUTE, r.get("one_socket_seconds", 0)),
                      "one websocket checked more codes than the limit"),
                     (r.get("new_sockets_checked", 99) <= WRONG_CODES_PER_MINUTE
                      + refill(WRONG_CODES_PER_MINUTE, r.get("new_sockets_seconds", 0)),
                      "one address checked more codes than the limit"),
                     (str(r.get("then_right_code_same_socket", "")).startswith("refused"),
                      "the right code got in after the tab's guesses ran out"),
                     (r.get("right_code_other_address") == "admitted", "another address was refused")],
        "ballot": [(r.get("one_browser_counted") == 1, "one browser counted more than once"),
                   (r.get("fresh_counted", 0) <= r.get("join_bound", 0) + 1,
                    "more answers than the join rate"),
                   (r.get("after_lock_counted") == 0, "answers counted after Lock"),
                   (r.get("exceptions") == 0, "an exception on a page")],
        "export": [(not r.get("pwned_created"), "the script ran the file name's code"),
                   (r.get("export_exit") == 0 and r.get("script_exit") == 0, "export or script failed")],
        "wrong_kind": [(held, f"{case}: {why}") for case, measured in r.items() if isinstance(measured, dict)
                       for held, why in ((not measured["exception"], "an exception on the page"),
                                         (measured["sizes_kept"], "the sizes changed"),
                                         (measured["refusal_said"], "no refusal said"))],
        "shared_address": [(r.get("answers", 0) >= 5, "fewer than 5 answers counted"),
                           (not r.get("shared_before_answers"), "shared before any answer"),
                           (r.get("shared") == r.get("answers"), "the panel's rule missed the one address"),
                           (r.get("exceptions") == 0, "an exception on a page")],
        "direct_header": [(not r.get("note_before"), "the note showed before the request"),
                          (r.get("note_after"), "the teacher's Class page did not warn"),
                          (r.get("exceptions") == 0, "an exception on a page")],
        "markup": [(r.get("requests") == 0, "the browser fetched from the listener"),
                   (r.get("control_fetch_counted") == 1, "the listener did not count the control fetch"),
                   (r.get("student_told_right_or_wrong"), "the student's reveal did not show"),
                   (r.get("nickname_shown_literally"), "the nickname is not shown literally")],
    }
    return [why for held, why in checks[name] if not held]


# --- Running it -------------------------------------------------------------------------------------


def run_case(name: str, url: str, store) -> dict:
    started = time.monotonic()
    if name == "export":
        result = export_file_name()
    elif name == "markup":
        result = markup(url, store)
    elif name == "no_address":
        result = no_address(url, store)
    else:
        case = {"flood": room_flood, "fill": class_fill, "impersonation": impersonation,
                "guessing": code_guessing, "ballot": ballot_stuffing, "wrong_kind": wrong_kind,
                "shared_address": shared_address, "direct_header": direct_header}[name]
        result = asyncio.run(case(url, store))
    result["case_seconds"] = time.monotonic() - started
    return result


def print_result(result: dict, indent: str = "") -> None:
    for key, value in result.items():
        if isinstance(value, dict) and value:
            print(f"{indent}- {key}:")
            print_result(value, indent + "  ")
        elif isinstance(value, float):
            print(f"{indent}- {key}: {value:.2f}")
        else:
            print(f"{indent}- {key}: {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", action="store_true", help="the store on a redis-server")
    parser.add_argument("--only", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    args = parser.parse_args()
    cases = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}")
    with tempfile.TemporaryDirectory(prefix="abuse-") as tmp, contextlib.ExitStack() as stack:
        backend, store = stack.enter_context(class_store(Path(tmp), redis=args.redis))
        url, _ = stack.enter_context(streamlit_server())
        asyncio.run(visit(url, "", "127.0.0.2"))  # the server's first run imports everything: not timed
        print(f"bench/abuse.py on {backend}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        broken = []
        for name in cases:
            result = run_case(name, url, store)
            print(f"\n## {name} ({result.pop('case_seconds'):.1f} s)")
            print_result(result)
            failed = failures(name, result)
            print(f"- held: {'yes' if not failed else 'NO: ' + '; '.join(failed)}")
            broken += [f"{name}: {why}" for why in failed]
            sys.stdout.flush()
    if broken:
        sys.exit("\n".join(["broken:", *broken]))


if __name__ == "__main__":
    main()
