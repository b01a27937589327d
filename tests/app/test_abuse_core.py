"""Issue 15 on the page (findings 7 and 10): a setup over a limit from a state link, an old link or a
room's state is refused with a message saying which limit, the default example stays, and nothing of
the refused size is ever built or computed; a number a cell cannot hold is refused next to it."""

from __future__ import annotations

import base64
import json
import math
import zlib

import numpy as np
import pytest

from course.examples import DEFAULT_EXAMPLE, all_examples
from mha_core.codec import FORMAT
from tests.apptest_util import chart_specs, edit_cell, fresh_app, heatmap_values, open_address, shown

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()
DEFAULT = EXAMPLES[DEFAULT_EXAMPLE]


def over_limit_link(n: int = 1024, d_model: int = 16, h: int = 16) -> str:
    """The issue's link: h × n × n attention cells (16 × 1024² is over the 12 × 1024² limit), all zeros."""
    document = {"format": FORMAT, "tokens": ["t"] * n, "x": [[0] * d_model] * n,
                "w_q": [[[0]] * d_model] * h, "w_k": [[[0]] * d_model] * h, "w_v": [[[0]] * d_model] * h,
                "w_o": [[0] * d_model] * h}
    text = json.dumps(document, separators=(",", ":")).encode()
    return "1." + base64.urlsafe_b64encode(zlib.compress(text, 9)).decode().rstrip("=")


def opened_with_peak(params: dict[str, str]) -> tuple[object, int]:
    """A fresh session opened at this address, and the peak bytes Python allocated while it ran."""
    import tracemalloc

    fresh_app()  # imports and caches warm, outside the measurement
    tracemalloc.start()
    try:
        at = open_address(params)
        return at, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_the_default_example_is_shown(at) -> None:
    assert not at.exception
    assert at.session_state["origin"] == DEFAULT_EXAMPLE
    assert at.session_state["tokens_text"] == " ".join(DEFAULT.tokens)
    assert {name: a.shape for name, a in at.session_state["work"].items() if a is not None} == {
        name: a.shape for name, a in DEFAULT.arrays().items()}
    weights = np.stack(heatmap_values(chart_specs(at)["chart_weights"]))
    np.testing.assert_allclose(weights, DEFAULT.run().weights, atol=1e-6)


def test_a_state_link_over_the_attention_limit_is_refused_before_it_runs():
    """Finding 7: the link was decoded and run (~200 MB allocated here) before the sidebar refused it."""
    at, peak = opened_with_peak({"s": over_limit_link()})
    assert_the_default_example_is_shown(at)
    assert peak < 30_000_000, f"{peak:,} bytes allocated while opening the link"  # was 202 MB
    warnings = " ".join(shown(at.warning))
    assert "Ignored from the link: the page's state" in warnings
    assert "16 × 1024 × 1024 = 16,777,216 attention cells is over the limit of 12,582,912" in warnings
    assert "default example is shown instead" in warnings


def test_an_old_link_whose_tokens_and_heads_ask_too_much_is_refused():
    at, peak = opened_with_peak({"tokens": " ".join(["w"] * 1024), "heads": "16"})
    assert_the_default_example_is_shown(at)
    assert peak < 30_000_000
    warnings = shown(at.warning)
    assert any("tokens and heads" in w and "attention cells is over the limit" in w for w in warnings)


def test_a_rooms_state_over_the_limit_is_refused_for_a_follower(tmp_path, monkeypatch):
    """The room's state reaches a student through the same decoder as a link."""
    from app.room import live
    from tests.apptest_util import goto

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("REDIS_URL", raising=False)
    live.store.clear()
    live.watch.clear()
    try:
        teacher = fresh_app()
        goto(teacher, "class")
        teacher.button(key="live_start").click().run()
        code, secret = teacher.session_state["room"], teacher.session_state["teacher_secret"]
        live.store().set_state(code, secret, page="", step=0, setup_json=json.dumps({"s": over_limit_link()}),
                               selections={})
        student, peak = opened_with_peak({"room": code})
        assert student.session_state.get("room") == code
        assert_the_default_example_is_shown(student)
        assert peak < 30_000_000
    finally:
        live.store().close()
        live.store.clear()
        live.watch.clear()


def test_a_number_that_would_become_zero_is_refused_next_to_its_cell():
    """Finding 10: 1e-400 typed in a cell silently became 0."""
    at = fresh_app()
    edit_cell(at, "x", row=1, col=1, value="1e-400")
    assert not at.exception
    messages = [m for m in shown(at.error) if "row 2 · cat, column d2" in m]
    assert len(messages) == 1 and "1e-400 is too close to zero to be stored: it would become 0" in messages[0]
    edit_cell(at, "x", row=1, col=1, value="1e-300")  # small but a number: taken as typed
    assert not at.error and "chart_weights" in chart_specs(at)


def test_the_sidebar_boxes_refuse_too_much_attention_before_building_anything():
    import tracemalloc

    at = fresh_app()
    at.checkbox(key="custom_head_width").check().run()
    at.number_input(key="n_heads").set_value(16).run()
    tracemalloc.start()
    try:
        at.text_input(key="tokens_text").set_value(" ".join(["w"] * 1024)).run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not at.exception
    over = "16 × 1024 × 1024 = 16,777,216 attention cells is over the limit"
    assert any(over in message for message in shown(at.error))
    assert "chart_weights" not in chart_specs(at)
    assert peak < 30_000_000, f"{peak:,} bytes"


# --- Values Streamlit cannot read, over its own protocol (issue 40, finding 13) ------------------------

UNREADABLE = [("d_model", "double_value", math.nan, "nan"), ("seed", "double_value", math.inf, "inf"),
              ("seed", "double_value", -math.inf, "-inf"), ("n_heads", "double_value", math.nan, "nan"),
              ("d_model", "string_value", "x", "x"), ("d_model", "int_value", 10**18, "1000000000000000000")]


def head_width_caption(said: list[str]) -> str:
    return next(text for text in reversed(said) if text.startswith("d_k = d_v = d_model / h ="))


@pytest.mark.server
def test_a_number_box_sent_nan_or_infinity_refuses_it_next_to_the_box_and_keeps_its_value():
    """NaN sent to d_model and inf to the seed raised inside Streamlit's reading of the widgets (int(nan)):
    the sender's page was an exception only. Now the box keeps its value and says what was refused (10^18,
    which Streamlit silently read as the box's default, too); a new session whose very first message
    carries the value draws its page."""
    import asyncio

    from streamlit.proto.WidgetStates_pb2 import WidgetState

    from tests.live_server import streamlit_server
    from tests.st_protocol import Session

    async def send(url: str, key: str, field: str, value, first_message: bool) -> tuple:
        tab = Session(url, timeout=120)
        opened = await tab.open()
        caption = head_width_caption(tab.said)
        widget_id = tab.widget_ids[key]
        if first_message:  # a new tab whose first run already carries the value (the ids are the same)
            await tab.close()
            tab = Session(url, timeout=120)
        tab.widgets[widget_id] = WidgetState(id=widget_id, **{field: value})
        run = await (tab.open() if first_message else tab.rerun())
        await tab.close()
        return opened, run, caption, tab.said

    async def every_case(url: str) -> list:
        cases = [(*case, False) for case in UNREADABLE] + [(*UNREADABLE[0], True)]
        return [(case, await send(url, key, field, value, first)) for case in cases
                for key, field, value, _, first in [case]]

    with streamlit_server() as (url, _):
        results = asyncio.run(every_case(url))
    for (key, _, _, shown_as, first), (opened, run, caption, said) in results:
        assert not opened.errors
        assert run.status == "ok" and not run.errors, (key, shown_as, run.errors)  # no exception
        assert "chart_weights" in run.charts  # the page is drawn
        if first:  # Streamlit reads no value for a widget its session has not drawn yet: nothing to refuse
            continue
        refusals = [text for text in said if f"({shown_as}) is not one it accepts and was refused" in text]
        assert len(refusals) == 1, (key, shown_as, refusals)  # said next to the box
        assert head_width_caption(said) == caption  # the box kept what it held: the sizes are the same
