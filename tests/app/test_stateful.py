"""A class's worth of random use: a Hypothesis state machine driving the whole page through AppTest.

Rules do what users do (type tokens of any length, change sizes, toggle cross-attention, the mask,
biases and the scaling, edit cells with good and bad values, pick heads and queries, load examples,
save and reload, open the page's own link in a fresh session, switch pages), and a live class: the
teacher (this page) leads a room, locks and unlocks it, removes a student, asks a quiz question or a
drawn forecast, closes and reveals; students open the link in new browsers or second tabs of one
(the same mha_student secret), follow, answer or draw, and a stranger types wrong codes into the
join box (the session's and the address's limits are modelled on the machine's clock). After every
step:

* no exception element, on any tab;
* the store's tally of every question asked equals the number of distinct students whose answer
  was taken, and the CSV has one row per counted answer;
* every weights and output chart equals mha_core run on the Setup the page's *address* describes
  (decoded independently of the session), or, when an input is at fault, there is a message and
  no chart computed from stale numbers;
* inputs that were not at fault keep their values.

and, when the class polls, every follower shows the room's state and, once revealed, each student's
own answer marked right or wrong as store.is_right marks it.

``make test`` runs a bounded number of steps (STATEFUL_EXAMPLES, a few by default); ``make fuzz``
runs for FUZZ_SECONDS with a fresh seed that it prints (scripts/fuzz.py).

Deterministic, so that a seed replays every failure: each example gets a store of its own (SQLite
in a fresh directory) and a RoomWatch, both on the machine's ``Clock`` (time moves only when a rule
says so, e.g. a follower's poll), in place of the server's (``live.store``, ``live.watch``, and
``live.clock`` for the session's wrong-code limit); the process-wide caches are emptied and the
follower semaphore is new; nothing reads the wall clock; there is no example database (the seed is
the whole input); steps draw names, not elements (tabs by their index, never by a random id). Each
example notes a digest of what every step left (note_the_step): FUZZ_SAME_AS compares two runs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
import tempfile
import threading

import numpy as np
import pytest
import streamlit
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from streamlit.testing.v1 import AppTest

from app import result_cache
from app.charts import figure_cache
from app.room import door, identity, live, room_box
from app.views import model
from app.views.present import SCREENS, STEP_KEY
from classroom.sqlite_store import SqliteStore
from classroom.store import GUESS_BUCKET, HEARTBEAT_SECONDS, WRONG_CODES_PER_MINUTE, is_right
from classroom.watch import RoomWatch
from course.answers import read_shape
from course.examples import all_examples
from course.labs import SCORE_EXAMPLES
from course.quiz import generate
from course.steps import screen_position
from mha_core import LIMITS
from mha_core.codec import ConfigError, setup_from_json, setup_from_link, setup_to_json
from tests.apptest_util import (
    ENTRY,
    EXAMPLE_TITLES,
    address,
    chart_specs,
    edit_cell,
    goto,
    heatmap_values,
    pick,
    shown,
    texts,
    work,
)

SOFTMAX_SCREEN = screen_position("softmax")  # the presenter's screen of the weights

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()
MODEL_TEXTS = ("the cat sat on the mat because it was tired", "  ", "Ünïcödé, emoji 🙂 and <b>tags</b>!",
               "a " * 40)
MAX_EXAMPLES = int(os.environ.get("STATEFUL_EXAMPLES", "6"))
STEPS = int(os.environ.get("STATEFUL_STEPS", "12"))
FUZZ_DIR = os.environ.get("FUZZ_DIR")  # scripts/fuzz.py: where each example's end is noted
RUN_SECONDS = 600  # an AppTest run's timeout: on a shared machine a slow run is no failure
CLOCK_START = 1_800_000_000.0  # the machine's clock at the start of every example (epoch seconds)
MAX_TABS = 4  # students' tabs open at once (each one reruns on a poll: more only slows every step)
WRONG_CODES = ("QQQQ", "ZZ22", "abcd", "12")  # the last two cannot be codes at all (the door says the same)

WORDS = st.sampled_from(["the", "cat", "sat", "a", "dog", "ran", "<b>x</b>", "$y$", "**z**", "é", "猫", "🙂",
                         "le", "chat", "x" * LIMITS.token_chars, "x" * (LIMITS.token_chars + 1), "ca\u200bt"])
TOKENS = st.lists(WORDS, min_size=0, max_size=LIMITS.editable + 2).map(" ".join)  # long ones: test_findings
# '1,5' is 1.5 in every language since issue 40, 5 (mha_core.typed_number.read_cell); two marks are not
GOOD_VALUES = st.sampled_from(["0", "1", "-1.5", "2e-3", "0.25", "−3", "1e6", "1,5"])
BAD_VALUES = st.sampled_from(["", "abc", "1,5,0", "0x10", "inf", "1e308", "nan"])


class Clock:
    """Seconds that move only when the machine says so: the store's epoch and the watch's clock."""

    def __init__(self):
        self.now = CLOCK_START

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Guesses:
    """The store's wrong-code bucket of the machine's one client address (AppTest gives every session
    the same), kept here as classroom.sqlite_store keeps it: every join is refused while it is empty,
    a wrong code takes a token."""

    def __init__(self):
        self.tokens, self.at = None, 0.0  # None: never taken from (full)

    def left(self, now: float) -> float:
        capacity, per_second = GUESS_BUCKET
        if self.tokens is None:
            return capacity
        return min(capacity, self.tokens + max(0.0, now - self.at) * per_second)

    def empty(self, now: float) -> bool:
        return self.left(now) < 1

    def take(self, now: float) -> None:
        if not self.empty(now):
            self.tokens, self.at = self.left(now) - 1, now


class World:
    """What one example shares with the app: a store and a watch of its own on the machine's clock,
    empty process-wide caches and a new follower semaphore. close() gives the server's back."""

    def __init__(self):
        self.clock = Clock()
        self._directory = tempfile.TemporaryDirectory(prefix="mha-stateful-")
        self.store = SqliteStore(self._directory.name, clock=self.clock)
        self.watch = RoomWatch(self.store, clock=self.clock)
        self._server = live.store, live.watch, live._follower_runs, live.clock
        live.store, live.watch, live.clock = (lambda: self.store), (lambda: self.watch), self.clock
        live._follower_runs = threading.BoundedSemaphore(live.FOLLOWER_RUNS_AT_ONCE)
        empty_caches()

    def close(self) -> None:
        live.store, live.watch, live._follower_runs, live.clock = self._server
        self.store.release()
        self._directory.cleanup()


def empty_caches() -> None:
    """Every cache a session's page reads and another example may have filled. The model's weights
    stay loaded (read-only, and seconds to load), as do the examples (frozen)."""
    streamlit.cache_data.clear()  # the labs' curves, a revealed question's tally
    model.TRACES.clear()
    figure_cache.clear()
    result_cache.RESULTS.clear()


def open_tab(params: dict[str, str] | None = None) -> AppTest:
    """A new browser tab, at an address if given."""
    tab = AppTest.from_file(str(ENTRY), default_timeout=RUN_SECONDS)
    for name, value in (params or {}).items():
        tab.query_params[name] = value
    tab.run()
    return tab


def note_example(failure: BaseException | None, trace: list[str]) -> None:
    """Tell scripts/fuzz.py that an example ended, and how if it failed (Hypothesis then shrinks it
    before it reports: that can take minutes), with a digest of what it saw after every step (two
    runs of one seed must note the same digests: scripts/fuzz.py compares them)."""
    if not FUZZ_DIR:
        return
    ours = isinstance(failure, Exception) and not type(failure).__module__.startswith("hypothesis")
    digest = hashlib.sha256("\n".join(trace).encode()).hexdigest()[:16]
    with open(os.path.join(FUZZ_DIR, "examples.txt"), "a", encoding="utf-8") as out:
        out.write(f"{'failed' if ours else 'ok'} {len(trace)} {digest}\n")
    if ours:  # not Hypothesis's own signals (an overrun, an assumption)
        with open(os.path.join(FUZZ_DIR, "failures.txt"), "a", encoding="utf-8") as out:
            out.write(f"{type(failure).__name__}: {str(failure)[:2000]}\n")


def shown_page(at) -> tuple[dict[str, str], object]:
    """What a page's address says it shows: its parameters as written (the room's code aside) and
    the setup its state decodes to (two encodings of one setup may differ)."""
    params = {name: value for name, value in address(at).items() if name not in ("room", "s")}
    return params, decoded_setup(at)


def same_page(mine, theirs) -> bool:
    (my_params, my_setup), (their_params, their_setup) = mine, theirs
    if my_params != their_params or (my_setup is None) != (their_setup is None):
        return False
    return my_setup is None or my_setup.same_inputs(their_setup)


def decoded_setup(at):
    """The Setup the page's address describes, decoded here without the session."""
    params = address(at)
    if "s" in params:
        return setup_from_link(params["s"], EXAMPLES)
    selections = {"head", "query", "drill", "step", "quiz", "room"}  # a room's code says nothing of the setup
    if set(params) - selections == {"example"} and params["example"] in EXAMPLES:
        return EXAMPLES[params["example"]]
    return None  # e.g. the legacy link a test opened, before the page wrote its own address


def readable_wrong(question) -> str | None:
    """A wrong answer the quiz can read (junk is refused without counting)."""
    if question.choices:
        return next((c for c in question.choices if not question.check(c)), None)
    if question.kind == "shape":
        rows, cols = read_shape(question.answer)
        return f"{rows + 1} × {cols}"
    if question.kind == "parameters":
        return str(int(question.answer) + 1)
    return repr(float(question.answer) + 10 * question.tolerance + 0.1)


class Workbench(RuleBasedStateMachine):
    @initialize()
    def open_page(self):
        self.world = World()
        self.at = open_tab()
        self.tabs: list[AppTest] = []  # students' tabs that went through the door (some may have left)
        self.stranger = None  # a tab on the Class page, not in the room, typing codes into the join box
        self.wrong_codes: list[float] = []  # when the stranger's tab typed a wrong code (the machine's clock)
        self.guesses = Guesses()
        self.locked = False
        self.removed: set[str] = set()  # student ids the teacher removed
        self.senders: dict[str, set[str]] = {}  # question id -> the students whose answer was counted
        self.asked: list[str] = []  # question ids, in the order the room was asked them
        self.trace: list[str] = []  # what every step left (note_the_step): the example's fingerprint

    def teardown(self):
        failure = sys.exc_info()[1]  # teardown runs in Hypothesis's finally: a step's exception, if any
        note_example(failure, getattr(self, "trace", []))
        if hasattr(self, "world"):
            self.world.close()

    def a_moment_later(self) -> None:
        """Time for a follower's poll: the server's watch reads the room again."""
        self.world.clock.advance(room_box.POLL_SECONDS)

    # --- what users do -----------------------------------------------------------------------

    @rule(text=TOKENS)
    def type_tokens(self, text):
        self.at.text_input(key="tokens_text").set_value(text).run()

    @rule(d_model=st.integers(1, 12))
    def set_d_model(self, d_model):
        self.at.number_input(key="d_model").set_value(d_model).run()

    @rule(h=st.integers(1, 6))
    def set_heads(self, h):
        self.at.number_input(key="n_heads").set_value(h).run()

    @rule(custom=st.booleans(), d_k=st.integers(1, 6), d_v=st.integers(1, 6))
    def set_head_width(self, custom, d_k, d_v):
        box = self.at.checkbox(key="custom_head_width")
        (box.check() if custom else box.uncheck()).run()
        if custom:
            self.at.number_input(key="d_k").set_value(d_k).run()
            self.at.number_input(key="d_v").set_value(d_v).run()

    @rule(cross=st.booleans(), text=TOKENS)
    def toggle_cross(self, cross, text):
        self.at.radio(key="mode").set_value("cross-attention" if cross else "self-attention").run()
        if cross:
            self.at.text_input(key="kv_tokens_text").set_value(text).run()

    @rule(kind=st.sampled_from(["none", "causal", "window", "custom"]), window=st.integers(1, 4))
    def set_mask(self, kind, window):
        self.at.selectbox(key="mask_kind").set_value(kind).run()
        if kind == "window":
            self.at.number_input(key="window_size").set_value(window).run()

    @rule(data=st.data())
    def set_key_value_heads(self, data):
        """Grouped-query attention: any g the page offers (the divisors of h)."""
        box = self.at.sidebar.selectbox(key="kv_heads")
        offered = [int(label.split()[0]) for label in box.options]  # "2 (grouped: …)" -> 2
        box.set_value(data.draw(st.sampled_from(offered))).run()

    @rule(on=st.booleans())
    def toggle_bias(self, on):
        box = self.at.checkbox(key="use_bias")
        (box.check() if on else box.uncheck()).run()

    @rule(kind=st.sampled_from(["sqrt", "none", "sqrt_of", "multiply"]), value=st.integers(1, 100))
    def set_scaling(self, kind, value):
        self.at.selectbox(key="scale_kind").set_value(kind).run()
        if kind == "sqrt_of":
            self.at.number_input(key="scale_sqrt_of").set_value(value).run()
        elif kind == "multiply":
            self.at.number_input(key="scale_multiplier").set_value(value / 10).run()

    @precondition(lambda self: not self.at.sidebar.error)  # the grids are drawn only for valid sizes
    @rule(data=st.data(), good=st.booleans())
    def edit_a_cell(self, data, good):
        names = [n for n in ("x", "w_o") if self.at.session_state["work"].get(n) is not None]
        name = data.draw(st.sampled_from(names))
        grid = work(self.at, name)
        if max(grid.shape) > LIMITS.editable:
            return
        row, col = data.draw(st.integers(0, grid.shape[0] - 1)), data.draw(st.integers(0, grid.shape[1] - 1))
        value = data.draw(GOOD_VALUES if good else BAD_VALUES)
        others = {n: a.copy() for n, a in self.at.session_state["work"].items()
                  if a is not None and n != name}
        had_bad_cell = any("column" in m for m in texts(self.at.error))
        edit_cell(self.at, name, row, col, value)
        for other, before in others.items():  # inputs not at fault keep their values
            now = self.at.session_state["work"].get(other)
            if now is not None and now.shape == before.shape:
                np.testing.assert_array_equal(now, before, err_msg=other)
        if not good:
            assert any("column" in m for m in texts(self.at.error)), texts(self.at.error)
        elif not had_bad_cell:
            assert not any("column" in m for m in texts(self.at.error)), texts(self.at.error)

    @rule(data=st.data())
    def pick_a_selection(self, data):
        """Any head, query or cell selection on the page, chosen by its label as a browser does."""
        present = {w.key: list(w.options) for w in [*self.at.get("selectbox"), *self.at.get("button_group")]
                   if str(w.key).startswith("pick_") and w.options}
        if present:  # names are drawn, not elements: a failing example's steps print them
            key = data.draw(st.sampled_from(sorted(present)))
            pick(self.at, key.removeprefix("pick_"), data.draw(st.sampled_from(present[key])))

    @rule(on=st.booleans())
    def toggle_drill_down(self, on):
        if any(toggle.key == "drill_open" for toggle in self.at.toggle):  # drawn while the page computes
            self.at.toggle(key="drill_open").set_value(on).run()

    @rule(key=st.sampled_from(sorted(EXAMPLE_TITLES)))
    def load_example(self, key):
        if key in ("ex_h_cross_attention", "ex_i_parameter_count"):
            return  # the 512-wide examples are tested on their own; here they only slow every step
        self.at.selectbox(key="example_picker").set_value(EXAMPLE_TITLES[key]).run()

    @rule()
    def save_and_reload(self):
        setup = decoded_setup(self.at)
        if setup is None or self.at.error:
            return
        again = setup_from_json(setup_to_json(setup))
        assert again.same_inputs(setup)

    @rule()
    def open_the_address_in_a_fresh_session(self):
        """The address is the state: a new tab at it shows the same page (a room's code in it makes
        the tab a student following the room, which shows the same)."""
        if self.at.error or not chart_specs(self.at):
            return
        self.a_moment_later()
        fresh = open_tab(address(self.at))
        assert not fresh.exception, [e.value for e in fresh.exception]
        mine, theirs = chart_specs(self.at), chart_specs(fresh)
        for key in ("chart_weights", "chart_output"):
            assert json.dumps(mine.get(key)) == json.dumps(theirs.get(key)), key
        assert same_page(shown_page(fresh), shown_page(self.at)), (shown_page(fresh)[0],
                                                                   shown_page(self.at)[0])

    @rule(page=st.sampled_from(["examples", "workbench"]))
    def switch_page(self, page):
        goto(self.at, page)
        if page == "examples":
            goto(self.at, "workbench")

    # --- the lesson's pages (issue 8): each returns to the workbench, which the invariants read ---

    @rule(moves=st.lists(st.sampled_from([1, 1, -1]), max_size=len(SCREENS) + 2), reveal=st.booleans())
    def present(self, moves, reveal):
        """Walk the presenter; whatever it draws is the address's setup run by the core."""
        goto(self.at, "present")
        for move in moves:
            name = "present_next" if move > 0 else "present_back"
            if any(b.key == name and not b.disabled for b in self.at.button):
                self.at.button(key=name).click().run()
            assert not self.at.exception
            if reveal and any(b.key == "present_reveal" for b in self.at.button):
                self.at.button(key="present_reveal").click().run()
        specs, setup = chart_specs(self.at), decoded_setup(self.at)
        if "present_weights" in specs and setup is not None:
            head = self.at.session_state["selections"]["shown_head"]
            result = setup.run()
            allowed = result.mask if result.mask is not None else True
            np.testing.assert_allclose(heatmap_values(specs["present_weights"])[0],
                                       np.where(allowed, result.weights[head], np.nan), atol=1e-6)
        goto(self.at, "workbench")

    @rule(right=st.booleans())
    def answer_a_quiz_question(self, right):
        goto(self.at, "quiz")
        setup, ss = decoded_setup(self.at), self.at.session_state
        if setup is None or "quiz_round" not in ss:  # an input at fault: the page says what to fix
            goto(self.at, "workbench")
            return
        index, seed = ss["quiz_index"], ss["selections"]["quiz_seed"]
        questions = generate(setup, setup.run(), seed, count=max(10, index + 1))
        question = questions[index % len(questions)]
        given = question.answer_text if right else readable_wrong(question)
        ident = f"{ss['quiz_round']}_{index}"
        before = ss.get("quiz_right", 0), ss.get("quiz_asked", 0)
        asked = any(b.key == f"quiz_check_{ident}" for b in self.at.button)
        if given is None or ident in ss["quiz_given"] or not asked:
            goto(self.at, "workbench")
            return
        key = f"quiz_answer_{ident}"
        if question.choices:
            widget = next((w for w in self.at.radio if w.key == key), None) or self.at.selectbox(key=key)
            widget.set_value(given)
        else:
            self.at.text_input(key=key).input(given)
        self.at.button(key=f"quiz_check_{ident}").click().run()
        assert not self.at.exception
        after = self.at.session_state["quiz_right"], self.at.session_state["quiz_asked"]
        assert after == (before[0] + right, before[1] + 1), (question.prompt, given)
        self.at.button(key="quiz_next").click().run()
        goto(self.at, "workbench")

    @rule(key=st.sampled_from(sorted(SCORE_EXAMPLES)))
    def try_the_score_lab(self, key):
        goto(self.at, "labs")
        self.at.button(key=f"lab_load_{key}").click().run()
        assert not self.at.exception
        goto(self.at, "workbench")

    def open_model_tab(self, label: str) -> None:
        """Click one of the Real model page's tabs (app/views/model.py: only the open one runs)."""
        self.at.session_state["model_tab"] = label
        self.at.run()

    @rule(text=st.sampled_from(MODEL_TEXTS), layer=st.integers(0, 5), zero=st.booleans())
    def use_the_real_model(self, text, layer, zero):
        """Type a text, pick a layer, maybe zero a head: the page draws the model's own weights."""
        goto(self.at, "model")
        if not any(area.key == "model_text" for area in self.at.text_area):
            goto(self.at, "workbench")  # the model package is missing: the page says how to install it
            return
        self.at.text_area(key="model_text").set_value(text).run()
        if any(group.key == "pick_model_layer" for group in self.at.button_group):  # drawn for a valid text
            self.at.button_group(key="pick_model_layer").set_value(f"layer {layer + 1}").run()
        if zero:  # on its own tab (only the open tab's content runs)
            self.open_model_tab("Change a head")
            if any(m.key == "model_zero" for m in self.at.multiselect):
                self.at.multiselect(key="model_zero").set_value([(layer, 0)]).run()
        self.open_model_tab("One layer's heads")
        assert not self.at.exception
        specs = chart_specs(self.at)
        if text.strip():
            from mha_core.pretrained import load_minilm
            expected = load_minilm().trace(text).attentions[layer].weights
            np.testing.assert_allclose(np.stack(heatmap_values(specs["model_weights"])), expected, atol=1e-5)
        else:
            assert "model_weights" not in specs and self.at.error
        goto(self.at, "workbench")

    # --- the live class: one teacher (this page), students in tabs of their own ------------------

    @rule()
    def lead_a_room(self):
        """Start a room (or keep the one started): what the room holds is this page's address state."""
        if "room" not in self.at.session_state:
            goto(self.at, "class")
            self.at.button(key="live_start").click().run()
            goto(self.at, "workbench")
        assert not self.at.exception
        if self.at.error or "published" not in self.at.session_state:
            return  # an input at fault: the room keeps the last good state
        room = live.store().state(self.at.session_state["room"])
        sent = json.loads(room.setup_json)
        mine = {name: value for name, value in address(self.at).items() if name in sent}
        assert sent == mine, (sent, mine)

    def room(self) -> tuple[str, str] | None:
        """The teacher's room (code, secret) once it holds the teacher's page."""
        ss = self.at.session_state
        if "room" not in ss or "published" not in ss:
            return None
        return ss["room"], ss["teacher_secret"]

    def in_room(self) -> list[AppTest]:
        return [tab for tab in self.tabs if "room" in tab.session_state]

    def open_student_tab(self, secret: str | None = None) -> AppTest | None:
        """A tab on the room's link (a new browser, or another tab of the browser holding secret, as
        its mha_student cookie makes it): the door lets it in, or says why not next to nothing else."""
        code, teacher_secret = self.room()
        self.a_moment_later()
        tab = AppTest.from_file(str(ENTRY), default_timeout=RUN_SECONDS)
        if secret is not None:  # what student_secret() reads from the cookie (AppTest sends none)
            tab.session_state["student_secret"] = secret
        tab.query_params["room"] = code
        tab.run()
        assert not tab.exception, [e.value for e in tab.exception]
        said = " ".join(shown(tab.sidebar.warning))
        ident = identity.student_id_of(secret) if secret is not None else None
        members = {s.id for s in live.store().roster(code, teacher_secret) if not s.removed}
        event("a tab opens the link: " + ("address refused" if self.guesses.empty(self.world.clock()) else
                                          "removed" if ident in self.removed else
                                          "locked" if self.locked and ident not in members else "in"))
        if self.guesses.empty(self.world.clock()):  # the address's wrong codes: every code refused
            assert "room" not in tab.session_state and "Too many room codes tried" in said, said
        elif ident in self.removed:
            assert "room" not in tab.session_state and "removed you" in said, said
        elif self.locked and ident not in members:
            assert "room" not in tab.session_state and "The room is locked" in said, said
        else:
            assert tab.session_state.get("room") == code, said
            assert tab.session_state["student_id"] in {
                s.id for s in live.store().roster(code, teacher_secret) if not s.removed}
            self.tabs.append(tab)
            return tab
        return None

    def assert_follows(self, student: AppTest) -> None:
        """A following student shows the teacher's page (the same address, weights and page) when
        the room holds what the teacher's page shows."""
        code, _ = self.room()
        sent = json.loads(live.store().state(code).setup_json)
        shown_here = {name: value for name, value in address(self.at).items() if name in sent}
        if student.session_state.get("following") and not self.at.error and sent == shown_here:
            assert same_page(shown_page(student), shown_page(self.at)), (shown_page(student)[0],
                                                                         shown_page(self.at)[0])
            assert student.session_state["last_page"] == self.at.session_state["last_page"]
            mine, theirs = chart_specs(student), chart_specs(self.at)
            if "chart_weights" in mine and "chart_weights" in theirs:
                assert np.array_equal(np.stack(heatmap_values(mine["chart_weights"])),
                                      np.stack(heatmap_values(theirs["chart_weights"])), equal_nan=True)

    def assert_marked(self, student: AppTest) -> None:
        """Once the room's question is revealed, a student sees their own answer marked right or
        wrong as store.is_right marks it (a forecast: next to the real softmax)."""
        code, _ = self.room()
        question = live.store().state(code).question
        if question is None or question.id not in self.senders:
            return
        tally = live.store().tally(code, question.id)
        if tally.status != "revealed":
            return
        mine = live.store().my_answer(code, question.id, student.session_state["student_id"])
        said = " ".join(shown(student.info) + shown(student.success) + shown(student.error)
                        + shown(student.markdown))
        event(f"revealed to a student: {question.kind}, {'answered' if mine else 'not answered'}")
        if mine is None:
            assert "You did not" in said, said
        elif question.kind == "forecast":
            assert "Your forecast is" in said, said
        elif is_right(tally.question, mine.value):
            assert any(text.endswith("right.") for text in shown(student.success)), said
        else:
            assert any(": wrong." in text for text in shown(student.error)), said

    @rule(explore=st.booleans())
    def a_student_follows_the_room(self, explore):
        """A student on the room's link shows the teacher's page after a poll (the same address,
        weights and page); exploring keeps it, and the room never takes the student's changes."""
        self.lead_a_room()
        if self.room() is None:
            return
        code, _ = self.room()
        students = self.in_room()
        if not students:
            if len(self.tabs) < MAX_TABS:
                self.open_student_tab()  # joins through the door (store.join), as a browser does
            return
        student = students[0]
        self.a_moment_later()
        student.run()  # what the poll's rerun does
        assert not student.exception, [e.value for e in student.exception]
        if "room" not in student.session_state:
            return  # removed: the_teacher_removes_a_student checks what its page says
        self.assert_follows(student)
        if explore:
            version = live.store().version(code)
            key = "live_explore" if student.session_state["following"] else "live_follow"
            student.button(key=key).click().run()
            assert not student.exception
            assert live.store().version(code) == version  # a student never changes the room

    # --- the door: new students, second tabs, locking, removing, wrong codes (issue 15) ---------

    @precondition(lambda self: self.room() is not None and len(self.tabs) < MAX_TABS)
    @rule()
    def a_new_student_opens_the_link(self):
        self.open_student_tab()

    @precondition(lambda self: self.room() is not None and self.tabs and len(self.tabs) < MAX_TABS)
    @rule(data=st.data())
    def a_second_tab_of_the_same_browser(self, data):
        """The same mha_student cookie: the same student (let in even when locked, not when removed)."""
        first = self.tabs[data.draw(st.integers(0, len(self.tabs) - 1))]
        self.open_student_tab(first.session_state["student_secret"])

    @precondition(lambda self: self.room() is not None)
    @rule(locked=st.booleans())
    def the_teacher_locks_the_room(self, locked):
        code, _ = self.room()
        goto(self.at, "class")
        button = self.at.button(key="live_lock")
        if button.label == ("Lock the room" if locked else "Unlock the room"):
            button.click().run()
        assert not self.at.exception
        assert live.store().state(code).locked == locked
        self.locked = locked
        goto(self.at, "workbench")

    @precondition(lambda self: self.room() is not None and self.tabs)
    @rule(data=st.data())
    def the_teacher_removes_a_student(self, data):
        """Remove (after its confirmation): every tab of that student says so and stops following;
        the student cannot come back."""
        code, secret = self.room()
        ident = self.tabs[data.draw(st.integers(0, len(self.tabs) - 1))].session_state["student_id"]
        if ident in self.removed:
            return
        goto(self.at, "class")
        self.at.button(key=f"live_remove_{ident}").click().run()
        self.at.button(key=f"live_remove_yes_{ident}").click().run()
        assert not self.at.exception
        self.removed.add(ident)
        event("a student removed")
        assert {s.id for s in live.store().roster(code, secret) if s.removed} == self.removed
        goto(self.at, "workbench")
        theirs = [tab for tab in self.in_room() if tab.session_state["student_id"] == ident]
        for tab in theirs:  # a heartbeat written after the removal reports it; the page rejoins, is refused
            if not tab.session_state.get("following"):  # exploring: no poll until they follow again
                tab.button(key="live_follow").click().run()  # may itself be the run that meets the removal
                assert not tab.exception, [e.value for e in tab.exception]
            for _ in range(3):
                if "room" not in tab.session_state:
                    break  # told already: a page out of the room does not run again by itself
                self.world.clock.advance(HEARTBEAT_SECONDS)
                tab.run()  # the poll's next tick
                assert not tab.exception, [e.value for e in tab.exception]
            assert "room" not in tab.session_state and not tab.session_state.get("following")
            said = " ".join(shown(tab.sidebar.warning))
            assert "Your teacher removed you from this room." in said or (
                "Too many room codes tried" in said and self.guesses.empty(self.world.clock())), said

    def stranger_types(self, code: str) -> str:
        """The stranger's tab types code into the Class page's join box; what the box then says."""
        if self.stranger is None:
            self.stranger = open_tab()
            goto(self.stranger, "class")
            self.stranger._page_hash = ""  # AppTest: later runs stay on the page the last one ended on,
            # as a browser does once the room switches its page (else each run asks for Class again,
            # the room switches it away, and that rerun drops a click: a student's Send was lost)
        self.stranger.text_input(key="live_join_code").input(code)
        next(b for b in self.stranger.button if b.label == "Join").click().run()
        assert not self.stranger.exception, [e.value for e in self.stranger.exception]
        return " ".join(shown(self.stranger.warning))

    def guessing_refused(self) -> bool:
        """This tab tried WRONG_CODES_PER_MINUTE wrong codes within the last minute."""
        now = self.world.clock()
        return sum(now - t < door.WRONG_CODES_WINDOW for t in self.wrong_codes) >= WRONG_CODES_PER_MINUTE

    @precondition(lambda self: self.room() is not None)
    @rule(times=st.integers(1, 6), then_the_right_one=st.booleans())
    def a_wrong_code_in_the_join_box(self, times, then_the_right_one):
        """A wrong code gets a message and changes nothing else; after WRONG_CODES_PER_MINUTE in a
        minute every code is refused, the right one too, until the clock moves on."""
        code, secret = self.room()
        before = live.store().version(code), live.store().roster(code, secret)
        for attempt in range(times):
            wrong = next(c for c in WRONG_CODES[attempt % 2:] if c.upper() != code)
            refused = self.guessing_refused() or self.guesses.empty(self.world.clock())
            said = self.stranger_types(wrong)
            event(f"a wrong code: {'refused' if refused else 'no room'}")
            if refused:
                assert "Too many room codes tried" in said, said
            else:
                assert "There is no room" in said, said
                self.wrong_codes.append(self.world.clock())
                self.guesses.take(self.world.clock())
            assert "room" not in self.stranger.session_state
        assert (live.store().version(code), live.store().roster(code, secret)) == before
        if not then_the_right_one or len(self.tabs) >= MAX_TABS:
            return
        refused = self.guessing_refused() or self.guesses.empty(self.world.clock())
        said = self.stranger_types(code.lower() if len(self.wrong_codes) % 2 else code)
        if refused:
            assert "Too many room codes tried" in said and "room" not in self.stranger.session_state, said
        elif self.locked:
            assert "The room is locked" in said and "room" not in self.stranger.session_state, said
        else:
            assert self.stranger.session_state.get("room") == code, said
            self.tabs.append(self.stranger)
            self.stranger, self.wrong_codes = None, []

    @rule(seconds=st.sampled_from([5.0, 30.0, 61.0]))
    def time_passes(self, seconds):
        """The clock moves on; the teacher's page (open all along) says so to the store."""
        self.world.clock.advance(seconds)
        self.at.run()

    # --- asking the room: a quiz question or a drawn forecast, answers, close, reveal ------------

    @rule(forecast=st.booleans())
    def the_teacher_asks_the_room(self, forecast):
        """A quiz question from the Quiz page, or a forecast drawn on the presenter's softmax screen
        (a page with an input at fault asks nothing: the teacher loads an example first). A room and a
        student come first if there are none yet, so that a run of 30 steps reaches the answers."""
        if self.at.error:
            self.load_example("the_cat_sat_two_heads")
        self.lead_a_room()
        if self.room() is None:
            return
        if not self.in_room() and len(self.tabs) < MAX_TABS:
            self.open_student_tab()
        before = (self.at.session_state.get("asked") or (None,))[0]
        if forecast:
            goto(self.at, "present")
            for _ in range(len(SCREENS)):
                step = self.at.session_state["selections"].get(STEP_KEY, 0)
                name = "present_next" if step < SOFTMAX_SCREEN else "present_back"
                movable = any(b.key == name and not b.disabled for b in self.at.button)
                if step == SOFTMAX_SCREEN or not movable:
                    break
                self.at.button(key=name).click().run()
            key = "present_draw"
        else:
            goto(self.at, "quiz")
            key = "quiz_ask"
        there = any(b.key == key for b in self.at.button)
        event(f"asking: {'the button is there' if there else 'no button'}")
        if there:
            self.at.button(key=key).click().run()
        assert not self.at.exception, [e.value for e in self.at.exception]
        asked = (self.at.session_state.get("asked") or (None,))[0]
        if asked is not None and asked != before:
            code, _ = self.room()
            assert live.store().state(code).question.id == asked
            self.asked.append(asked)
            event(f"asked: {'a forecast' if forecast else 'a quiz question'}")
            self.senders[asked] = set()
        goto(self.at, "workbench")

    @precondition(lambda self: self.room() is not None and self.asked)
    @rule(step=st.sampled_from(["close", "reveal"]))
    def the_teacher_closes_or_reveals(self, step):
        code, _ = self.room()
        goto(self.at, "class")
        if any(b.key == f"live_{step}" for b in self.at.button):
            self.at.button(key=f"live_{step}").click().run()
            assert not self.at.exception, [e.value for e in self.at.exception]
            status = live.store().tally(code, self.at.session_state["asked"][0]).status
            assert status == ("closed" if step == "close" else "revealed"), status
        goto(self.at, "workbench")

    def fill_the_answer(self, tab: AppTest, question_id: str, data, right: bool) -> str | None:
        """Fill the tab's form for question_id; the Send button's key, or None if it shows none."""
        keys = {b.key for b in tab.button}
        form_send = f"FormSubmitter:live_answer_{question_id}-Send"
        if form_send in keys:
            asked = self.at.session_state.get("asked")
            question = asked[1] if asked and asked[0] == question_id else None
            choices = next((r.options for r in tab.radio if r.key == "live_value"), None)
            if choices:
                tab.radio(key="live_value").set_value(data.draw(st.sampled_from(list(choices))))
            else:
                given = question and (question.answer_text if right else readable_wrong(question))
                tab.text_input(key="live_value").input(given or "12")
            return form_send
        if f"forecast_send_{question_id}" not in keys:
            return None
        chips = np.array(tab.session_state[f"forecast_chips_{question_id}"])  # [rows, cols]
        rows, cols = chips.shape  # the form's own grid: the room may have asked another question since
        for row in range(rows):
            if rows > 1:
                tab.selectbox(key=f"forecast_row_{question_id}").set_value(row).run()
            for col in data.draw(st.lists(st.integers(0, cols - 1), min_size=1, max_size=2)):
                chip = f"chip_add_{question_id}_{row}_{col}"
                if any(b.key == chip and not b.disabled for b in tab.button):
                    tab.button(key=chip).click().run()
            assert not tab.exception, [e.value for e in tab.exception]
        if f"forecast_send_{question_id}" not in {b.key for b in tab.button}:
            return None  # a tap's run found this student's answer in (sent from another tab): no form
        return f"forecast_send_{question_id}"

    @rule(data=st.data(), right=st.booleans(), fresh=st.booleans())
    def a_student_answers(self, data, right, fresh):
        """A student answers what their page shows (fresh: after a poll; else the form as drawn, which
        the teacher may have closed since). Counted once per student, whatever the tab; refused with a
        message once closed. The teacher asks first when nothing was asked yet."""
        if self.room() is None or not self.asked or not self.in_room():
            self.the_teacher_asks_the_room(data.draw(st.booleans()))
        if self.room() is None or not self.asked or not self.in_room():
            return
        code, _ = self.room()
        students = self.in_room()
        tab = students[data.draw(st.integers(0, len(students) - 1))]
        if fresh:
            self.a_moment_later()
            tab.run()
        forms = [b.key for b in tab.button if str(b.key).startswith(("FormSubmitter:live_answer_",
                                                                     "forecast_send_"))]
        if not forms or "room" not in tab.session_state:
            return
        question_id = forms[0].removeprefix("FormSubmitter:live_answer_").removesuffix("-Send").removeprefix(
            "forecast_send_")
        send = self.fill_the_answer(tab, question_id, data, right)
        if send is None:
            return
        ident = tab.session_state["student_id"]
        room = live.store().state(code)
        before = live.store().tally(code, question_id)
        current = room.question is not None and room.question.id == question_id
        senders = self.senders.setdefault(question_id, set())
        expected = current and before.status == "open" and ident not in self.removed and ident not in senders
        tab.button(key=send).click().run()
        assert not tab.exception, [e.value for e in tab.exception]
        after = live.store().tally(code, question_id)
        said = " ".join(shown(tab.info) + shown(tab.warning) + shown(tab.sidebar.warning))
        event(f"an answer sent: {'counted' if after.total > before.total else before.status}"
              f"{'' if current else ', an older question'}")
        if after.total == before.total + 1:
            assert ident not in senders, "a student counted twice"
            senders.add(ident)
            assert "Your answer is in" in said, said
        else:
            assert after.total == before.total, (before.total, after.total)
            assert not (expected and fresh), f"an answer the room should take was lost: {said}"
            if current and before.status == "closed":
                assert "closed" in said, f"refused without a word: {said}"

    @precondition(lambda self: self.room() is not None and self.in_room())
    @rule()
    def the_class_polls(self):
        """Every student's page a poll later: no exception, a follower shows the room's state, and a
        revealed question marks each student's own answer."""
        self.a_moment_later()
        for tab in self.in_room():
            tab.run()
            assert not tab.exception, [e.value for e in tab.exception]
            if "room" in tab.session_state:
                self.assert_follows(tab)
                self.assert_marked(tab)

    @rule()
    def pin_or_unpin(self):
        for key in ("compare_pin", "compare_unpin"):
            if any(b.key == key for b in self.at.button):
                self.at.button(key=key).click().run()
                return

    # --- after every step ---------------------------------------------------------------------

    @invariant()
    def note_the_step(self):
        """What this step left, without the random parts (room code, secrets, student and question
        ids): the clock, the teacher's address and page, the room's version, lock and tallies, the
        tabs; the same seed must leave the same notes."""
        params = {name: value for name, value in address(self.at).items() if name not in ("room", "teacher")}
        room = self.room()
        version = live.store().version(room[0]) if room else None
        totals = [live.store().tally(room[0], q).total for q in self.asked] if room else []
        self.trace.append(json.dumps([self.world.clock(), params, self.at.session_state["last_page"], version,
                                      self.locked, totals, len(self.tabs), len(self.in_room()),
                                      len(self.removed), len(self.wrong_codes)], sort_keys=True))

    @invariant()
    def no_exception(self):
        for tab in [self.at, *self.tabs, *([self.stranger] if self.stranger is not None else [])]:
            assert not tab.exception, [e.value for e in tab.exception]

    @invariant()
    def tallies_count_each_student_once_and_the_csv_has_their_rows(self):
        """The store's tally of every question asked is the number of distinct students who sent
        an answer that was taken; the CSV has one row per counted answer."""
        if not self.asked or self.room() is None:
            return
        code, secret = self.room()
        rows = list(csv.reader(io.StringIO(live.store().answers_csv(code, secret))))[1:]
        for number, question_id in enumerate(self.asked, start=1):
            total = live.store().tally(code, question_id).total
            assert total == len(self.senders[question_id]), (question_id, total, self.senders[question_id])
            assert sum(row[0] == str(number) for row in rows) == total, (number, rows)

    @invariant()
    def the_charts_are_the_address_setup_run_by_the_core(self):
        specs = chart_specs(self.at)
        if "chart_weights" not in specs:
            assert self.at.error or self.at.warning, "no weights and no message saying why"
            return
        try:
            setup = decoded_setup(self.at)
        except ConfigError as error:
            raise AssertionError(f"the page's own address does not decode: {error}") from None
        if setup is None:
            return
        result = setup.run()
        np.testing.assert_allclose(np.stack(heatmap_values(specs["chart_weights"])), np.where(
            result.mask if result.mask is not None else True, result.weights, np.nan), atol=1e-6)
        drawn_output = heatmap_values(specs["chart_output"])[1]
        np.testing.assert_allclose(drawn_output, result.output, rtol=1e-5, atol=1e-5)
        if "compare_weights_A" in specs:  # A is the pinned setup, B the page
            pinned = self.at.session_state["pinned"].run()
            allowed = pinned.mask if pinned.mask is not None else True
            np.testing.assert_allclose(np.stack(heatmap_values(specs["compare_weights_A"])),
                                       np.where(allowed, pinned.weights, np.nan), atol=1e-6)
            np.testing.assert_allclose(np.stack(heatmap_values(specs["compare_weights_B"])),
                                       np.stack(heatmap_values(specs["chart_weights"])), atol=1e-12)


NO_SHRINK = bool(os.environ.get("STATEFUL_NO_SHRINK"))  # report a failure as first met (quicker, longer)
Workbench.TestCase.settings = settings(max_examples=MAX_EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                       database=None, print_blob=True, report_multiple_bugs=False,
                                       suppress_health_check=list(HealthCheck),
                                       phases=[Phase.explicit, Phase.reuse, Phase.generate] if NO_SHRINK
                                       else list(Phase))
TestWorkbench = Workbench.TestCase


# --- a step sequence the machine got wrong, replayed on its own --------------------------------------


@settings(max_examples=1, database=None, deadline=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_student_removed_while_exploring_is_told_by_the_run_that_follows_again(data):
    """make fuzz seed 3528112739: a student explored, 61 s passed, the teacher removed them. Pressing
    Follow again is itself the run that meets the removal (the watch's heartbeat was due), and it says
    so; the machine then ran the tab once more, which no browser does by itself (Chromium keeps the
    message: a real server, checked), and the one-run message was gone."""
    machine = Workbench()
    machine.open_page()
    try:
        machine.lead_a_room()
        student = machine.open_student_tab()
        student.button(key="live_explore").click().run()
        machine.time_passes(61.0)
        machine.the_teacher_removes_a_student(data)  # its own assertions: left, and told why
        assert "room" not in student.session_state
    finally:
        machine.teardown()
