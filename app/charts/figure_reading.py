"""Reading a figure back from its spec, as a person reads it: the language of its words, label text
without tags, a trace's numbers, an axis's layout and what each position on it is called, and each
panel's title. app/charts/grid_text.py and series_text.py read heatmaps and series through these.
"""

from __future__ import annotations

import base64
import html
import re
from functools import cache

import numpy as np

from course.i18n import ENGLISH, LANGUAGES, N_, localized_number_text, translator

POSITION = N_("position {number}")

COUNTED_LABEL = re.compile(r"([^\d\s]+)(\d+)")  # d1, q16, h3: a name and its position


@cache
def axis_words(message: str) -> frozenset[str]:
    """An axis title in every language the course is written in, lower case ('query', 'requête', ...)."""
    return frozenset(translator(code)(message).lower() for code in LANGUAGES)


def figure_language(layout: dict) -> str:
    """The language a figure's words are written in: app/charts/figure_style.py records it in the layout's
    ``meta`` (English figures carry none)."""
    meta = layout.get("meta")
    return meta.get("language", ENGLISH) if isinstance(meta, dict) else ENGLISH


def plain(text) -> str:
    """Plotly label text as a person reads it: tags dropped (<br> as a space), entities undone."""
    text = re.sub(r"<br\s*/?>", " ", str(text or ""), flags=re.IGNORECASE)
    return " ".join(html.unescape(re.sub(r"</?[a-zA-Z][^<>]*>", "", text)).split())


def title_text(value) -> str:
    return plain(value.get("text", "") if isinstance(value, dict) else value)


def values_of(value) -> np.ndarray:
    """A trace's numbers as floats: a plotly typed array (base64), a list (None as NaN) or an array."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            data = data.reshape([int(part) for part in str(shape).split(",")])
        return data.astype(float)
    items = np.array(value, dtype=object)
    return np.array([np.nan if v is None else v for v in items.ravel()], dtype=float).reshape(items.shape)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def axis_layout(layout: dict, ref: str, letter: str) -> dict:
    """The layout of axis 'x', 'x2'... as a trace names it."""
    suffix = ref[1:] if ref and len(ref) > 1 else ""
    return layout.get(f"{letter}axis{suffix}", {}) or {}


def axis_labels(axis: dict, positions: list, *, counted: bool, language: str = ENGLISH) -> list[str]:
    """What a reader calls each position on an axis: its tick text, else "position 17" for a
    counted axis (the heatmaps' 1-based positions, whose tick labels thin out), else the value."""
    ticks = {}
    if axis.get("tickvals") is not None and axis.get("ticktext") is not None:
        ticks = {float(v): plain(t)
                 for v, t in zip(values_of(axis["tickvals"]), axis["ticktext"], strict=False)}
    prefix = _counting_prefix(ticks) if counted else None
    labels = []
    for position in positions:
        if not _is_number(position):
            labels.append(plain(position))
        elif float(position) in ticks:
            labels.append(ticks[float(position)])
        elif counted and float(position).is_integer():
            labels.append(f"{prefix}{int(position):d}" if prefix
                          else translator(language)(POSITION).format(number=int(position)))
        else:
            labels.append(localized_number_text(f"{float(position):g}", language))
    return distinct_labels(labels)


def _counting_prefix(ticks: dict[float, str]) -> str | None:
    """'d' when every tick shown reads 'd' and its own position (d1, d8, d16): the labels in
    between are d2, d3...; None otherwise."""
    prefixes = set()
    for position, text in ticks.items():
        match = COUNTED_LABEL.fullmatch(text)
        if match is None or float(match.group(2)) != position:
            return None
        prefixes.add(match.group(1))
    return prefixes.pop() if len(prefixes) == 1 else None


def distinct_labels(labels: list[str]) -> list[str]:
    """Repeated labels get their position, "the (5)", as in the charts' hover text."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{label} ({i + 1})" if counts[label] > 1 else label for i, label in enumerate(labels)]


def trace_positions(trace: dict, letter: str, n: int) -> list:
    explicit = trace.get(letter)
    if explicit is not None and not isinstance(explicit, dict):
        return list(explicit)
    if isinstance(explicit, dict):
        return values_of(explicit).tolist()
    start, step = trace.get(f"{letter}0", 0), trace.get(f"d{letter}", 1)
    return [start + i * step for i in range(n)]


def panel_names(data: list[dict], layout: dict) -> list[str]:
    """Each trace's panel title: the paper annotation just above its axes, else its name, else ""."""
    notes = [a for a in layout.get("annotations", []) or [] if a.get("xref", "paper") == "paper"
             and a.get("yref", "paper") == "paper" and _is_number(a.get("x")) and _is_number(a.get("y"))]
    names = []
    for trace in data:
        x_domain = axis_layout(layout, trace.get("xaxis", "x"), "x").get("domain", [0, 1])
        y_domain = axis_layout(layout, trace.get("yaxis", "y"), "y").get("domain", [0, 1])
        above = [a for a in notes if x_domain[0] - 1e-6 <= a["x"] <= x_domain[1] + 1e-6
                 and -0.01 <= a["y"] - y_domain[1] <= 0.2]
        if above:
            names.append(plain(min(above, key=lambda a: a["y"] - y_domain[1])["text"]))
        else:
            names.append(plain(trace.get("name", "")))
    return names
