"""What the page does in the browser beyond drawing: scroll a new page or screen to its top, and keep a
student's identity in its cookie.

Both are ``st.components.v2`` components (as app/phone_css.py's probe and app/adapter/cell_opener.py): their
script runs in the page itself, so it reaches the page's document and cookie without an iframe and
without ``window.parent`` (issue 28, 4). Each draws nothing (height 0) and acts once per ``token``
the server gives it, however often Streamlit renders it again.
"""

from __future__ import annotations

import re

import streamlit as st

from app.session import session_keys

# Scrolls the page to its top, again a few times while it is drawn (charts arriving late could otherwise
# leave it lower): the browser keeps the old page's scroll position otherwise.
SCROLL_JS = """
export default function (component) {
  const { data } = component;
  const token = data && data.token;
  if (!token || window.mhaScrolledFor === token) return;
  window.mhaScrolledFor = token;
  const toTheTop = () => {
    const main = document.querySelector("[data-testid='stMain']");
    if (main) { main.scrollTo(0, 0); }
    window.scrollTo(0, 0);
  };
  for (const ms of [0, 150, 400, 800, 1500]) { setTimeout(toTheTop, ms); }
}
"""

# Writes the cookie once per value; the value is [A-Za-z0-9_-] only (checked before it is sent).
COOKIE_JS = """
export default function (component) {
  const { data } = component;
  if (!data || !data.value || window.mhaCookieWritten === data.value) return;
  window.mhaCookieWritten = data.value;
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  document.cookie = `${data.name}=${data.value}; Path=/; Max-Age=${data.max_age}; SameSite=Lax` + secure;
}
"""
COOKIE_VALUE = re.compile(r"[A-Za-z0-9_-]{1,64}")
COOKIE_NAME = re.compile(r"[a-z_]{1,32}")
SCROLLS = "page_scrolls"  # how many scrolls this session asked for: each one's token

_scroll = st.components.v2.component("mha_scroll_to_top", html="<span></span>", js=SCROLL_JS)
_cookie = st.components.v2.component("mha_keep_cookie", html="<span></span>", js=COOKIE_JS)

# The session keys this module owns (app/session/session_keys.py).
session_keys.register(session_keys.Key(SCROLLS, __name__))


def scroll_to_top(key: str, now: bool = True) -> None:
    """Scroll the page to its top, when ``now``; drawn either way where a page keeps its elements'
    places (the presenter's screens), so the elements after it keep theirs."""
    token = ""
    if now:
        st.session_state[SCROLLS] = st.session_state.get(SCROLLS, 0) + 1
        token = str(st.session_state[SCROLLS])
    _scroll(key=key, data={"token": token}, height=0)


def keep_cookie(name: str, value: str, max_age: int) -> None:
    """Set the browser's cookie ``name`` to ``value`` (Path=/, SameSite=Lax, Secure over HTTPS)."""
    if not COOKIE_NAME.fullmatch(name) or not COOKIE_VALUE.fullmatch(value):
        raise ValueError("a cookie's name and value must be plain identifiers")
    _cookie(key=f"cookie_{name}", data={"name": name, "value": value, "max_age": int(max_age)}, height=0)
