"""A walk through every page of the app under AppTest, in one language, reading what a reader reads
(issue 29, 7 and 8): every widget's label, options, help and icon, every expander's and tab's label,
every text element, the charts' words and numbers and the tables' cells.

``walk(language)`` opens each page in a fresh session (a link with ``?lang=``) and puts it in the states
that show more: every "Numbers as a table" opened, the drill-down and the editors on, the sidebar's
expanders open, an edited setup (its Reset button) compared with the one pinned before, every
presenter screen, every lab example, each quiz question answered, a small model trained on the Learn
page, every tab of the model page. ``read(at)`` lists what one run shows as ``Shown`` items;
``english_sentences`` finds English left in another language's texts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Widget

from course.i18n import translator
from tests.apptest_util import chart_specs, edit_cell, open_address, presenter_screens, unescaped

# A small training run for the Learn page (well under a second), as tests/app/test_learn.py sets one.
LEARN_SETTINGS = {"learn_task": "copy", "learn_layers": 1, "learn_heads": 1, "learn_width": 16,
                  "learn_steps": 200}
QUIZ_QUESTIONS = 10  # app/views/quiz.py's QUIZ_LENGTH: every question of a round is answered once

# What a field holds that no reader reads as text: ids, a widget's typed value (outside text, the
# reader's own), formats, styles and scripts, the charts' figure JSON (read apart, SPEC).
NOT_READ = {"id", "form_id", "type", "raw_value", "raw_values", "value", "default", "format", "tag",
            "deferred_file_id", "url", "columns", "config", "theme", "spec", "component_name", "json",
            "js_content", "css_content", "html_content", "js_source_path", "css_source_path", "data"}
NOT_SHOWN_KINDS = {"html", "code", "bidi_component", "tab_container", "form", "flex_container"}
SEPARATORS = "spec: layout.separators"  # the marks plotly writes its own numbers with (ticks, %{y:.2f})
LABELLED = {"expander", "tab", "popover", "page_link", "link_button"}  # controls that are no widget
# Keys of a plotly spec whose strings are not shown as text.
SPEC_NOT_TEXT = {"family", "source", "separators", "bdata", "dtype", "shape", "uid", "xaxis", "yaxis",
                 "anchor", "overlaying", "matches", "scaleanchor", "legendgroup", "dash", "symbol",
                 "colorscale", "textposition", "xanchor", "yanchor", "xref", "yref", "mode", "type"}


FUNCTION_WORDS = frozenset(
    "the and of is are with each every this that to your you what which its on from for by as at be how "
    "not or than then these they when where will can into only".split())


def english_sentences(texts: list[str]) -> list[str]:
    """Sentences of ``texts`` that are English: at least three different English function words ("the",
    "of", "with", ...) among four or more words. No sentence of the other languages has them, and a
    token list such as "the cat sat on the mat" (outside text, kept as typed) has only two."""
    found = set()
    for text in texts:
        for sentence in re.split(r"(?<=[.!?:;])\s+|\n+", text):
            words = re.findall(r"[a-z']+", sentence.lower())
            if len(words) >= 4 and len(FUNCTION_WORDS.intersection(words)) >= 3:
                found.add(sentence.strip()[:160])
    return sorted(found)


@dataclass(frozen=True)
class Shown:
    where: str  # the page and state: "labs · D · one huge"
    kind: str  # the element's type: "button", "expander", "markdown", "plotly_chart", "dataframe", ...
    field: str  # "label", "icon", "options", "help", "body", "alt", "spec: layout.annotations.text", ...
    text: str
    control: bool  # a widget or a labelled block (expander, tab): its label must draw without emoji


def _strings(message: Message, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string field of a protobuf message and its sub-messages, as (path, text)."""
    for field, value in message.ListFields():
        if field.name in NOT_READ:
            continue
        name = f"{path}.{field.name}" if path else field.name
        values = [value] if isinstance(value, (str, bytes, Message, int, float, bool)) else list(value)
        for item in values:
            if isinstance(item, Message):
                yield from _strings(item, name)
            elif isinstance(item, str) and item:
                yield name, item


def _spec_strings(value, path: str = "") -> Iterator[tuple[str, str]]:
    """The strings of a plotly figure spec a reader sees (titles, labels, cell and hover text)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in SPEC_NOT_TEXT and not key.endswith("color"):
                yield from _spec_strings(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for item in value:
            yield from _spec_strings(item, path)
    elif isinstance(value, str) and value:
        yield path, value


def _table_items(where: str, node) -> Iterator[Shown]:
    """A read-only table's cells; a column of floats, which the browser writes with a decimal point
    whatever the language, as one item naming it."""
    if getattr(node.proto, "editing_mode", 0):  # a data editor: its cells are typed input
        return
    frame = node.value
    for column in frame.columns:
        if frame[column].dtype.kind == "f":
            first = frame[column].iloc[0]
            yield Shown(where, node.type, "cells", f"float column {column!r}: {first!r}", False)
    text = frame.select_dtypes(exclude="number").astype(str)
    for row in text.itertuples(index=False):
        for cell in row:
            yield Shown(where, node.type, "cells", cell, False)


def read(at: AppTest, where: str) -> list[Shown]:
    """What one run of the page shows, main column and sidebar."""
    found = []
    for root in (at.main, at.sidebar):
        for node in root:
            proto = getattr(node, "proto", None)
            kind = getattr(node, "type", type(node).__name__)
            if not isinstance(proto, Message) or kind in NOT_SHOWN_KINDS:
                continue
            control = isinstance(node, Widget) or kind in LABELLED
            found += [Shown(where, kind, name, text, control) for name, text in _strings(proto)]
            if kind == "plotly_chart":
                spec = json.loads(proto.spec)
                found += [Shown(where, kind, f"spec: {name}", text, False)
                          for name, text in _spec_strings(spec)]
                found.append(Shown(where, kind, SEPARATORS, spec["layout"].get("separators", ".,"), False))
            elif kind in ("arrow_data_frame", "dataframe", "table"):
                found += list(_table_items(where, node))
    return found


def _open_tables(at: AppTest) -> None:
    """Every chart's "Numbers as a table" open (its expander's key is the chart's key + _numbers)."""
    for key in chart_specs(at):
        at.session_state[f"{key}_numbers"] = True
    at.run()


def _workbench(language: str) -> Iterator[tuple[str, AppTest]]:
    at = open_address({"lang": language})
    yield "workbench", at
    _open_tables(at)
    at.toggle(key="drill_open").set_value(True).run()
    for toggle in ("edit_projections", "edit_output_mix"):
        at.toggle(key=toggle).set_value(True).run()
    at.session_state["save_load_open"] = True
    at.session_state["fill_open"] = True
    at.run()
    yield "workbench · tables, drill-down, editors, sidebar", at
    at.button(key="compare_pin").click().run()  # A pinned: the edit below is compared with it
    edit_cell(at, "x", 0, 0, "0.5")
    yield "workbench · edited, compared with the pinned A", at


def _present(language: str) -> Iterator[tuple[str, AppTest]]:
    at = open_address({"lang": language}, "present")
    for screen in presenter_screens(at, reveal=False):
        _open_tables(at)
        yield f"present · screen {screen + 1}", at


def _labs(language: str) -> Iterator[tuple[str, AppTest]]:
    at = open_address({"lang": language}, "labs")
    _open_tables(at)
    yield "labs", at
    for button in [b for b in at.button if (b.key or "").startswith("lab_load_")]:
        at.button(key=button.key).click().run()
        yield f"labs · {button.key}", at
    at.session_state["lab_temperature"] = 0.55
    at.session_state["lab_gap"] = 2.5
    at.run()
    yield "labs · T 0.55, gap 2.5", at


def _answer(at: AppTest, ident: str) -> None:
    """Answer the question ``ident`` with its first choice (or 1) and press Check."""
    key = f"quiz_answer_{ident}"
    choices = [w for w in [*at.radio, *at.selectbox] if w.key == key]
    if choices:
        choices[0].set_value(unescaped(choices[0].options[0]))  # the options are shown through lit()
    else:
        at.text_input(key=key).input("1")
    at.button(key=f"quiz_check_{ident}").click().run()


def _quiz(language: str) -> Iterator[tuple[str, AppTest]]:
    at = open_address({"lang": language}, "quiz")
    yield "quiz", at
    for _ in range(QUIZ_QUESTIONS):
        ident = f"{at.session_state['quiz_round']}_{at.session_state['quiz_index']}"
        _answer(at, ident)
        arithmetic = f"quiz_arithmetic_{ident}"
        if any(t.key == arithmetic for t in at.toggle):
            at.toggle(key=arithmetic).set_value(True).run()
        yield f"quiz · question {ident}", at
        at.button(key="quiz_next").click().run()
    recall = [b.key for b in at.button if (b.key or "").startswith("quiz_check_recall")]
    for key in recall:
        _answer(at, key.removeprefix("quiz_check_"))
    yield "quiz · recall answered", at


def _learn(language: str) -> Iterator[tuple[str, AppTest]]:
    at = open_address({"lang": language}, "learn")
    yield "learn", at
    for key, value in LEARN_SETTINGS.items():
        at.session_state[key] = value
    at.run()
    at.button(key="learn_train").click().run(timeout=120)
    _open_tables(at)
    yield "learn · trained", at


def _model(language: str) -> Iterator[tuple[str, AppTest]]:
    from app.views.model import TABS  # the page's tabs, by their English labels

    at = open_address({"lang": language}, "model")
    for tab in TABS:
        at.session_state["model_tab"] = translator(language)(tab)
        at.run()
        _open_tables(at)
        yield f"model · {tab}", at
    at.session_state["model_zero"] = [(0, 0)]
    at.run()
    yield "model · a head zeroed", at


def walk(language: str) -> Iterator[tuple[str, AppTest]]:
    """Every page in ``language`` and the states above, as (where, the AppTest after that run)."""
    yield from _workbench(language)
    yield from _present(language)
    yield from _labs(language)
    yield from _quiz(language)
    yield from _learn(language)
    yield from _model(language)
    for page in ("class", "examples"):
        at = open_address({"lang": language}, page)
        yield page, at
