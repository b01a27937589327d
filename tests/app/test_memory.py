"""Memory per session (issue 15, finding 8): what a session keeps after its run is bounded, big results
live in one bounded cache shared by the sessions, and long computations take turns.

Bytes are counted over the NumPy arrays reachable from the session: its session state (with the
widgets' callbacks and their arguments) and its fragments (which keep their arguments).
"""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from app import result_cache
from app.result_cache import RESULTS, SESSION_BUDGET_BYTES, numpy_bytes
from course.examples import generated_setup
from mha_core import LIMITS
from mha_core.gate import Gate
from tests.apptest_util import (
    chart_specs,
    edit_cell,
    fresh_app,
    pick_example,
    texts,
)
from tests.live_server import ROOT
from tests.st_protocol import Run, Session

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

MiB = 2**20


def kept_bytes(at) -> int:
    """The NumPy bytes a session holds between runs: session state (values, widgets' metadata and
    callback arguments) and the fragments it keeps."""
    return numpy_bytes([at.session_state._state, at._fragment_storage])


def long_session(n_tokens: int, d_model: int, n_heads: int, *, n_kv: int | None = None, bias: bool = False,
                 d_head: int | None = None):
    """A session at these sizes (cross-attention over n_kv keys if given), every step drawn
    (drill-down open)."""
    at = fresh_app()
    pick_example(at, "random")
    if n_kv is not None:
        at.radio(key="mode").set_value("cross-attention").run()
        at.text_input(key="kv_tokens_text").set_value(" ".join(f"k{i}" for i in range(n_kv))).run()
    if bias:
        at.checkbox(key="use_bias").check().run()
    if d_head is not None:
        at.checkbox(key="custom_head_width").check().run()
        at.number_input(key="d_k").set_value(d_head).run()
        at.number_input(key="d_v").set_value(d_head).run()
    at.number_input(key="n_heads").set_value(n_heads).run()
    at.number_input(key="d_model").set_value(d_model).run()
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(n_tokens))).run()
    at.toggle(key="drill_open").set_value(True).run()
    assert not at.exception and not at.error, texts(at.error)
    return at


@pytest.fixture(autouse=True)
def empty_results():
    RESULTS.clear()
    yield
    RESULTS.clear()


def test_a_session_at_the_token_limit_keeps_at_most_its_budget_after_its_run():
    """The issue's session: 1024 tokens, d_model 768, 12 heads, float32. It kept ~210 MB (its last
    result and the Setup in session state, the result again in its fragments)."""
    at = long_session(LIMITS.tokens, 768, 12)
    result = result_cache.result_of(at.session_state["result_key"])
    assert result.weights.dtype == np.float32 and result.weights.shape == (12, 1024, 1024)
    kept = kept_bytes(at)
    print(f"1024 tokens, d_model 768, 12 heads: the session keeps {kept / MiB:.1f} MiB")
    assert kept <= SESSION_BUDGET_BYTES, kept / MiB
    assert numpy_bytes(result) > 2 * SESSION_BUDGET_BYTES  # the result is not what the session keeps


@pytest.mark.parametrize(("n_q", "n_kv", "heads"), [(1024, 1024, 12), (768, 1024, 16)])
def test_the_largest_inputs_the_page_accepts_stay_within_the_budget(n_q, n_kv, heads):
    """Inputs at their limits (cross-attention, d_model 768, heads of width 128, biases) with the
    attention cells at theirs: 12 heads over 1024 x 1024, or 16 heads (the most inputs) over 768 x 1024."""
    assert heads * n_q * n_kv == LIMITS.attention_cells
    at = long_session(n_q, LIMITS.d_model, heads, n_kv=n_kv, bias=True, d_head=LIMITS.d_head)
    kept = kept_bytes(at)
    print(f"{heads} heads over {n_q} x {n_kv}, inputs at their limits: keeps {kept / MiB:.1f} MiB")
    assert kept <= SESSION_BUDGET_BYTES, kept / MiB
    result = result_cache.result_of(at.session_state["result_key"])
    assert numpy_bytes(result) <= RESULTS.budget_bytes  # the largest result fits in the shared cache


def test_what_resizing_remembers_is_forgotten_past_the_budget_and_the_page_says_so():
    at = long_session(768, LIMITS.d_model, 16, n_kv=1024, bias=True, d_head=LIMITS.d_head)
    at.number_input(key="d_model").set_value(512).run()  # every W and X cut: ~60 MiB to remember
    assert not at.exception
    assert kept_bytes(at) <= SESSION_BUDGET_BYTES, kept_bytes(at) / MiB
    assert any("not remembered at these sizes" in note for note in texts(at.info))


def test_a_second_long_session_shares_the_bounded_cache_instead_of_doubling_it():
    first = long_session(LIMITS.tokens, 768, 12)
    one = RESULTS.held_bytes()
    second = long_session(LIMITS.tokens, 768, 12)  # the same random example and sizes: the same result
    assert RESULTS.held_bytes() == one and len(RESULTS) == 1
    second.number_input(key="seed").set_value(5).run()
    pick_example(second, "random")  # another draw: another result
    third = long_session(LIMITS.tokens, 768, 8)
    assert not second.exception and not third.exception
    assert 0 < RESULTS.held_bytes() <= RESULTS.budget_bytes
    for at in (first, second, third):
        assert kept_bytes(at) <= SESSION_BUDGET_BYTES


def test_a_view_option_reuses_the_shared_result_and_an_evicted_one_comes_back():
    at = long_session(200, 64, 8)
    key = at.session_state["result_key"]
    first = result_cache.result_of(key)
    at.selectbox(key="pick_drill_head").set_value("head 3").run()  # the drill-down fragment
    assert result_cache.result_of(key) is first
    RESULTS.clear()  # another session's long sequence took the room
    at.selectbox(key="pick_drill_head").set_value("head 2").run()
    assert not at.exception and result_cache.result_of(at.session_state["result_key"]) is not None
    assert any(r"q_{1} \cdot k_{1}" in line for line in texts(at.latex))


def test_a_result_no_session_uses_any_more_leaves_the_cache():
    RESULTS.put("a", np.zeros(10), 80)
    RESULTS.pin("a")
    RESULTS.pin("a")
    RESULTS.unpin("a")
    assert RESULTS.get("a") is not None  # one session still uses it
    RESULTS.unpin("a")
    assert RESULTS.get("a") is None and RESULTS.held_bytes() == 0


def test_what_is_derived_from_a_result_goes_with_it():
    cache = result_cache.BytesLRU(1000)
    cache.put(b"r", "result", 100)
    cache.pin(b"r")
    made = []
    for _ in range(2):  # made once while the result is kept
        derived = cache.get_or_make_derived(b"r", b"sum", lambda: made.append(1) or "derived", lambda v: 50)
        assert derived == "derived"
    assert made == [1] and cache.held_bytes() == 150 and len(cache) == 1  # not an entry of its own
    cache.unpin(b"r")  # no session uses the result any more
    assert cache.get((b"r", b"sum")) is None and cache.held_bytes() == 0 and len(cache) == 0


def test_a_rerun_takes_the_contributions_from_the_result_instead_of_making_them_again(monkeypatch):
    from mha_core import derive

    at = fresh_app()
    calls = []
    original = derive.head_contributions
    monkeypatch.setattr(derive, "head_contributions", lambda *a: calls.append(1) or original(*a))
    for _ in range(3):
        at.run()
    assert not at.exception and calls == []  # kept with the result since the first run
    edit_cell(at, "x", row=0, col=0, value="1.25")  # a new result: made once for it
    at.run()
    assert calls == [1]


def test_the_cache_evicts_the_least_recently_used_within_its_budget():
    cache = result_cache.BytesLRU(100)
    cache.put("a", "A", 40)
    cache.put("b", "B", 40)
    cache.get("a")
    cache.put("c", "C", 40)
    assert cache.get("b") is None and cache.get("a") == "A" and cache.held_bytes() == 80
    cache.put("huge", "H", 101)
    assert cache.get("huge") is None and cache.held_bytes() == 80


def test_sessions_asking_for_one_key_at_once_make_it_once_and_the_others_are_told():
    cache = result_cache.BytesLRU(1000)
    made, told, got = [], [], []

    def make():
        made.append(1)
        time.sleep(0.2)
        return "value"

    def ask():
        got.append(cache.get_or_make("k", make, lambda _: 10, lambda: _noting(told)))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1] and got == ["value"] * 4 and len(told) == 3
    assert cache.get_or_make("big", lambda: "x", lambda _: 2000) == "x" and cache.get("big") is None


def test_numpy_bytes_counts_a_shared_buffer_once_and_sees_into_closures():
    block = np.zeros((3, 100))
    views = {"a": block[0], "b": block[1], "c": [block[2]]}
    assert numpy_bytes(views) == block.nbytes
    big = np.zeros(1000)

    def outer():
        return big

    assert numpy_bytes(outer) == big.nbytes


def test_a_pinned_setup_is_refused_when_it_would_pass_the_session_budget():
    at = long_session(LIMITS.tokens, LIMITS.d_model, 12, n_kv=LIMITS.tokens, bias=True, d_head=LIMITS.d_head)
    assert at.button(key="compare_pin").disabled
    assert any("Too large to pin" in caption for caption in texts(at.caption))


def test_the_pin_button_keeps_no_setup_in_its_callback():
    at = fresh_app()
    pick_example(at, "random")
    before = kept_bytes(at)
    setup = generated_setup("random", 0)
    assert kept_bytes(at) - before < numpy_bytes(setup)  # nothing new held for the button
    at.button(key="compare_pin").click().run()
    assert at.session_state["pinned"] is not None and not at.exception


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_a_gate_never_lets_more_than_its_slots_in(slots):
    gate = Gate(slots)
    inside, most, queued = [0], [0], []
    lock = threading.Lock()

    def work():
        with gate.turn(lambda: _noting(queued)):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(slots + 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == slots  # the slots were used, and never more
    assert len(queued) >= 2  # the others waited, and were told
    assert gate.inside == 0 and gate.waiting == 0


def _noting(queued):
    import contextlib

    queued.append(1)
    return contextlib.nullcontext()


def test_no_result_outlives_the_run_but_the_shared_caches_copy():
    """After a run, the only reference to a result is the shared cache's: not the script's globals
    (the pages keep them), not the download buttons' callables (Streamlit keeps them for the session,
    and forever for a session that expires without shutting down), not a fragment."""

    from mha_core import MHAResult

    at = long_session(512, 64, 8)
    assert result_cache.result_of(at.session_state["result_key"]) is not None
    RESULTS.clear()
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, MHAResult) and o.weights.shape[1] == 512]
    assert not alive, [type(r).__name__ for r in gc.get_referrers(alive[0])]


def test_the_download_buttons_keep_the_inputs_only(monkeypatch):
    from streamlit.runtime.media_file_manager import MediaFileManager

    kept = []
    original = MediaFileManager.add_deferred

    def recording(self, data_callable, *args, **kwargs):
        kept.append(data_callable)
        return original(self, data_callable, *args, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording)
    at = long_session(180, 16, 8)  # few enough numbers to save (the buttons are enabled), a big result
    at.session_state["save_load_open"] = True  # "Save or load this setup" opened: its buttons are drawn
    at.run()
    kept.clear()
    at.run()
    result = result_cache.result_of(at.session_state["result_key"])
    inputs = numpy_bytes([at.session_state["work"]])
    assert len(kept) == 4  # JSON, script, CSV, this page as HTML
    assert numpy_bytes(kept) <= inputs < numpy_bytes(result) / 10


# --- A tab that reconnects (a phone's wifi drop), on a real server ------------------------------------


@pytest.mark.server
def test_a_tab_that_reconnects_resumes_its_session_in_time_and_gets_a_fresh_one_after():
    """Within server.disconnectedSessionTTL the tab resumes its own session (its result, dropped at the
    disconnect, is computed again); after it, Streamlit starts a fresh session from the address."""
    import asyncio
    from urllib.parse import urlencode

    from tests.live_server import streamlit_server

    tokens = " ".join(f"w{i}" for i in range(300))
    query = urlencode({"seed": "3", "d_model": "64", "heads": "8", "tokens": tokens})

    async def example(url):
        tab = Tab(url)
        first = await tab.open(query)
        assert first.status == "ok" and not first.errors and "chart_weights" in first.charts
        weights, session = first.charts["chart_weights"], tab.session_id
        await tab.ws.close()
        resumed = await tab.reconnect(query)  # at once: within the TTL
        assert tab.session_id == session and resumed.status == "ok" and not resumed.errors
        assert resumed.charts.get("chart_weights", weights) == weights
        await tab.ws.close()
        await asyncio.sleep(3)  # past the TTL of 2 s
        other = Tab(url)
        await other.open()
        await other.ws.close()  # Streamlit reaps expired sessions when its storage is written
        fresh = await tab.reconnect(query)
        assert tab.session_id != session and fresh.status == "ok" and not fresh.errors
        assert fresh.charts["chart_weights"] == weights  # the address bar held the whole state
        await tab.ws.close()

    with streamlit_server("--server.disconnectedSessionTTL=2") as (url, _):
        asyncio.run(example(url))


class Tab(Session):
    """A browser tab that reconnects to its own session as the frontend does after a network drop:
    the session id travels as the websocket's third subprotocol."""

    def __init__(self, url: str):
        super().__init__(url, timeout=120)
        self.session_id = ""

    def _read(self, msg, run) -> None:
        if msg.WhichOneof("type") == "new_session" and msg.new_session.initialize.session_id:
            self.session_id = msg.new_session.initialize.session_id
        super()._read(msg, run)

    async def reconnect(self, query_string: str) -> Run:
        import asyncio

        from websockets.asyncio.client import connect

        xsrf = await asyncio.to_thread(self._get, "/_stcore/health")
        self.ws = await connect(self.url.replace("http", "ws", 1) + "/_stcore/stream",
                                subprotocols=["streamlit", xsrf or "", self.session_id], origin=self.url,
                                additional_headers={"Cookie": f"_streamlit_xsrf={xsrf}"} if xsrf else {},
                                max_size=None, ping_interval=None, open_timeout=self.timeout)
        return await self.rerun(query_string=query_string)


EDITABLE_SESSION_BUDGET_BYTES = 160 * 2**20  # README, "Limits": a session within the editable sizes


LONG_SESSION_BUDGET_BYTES = 640 * 2**20  # README, "Limits": a long sequence at the attention limit


def session_bytes(at, set_sizes) -> tuple[int, int]:
    """What the session keeps (bases, what resizing remembers, the last result) and the peak
    allocation of the rerun that makes every array and figure anew."""
    import tracemalloc

    tracemalloc.start()
    set_sizes()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not at.exception and not at.error, texts(at.error)
    kept = [*at.session_state["work"].values(), *at.session_state["reservoir"].values()]
    held = sum(a.nbytes for a in kept if a is not None)  # the result kept is made in the rerun: in peak
    return held, peak


def at_sizes(at, n_q: int, n_k: int, n_heads: int, d_k: int) -> None:
    at.radio(key="mode").set_value("cross-attention").run()
    at.text_input(key="kv_tokens_text").set_value(" ".join(f"k{i}" for i in range(n_k))).run()
    at.text_input(key="tokens_text").set_value(" ".join(f"q{i}" for i in range(n_q))).run()
    at.checkbox(key="use_bias").check().run()
    at.checkbox(key="custom_head_width").check().run()
    at.number_input(key="d_k").set_value(d_k).run()
    at.number_input(key="d_v").set_value(d_k).run()
    at.number_input(key="n_heads").set_value(n_heads).run()


def test_one_session_at_the_editable_sizes_stays_within_its_memory_budget():
    """24 + 24 tokens, d_model 512, 16 heads of width 128, biases (the sizes of a class's setups)."""
    at = fresh_app()
    at_sizes(at, 24, 24, 16, 128)
    held, peak = session_bytes(at, lambda: at.number_input(key="d_model").set_value(512).run())
    print(f"session at the editable sizes: holds {held / 2**20:.1f} MiB, peaks at {peak / 2**20:.1f} MiB")
    assert held + peak <= EDITABLE_SESSION_BUDGET_BYTES, (held / 2**20, peak / 2**20)


def test_one_long_session_at_the_attention_limit_stays_within_its_memory_budget():
    """1024 + 1024 tokens, 12 heads of width 128, d_model 768, biases: every limit reached at once."""
    at = fresh_app()
    at_sizes(at, LIMITS.tokens, LIMITS.tokens, 12, 128)
    assert 12 * LIMITS.tokens * LIMITS.tokens == LIMITS.attention_cells
    held, peak = session_bytes(at, lambda: at.number_input(key="d_model").set_value(LIMITS.d_model).run())
    print(f"long session at every limit: holds {held / 2**20:.1f} MiB, peaks at {peak / 2**20:.1f} MiB")
    assert held + peak <= LONG_SESSION_BUDGET_BYTES, (held / 2**20, peak / 2**20)
    assert any(trace["type"] == "image" for trace in chart_specs(at)["chart_weights"]["data"])


def test_the_collector_is_tuned_once_and_freezes_no_garbage():
    """After the app's imports: their objects frozen, garbage collected first, young objects collected
    every YOUNG_OBJECTS_PER_COLLECTION; a second call changes nothing (a fresh process)."""
    script = """
import gc, weakref
from app import result_cache
class Cycle: pass
garbage = Cycle(); garbage.me = garbage; gone = weakref.ref(garbage); del garbage
result_cache.tune_collector()
frozen = gc.get_freeze_count()
gc.set_threshold(700, 10, 10); result_cache.tune_collector()
print(gone() is None, frozen, gc.get_freeze_count() == frozen, gc.get_threshold()[0])
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.split()
    assert out[0] == "True"  # collected before the freeze, not frozen with the rest
    assert int(out[1]) > 50_000 and out[2] == "True"  # Streamlit's and NumPy's objects; frozen once
    assert out[3] == "700"  # the second call left the threshold alone


def test_the_page_tunes_the_collector_on_its_first_run():
    app = fresh_app()
    assert not app.exception
    assert result_cache._tuned
    assert gc.get_threshold()[0] == result_cache.YOUNG_OBJECTS_PER_COLLECTION


# --- Many heavy sessions at once, on a real server (issue 40, finding 10) ------------------------------


def rss_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (its peak) of a process, in MiB, from /proc."""
    lines = open(f"/proc/{pid}/status").read().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    return {name: int(fields[name].split()[0]) / 1024 for name in ("VmRSS", "VmHWM")}


HEAVY_SIZES = dict(tokens=768, d_model=96, heads=12)  # 7 M attention cells: a ~90 MiB result, seconds a run
HEAVY_AT_ONCE = 6
SLACK_MIB = 120  # the interpreter's, Streamlit's and the allocator's share beside the bounded parts


@pytest.mark.server
def test_many_heavy_sessions_at_once_keep_the_server_within_its_stated_bound():
    """Sessions opening heavy links at once, each another seed (the result cache never hits), on a server
    whose budget for runs in flight holds one such run: they take turns, the waiting ones say so, and
    the server's peak stays within what docs/deploy.md states: the shared caches (results, figures),
    the runs' budget, each session's inputs, and slack. Before, each session drew its own result at once
    (8 at 1,024 tokens: 3 GiB)."""
    import asyncio
    from urllib.parse import urlencode

    from app.charts.figure_cache import BUDGET_BYTES as FIGURES_BUDGET_BYTES
    from app.session.this_run import working_set_of
    from mha_core import Sizes
    from mha_core.setup import input_numbers
    from tests.live_server import streamlit_server

    n, d_model, h = HEAVY_SIZES["tokens"], HEAVY_SIZES["d_model"], HEAVY_SIZES["heads"]
    tokens = " ".join(f"w{i}" for i in range(n))
    sizes = Sizes(n_q=n, n_k=n, d_model=d_model, n_heads=h, d_k=d_model // h, d_v=d_model // h)
    budget_mib = math.ceil(1.2 * working_set_of(sizes) / MiB)  # room for one such run at a time
    inputs_mib = input_numbers(sizes) * 8 / MiB  # X and the W's each session keeps (float64)

    async def heavy(url: str, seed: int):
        session = Session(url, timeout=300)
        try:
            run = await session.open(urlencode({"seed": str(seed), "d_model": str(d_model), "heads": str(h),
                                                "tokens": tokens}))
            return run, session.said
        finally:
            await session.close()

    async def attack(url: str, pid: int):
        warm = Session(url, timeout=120)
        await warm.open()
        await warm.close()
        await asyncio.sleep(0.5)
        before = rss_mib(pid)["VmRSS"]
        pages = await asyncio.gather(*(heavy(url, 100 + i) for i in range(HEAVY_AT_ONCE)))
        return before, rss_mib(pid)["VmHWM"], pages

    with streamlit_server(env={"MHA_RUN_BUDGET_MB": str(budget_mib)}) as (url, process):
        before, peak, pages = asyncio.run(attack(url, process.pid))
    for run, _ in pages:
        assert run.status == "ok" and not run.errors and "chart_weights" in run.charts, run.errors
    waited = [said for _, said in pages if any("Waiting for the server to have" in text for text in said)]
    bound = (RESULTS.budget_bytes + FIGURES_BUDGET_BYTES) / MiB + budget_mib + HEAVY_AT_ONCE * inputs_mib
    print(f"{HEAVY_AT_ONCE} heavy sessions at once: RSS {before:.0f} -> peak {peak:.0f} MiB "
          f"(+{peak - before:.0f}); bound +{bound:.0f} + {SLACK_MIB} slack; {len(waited)} waited")
    assert peak - before <= bound + SLACK_MIB, (before, peak, bound)
    assert waited, "no session waited its turn"


# --- The server's budget for runs in flight (app/admission.py) -----------------------------------------


def test_the_byte_gate_never_holds_more_than_its_budget_and_lets_everyone_through_in_turn():
    from app.admission import ByteGate

    gate = ByteGate(100, wait_seconds=30)
    most, lock, told = [0], threading.Lock(), []

    def run(need: int):
        ticket = gate.admit(need, lambda before, waited: told.append(before))
        with lock:
            most[0] = max(most[0], gate.held)
        time.sleep(0.05)
        gate.leave(ticket)

    threads = [threading.Thread(target=run, args=(need,)) for need in (60, 60, 30, 90, 10, 60, 40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] <= 100 and gate.most_held <= 100  # never over, and the budget was used
    assert gate.most_held > 60
    assert told and all(before >= 1 for before in told)  # who waited was told how many were before it
    assert gate.held == 0 and gate.inside == 0 and gate.waiting == 0


def test_the_byte_gate_refuses_what_is_over_its_budget_at_once_and_a_long_wait_after_its_time():
    from app.admission import ByteGate, Refused

    gate = ByteGate(100, wait_seconds=0.3)
    with pytest.raises(Refused) as over:
        gate.admit(101)
    assert over.value.waited is None and over.value.need == 101 and over.value.budget == 100
    inside = gate.admit(80)
    started = time.monotonic()
    with pytest.raises(Refused) as waited:
        gate.admit(30)
    assert waited.value.waited >= 0.3 and time.monotonic() - started < 2 and waited.value.inside == 1
    assert gate.waiting == 0 and gate.held == 80  # the refused one left the line and holds nothing
    small = gate.admit(20)  # what fits still goes in
    gate.leave(small)
    gate.leave(inside)
    gate.leave(inside)  # twice: no effect
    assert gate.held == 0 and gate.inside == 0


def test_a_small_run_passes_the_line_and_a_big_one_waits_its_turn():
    from app.admission import ByteGate

    gate = ByteGate(160, wait_seconds=5)  # runs of at most 10 may pass the line
    first = gate.admit(100)
    order = []

    def later(need: int):
        ticket = gate.admit(need)
        order.append(need)
        gate.leave(ticket)

    waiting = threading.Thread(target=later, args=(70,))  # 100 + 70 > 160: waits
    waiting.start()
    time.sleep(0.1)
    assert gate.waiting == 1
    later(10)  # small, and it fits: in at once, past the one waiting
    behind = threading.Thread(target=later, args=(40,))  # fits too, but not small: behind the 70
    behind.start()
    time.sleep(0.1)
    assert order == [10] and gate.waiting == 2
    gate.leave(first)
    waiting.join(2)
    behind.join(2)
    assert order == [10, 70, 40]


def test_a_run_the_servers_budget_cannot_hold_is_refused_on_the_page_with_its_reason(monkeypatch):
    """Over the whole budget: refused at once; the budget taken by others for longer than the wait:
    refused after it. Both say why where the charts were, with no exception; the default page runs."""
    from app import admission
    from tests.apptest_util import shown

    monkeypatch.setattr(admission, "GATE", admission.ByteGate(2 * MiB, wait_seconds=1.0))
    at = fresh_app()
    assert not at.exception and "chart_weights" in chart_specs(at)  # a classroom page: well inside
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(300))).run()
    assert not at.exception and "chart_weights" not in chart_specs(at)
    refused = [e for e in shown(at.error) if "more than this server allows" in e]
    assert len(refused) == 1 and "(2 MiB, MHA_RUN_BUDGET_MB)" in refused[0], shown(at.error)

    others = admission.GATE.admit(2 * MiB - 1000)  # other sessions' runs hold the budget
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(40))).run()
    busy = [e for e in shown(at.error) if "the server is busy" in e]
    assert not at.exception and len(busy) == 1 and "this page waited 1 s for room" in busy[0], shown(at.error)
    assert not any("Waiting for the server" in note for note in shown(at.info))  # the note is gone
    admission.GATE.leave(others)
    at.run()
    assert not at.exception and not at.error and "chart_weights" in chart_specs(at)
