"""A live class behind a proxy: the header the deployer names for the browser's address
(MHA_CLIENT_IP_HEADER), and a proxy nobody named.

A request that carries a proxy's header (PROXY_HEADERS) while MHA_CLIENT_IP_HEADER is unset came
through a proxy (or a script writing the header itself): its peer address is the proxy's, or one
uvicorn copied from X-Forwarded-For, so the limits count it in the shared bucket
(identity.client_address). The first such request in a process writes a warning to the server's log;
the teacher's Class page shows it too (app/views/classroom.py, unconfigured()).
"""

from __future__ import annotations

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

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_seen: list[str] = []  # the proxy header of the first request that came unnamed (one at most)


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


def notice() -> None:
    """Every run: the first request through a proxy while MHA_CLIENT_IP_HEADER is unset writes one
    warning to the log (once per process), naming the header it carried and the setting."""
    if _seen or configured_header():
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
