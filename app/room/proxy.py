"""A live class behind a proxy: the header the deployer names for the browser's address
(MHA_CLIENT_IP_HEADER), and a proxy nobody named.

A request that carries a proxy's header (PROXY_HEADERS) while MHA_CLIENT_IP_HEADER is unset came
through a proxy (or a script writing the header itself): its peer address is the proxy's, or one
uvicorn copied from X-Forwarded-For, so the limits count it in the shared bucket
(identity.client_address). The first such request in a process writes a warning to the server's log;
the teacher's Class page shows it too (app/views/classroom.py, unconfigured()).

The other way round: MHA_CLIENT_IP_HEADER set, but the server reached directly. Then any client can
write that header itself, and every request with a fresh address in it has fresh limits. A request
that carries the header from a peer with a global address (neither loopback nor a private network,
where a proxy in front would be: an ingress in a cluster, nginx on this host) and names another
address in it than the peer's own is such a request (or one through a proxy that adds to the header
instead of replacing it: uvicorn then gives the header's last address as the peer, and the first one,
which the limits count, is the browser's own writing). The first one in a process writes a warning to
the log; the teacher's Class page shows it (reached_directly()). A request whose header names the
peer's own address gains nothing from it and is none; neither is a proxy with a global address in
front, which cannot be told apart from a client: the note says to ignore it then.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading

import streamlit as st

CLIENT_IP_HEADER_ENV = "MHA_CLIENT_IP_HEADER"  # e.g. X-Forwarded-For behind a proxy that sets it
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")  # what a proxy in front may write
LOG_LINE = ("Requests reach this server through a proxy (they carry %s), but %s is not set: the live "
            "class's limits (rooms started, room codes tried, students joining) count every one of them "
            "as one address. If the proxy writes the browser's address into %s (replacing what the "
            "browser sent), set %s=%s.")
DIRECT_LOG_LINE = ("%s=%s is set, but a request carrying %s came straight from %s, an address that is "
                   "neither this machine's nor a private network's, and named another address in it: if "
                   "that is no proxy of yours, the server is reached without the proxy, and anyone writing "
                   "%s gets fresh limits with every request. Let clients reach the server only through the "
                   "proxy.")
MAX_ADDRESS_CHARS = 64  # an IPv6 address with a zone fits; a longer header value is cut

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_seen: list[str] = []  # the proxy header of the first request that came unnamed (one at most)
_direct: list[str] = []  # the named header of the first request that brought it straight (one at most)


def configured_header() -> str:
    """The header the deployer named (MHA_CLIENT_IP_HEADER), or ""."""
    return os.environ.get(CLIENT_IP_HEADER_ENV, "").strip()


def header_values(name: str) -> list[str]:
    """This request's values of a header ([] outside a run; AppTest's stand-in runtime has none)."""
    values = st.context.headers.get_all(name)
    return [value for value in values if isinstance(value, str)] if isinstance(values, list) else []


def proxy_header() -> str | None:
    """The first of PROXY_HEADERS this request carries, or None."""
    return next((name for name in PROXY_HEADERS if header_values(name)), None)


def first_address(value: str) -> str:
    """The browser's address in a proxy header: "a, b" gives a; Forwarded's "for=a;proto=https", a."""
    first = value.split(",")[0].strip()
    for part in first.split(";"):
        name, _, address = part.partition("=")
        if name.strip().lower() == "for":
            first = address.strip().strip('"')
    return first[:MAX_ADDRESS_CHARS]


def peer() -> str:
    """The websocket's peer as Streamlit gives it ("" for none: 127.0.0.1 and ::1, AppTest)."""
    value = st.context.ip_address
    return value if isinstance(value, str) else ""


def host_of(address: str):
    """An address without its port or zone, as an ip_address (an IPv4-mapped one as IPv4), or None
    when it is none: "198.51.100.7:4711", "[2001:db8::1]:4711" and "fe80::1%eth0" are addresses."""
    text = address.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        ip = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None
    return getattr(ip, "ipv4_mapped", None) or ip


def reached_directly(header: str, values: list[str], peer_address: str) -> bool:
    """Whether a request carrying the named header (values) reached the server straight from a client
    that wrote it: its peer has a global address (no proxy of a cluster, a private network or this
    host) and the header's first address, which the limits count, is another one."""
    if not values:
        return False
    peer_ip = host_of(peer_address)
    if peer_ip is None or not peer_ip.is_global:
        return False
    return host_of(first_address(values[0])) != peer_ip


def notice() -> None:
    """Every run: the first request through a proxy while MHA_CLIENT_IP_HEADER is unset writes one
    warning to the log (once per process), naming the header it carried and the setting; with the
    setting, the first request that brought its header straight from a client (reached_directly)
    writes another."""
    header = configured_header()
    if header:
        if not _direct:
            direct_notice(header)
        return
    if _seen:
        return
    header = proxy_header()
    if header is None:
        return
    with _lock:
        if _seen:
            return
        _seen.append(header)
    _log.warning(LOG_LINE, header, CLIENT_IP_HEADER_ENV, header, CLIENT_IP_HEADER_ENV, header)


def unconfigured() -> str | None:
    """The header the first request through an unnamed proxy carried, or None (none came yet, or
    MHA_CLIENT_IP_HEADER is set now)."""
    return None if configured_header() or not _seen else _seen[0]


def direct_notice(header: str) -> None:
    """The first request in a process that brought the named header straight from a client: logged
    once, kept for the teacher's Class page (direct())."""
    address = peer()
    if not reached_directly(header, header_values(header), address):
        return
    with _lock:
        if _direct:
            return
        _direct.append(header)
    _log.warning(DIRECT_LOG_LINE, CLIENT_IP_HEADER_ENV, header, header, address[:MAX_ADDRESS_CHARS], header)


def direct() -> str | None:
    """The named header a request brought straight from a client (reached_directly), or None (none came
    yet, or MHA_CLIENT_IP_HEADER names another header now, or none)."""
    return _direct[0] if _direct and configured_header() == _direct[0] else None
