"""A small client for Streamlit's own websocket protocol: a browser tab without the drawing.

What the frontend of this Streamlit version does (checked against Chromium's frames):
GET /_stcore/health and /_stcore/host-config (the health answer sets the ``_streamlit_xsrf``
cookie), then open ``ws://<host>/_stcore/stream`` offering the subprotocols
``["streamlit", <xsrf cookie>]`` with the cookie and a same-origin Origin header, and send a
``BackMsg.rerun_script`` (a ``ClientState``: widget values, page hash, browser context). The
server answers with ``ForwardMsg``s (new_session, deltas, ...) and ends every run with
``script_finished``. The XSRF token only gates reading an auth cookie; a bare connection works too.
Like the frontend, the client lists the hashes of the large elements (over 10 kB) it holds from
the last run, and the server then sends those as ``ref_hash`` references, resolved here.

A widget drawn inside a fragment sends its change as the frontend does: a rerun of that fragment
alone (``ClientState.fragment_id``), whose reply resends only the fragment's elements.

Differences from a browser: widget values are sent only for the widgets this client has set
(the server keeps the others, as it does for the values the browser sends unchanged), and no
static files (index.html, the JavaScript bundle) are fetched.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import re
import time
import urllib.request
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

import numpy as np
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

from course.examples import DEFAULT_EXAMPLE, all_examples
from tests.apptest_util import heatmap_values, unescaped

FINISHED = {ForwardMsg.FINISHED_SUCCESSFULLY: "ok", ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile error",
            ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: "fragment ok"}


@dataclass
class Run:
    """What one script run sent back."""

    seconds: float  # BackMsg sent -> script_finished received
    status: str = ""
    charts: dict[str, str] = field(default_factory=dict)  # plotly chart key -> figure JSON (see chart())
    widget_ids: dict[str, str] = field(default_factory=dict)  # widget or element key -> element id
    errors: list[str] = field(default_factory=list)  # exception elements, st.error alerts
    messages: int = 0
    bytes: int = 0
    elements: int = 0  # deltas that draw an element (new_element), the page's cost in elements
    blocks: int = 0  # deltas that open a container (add_block: columns, expanders, containers)
    kinds: dict[str, int] = field(default_factory=dict)  # element type (plotly_chart, ...) -> elements drawn
    # A run stopped for another (a fragment's run that calls st.rerun(scope="app")): its messages, which
    # the counts above leave out. How many of them reach the tab before the stop is a race: they are
    # the stopped run's, not the page's.
    stopped_messages: int = 0

    def chart(self, key: str) -> dict:
        return json.loads(self.charts[key])


RUN_MESSAGES = ("new_session", "delta", "auto_rerun", "script_finished", "page_config_changed", "navigation")


def element_key(element_id: str) -> str | None:
    """The user key of an element id ``$$ID-<hash>-<key>``; None for elements drawn without one."""
    parts = element_id.split("-", 2)
    return parts[2] if element_id.startswith("$$ID-") and len(parts) == 3 and parts[2] != "None" else None


class Session:
    """One browser tab's session. ``await open()``, then ``rerun()``/``set_json()``, ``close()``."""

    def __init__(self, url: str, timeout: float = 60.0, headers: dict[str, str] | None = None):
        self.url = url.rstrip("/")  # http://127.0.0.1:<port>
        self.timeout = timeout
        self.headers = dict(headers or {})  # sent with the websocket's handshake (Cookie, X-Forwarded-For)
        self.source: str | None = None  # the local address the websocket leaves from (e.g. 127.0.0.2)
        self.ws: ClientConnection | None = None
        self.widgets: dict[str, WidgetState] = {}  # widget id -> the value this client set
        self.page_hash = ""  # sent back from the second run on, as the frontend does
        self.last: Run | None = None
        self._cache: dict[str, ForwardMsg] = {}  # large elements of the last run, by hash
        self.said: list[str] = []  # every alert's and Markdown element's text this tab was sent, unescaped
        self.widget_ids: dict[str, str] = {}  # widget key -> element id, from every run so far
        self.fragment_of: dict[str, str] = {}  # widget key -> the fragment it was drawn in ("": none)
        self.changed_in: str | None = None  # the fragment of the widget set last: the next rerun's
        self.page_name = ""  # a page's address (url_path) to open, as a link to /<page> does
        self.pages: dict[str, str] = {}  # the navigation's pages: url_path -> title, as last sent
        self.page_path = ""  # the url_path of the page the last run drew

    def _get(self, path: str) -> str | None:
        """An HTTP GET; returns the _streamlit_xsrf cookie it set, if any."""
        with urllib.request.urlopen(self.url + path, timeout=self.timeout) as response:
            response.read()
            cookie = SimpleCookie(response.headers.get("Set-Cookie", ""))
        return cookie["_streamlit_xsrf"].value if "_streamlit_xsrf" in cookie else None

    async def open(self, query_string: str = "") -> Run:
        """Connect as the frontend does and make the first run."""
        xsrf = await asyncio.to_thread(self._get, "/_stcore/health")
        await asyncio.to_thread(self._get, "/_stcore/host-config")
        xsrf_cookie = f"_streamlit_xsrf={xsrf}" if xsrf else ""
        cookies = "; ".join(c for c in (xsrf_cookie, self.headers.get("Cookie", "")) if c)
        headers = {**self.headers, **({"Cookie": cookies} if cookies else {})}
        self.ws = await connect(self.url.replace("http", "ws", 1) + "/_stcore/stream",
                                subprotocols=["streamlit", *([xsrf] if xsrf else [])], origin=self.url,
                                additional_headers=headers, max_size=None, ping_interval=None,
                                open_timeout=self.timeout,
                                **({"local_addr": (self.source, 0)} if self.source else {}))
        return await self.rerun(query_string=query_string)

    def set_json(self, key: str, value) -> None:
        """Set a widget that takes a JSON string (st.data_editor) by its key, for the next run."""
        widget_id = self.changing(key)
        self.widgets[widget_id] = WidgetState(id=widget_id, string_value=json.dumps(value))

    def set_string(self, key: str, value: str) -> None:
        """Set a widget whose value travels as a string (text input, selectbox: its label), by key."""
        widget_id = self.changing(key)
        self.widgets[widget_id] = WidgetState(id=widget_id, string_value=value)

    def set_bool(self, key: str, value: bool) -> None:
        """Set a checkbox or toggle by its key, for the next run."""
        widget_id = self.changing(key)
        self.widgets[widget_id] = WidgetState(id=widget_id, bool_value=value)

    def set_strings(self, key: str, values: list[str]) -> None:
        """Set a widget whose value travels as a list of strings (segmented control, pills), by key."""
        widget_id = self.changing(key)
        state = WidgetState(id=widget_id)
        state.string_array_value.data.extend(values)
        self.widgets[widget_id] = state

    def changing(self, key: str) -> str:
        """The id of the widget keyed ``key``, which the next rerun reports changed: a rerun of its
        fragment alone when it was drawn in one, as the frontend sends it."""
        self.changed_in = self.fragment_of.get(key, "")
        return self.widget_ids[key]

    async def press(self, key: str) -> Run:
        """Click a button or a form's submit button by its key: a trigger sent with this run only."""
        widget_id = self.changing(key)
        self.widgets[widget_id] = WidgetState(id=widget_id, trigger_value=True)
        try:
            return await self.rerun()
        finally:
            self.widgets.pop(widget_id, None)

    async def edit_cell(self, key: str, row: int, col: int, value: str) -> Run:
        """One data_editor cell edit, as the grid sends it: the typed text (edits are cumulative)."""
        widget_id = self.changing(key)
        old = self.widgets.get(widget_id)
        edits = json.loads(old.string_value) if old else {"edited_rows": {}, "added_rows": [],
                                                          "deleted_rows": []}
        edits["edited_rows"].setdefault(str(row), {})[f"c{col}"] = value
        self.set_json(key, edits)
        return await self.rerun()

    async def rerun(self, query_string: str = "") -> Run:
        """Send rerun_script with the current widget values; read ForwardMsgs until the run ends."""
        run, cache = await self._exchange(self._client_state(query_string), self._new_run())
        self._keep(run, cache)
        return run

    def _client_state(self, query_string: str) -> ClientState:
        """What the frontend sends with a rerun: the widgets' values, its page, its message cache."""
        state = ClientState(query_string=query_string, page_script_hash=self.page_hash,
                            cached_message_hashes=list(self._cache))
        if self.page_name and not self.page_hash:  # the first run of a link to /<page>
            state.page_name = self.page_name
        if self.changed_in:
            state.fragment_id = self.changed_in
        self.changed_in = None
        state.widget_states.widgets.extend(self.widgets.values())
        state.context_info.timezone, state.context_info.locale = "UTC", "en-US"
        state.context_info.url, state.context_info.color_scheme = self.url + "/", "light"
        return state

    async def _exchange(self, state: ClientState, run: Run) -> tuple[Run, dict]:
        """Send one rerun_script; read ForwardMsgs into run until it ends. Returns run and the new
        message cache (the caller decides what to keep)."""
        message = BackMsg()
        message.rerun_script.CopyFrom(state)
        started = time.perf_counter()
        await self.ws.send(message.SerializeToString())
        cache = await self._read_run(run)
        run.seconds = time.perf_counter() - started
        return run, cache

    async def _read_run(self, run: Run, first: bytes | None = None) -> dict:
        """Read ForwardMsgs (first, when one was read already) into run until it ends; returns the
        run's message cache."""
        cache = {}
        async with asyncio.timeout(self.timeout):
            while not run.status:
                data, first = (first, None) if first is not None else (await self.ws.recv(), None)
                run.messages, run.bytes = run.messages + 1, run.bytes + len(data)
                msg = ForwardMsg()
                msg.ParseFromString(data)
                if msg.HasField("ref_hash"):  # "you have this one": the frontend's message cache
                    cache[msg.ref_hash] = self._cache[msg.ref_hash]
                    cached = ForwardMsg()
                    cached.CopyFrom(cache[msg.ref_hash])
                    cached.metadata.CopyFrom(msg.metadata)
                    msg = cached
                elif msg.metadata.cacheable:  # large elements (over 10 kB by default)
                    cache[msg.hash] = msg
                self._read(msg, run)
        return cache

    async def pushed(self, seconds: float) -> Run | None:
        """A run the server began by itself (app/room/push.py reruns a follower's page when its room
        moves), read to its end; None when none came within seconds. Also the rest of a run whose
        messages another run's reply came in the middle of (the server may run a fragment, the reply
        to a poll tick, while the page's run waits its turn): the frontend reads every message, so
        this does too. Messages between runs (a status change) are read and waited past."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                data = await asyncio.wait_for(self.ws.recv(), left)  # a cancelled recv loses nothing
            except TimeoutError:
                return None
            first = ForwardMsg()
            first.ParseFromString(data)
            if first.WhichOneof("type") in RUN_MESSAGES:
                return await self._read_pushed(data, first)
            self._read(first, self._new_run())
        return None

    async def _read_pushed(self, data: bytes, first: ForwardMsg) -> Run:
        started = time.perf_counter()
        run = self._new_run()
        cache = await self._read_run(run, data)
        run.seconds = time.perf_counter() - started
        if first.WhichOneof("type") == "new_session" and not first.metadata.run.fragment_ids:
            self._keep(run, cache)  # a whole run of its own
        else:  # a fragment's run, or the rest of a run begun in another's reply: adds to the cache
            self._keep(run, {**self._cache, **cache})
        return run

    def _new_run(self) -> Run:
        return Run(0.0)

    def _keep(self, run: Run, cache: dict) -> None:
        """A whole run's messages replace the cache, as the frontend's do; a fragment's run resends
        only its own elements, and the page's stay."""
        if run.status == "fragment ok":
            cache = {**self._cache, **cache}
        self._cache, self.last = cache, run

    def _read(self, msg: ForwardMsg, run: Run) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.page_hash = msg.new_session.page_script_hash or self.page_hash
        elif kind == "navigation":
            self.page_hash = msg.navigation.page_script_hash or self.page_hash
            self.pages = {page.url_pathname: page.page_name for page in msg.navigation.app_pages}
            self.page_path = next((page.url_pathname for page in msg.navigation.app_pages
                                   if page.page_script_hash == msg.navigation.page_script_hash), "")
        elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
            error = msg.session_event.script_compilation_exception
            run.errors.append(f"compilation: {error.type}: {error.message}")
        elif kind == "script_finished" and msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            run.stopped_messages += run.messages  # counted from the next run's start
            run.messages = run.bytes = run.elements = run.blocks = 0
            run.kinds.clear()
        elif kind == "script_finished":
            run.status = FINISHED.get(msg.script_finished, str(msg.script_finished))
        elif kind == "delta" and msg.delta.WhichOneof("type") == "add_block":
            run.blocks += 1
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            run.elements += 1
            element = msg.delta.new_element
            element_type = element.WhichOneof("type")
            run.kinds[element_type] = run.kinds.get(element_type, 0) + 1
            inner = getattr(element, element_type)
            key = element_key(getattr(inner, "id", "") or "")
            if key:
                run.widget_ids[key] = self.widget_ids[key] = inner.id
                self.fragment_of[key] = msg.delta.fragment_id
            if element_type == "plotly_chart" and key:
                run.charts[key] = inner.spec
            elif element_type == "exception":
                run.errors.append(f"exception: {inner.type}: {inner.message}")
            elif element_type == "alert" and inner.format == Alert.ERROR:
                run.errors.append(f"st.error: {inner.body}")
            if element_type in ("alert", "markdown"):
                self.said.append(unescaped(inner.body))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


# --- what the default page should draw -------------------------------------------------------------

SAT = 2  # X row and query index of 'sat' in the default example (chapter 002's "the cat sat")


@functools.cache
def default_example():
    """Built once: all_examples() makes every example's weights (512-wide ones too), which a load
    bench's check of each run's weights paid anew, on the CPU the server under test shares."""
    return all_examples()[DEFAULT_EXAMPLE]


@functools.lru_cache(maxsize=4096)
def expected_weights(sat_x0: float | None) -> np.ndarray:  # [h, n_q, n_k]
    """The default example's weights after X['sat'][0] was set to sat_x0 (None: untouched)."""
    example = default_example()
    x = example.x.astype(float).copy()
    if sat_x0 is not None:
        x[SAT, 0] = sat_x0
    return dataclasses.replace(example, x=x).run().weights


def drawn_weights(run: Run) -> np.ndarray:  # [h, n_q, n_k] as carried by the weights heatmap
    return np.stack(heatmap_values(run.chart("chart_weights")))


# --- a live-class student: a session that drives its run_every fragments as the browser does -------


FOLLOWING = "following the teacher: "  # app/room/room_box.py's room box, then the label of what is shown


@dataclass
class FollowerRun(Run):
    """A Run that also keeps what the room box says is shown and whether a room question was drawn."""

    following: str | None = None  # what the sidebar's room box says the page shows, while following
    question_seen: bool = False  # "Your teacher asks" was drawn (app/room/questions.py, student_question_ui)
    answer_in: bool = False  # "Your answer is in" was drawn: the store took this student's answer
    fragment_run: bool = False  # ended as a fragment run (no rerun of the whole page)


class FollowerSession(Session):
    """A Session that also does what the frontend does for ``@st.fragment(run_every=...)``.

    The server announces such a fragment with a ``ForwardMsg.auto_rerun`` (fragment id, interval);
    the frontend then sends, on a timer of that interval, a ``rerun_script`` whose ClientState
    carries the fragment id and ``is_auto_rerun`` (and, like every rerun, the address bar's query
    string, kept here from ``page_info_changed``). ``rerun_fragment()`` sends one such tick; when
    the fragment calls ``st.rerun(scope="app")`` the reply is the whole page's run. A
    ``stop_auto_rerun`` cancels the timer (the fragment id is dropped), and so does a whole run's
    ``new_session`` for every timer (the fragments that run draws announce theirs again).
    """

    def __init__(self, url: str, timeout: float = 60.0, headers: dict[str, str] | None = None):
        super().__init__(url, timeout, headers)
        self.auto_reruns: dict[str, float] = {}  # fragment id -> interval (s)
        self.query_string = ""

    async def open(self, query_string: str = "") -> FollowerRun:
        self.query_string = query_string
        return await super().open(query_string)

    async def rerun(self, query_string: str | None = None) -> FollowerRun:
        """A whole-page rerun, sending the kept query string as the frontend does."""
        sent = self.query_string if query_string is None else query_string
        return await self._send(self._client_state(sent))

    async def rerun_fragment(self, fragment_id: str | None = None) -> FollowerRun:
        """One timer tick of a run_every fragment (the only one, unless fragment_id says which)."""
        if fragment_id is None:
            if len(self.auto_reruns) != 1:
                raise RuntimeError(f"expected one run_every fragment, have {list(self.auto_reruns)}")
            fragment_id = next(iter(self.auto_reruns))
        state = self._client_state(self.query_string)
        state.fragment_id, state.is_auto_rerun = fragment_id, True
        return await self._send(state)

    async def _send(self, state: ClientState) -> FollowerRun:
        """As Session.rerun, for a fragment's run as well as the page's."""
        run, cache = await self._exchange(state, self._new_run())
        self._keep(run, cache)
        return run

    def _new_run(self) -> FollowerRun:
        return FollowerRun(0.0)

    def _keep(self, run: FollowerRun, cache: dict) -> None:
        run.fragment_run = run.status == "fragment ok"
        super()._keep(run, cache)

    def _read(self, msg: ForwardMsg, run: Run) -> None:
        super()._read(msg, run)
        kind = msg.WhichOneof("type")
        if kind == "new_session" and not msg.metadata.run.fragment_ids:
            self.auto_reruns.clear()  # a whole run: the frontend drops its timers (cleanupAutoReruns)
        if kind == "auto_rerun" and msg.auto_rerun.fragment_id:
            self.auto_reruns[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "stop_auto_rerun":
            for fragment_id in msg.stop_auto_rerun.fragment_ids:
                self.auto_reruns.pop(fragment_id, None)
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif (kind == "delta" and msg.delta.WhichOneof("type") == "new_element"
              and isinstance(run, FollowerRun)):
            element = msg.delta.new_element
            element_type = element.WhichOneof("type")
            if element_type == "markdown" and "Your teacher asks" in element.markdown.body:
                run.question_seen = True
            elif element_type == "alert" and "Your answer is in" in element.alert.body:
                run.answer_in = True
            elif element_type == "markdown" and FOLLOWING in element.markdown.body:
                shown = element.markdown.body.split(FOLLOWING, 1)[1]
                run.following = re.sub(r"\\(.)", r"\1", shown)  # md_literal undone


async def many(count: int, make, at_once: int) -> tuple[list, float]:
    """make(i) -> a visit coroutine, count of them, at_once at a time; what they returned, in order, and
    the seconds they took (tests/classroom/test_client_address.py, bench/abuse.py)."""
    gate = asyncio.Semaphore(at_once)

    async def one(i: int):
        async with gate:
            return await make(i)

    started = time.monotonic()
    results = await asyncio.gather(*(one(i) for i in range(count)))
    return list(results), time.monotonic() - started
