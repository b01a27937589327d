"""Helpers to read what an AppTest run drew."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from app.grids.editors import editor_key
from course.examples import GENERATED, all_examples

ENTRY = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


def fresh_app() -> AppTest:
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.run()
    return at


def chart_specs(at: AppTest) -> dict[str, dict]:
    """Every plotly chart of the last run, by the key it was drawn with."""
    specs = {}
    for element in at.get("plotly_chart"):
        key = element.proto.id.rsplit("-", 1)[-1]
        specs[key] = json.loads(element.proto.spec)
    return specs


def decode(value) -> np.ndarray:
    """A plotly array as sent: a plain list or a {dtype, bdata[, shape]} base64 blob."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            array = array.reshape([int(s) for s in str(shape).split(",")])
        return array
    return np.array(value, dtype=float)


def heatmap_values(spec: dict) -> list[np.ndarray]:
    """The z of every heatmap trace in a figure spec, in trace order (one per head)."""
    return [decode(trace["z"]).astype(float) for trace in spec["data"] if trace["type"] == "heatmap"]


def key_of(at: AppTest, name: str, head: int | None = None) -> str:
    """The widget key of an array's editor as the app names it now."""
    return editor_key(name, at.session_state["versions"][name], head)


EDIT_TOGGLES = {"w_q": "edit_projections", "w_k": "edit_projections", "w_v": "edit_projections",
                "b_q": "edit_projections", "b_k": "edit_projections", "b_v": "edit_projections",
                "w_o": "edit_output_mix", "b_o": "edit_output_mix"}  # app/views/workbench.py


def open_editor(at: AppTest, name: str) -> None:
    """Switch on the Edit toggle of the step whose weights ``name`` is (they are tables until then),
    as a person clicks it; X and the mask are always editors."""
    toggle = EDIT_TOGGLES.get(name)
    if toggle is not None and not (toggle in at.session_state and at.session_state[toggle]):
        at.toggle(key=toggle).set_value(True).run()


def edit_cells(at: AppTest, name: str, edited_rows: dict, head: int | None = None) -> None:
    """Put edits into an editor's widget state, as the browser sends them, and rerun."""
    open_editor(at, name)
    at.session_state[key_of(at, name, head)] = {"edited_rows": edited_rows, "added_rows": [],
                                                "deleted_rows": []}
    at.run()


def edit_cell(at: AppTest, name: str, row: int, col: int, value, head: int | None = None) -> None:
    """One typed cell (the grid's text columns send strings)."""
    edit_cells(at, name, {row: {f"c{col}": value}}, head)


def work(at: AppTest, name: str) -> np.ndarray:
    """An array's base as the app holds it."""
    return at.session_state["work"][name]


EXAMPLE_TITLES = {key: example.title for key, example in all_examples().items()}
EXAMPLE_TITLES.update({"random": "random (seeded)", "blank": "blank (zeros)"})
assert set(GENERATED) <= set(EXAMPLE_TITLES)


def pick_example(at: AppTest, key: str) -> None:
    """Choose an example in the picker, as a person does (by its title)."""
    at.selectbox(key="example_picker").set_value(EXAMPLE_TITLES[key]).run()


def picker_label(at: AppTest) -> str:
    """What the example picker says is on screen ('A: single head, the bare core (edited)')."""
    return at.selectbox(key="example_picker").value


def pick(at: AppTest, name: str, label: str) -> None:
    """Choose an option of a selection widget (choice_ui) by its label."""
    key = f"pick_{name}"
    widget = at.button_group(key=key) if any(w.key == key for w in at.get("button_group")) else (
        at.selectbox(key=key))
    widget.set_value(label).run()


def address(at: AppTest) -> dict[str, str]:
    """The page's query parameters as the address bar holds them (one value each)."""
    out = {}
    for name in at.query_params:
        value = at.query_params[name]
        out[name] = value[-1] if isinstance(value, list) else value
    return out


def open_address(params: dict[str, str], url_path: str | None = None) -> AppTest:
    """A fresh session opened at an address (on a page, by its url_path), as a new tab would be."""
    from streamlit.util import calc_hash

    fresh = AppTest.from_file(str(ENTRY), default_timeout=60)
    for name, value in params.items():
        fresh.query_params[name] = value
    if url_path is not None:
        fresh._page_hash = calc_hash(url_path)  # see goto
    fresh.run()
    return fresh


def goto(at: AppTest, url_path: str) -> None:
    """Open a page by its url_path, as a click on the navigation does, and run.

    The pages are functions (st.Page(callable, url_path=...)), which AppTest.switch_page cannot
    name by file; a real session asks for the page by the hash of its url_path, as this does.
    """
    from streamlit.util import calc_hash

    at._page_hash = calc_hash(url_path)
    at.run()


def texts(elements) -> list[str]:
    return [element.value for element in elements]


def unescaped(text: str) -> str:
    """What a Markdown text shows: app.safe.lit's backslash escapes (and the word joiners that keep a
    bare URL from becoming a link) undone."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


def shown(elements) -> list[str]:
    """What Markdown elements show (their texts unescaped)."""
    return [unescaped(text) for text in texts(elements)]


def presenter_screens(at: AppTest, *, reveal: bool = True):
    """Every presenter screen in turn, from the first (``at`` opened on it): yields each screen's
    position, its forecast revealed first if ``reveal``, then presses Next (not after the last)."""
    from course import steps as course_steps  # read when walked: a test may have added a step

    count = len(course_steps.SCREENS)
    for screen in range(count):
        if reveal and any(button.key == "present_reveal" for button in at.button):
            at.button(key="present_reveal").click().run()
        assert not at.exception, screen
        yield screen
        if screen < count - 1:
            at.button(key="present_next").click().run()
            assert not at.exception, screen + 1


def to_screen(at: AppTest, name: str, *, reveal: bool = True) -> int:
    """From the presenter's first screen (``at`` opened on it), Next up to the screen named ``name``
    (each forecast on the way revealed first if ``reveal``); its position. By name, so that a step
    added in front changes no test (issue 40, 9)."""
    from course import steps as course_steps

    position = course_steps.screen_position(name)
    for screen in range(position):
        if reveal and any(button.key == "present_reveal" for button in at.button):
            at.button(key="present_reveal").click().run()
        at.button(key="present_next").click().run()
        assert not at.exception, screen + 1
    return position


def forecast_prompt(at: AppTest) -> str | None:
    """The forecast the open presenter screen asks ("**Forecast.** ..."), or None."""
    return next((text.split("** ", 1)[1] for text in texts(at.markdown) if text.startswith("**Forecast.**")),
                None)
