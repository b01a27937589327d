"""Issue 40, finding 13 (the leftovers): a widget's value sent in another field than the widget's own,
over Streamlit's own protocol (tests/st_protocol.py), as a hostile script sends it. NaN or a number sent
to a select box or a radio raised inside Streamlit's reading of the widgets (its options are looked up
as text) and the sender's page was an exception only; ``true`` sent to d_model was read as 1 (a bool is
no number). Both are refused now: the widget keeps what it held and the page says what was refused."""

from __future__ import annotations

import asyncio
import math

import pytest

from app.adapter import streamlit_door

pytestmark = pytest.mark.slow  # a real server and a dozen sessions

# (widget key, the field sent, the value, how the page quotes it)
WRONG_KIND = [("mask_kind", "double_value", math.nan, "nan"),  # a select box
              ("example_picker", "double_value", math.nan, "nan"),  # the example picker (a select box)
              ("mask_kind", "int_value", 3, "3"), ("mask_kind", "bool_value", True, "True"),
              ("mode", "double_value", math.nan, "nan"),  # a radio
              ("d_model", "bool_value", True, "True"), ("n_heads", "bool_value", False, "False"),
              ("d_model", "string_value", "12", "12")]


@pytest.mark.parametrize("expected, sent, wrong", [
    ("string_value", "double_value", True), ("string_value", "int_value", True),
    ("string_value", "string_value", False), ("string_value", None, False),
    ("double_value", "bool_value", True), ("double_value", "int_value", False),
    ("double_value", "double_value", False), ("double_value", "string_value", True),
    ("bool_value", "double_value", True), ("string_array_value", "string_value", True),
    ("json_value", "string_value", False), ("trigger_value", "bool_value", False)])
def test_a_value_in_another_field_than_the_widget_s_own_is_of_the_wrong_kind(expected, sent, wrong):
    assert streamlit_door.wrong_field(expected, sent) is wrong


def head_width_caption(said: list[str]) -> str:
    return next(text for text in reversed(said) if text.startswith("d_k = d_v = d_model / h ="))


@pytest.mark.server
def test_a_value_of_the_wrong_kind_is_refused_and_the_widget_keeps_what_it_held():
    """Failed before: mask_kind, example_picker and mode sent NaN (or a number, or true) ended the run
    in an exception; d_model sent true drew d_model = 1 (the caption said d_model / h = 0.50, refused
    by the head split) and nothing said a value was refused."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    from tests.live_server import streamlit_server
    from tests.st_protocol import Session

    async def send(url: str, key: str, field: str, value) -> tuple:
        tab = Session(url, timeout=120)
        opened = await tab.open()
        caption, before = head_width_caption(tab.said), len(tab.said)
        widget_id = tab.widget_ids[key]
        tab.widgets[widget_id] = WidgetState(id=widget_id, **{field: value})
        run = await tab.rerun()
        await tab.close()
        return opened, run, caption, tab.said[before:]

    async def every_case(url: str) -> list:
        return [(case, await send(url, *case[:3])) for case in WRONG_KIND]

    with streamlit_server() as (url, _):
        results = asyncio.run(every_case(url))
    for (key, field, _, shown_as), (opened, run, caption, said) in results:
        assert not opened.errors
        assert run.status == "ok" and not run.errors, (key, field, run.errors)  # no exception, no error
        assert "chart_weights" in run.charts  # the page is drawn
        assert head_width_caption(said) == caption, (key, field)  # the sizes are what they were
        refusals = [text for text in said if f"({shown_as}) is not one it accepts and was refused" in text]
        assert len(refusals) == 1, (key, field, refusals)  # said in the sidebar
