"""A live class, who is asking: the client address the store's per-client limits count, the
deployer's teacher key, the student's identity (the ``mha_student`` cookie's secret, whose hash
is the store's id), and the teacher's (the ``mha_teacher`` cookie: the room's code and its teacher
secret, so that a reload, a new tab or a server restart of the teacher's browser leads the room again
instead of joining it as a student).

The store, its limits and the session keys are the hub's (app/room/live.py); the header that names the
browser's address behind a proxy, app/room/proxy.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
from pathlib import Path

import streamlit as st

from app import i18n
from app.adapter import page_scripts
from app.room import live, proxy
from classroom.store import CODE_LENGTH, StoreError

TEACHER_KEY_ENV, TEACHER_KEY_FILE_ENV = "MHA_TEACHER_KEY", "MHA_TEACHER_KEY_FILE"
MAX_CLIENT_CHARS = proxy.MAX_ADDRESS_CHARS  # an IPv6 address with a zone fits; a longer header value is cut
# The one client of every request whose address the server cannot tell: its buckets are the store's
# per-address ones, sized for a school behind one address.
NO_ADDRESS = "(no address)"

STUDENT_COOKIE = "mha_student"
STUDENT_COOKIE_MAX_AGE = 365 * 24 * 3600  # a year: the same student all school year on one browser
STUDENT_SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)
STUDENT_ID_CHARS = 16

TEACHER_COOKIE = "mha_teacher"  # the room's code, then its teacher secret (36 characters)
TEACHER_COOKIE_MAX_AGE = 24 * 3600  # a day of lessons; a room ends 15 minutes after its teacher's last act
FORGOTTEN = "ended"  # the value written with Max-Age 0: the browser drops the cookie


def client_address() -> str:
    """The address the store's per-client limits count: the first address of the header named by
    MHA_CLIENT_IP_HEADER when the deployer set it and the request carries it (a proxy in front
    rewrites it; without such a proxy any client could write it), else the websocket's peer when it
    names a client, else NO_ADDRESS: loopback (a local script, a proxy on this host), a proxy nobody
    named and AppTest share one bucket of each kind."""
    return named_address() or peer_address() or NO_ADDRESS


def named_address() -> str:
    """The first address of the header MHA_CLIENT_IP_HEADER names; "" when unset or not sent."""
    header = proxy.configured_header()
    values = proxy.header_values(header) if header else []
    return first_address(values[0]) if values else ""


first_address = proxy.first_address  # the browser's address in a proxy header (the first)


def peer_address() -> str:
    """The websocket's peer when it names a client, else "": none (Streamlit gives None for 127.0.0.1
    and ::1; AppTest, no text), another loopback address, or one uvicorn copied from X-Forwarded-For
    (it trusts that header from a loopback peer: a local script or an unnamed proxy wrote it)."""
    peer = text_or_empty(st.context.ip_address)
    copied = any(peer in value for value in proxy.header_values("X-Forwarded-For"))  # an entry, port cut
    return "" if not peer or is_loopback(peer) or copied else peer[:MAX_CLIENT_CHARS]


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, or an IPv4-mapped loopback address (::ffff:127.0.0.2)."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def text_or_empty(value) -> str:
    """A value from the browser's request as text ("" when absent; AppTest's stand-in runtime gives
    other objects)."""
    return value if isinstance(value, str) else ""


def browser_cookie(name: str = STUDENT_COOKIE) -> str:
    return text_or_empty(st.context.cookies.get(name))


class TeacherKeyError(StoreError):
    """The teacher key typed is wrong, or this server's key cannot be read; the message says which."""


def teacher_key() -> str | None:
    """The deployer's teacher key: MHA_TEACHER_KEY, else the contents of the file MHA_TEACHER_KEY_FILE
    names (a mounted Secret); None when neither is set (then anyone may start a room, as on a
    laptop). A named file that cannot be read, or is empty, refuses every start rather than none."""
    key = os.environ.get(TEACHER_KEY_ENV, "")
    if key:
        return key
    path = os.environ.get(TEACHER_KEY_FILE_ENV, "")
    if not path:
        return None
    try:
        key = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeError):
        key = ""
    if not key:
        raise TeacherKeyError(i18n.t("This server's teacher key cannot be read, so no room can be started: "
                                     "tell whoever runs it (MHA_TEACHER_KEY_FILE)."))
    return key


def check_teacher_key(typed: str) -> None:
    """Nothing when no key is set or typed is the key. A wrong key takes one of the client's wrong-code
    tokens in the store (shared with room codes and teacher links); with none left every key is
    refused (TooSoon) before it is compared, so the key cannot be found by trying."""
    key = teacher_key()
    if key is None:
        return
    if not typed.strip():  # nothing tried, nothing counted
        raise TeacherKeyError(i18n.t("Type the teacher key first: this server asks for it to start a room."))
    with live.store().guessing(client=client_address(), wrong=(TeacherKeyError,)):
        if not hmac.compare_digest(typed.strip().encode(), key.encode()):
            raise TeacherKeyError(i18n.t("That is not this server's teacher key."))


def new_student_secret() -> str:
    return secrets.token_urlsafe(24)


def student_id_of(secret: str) -> str:
    """The store's id for the browser holding secret: a hash, so the secret reaches no store, CSV,
    roster or screen, and the id (which may be shown) cannot be turned back into the secret."""
    digest = hashlib.sha256(b"mha-student:" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()[:STUDENT_ID_CHARS]


def student_secret() -> str:
    """This browser's secret: the ``mha_student`` cookie sent with the websocket's handshake (so a
    second tab, or the same tab after a server restart, is the same student), else a fresh one that
    cookie_ui() stores in the browser."""
    ss = st.session_state
    if live.STUDENT_SECRET not in ss:
        kept = browser_cookie()
        ss[live.STUDENT_SECRET] = kept if STUDENT_SECRET.fullmatch(kept) else new_student_secret()
    return ss[live.STUDENT_SECRET]


def cookie_ui(slot) -> None:
    """Store this session's student secret in the browser, unless the browser sent it already
    (app/adapter/page_scripts.py; the secret is [A-Za-z0-9_-] only)."""
    secret = st.session_state.get(live.STUDENT_SECRET)
    if not secret or browser_cookie() == secret:
        return
    with slot:
        page_scripts.keep_cookie(STUDENT_COOKIE, secret, STUDENT_COOKIE_MAX_AGE)


def kept_teacher_secret(code: str) -> str | None:
    """The teacher secret this browser keeps for room code (the ``mha_teacher`` cookie sent with the
    websocket's handshake), or None: no cookie, or one for another room."""
    value = browser_cookie(TEACHER_COOKIE)
    kept_code, secret = value[:CODE_LENGTH], value[CODE_LENGTH:]
    wanted = code.strip().upper() if isinstance(code, str) else ""
    return secret if kept_code == wanted and STUDENT_SECRET.fullmatch(secret) else None


def forget_teacher_cookie(code: str) -> None:
    """This browser's teacher cookie for room code is stale (the room ended, or another room took its
    code): teacher_cookie_ui drops it."""
    st.session_state[live.FORGET_TEACHER_COOKIE] = code


def teacher_cookie_ui(slot) -> None:
    """Keep the teacher's room and secret in the browser while this session leads (written once per
    value), and drop a cookie marked stale, unless the browser sent another room's meanwhile."""
    ss = st.session_state
    if live.is_teacher():
        ss.pop(live.FORGET_TEACHER_COOKIE, None)
        value = f"{ss[live.ROOM]}{ss[live.TEACHER_SECRET]}"
        if browser_cookie(TEACHER_COOKIE) != value:
            with slot:
                page_scripts.keep_cookie(TEACHER_COOKIE, value, TEACHER_COOKIE_MAX_AGE)
        return
    stale = ss.get(live.FORGET_TEACHER_COOKIE)
    if stale and browser_cookie(TEACHER_COOKIE)[:CODE_LENGTH] in (stale, ""):
        with slot:
            page_scripts.keep_cookie(TEACHER_COOKIE, FORGOTTEN, 0)
