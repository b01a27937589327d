"""The room's answers shown: the count ('17 of 23 answered'), Close answers and Reveal for the
teacher, the answers as bars (right ones marked once revealed), and a forecast (the class's average,
or a student's own) against the head's real softmax, with how far apart they are in words.

The teacher's panels that draw them are app/room/questions.py's; a student's reveal is
app/room/student_answer.py's."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import numpy as np
import streamlit as st

from app import i18n
from app.charts import forecast_figures
from app.charts.figure_layout import LARGE, tallest_cells_within
from app.charts.figures import head_grids
from app.room import live
from app.safe import lit, md
from app.widgets import chart
from classroom.store import FORECAST, StoreError, csv_safe, is_right, iso_time
from course.i18n import N_, localized_number_text
from course.quiz import DrawnForecast, distance_words, forecast_distance, most_wrong_cell, read_grid

STATUS_WORDS = {"open": N_("answers open"), "closed": N_("answers closed"),
                "revealed": N_("answers revealed")}
# course.quiz.distance_words' English, marked here: shown in the reader's language.
CLOSENESS = {"very close": N_("very close"), "close": N_("close"), "partly right": N_("partly right"),
             "far off": N_("far off")}
CLASS_FORECAST = N_("The class is **{closeness}**: total variation distance {distance} (0 is the same, 1 "
                    "nothing in common).")
OWN_FORECAST = N_("Your forecast is **{closeness}**: total variation distance {distance} (0 is the same, 1 "
                  "nothing in common).")
REAL_SOFTMAX = N_("Head {number}'s softmax")
SHARED_ADDRESS_ANSWERS = 5  # answers from one address before the teacher's panel says so (and over half)
SHARED_ADDRESS = N_("**{shared} of the {total}** answers come from students who joined from one address. "
                    "That may be one school's network (a class behind one router shares an address), or "
                    "one machine answering again and again with fresh cookies: more answers than students "
                    "in the room would be the second.")


def answers_view(where: str, *, large: bool, on_reveal=None, reveal_button: bool = True) -> None:
    """The count ('17 of 23 answered'), Close answers, Reveal (unless the page has its own), and the
    answers (on demand, or a forecast's class average once closed); on the Class page (not large:
    not the projector) a note when many answers share one address (shared_address_note). Cheap: one
    tally and one follower count per second (and the answers' networks once there are five)."""
    ss = st.session_state
    question_id, question = ss[live.ASKED]
    try:
        tally = live.store().tally(ss[live.ROOM], question_id)
        following = live.store().followers(ss[live.ROOM])
    except StoreError as error:
        st.warning(md(i18n.t("The answers cannot be read now: {error}"), error=error),
                   icon=":material/wifi_off:")
        return
    status = tally.status
    status_words = i18n.t(STATUS_WORDS[status]) if status in STATUS_WORDS else status  # stored: "answers …"
    if large:  # projected: the count in large type
        st.markdown(md(i18n.t("#### {answered} of {following} answered · {status}"), answered=tally.total,
                       following=max(following, tally.total), status=status_words))
    else:  # '**17** answers (23 following), **65%** right · answers open' (the share once marked)
        if tally.right is not None and tally.total:
            count = i18n.t("**{total}** answers ({following} following), **{share}** right · "
                           "{status}").format(total=f"{tally.total:d}", following=f"{following:d}",
                                              share=f"{tally.right / tally.total:.0%}",
                                              status=lit(status_words))
        else:
            count = i18n.t("**{total}** answers ({following} following) · {status}").format(
                total=f"{tally.total:d}", following=f"{following:d}", status=lit(status_words))
        st.markdown(md(i18n.t("**Asked:** {prompt}"), prompt=question.prompt) + "  \n" + count)
        shared_address_note(question_id, tally.total)
    buttons = st.container(horizontal=True)
    if status == "open":
        buttons.button(i18n.t("Close answers"), key=f"{where}_close", icon=":material/lock:", on_click=act,
                       args=("close", question_id))
    if reveal_button and status != "revealed" and buttons.button(
            i18n.t("Reveal"), key=f"{where}_reveal", type="primary", icon=":material/visibility:"):
        act("reveal", question_id)
        if on_reveal is not None:
            on_reveal()
        st.rerun(scope="app")
    forecast = isinstance(question, DrawnForecast)
    automatic = forecast and status != "open"  # a forecast's average once closed; other answers on demand
    shown = buttons.toggle(i18n.t("Show the answers"), key=f"{where}_show_answers") or automatic
    if not shown:
        return
    if forecast:
        class_forecast_view(where, question, tally, large=large, revealed=status == "revealed")
    else:
        distribution(where, tally, large=large, marked=status == "revealed")


def shared_from_one_address(networks: list[str]) -> int:
    """The answers from the one network most of them came from (store.answer_networks: one per answer,
    "" unknown), when they are at least SHARED_ADDRESS_ANSWERS and more than half of all; else 0."""
    known = [network for network in networks if network]
    if len(known) < SHARED_ADDRESS_ANSWERS:
        return 0
    shared = max(known.count(network) for network in set(known))
    return shared if shared >= SHARED_ADDRESS_ANSWERS and 2 * shared > len(networks) else 0


def shared_address_note(question_id: str, total: int) -> None:
    """On the teacher's Class page (not the projector): when many answers share one address (
    shared_from_one_address), say so, without blaming anyone: a school behind one address is as
    likely as one machine voting with fresh cookies (the store's join limits let 45 in at once from
    one address, docs/deploy.md). Read only once there are enough answers to say it."""
    if total < SHARED_ADDRESS_ANSWERS:
        return
    ss = st.session_state
    try:
        networks = live.store().answer_networks(ss[live.ROOM], ss[live.TEACHER_SECRET], question_id)
    except StoreError:
        return  # the count above says the answers cannot be read when that is so
    shared = shared_from_one_address(networks)
    if shared:
        st.info(md(i18n.t(SHARED_ADDRESS), shared=shared, total=len(networks)), icon=":material/lan:")


def act(step: str, question_id: str) -> None:
    """store.close or store.reveal for the teacher; a failure is said in the room's box."""
    ss = st.session_state
    try:
        getattr(live.store(), step)(ss[live.ROOM], ss[live.TEACHER_SECRET], question_id)
    except StoreError as error:
        ss[live.LIVE_MESSAGE] = i18n.t("The room did not take it: {error}").format(error=error)
        st.toast(md(i18n.t("The room did not take it: {error}"), error=error), icon=":material/wifi_off:")


def distribution(where: str, tally, *, large: bool, marked: bool) -> None:
    """The answers as bars with their counts and shares; right ones green once revealed."""
    if not tally.total:
        st.caption(i18n.t("No answers yet."))
        return
    values, counts = list(tally.counts), list(tally.counts.values())
    right = [is_right(tally.question, value) for value in values] if marked else None
    if right is not None and all(mark is None for mark in right):
        right = None  # a poll: nothing is right, so nothing is marked wrong either
    chart(forecast_figures.answer_bars(bar_labels(values), counts, right=right, large=large,
                                       language=i18n.language()), key=f"{where}_answers_chart")
    if marked and tally.right is not None:
        st.markdown(md(i18n.t("**{right} of {total}** right (first answers count)."), right=tally.right,
                       total=tally.total))


BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
FSI, PDI = "\u2068", "\u2069"  # a label's own isolate: its direction stays inside it
BAR_LABEL_CHARS = forecast_figures.LABEL_CHARS - 2  # the bars cut a label past this (the isolate's two)


def bar_labels(values: list[str]) -> list[str]:
    """The answers as their bars' labels: bidi controls dropped (a U+202E answer drew reversed), each
    in its own isolate, and distinct where the bars would cut two alike (a number after the cut)."""
    labels, seen = [], set()
    for value in values:
        text = "".join(ch for ch in value if ch not in BIDI_CONTROLS)
        short = text if len(text) <= BAR_LABEL_CHARS else text[:BAR_LABEL_CHARS - 1] + "…"
        number = 1
        while short in seen:  # two answers alike in the part shown: numbered
            number += 1
            tag = f" ({number})" if len(text) + len(f" ({number})") <= BAR_LABEL_CHARS else f"… ({number})"
            short = text[:BAR_LABEL_CHARS - len(tag)] + tag
        seen.add(short)
        labels.append(FSI + short + PDI)
    return labels


# The class's forecast on the presenter, under the count, the buttons and the sentence: the
# projector's numbers (20 px) on cells as tall as fit (a 3-row grid with LARGE's ran 88 px past 720).
# A grid of 4 to 6 rows needs 300 to 374 px even with 28-px cells: the teacher scrolls.
FORECAST_CHART_PX = 276
FORECAST_CELL_HEIGHTS = (72, 60, 52, 46, 40, 34, 28)
FORECAST_ALONE_PX = 600  # the class's forecast alone (before Reveal): one panel, not two side by side


def class_forecast_view(where: str, question: DrawnForecast, tally, *, large: bool,
                        revealed: bool = True) -> None:
    """The class's average forecast as a heatmap; once ``revealed``, next to the real softmax, with
    how far apart they are and the key where the class was most wrong (before Reveal nothing on the
    page may tell the real row: the class's average alone)."""
    if tally.mean is None:
        st.caption(i18n.t("No forecasts yet."))
        return
    mean = np.asarray(tally.mean, dtype=float)  # [n_rows, n_k]
    forecast_title = i18n.t("The class's forecast ({count})").format(count=tally.total)
    if revealed:
        st.markdown(forecast_words(mean, question.weights, question.query_labels, question.key_labels,
                                   CLASS_FORECAST))  # first: on a projector the chart may run below the fold
    else:
        st.caption(i18n.t("The head's real softmax and how close the class came appear after **Reveal**."))

    def figure(style):
        if not revealed:
            return head_grids(mean[None], list(question.query_labels), list(question.key_labels),
                              kind="weights", large=style, width=FORECAST_ALONE_PX,
                              head_names=[forecast_title], language=i18n.language())
        return forecast_figures.forecast_vs_real(
            mean, question.weights, question.query_labels, question.key_labels, forecast_title=forecast_title,
            real_title=i18n.t(REAL_SOFTMAX).format(number=question.head + 1), large=style,
            language=i18n.language())

    if not large:
        chart(figure(False), key=f"{where}_forecast_chart")
        return
    chart(tallest_cells_within(  # a whole grid's rows: the tallest cells that fit FORECAST_CHART_PX
        lambda cell_max: figure(replace(LARGE, cell_min=min(LARGE.cell_min, cell_max), cell_max=cell_max)),
        FORECAST_CELL_HEIGHTS, FORECAST_CHART_PX), key=f"{where}_forecast_chart")


# The answers file's columns, in the reader's language (the store's CSV_COLUMNS, in its order).
FILE_COLUMNS = (N_("question number"), N_("question"), N_("right answer"), N_("student"), N_("nickname"),
                N_("answer"), N_("right?"), N_("answered at (UTC)"))
RIGHT, WRONG = N_("right"), N_("wrong")
FORECAST_VERDICT = N_("{closeness}: total variation distance {distance}")


def answers_file(transcript) -> bytes:
    """The room's answers as a spreadsheet opens them: UTF-8 with a byte-order mark (else "für" and
    Chinese come out garbled), headers and verdicts in the reader's language, a drawn forecast with
    the real rows as its right answer and how close it came as its verdict. Every cell through the
    store's csv_safe. transcript: store.answers() (question, answers), in the order asked."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([i18n.t(column) for column in FILE_COLUMNS])
    for number, (question, given) in enumerate(transcript, start=1):
        real = real_rows(question)
        correct = json.dumps(real.round(4).tolist()) if real is not None else question.correct
        for answer in sorted(given, key=lambda a: (a.at, a.student_id)):
            cells = (question.prompt, correct, answer.student_id, answer.nickname, answer.value,
                     verdict(question, answer.value, real), iso_time(answer.at))
            writer.writerow([number, *(csv_safe(cell) for cell in cells)])
    return out.getvalue().encode("utf-8-sig")


def real_rows(question):
    """A drawn forecast's real rows, from its solution ([rows, cols]); None for any other question."""
    if question.kind != FORECAST:
        return None
    try:
        return np.asarray(json.loads(question.solution)["real"], dtype=float)
    except (ValueError, KeyError, TypeError):
        return None


def verdict(question, value: str, real) -> str:
    """An answer's verdict in the reader's language: right or wrong, how close a forecast came, or ""."""
    if real is not None:
        drawn = read_grid(value, question.grid)
        if drawn is None or drawn.shape != real.shape:
            return ""
        distance = forecast_distance(drawn, real)
        closeness = distance_words(distance)
        return i18n.t(FORECAST_VERDICT).format(closeness=i18n.t(CLOSENESS.get(closeness, closeness)),
                                               distance=decimals(distance))
    mark = is_right(question, value)
    return "" if mark is None else i18n.t(RIGHT) if mark else i18n.t(WRONG)


def forecast_words(forecast, real, query_labels, key_labels, sentence: str) -> str:
    """'The class is close: total variation 0.18 (0 is the same, 1 nothing in common). Most wrong:
    key “3 · sat” for query “2 · cat”, 0.40 where the head gives 0.05.' sentence: CLASS_FORECAST or
    OWN_FORECAST, the first sentence's message."""
    distance = forecast_distance(forecast, real)
    row, key, _ = most_wrong_cell(forecast, real)
    forecast, real = np.asarray(forecast), np.asarray(real)
    closeness = distance_words(distance)
    return (md(i18n.t(sentence), closeness=i18n.t(CLOSENESS.get(closeness, closeness)),
               distance=decimals(distance)) + " "
            + md(i18n.t("Most wrong: key **{key}** for query {query}, {given} where the head gives {real}."),
                 key=key_labels[key], query=query_labels[row], given=decimals(forecast[row, key]),
                 real=decimals(real[row, key])))


def decimals(value: float) -> str:
    """A share to two decimals as the reader's language writes it (0.40, 0,40), rounded as Python does."""
    return localized_number_text(f"{value:.2f}", i18n.language())
