"""Issue 40, finding 13: with MHA_CLIENT_IP_HEADER=X-Forwarded-For set but the server reached directly,
a forged header lifted every limit and nothing but the docs said so. Now a request carrying the named
header from a peer with a global address, naming another address in it, is logged once and the
teacher's Class page says so (app/room/proxy.py, reached_directly).

The pure choice; the log's once and the Class page with the request stubbed (AppTest sends no header);
and over a real server's websocket (tests/st_protocol.py), where uvicorn gives the header's last address
as the peer of a request from 127.0.0.1: the one way a test on this machine has a global peer.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from app.room import proxy
from tests.apptest_util import goto, open_address, shown
from tests.classroom.test_client_address import visit
from tests.live_server import streamlit_server

NOTE = "reach it straight from the internet"  # the Class page's words (classroom.DIRECT_NOTE)
PUBLIC = "93.184.216.34"  # a global address (not a documentation range: Python counts those private)


@pytest.mark.parametrize("values, peer, direct", [
    (["10.0.0.7"], PUBLIC, True),  # a client wrote the header itself
    (["10.0.0.7, " + PUBLIC], PUBLIC, True),  # ... or a proxy added to it instead of replacing it
    (["x" * 100], PUBLIC, True),  # garbage is another address too
    (["for=10.0.0.7;proto=https"], "2a00:1450:4001::1", True),
    ([PUBLIC], PUBLIC, False),  # the peer's own address: nothing gained
    ([f"{PUBLIC}:4711"], PUBLIC, False), (["[2a00:1450:4001::1]:4711"], "2a00:1450:4001::1", False),
    ([f"::ffff:{PUBLIC}"], PUBLIC, False),
    (["10.0.0.7"], "10.0.0.9", False),  # a proxy on a private network (a cluster's ingress)
    (["10.0.0.7"], "172.16.3.4", False), (["10.0.0.7"], "192.168.1.2", False),
    (["10.0.0.7"], "fd00::2", False),
    (["10.0.0.7"], "100.64.0.3", False),  # shared address space (carrier NAT, some clusters)
    (["10.0.0.7"], "127.0.0.2", False), (["10.0.0.7"], "::1", False), (["10.0.0.7"], "", False),
    (["10.0.0.7"], "unix-socket", False), ([], PUBLIC, False)])  # nothing sent: nothing written
def test_a_header_is_brought_straight_when_a_global_peer_names_another_address(values, peer, direct):
    assert proxy.reached_directly("X-Forwarded-For", values, peer) is direct


def stub_request(monkeypatch, headers: dict[str, list[str]], peer: str) -> None:
    monkeypatch.setattr(proxy, "header_values", lambda name: headers.get(name, []))
    monkeypatch.setattr(proxy, "peer", lambda: peer)


def test_the_first_request_brought_straight_is_logged_once(monkeypatch, caplog):
    monkeypatch.setattr(proxy, "_direct", [])
    monkeypatch.setattr(proxy, "_seen", [])
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Forwarded-For")
    with caplog.at_level(logging.WARNING, logger=proxy.__name__):
        stub_request(monkeypatch, {"X-Forwarded-For": ["10.0.0.7"]}, "10.1.2.3")  # the ingress: fine
        proxy.notice()
        assert proxy.direct() is None
        stub_request(monkeypatch, {"X-Forwarded-For": ["10.0.0.7"]}, PUBLIC)
        for _ in range(3):
            proxy.notice()
    said = [r.getMessage() for r in caplog.records if r.name == proxy.__name__]
    assert len(said) == 1 and PUBLIC in said[0] and "MHA_CLIENT_IP_HEADER=X-Forwarded-For" in said[0], said
    assert proxy.direct() == "X-Forwarded-For" and proxy.unconfigured() is None
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Real-IP")  # another header named now: not that one
    assert proxy.direct() is None


def test_the_class_page_warns_the_teacher_when_the_header_comes_straight(embedded_store, monkeypatch):
    """The request as the detection reads it (AppTest sends no header, and no peer): before, the page
    said nothing."""
    monkeypatch.setattr(proxy, "_direct", [])
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Forwarded-For")
    at = open_address({})
    goto(at, "class")
    assert not any(NOTE in w for w in shown(at.warning))
    stub_request(monkeypatch, {"X-Forwarded-For": ["10.0.0.7"]}, PUBLIC)
    at.run()  # every run passes proxy.notice (live.follower_turn)
    notes = [w for w in shown(at.warning) if NOTE in w]
    assert len(notes) == 1 and "MHA_CLIENT_IP_HEADER=X-Forwarded-For" in notes[0], shown(at.warning)
    at.button(key="live_start").click().run()
    assert at.session_state["teacher_secret"] and any(NOTE in w for w in shown(at.warning))
    monkeypatch.delenv("MHA_CLIENT_IP_HEADER")
    at.run()
    assert not any(NOTE in w for w in shown(at.warning))


@pytest.mark.server
def test_over_the_websocket_only_a_global_peer_naming_another_address_is_warned_of(tmp_path):
    """From 127.0.0.1 uvicorn takes X-Forwarded-For's last address for the peer: '10.0.0.8, PUBLIC'
    is a global peer whose header's first address, the one the limits count, is another. A header
    naming the peer itself, a loopback peer (127.0.0.2: uvicorn trusts 127.0.0.1 only) and no header
    are no such request."""
    log = tmp_path / "server.log"
    env = {"MHA_CLIENT_IP_HEADER": "X-Forwarded-For", "REDIS_URL": None,
           "MHA_DATA_DIR": str(tmp_path / "data"), "MHA_TEACHER_KEY": None, "MHA_TEACHER_KEY_FILE": None}
    with streamlit_server("--server.address=0.0.0.0", env=env, log_path=log) as (url, _):
        quiet = [asyncio.run(visit(url, headers=headers, source=source)) for headers, source in (
            ({"X-Forwarded-For": "10.0.0.7"}, None), ({"X-Forwarded-For": PUBLIC}, None),
            ({"X-Forwarded-For": f"10.0.0.7, {PUBLIC}"}, "127.0.0.2"), (None, None))]
        before = asyncio.run(visit(url, page="class"))
        asyncio.run(visit(url, headers={"X-Forwarded-For": f"10.0.0.8, {PUBLIC}"}))  # the workbench
        teacher = asyncio.run(visit(url, page="class"))
        student = asyncio.run(visit(url, headers={"X-Forwarded-For": "10.0.0.9"}))  # the workbench
    assert quiet and not any(NOTE in s for s in before.said), before.said
    notes = [s for s in teacher.said if NOTE in s]
    assert len(notes) == 1 and "MHA_CLIENT_IP_HEADER=X-Forwarded-For" in notes[0], teacher.said
    assert not any(NOTE in s for s in student.said)  # the workbench shows no note
    lines = [line for line in log.read_text().splitlines() if "came straight from" in line]
    assert len(lines) == 1 and PUBLIC in lines[0], lines
