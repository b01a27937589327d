"""The reader's language, per session: a room shares the teacher's state, never a language.

It comes, in this order, from the sidebar's picker, a link's ``?lang=xx``, the browser's
Accept-Language header, the deployer's ``MHA_LANGUAGE``, else English. The address carries
``lang`` only once a reader chose it (the picker or a link), so a shared link opens in the
language it names and otherwise in each reader's own.
"""

from __future__ import annotations

import os

import streamlit as st

from app.charts import figure_cache
from app.charts.figure_spec import FigureSpec
from app.per_run import PerRun
from app.session import session_keys
from course import steps as course_steps
from course.i18n import (
    ENGLISH,
    LANGUAGES,
    known,
    localized_number_text,
    localized_tex,
    number_marks,
    translator,
)
from course.i18n import from_accept_language as browser_language
from course.i18n import number as language_number
from course.steps import Screen, Step

LANGUAGE = "language"  # the picker's key: the language the reader picks
CHOSEN = "language_chosen"  # session key: True once the picker or a link chose it (the address keeps it)
# The reader's language, in a key no widget owns; the picker only changes it (its on_change). A widget's
# state does not hold it: st.switch_page (a follower sent to the teacher's page) drops every widget's
# state, and a browser whose picker lost its value (a phone's sidebar drawn again) sends the picker's
# default back; both turned a German student's page English in the middle of a lesson.
KEPT = "language_kept"
PARAM = "lang"
session_keys.register(session_keys.Key(LANGUAGE, __name__, ENGLISH, address=PARAM),
                      session_keys.Key(CHOSEN, __name__, False), session_keys.Key(KEPT, __name__))


def init_language() -> list[str]:
    """The reader's language, chosen once per session; a note for the link when its ``lang`` is
    unknown. Every run calls it first."""
    notes = _choose_language()
    language.start()  # only the picker changes it, between runs
    return notes


def _choose_language() -> list[str]:
    ss = st.session_state
    if KEPT in ss:
        return []
    asked = st.query_params.get(PARAM)
    from_link = known(asked)
    ss[CHOSEN] = from_link is not None
    ss[KEPT] = (from_link or browser_language(st.context.headers.get("Accept-Language"))
                or known(os.environ.get("MHA_LANGUAGE")) or ENGLISH)
    if asked and from_link is None:
        return [f"the language {asked[:20]!r} (this course is written in {', '.join(LANGUAGES.values())})"]
    return []


def _session_language() -> str:
    ss = st.session_state
    return ss.get(KEPT, ss.get(LANGUAGE, ENGLISH))


language = PerRun(_session_language)  # language(): the reader's language, read once per run


figure_cache.reader_language = language  # a cached figure is in its reader's language, part of its key


def t(message: str) -> str:
    """A message of the app's own (marked N_ where it is defined) in the reader's language."""
    return translator(language())(message)


def number(value: float, decimals: int = 0) -> str:
    """A number as the reader's language writes it: 1,048,576 / 1.048.576; 0.813 / 0,813."""
    return language_number(value, language(), decimals)


def numbers_in(text: str) -> str:
    """Numbers written the English way inside ``text`` ('2.1e-9', '0.67') as the reader's language
    writes them ('2,1e-9', '0,67'); give it numbers, never outside text (a token '3.14' stays as typed)."""
    return localized_number_text(text, language())


def tex(latex: str) -> str:
    """A formula for st.latex with its numbers written as the reader's language writes them."""
    return localized_tex(latex, language())


def step(name: str) -> Step:
    """The course's step ``name`` (course/steps.py), its texts in the reader's language."""
    return course_steps.in_language(language())[0][name]


def screen(position: int) -> Screen:
    """The presenter's screen at ``position``, its texts in the reader's language."""
    return course_steps.in_language(language())[1][position]


def labels(mapping: dict[str, str]):
    """A format_func for options whose labels are app text marked N_ (a constant dict): each label in
    the reader's language."""
    translate = translator(language())  # this run's language, whenever the label is asked for
    return lambda option: translate(mapping[option])


def address_params() -> dict[str, str]:
    """``lang`` for the address once the reader chose it."""
    return {PARAM: language()} if st.session_state.get(CHOSEN) else {}


def language_ui(where) -> None:
    """The picker: every language named in itself; the label also says "Language" for a lost reader."""
    word = t("Language")
    label = word if word == "Language" else f"{word} · Language"
    # index: what the browser falls back to when its picker lost its value is the reader's language
    where.selectbox(label, list(LANGUAGES), index=list(LANGUAGES).index(language()), key=LANGUAGE,
                    format_func=LANGUAGES.get, on_change=_chosen)


def _chosen() -> None:
    """The reader picked a language: from now on the address carries it."""
    st.session_state[KEPT] = st.session_state[LANGUAGE]
    st.session_state[CHOSEN] = True


def localized_figure(fig):
    """A figure's numbers as the reader's language writes them: the cells' text, the number at the end
    of each hover text (never the labels before it: a token '3.14' stays as typed) and the axes'
    own numbers (plotly's ``separators``). The figure given is shared and left unchanged."""
    marks = number_marks(language())
    if marks == (".", ",") or not isinstance(fig, FigureSpec):
        return fig
    spec = fig.to_dict()

    def number_at_the_end(text: str) -> str:
        labels, colon, value = text.rpartition(": ")
        return labels + colon + localized_number_text(value, language())

    data = []
    for trace in spec["data"]:
        changed = {}
        if trace.get("texttemplate") == "%{text}" and trace.get("text") is not None:
            changed["text"] = _each(trace["text"], lambda text: localized_number_text(text, language()))
        if trace.get("hovertext") is not None:
            changed["hovertext"] = _each(trace["hovertext"], number_at_the_end)
        data.append({**trace, **changed} if changed else trace)
    return FigureSpec({**spec, "data": data, "layout": {**spec["layout"], "separators": "".join(marks)}})


def _each(texts, change):
    """change() applied to every string of a list (of lists) of strings."""
    if isinstance(texts, str):
        return change(texts)
    return [_each(item, change) for item in texts]
