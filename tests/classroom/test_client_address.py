"""Issue 29, item 4: limits that hold without an address. Streamlit gives no address for a websocket
from 127.0.0.1 or ::1, and uvicorn copies X-Forwarded-For into the peer address when the peer is
loopback: every request whose client the server cannot tell (loopback, a proxy on this host or one
nobody named in MHA_CLIENT_IP_HEADER) counts in one shared bucket of each kind, and a proxy's header
arriving without the setting is said once in the log and on the teacher's Class page.

Real servers over Streamlit's websocket (tests/st_protocol.py), the websocket bound to the source
address each case names (127.0.0.2, or this machine's own non-loopback address: a peer Streamlit names);
AppTest and a stubbed header only for the Class page's note and the log's once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import socket
from pathlib import Path

import pytest

from app.room import identity, proxy
from classroom.sqlite_store import SqliteStore
from classroom.store import (
    CODE_ALPHABET,
    CODE_LENGTH,
    JOIN_BURST,
    JOIN_PER_SECOND,
    ROOMS_PER_CLIENT,
    WRONG_CODES_PER_MINUTE,
    TooSoon,
)
from tests import st_protocol
from tests.apptest_util import goto, open_address, shown
from tests.live_server import streamlit_server
from tests.st_protocol import Session

PROBE = Path(__file__).with_name("address_app.py")
NO_ADDRESS = identity.NO_ADDRESS
SETTING_UNSET = "but MHA_CLIENT_IP_HEADER is not set"  # the log line's words (proxy.LOG_LINE)
AT_ONCE = 8  # sessions open at the same time (2 cores)


# --- helpers ---------------------------------------------------------------------------------------


def this_machine() -> str | None:
    """This machine's own non-loopback address (the route a packet would take; nothing is sent), or
    None when it has none: a websocket from it is a peer Streamlit names."""
    for target in ("192.0.2.254", "10.255.255.254"):
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((target, 9))
            address = probe.getsockname()[0]
            if not identity.is_loopback(address):
                return address
    return None


MACHINE = this_machine()
needs_machine_address = pytest.mark.skipif(MACHINE is None, reason="no non-loopback address here")


async def visit(url: str, query: str = "", headers: dict | None = None, source: str | None = None,
                page: str | None = None, press: str | None = None) -> Session:
    """Open a tab (its websocket from source, its handshake with headers), optionally on a page and
    pressing a button by key; close it. The tab keeps what it was told (said)."""
    from streamlit.util import calc_hash

    tab = Session(url, timeout=120, headers=headers)
    tab.source = source
    if page:
        tab.page_hash = calc_hash(page)
    try:
        await tab.open(query)
        if press:
            await tab.press(press)
    finally:
        with contextlib.suppress(Exception):
            await tab.close()
    return tab


async def many(count: int, make, at_once: int = AT_ONCE) -> tuple[list[Session], float]:
    """make(i) -> a visit, count of them, at_once at a time; the tabs and the seconds they took."""
    return await st_protocol.many(count, make, at_once)


def told(tab: Session, words: str) -> bool:
    return any(words in text for text in tab.said)


def probed(url: str, headers: dict | None = None, source: str | None = None,
           machine: bool = False) -> tuple[str, str]:
    """(client address, unnamed proxy) as the probe page says them for one new session."""
    if machine:
        url = url.replace("127.0.0.1", MACHINE)
    tab = asyncio.run(visit(url, headers=headers, source=source))
    said = dict(text.split(": ", 1) for text in tab.said if ": " in text)
    return said["client"], said["unnamed proxy"]


@contextlib.contextmanager
def probe_server(header: str | None):
    """The probe page, listening on every address (so this machine's own reaches it too)."""
    with streamlit_server("--server.address=0.0.0.0", entry=PROBE,
                          env={"MHA_CLIENT_IP_HEADER": header}) as (url, _):
        yield url


def wrong_code(store, rng: random.Random) -> str:
    while True:
        code = "".join(rng.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        if not store.room_exists(code):
            return code


def refill(per_minute: float, seconds: float) -> int:
    """Tokens a bucket gets back in seconds, and one of slack."""
    return int(per_minute * seconds / 60) + 1


# --- The choice, without a server --------------------------------------------------------------------


@pytest.mark.parametrize("address, loopback", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("127.255.0.9", True), ("::1", True),
    ("::ffff:127.0.0.2", True), ("192.0.2.2", False), ("198.51.100.7", False), ("2001:db8::1", False),
    ("fe80::1%eth0", False), ("unix-socket", False)])
def test_loopback_is_all_of_127_0_0_0_8_and_1(address, loopback):
    assert identity.is_loopback(address) is loopback


@pytest.mark.parametrize("value, first", [
    ("10.0.0.7", "10.0.0.7"), ("10.0.0.7, 192.0.2.1", "10.0.0.7"), (" 10.0.0.7 ,x", "10.0.0.7"),
    ("for=192.0.2.60;proto=http;by=203.0.113.43, for=198.51.100.17", "192.0.2.60"),
    ('For="[2001:db8:cafe::17]:4711"', "[2001:db8:cafe::17]:4711"), ("x" * 100, "x" * 64)])
def test_the_browser_s_address_is_the_first_of_a_proxy_header(value, first):
    assert identity.first_address(value) == first


# --- The choice, over a real server's websocket ------------------------------------------------------


@pytest.mark.server
def test_without_the_setting_loopback_and_a_copied_forwarded_for_share_one_address():
    """MHA_CLIENT_IP_HEADER unset (make run): 127.0.0.1 (Streamlit: None), 127.0.0.2 and a forged
    X-Forwarded-For from 127.0.0.1 (uvicorn copies it into the peer) are NO_ADDRESS; a peer Streamlit
    names from elsewhere is its own address, X-Forwarded-For or not (uvicorn trusts that header only
    from loopback). The first request that carried a proxy's header is the unnamed proxy."""
    with probe_server(None) as url:
        assert probed(url) == (NO_ADDRESS, "None")
        assert probed(url, source="127.0.0.2") == (NO_ADDRESS, "None")
        for forged in ("198.51.100.7", "198.51.100.7:4711", "203.0.113.9, 198.51.100.7"):
            assert probed(url, {"X-Forwarded-For": forged}) == (NO_ADDRESS, "X-Forwarded-For")
        assert probed(url, {"X-Real-IP": "198.51.100.8"}) == (NO_ADDRESS, "X-Forwarded-For")  # the first
        if MACHINE:
            assert probed(url, machine=True) == (MACHINE, "X-Forwarded-For")
            assert probed(url, {"X-Forwarded-For": "198.51.100.7"}, machine=True)[0] == MACHINE


@pytest.mark.server
def test_with_the_setting_its_header_names_the_client_and_without_it_the_peer_does():
    """MHA_CLIENT_IP_HEADER=X-Forwarded-For: its first address when sent; when not, the peer (shared
    when loopback). A proxy's other header is no unnamed proxy: the setting is there."""
    with probe_server("X-Forwarded-For") as url:
        assert probed(url, {"X-Forwarded-For": "10.0.0.7, 192.0.2.1"}) == ("10.0.0.7", "None")
        assert probed(url, {"X-Forwarded-For": "10.0.0.8"}, source="127.0.0.2") == ("10.0.0.8", "None")
        assert probed(url) == (NO_ADDRESS, "None")
        assert probed(url, source="127.0.0.2") == (NO_ADDRESS, "None")
        assert probed(url, {"X-Real-IP": "198.51.100.8"}) == (NO_ADDRESS, "None")
        if MACHINE:
            assert probed(url, machine=True) == (MACHINE, "None")
            assert probed(url, {"X-Forwarded-For": "10.0.0.9"}, machine=True) == ("10.0.0.9", "None")


# --- The limits, from 127.0.0.1, on the app ----------------------------------------------------------


@pytest.fixture
def local_app(tmp_path):
    """The app with MHA_CLIENT_IP_HEADER unset on a SQLite store of its own (each test's buckets
    full): (url, store)."""
    folder = tmp_path / "data"
    env = {"MHA_CLIENT_IP_HEADER": None, "REDIS_URL": None, "MHA_DATA_DIR": str(folder),
           "MHA_TEACHER_KEY": None, "MHA_TEACHER_KEY_FILE": None}
    store = SqliteStore(folder)
    with streamlit_server("--server.address=0.0.0.0", env=env) as (url, _):
        asyncio.run(visit(url))  # the server's first run imports everything: not timed below
        yield url, store
    store.release()


@pytest.mark.server
def test_thirty_sessions_from_127_0_0_1_start_no_more_rooms_than_one_address(local_app):
    """30 sessions press Start a room: at most ROOMS_PER_CLIENT at once and one per 12 s after (10 in
    a minute); the others are told why. Then, with the shared bucket emptied, 127.0.0.2 is refused
    too, and a named address still starts a room."""
    url, store = local_app
    tabs, seconds = asyncio.run(many(30, lambda i: visit(url, page="class", press="live_start")))
    rooms = sum(told(t, "you lead it") for t in tabs)
    assert 1 <= rooms <= ROOMS_PER_CLIENT + refill(ROOMS_PER_CLIENT, seconds), (rooms, seconds)
    assert sum(told(t, "Too many rooms started from your address") for t in tabs) == 30 - rooms
    for _ in range(3):  # a token may come back between emptying the bucket and the visit: again
        with contextlib.suppress(TooSoon):
            for _ in range(ROOMS_PER_CLIENT + 1):
                store.create_room(client=NO_ADDRESS)
        other = asyncio.run(visit(url, source="127.0.0.2", page="class", press="live_start"))
        if not told(other, "you lead it"):
            break
    assert told(other, "Too many rooms started from your address"), other.said
    if MACHINE:
        named = asyncio.run(visit(url.replace("127.0.0.1", MACHINE), page="class", press="live_start"))
        assert told(named, "you lead it"), named.said


@pytest.mark.server
def test_a_script_guessing_codes_from_127_0_0_1_is_answered_as_one_address_is(local_app):
    """Fresh sessions (no per-session limit follows them) try one wrong code each: no more are
    answered than WRONG_CODES_PER_MINUTE and its refill; the others are refused before the store
    looks. A forged X-Forwarded-For per session changes nothing. One at a time: the store's check
    and take of a wrong code are two steps, and guesses at once can pass the check together."""
    url, store = local_app
    rng = random.Random(29)
    forged = (f"198.51.100.{n % 250 + 1}" for n in itertools.count())
    tabs, seconds = asyncio.run(many(40, lambda i: visit(
        url, f"room={wrong_code(store, rng)}", {"X-Forwarded-For": next(forged)} if i % 2 else None),
        at_once=1))
    answered = sum(told(t, "There is no room") for t in tabs)
    assert answered <= WRONG_CODES_PER_MINUTE + refill(WRONG_CODES_PER_MINUTE, seconds), (answered, seconds)
    assert sum(told(t, "Too many room codes tried from your address") for t in tabs) == 40 - answered


@pytest.mark.server
def test_fresh_browsers_from_127_0_0_1_join_a_room_at_one_address_s_rate(local_app):
    """60 fresh browsers (each its own cookie) open /?room=CODE: JOIN_BURST at once, then one per 2 s;
    the others wait at the door."""
    url, store = local_app
    room = store.create_room(client="teacher")
    tabs, seconds = asyncio.run(many(60, lambda i: visit(url, f"room={room.code}", {
        "Cookie": f"mha_student={identity.new_student_secret()}"})))
    admitted = sum(not s.removed for s in store.roster(room.code, room.teacher_secret))
    assert JOIN_BURST <= admitted <= JOIN_BURST + JOIN_PER_SECOND * seconds + 1, (admitted, seconds)


# --- An unnamed proxy: said once in the log, and on the Class page -----------------------------------


@pytest.mark.server
def test_a_proxy_s_header_without_the_setting_is_logged_once_and_shown_on_the_class_page(tmp_path):
    log = tmp_path / "server.log"
    env = {"MHA_CLIENT_IP_HEADER": None, "REDIS_URL": None, "MHA_DATA_DIR": str(tmp_path / "data")}
    with streamlit_server(env=env, log_path=log) as (url, _):
        before = asyncio.run(visit(url, page="class"))
        quiet = log.read_text()
        first = asyncio.run(visit(url, headers={"X-Forwarded-For": "198.51.100.7"}))  # the workbench
        logged = log.read_text()
        teacher = asyncio.run(visit(url, headers={"X-Real-IP": "198.51.100.8"}, page="class"))
        asyncio.run(many(3, lambda i: visit(url, headers={"Forwarded": "for=198.51.100.9"})))
    assert not any("MHA_CLIENT_IP_HEADER" in s for s in before.said) and SETTING_UNSET not in quiet
    assert not any("MHA_CLIENT_IP_HEADER" in s for s in first.said)  # the workbench shows no note
    line = next(line for line in logged.splitlines() if SETTING_UNSET in line)
    assert "X-Forwarded-For" in line and "MHA_CLIENT_IP_HEADER=X-Forwarded-For" in line, line
    assert log.read_text().count(SETTING_UNSET) == 1
    note = [s for s in teacher.said if "MHA_CLIENT_IP_HEADER" in s]
    assert note and "X-Forwarded-For" in note[0] and "MHA_CLIENT_IP_HEADER=X-Forwarded-For" in note[0], note


def test_the_class_page_shows_the_note_to_a_teacher_only_while_the_setting_is_unset(embedded_store,
                                                                                    monkeypatch):
    monkeypatch.setattr(proxy, "_seen", ["X-Real-IP"])
    at = open_address({})
    goto(at, "class")
    notes = [w for w in shown(at.warning) if "MHA_CLIENT_IP_HEADER=X-Real-IP" in w]
    assert len(notes) == 1 and "they carry the header X-Real-IP" in notes[0], shown(at.warning)
    at.button(key="live_start").click().run()
    assert at.session_state["teacher_secret"] and any("MHA_CLIENT_IP_HEADER" in w for w in shown(at.warning))
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Real-IP")
    at.run()
    assert not any("MHA_CLIENT_IP_HEADER" in w for w in shown(at.warning))


def test_the_log_line_is_written_once_per_process(monkeypatch, caplog):
    """proxy.notice() at every run: a stubbed request header (AppTest sends none)."""
    monkeypatch.setattr(proxy, "_seen", [])
    monkeypatch.setattr(proxy, "proxy_header", lambda: "Forwarded")
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Forwarded-For")
    with caplog.at_level(logging.WARNING, logger=proxy.__name__):
        proxy.notice()  # named: nothing to say
        monkeypatch.delenv("MHA_CLIENT_IP_HEADER")
        for _ in range(3):
            proxy.notice()
    said = [r.getMessage() for r in caplog.records if r.name == proxy.__name__]
    assert len(said) == 1 and "MHA_CLIENT_IP_HEADER=Forwarded" in said[0], said
    assert proxy.unconfigured() == "Forwarded"
