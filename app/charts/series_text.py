"""Bars, lines and histograms in words and as tables: each bar read out, or a series' highest and
lowest, or a histogram's range; series over the same labels share one table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from app.charts.chart_tables import Table
from app.charts.chart_words import LIST_SEPARATOR, NOTHING_SHOWN, local_number, quoted
from app.charts.figure_reading import axis_labels, axis_layout, plain, trace_positions, values_of
from app.charts.number_text import format_number, hover_number
from course import describe
from course.i18n import ENGLISH, N_, translator

SERIES = N_("highest {high_label} ({high}), lowest {low_label} ({low})")
BAR = "{label} {value}"
BAR_NOTE = "{bar} ({note})"
POINTS = N_("{count} points, {y_title} from {low} at {low_at} to {high} at {high_at}")
ONE_POINT = N_("{y_title} {value} at {at}")
HISTOGRAM = N_("{count} values from {low} to {high}")
Y_VALUE = N_("value")
BIN = N_("{low} to {high}")
COUNT = N_("count")

MAX_BARS_SAID = 12  # a series of at most this many bars is read out bar by bar
HISTOGRAM_BINS = 20


@dataclass
class Series:
    name: str
    kind: str  # "bar", "scatter", "histogram"
    labels: list[str]  # per value: its category (bars) or its x (points)
    values: np.ndarray  # [n]
    notes: list[str] = field(default_factory=list)  # per bar: words printed on it ("flat"), or ""


def read_series(data: list[dict], layout: dict, names: list[str], language: str = ENGLISH) -> list[Series]:
    found = []
    for index, trace in enumerate(data):
        kind = trace.get("type", "scatter")
        name = _series_name(trace, names, index)
        if kind == "histogram":
            values = values_of(trace.get("x") if trace.get("x") is not None else trace.get("y"))
            found.append(Series(name, kind, [], values))
            continue
        if kind not in ("bar", "scatter") or trace.get("mode") == "text":
            continue
        across, along = ("y", "x") if trace.get("orientation") == "h" else ("x", "y")
        if trace.get(along) is None:
            continue
        values = values_of(trace[along])  # [n]
        axis = axis_layout(layout, trace.get(f"{across}axis", across), across)
        labels = axis_labels(axis, trace_positions(trace, across, values.size), counted=False,
                             language=language)
        found.append(Series(name, kind, labels, values, _notes(trace, values)))
    return found


def _series_name(trace: dict, names: list[str], index: int) -> str:
    """A panel's own title when the trace has its panel to itself, else the trace's name."""
    own = plain(trace.get("name", ""))
    title = names[index]
    return title if title and names.count(title) == 1 else own or title


def _notes(trace: dict, values: np.ndarray) -> list[str]:
    """Words a bar carries besides its number ("flat"); a number printed on a bar is no note."""
    text = trace.get("text")
    if not isinstance(text, (list, tuple)) or len(text) != values.size:
        return [""] * values.size
    return ["" if re.fullmatch(r"[\d.,%\s+\-−e()/·]*", plain(t)) else plain(t) for t in text]


def series_sentence(series: Series, y_title: str, language: str = ENGLISH) -> str:
    _ = translator(language)

    def number(value) -> str:
        return local_number(format_number(value), language)

    if series.kind == "histogram":
        finite = series.values[np.isfinite(series.values)]
        if not finite.size:
            return _(NOTHING_SHOWN)
        return _(HISTOGRAM).format(count=finite.size, low=number(finite.min()), high=number(finite.max()))
    facts = describe.series_facts(series.values)
    if facts.highest is None:
        return _(NOTHING_SHOWN)
    high, low = facts.highest, facts.lowest
    if series.kind == "bar" and series.values.size <= MAX_BARS_SAID:
        bars = [BAR.format(label=quoted(label), value=number(value))
                for label, value in zip(series.labels, series.values, strict=True)]
        notes = series.notes or [""] * len(bars)
        return LIST_SEPARATOR.join(BAR_NOTE.format(bar=bar, note=note) if note else bar
                                   for bar, note in zip(bars, notes, strict=True))
    if series.kind == "bar":
        return _(SERIES).format(high_label=quoted(series.labels[high.col]), high=number(high.value),
                                low_label=quoted(series.labels[low.col]), low=number(low.value))
    if facts.size == 1:
        return _(ONE_POINT).format(y_title=y_title or _(Y_VALUE), value=number(high.value),
                                   at=series.labels[high.col])
    return _(POINTS).format(count=facts.size, y_title=y_title or _(Y_VALUE), low=number(facts.lowest.value),
                            low_at=series.labels[facts.lowest.col], high=number(facts.highest.value),
                            high_at=series.labels[facts.highest.col])


def series_tables(found: list[Series], x_title: str, language: str = ENGLISH) -> list[Table]:
    """Series over the same labels share one table (a column each); others get their own."""
    _ = translator(language)
    tables: list[Table] = []
    shared = [s for s in found if s.kind != "histogram"]
    groups: dict[tuple, list[Series]] = {}
    for s in shared:
        groups.setdefault(tuple(s.labels), []).append(s)
    for labels, members in groups.items():
        columns = [m.name or _(Y_VALUE) for m in members]
        rows = [(label, [local_number(hover_number(m.values[i]), language) if np.isfinite(m.values[i]) else ""
                         for m in members])
                for i, label in enumerate(labels)]
        tables.append(Table(LIST_SEPARATOR.join(columns), [x_title] + columns if x_title else columns, rows))
    for s in (s for s in found if s.kind == "histogram"):
        finite = s.values[np.isfinite(s.values)]
        counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS) if finite.size else ([], [0])
        rows = [(_(BIN).format(low=local_number(format_number(lo), language),
                               high=local_number(format_number(hi), language)), [f"{int(c):d}"])
                for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)]
        tables.append(Table(s.name or _(Y_VALUE), [_(COUNT)], rows))
    return tables
