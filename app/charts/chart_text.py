"""A chart in words and numbers: the short summary a screen reader reads as the chart's name, and
the numbers as tables (built only when someone opens them).

``of_figure(fig)`` reads any figure the app draws (heatmap panels, bars, lines, histograms) from
its spec: titles, axis labels, and the values themselves; ``course.describe`` finds the facts,
this module only words them. Every sentence a person reads is a template below, in one place, marked
for the catalogues and translated where the sentence is built, in the ``language`` given (numbers
written as that language writes them: 0,67 in German). Labels come from users: they stay plain text
here (an ARIA label and ``html_text`` in ``table_html`` show them literally).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from app.charts.number_text import format_number, hover_number
from app.safe import html_text
from course import describe
from course.i18n import ENGLISH, LANGUAGES, N_, localized_number_text, translator
from mha_core.analysis import head_pattern, normalised_entropy

# --- Words (templates) -------------------------------------------------------------------------

TABLE_LABEL = N_("Numbers as a table")
QUOTED = "'{}'"
PANEL_PREFIX = "{panel}: {text}"
FOCUS = N_("{query} attends most to {key} ({value})")
FLAT_ONE = N_("{queries} is nearly flat")
FLAT_MANY = N_("{queries} are nearly flat")
ALL_FLAT = N_("every query spreads its weight nearly evenly")
EXTREMES = N_("largest {high} at {high_at}, smallest {low} at {low_at}")
ALL_EQUAL = N_("every value is {value}")
ONE_PAIR = N_("{a} and {b} are {value} apart")
EVERY_PAIR = N_("every two are {value} apart")
DISTANCES = N_("{far_a} and {far_b} are furthest apart ({far}), {near_a} and {near_b} closest ({near})")
CELL_AT_ATTENTION = "{row} → {col}"
CELL_AT = "{row}, {col}"
MASKED_CELLS = N_("{count} masked")
MASKED = N_("masked")
NOTHING_SHOWN = N_("every cell is masked")
PICTURE = N_("{rows} × {cols} cells drawn as a picture, too many to list")
SERIES = N_("highest {high_label} ({high}), lowest {low_label} ({low})")
BAR = "{label} {value}"
BAR_NOTE = "{bar} ({note})"
POINTS = N_("{count} points, {y_title} from {low} at {low_at} to {high} at {high_at}")
ONE_POINT = N_("{y_title} {value} at {at}")
HISTOGRAM = N_("{count} values from {low} to {high}")
MORE_PANELS = N_("and {count} more")
POSITION = N_("position {number}")
PANEL_NAME = N_("panel {number}")
UNTITLED = N_("Chart")
Y_VALUE = N_("value")
BIN = N_("{low} to {high}")
COUNT = N_("count")
TABLE_CUT = N_("The first {shown} of {total} rows.")
NO_NUMBERS = N_("{name}: drawn as a picture; its {rows} × {cols} numbers are too many to list here.")
LIST_SEPARATOR = ", "
CLAUSE_SEPARATOR = "; "
# The heatmaps' axis titles (app/charts/figures.py writes them in the figure's language): a grid whose rows
# are called "query" or whose columns are called "key", in any language, is an attention grid.
QUERY_AXIS, KEY_AXIS = N_("query"), N_("key")

HEAD_NAME = N_("head {number}")
LAYER_NAME = N_("layer {number}")
CONCAT_TITLE = "Concat(head_1, ..., head_h)"
CONCAT_COLUMN = "h{head:d}·{col:d}"
MODEL_OVERVIEW = N_("{layers} layers of {heads} heads, each head's pattern.")
LAYER_PATTERNS = N_("layer {layer}: {groups}")
PATTERN_HEADS = N_("{pattern} (heads {heads})")
HEAD_CELL = "{spread} {pattern}"
MODEL_TABLE = N_("Each head's mean normalised entropy and pattern")

COUNTED_LABEL = re.compile(r"([^\d\s]+)(\d+)")  # d1, q16, h3: a name and its position

MAX_BARS_SAID = 12  # a series of at most this many bars is read out bar by bar
MAX_PANELS_SAID = 16  # a summary names at most this many panels or series, then "and N more"
MAX_TABLE_CELLS = 5000  # cells of all of a chart's tables together; longer tables are cut by rows
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class Table:
    """One table: a caption, column labels, and per row a label and its cells (all plain text)."""

    caption: str
    columns: list[str]
    rows: list[tuple[str, list[str]]]
    note: str = ""


@dataclass(frozen=True)
class ChartText:
    """A chart's summary (its accessible name) and its tables, made when asked for."""

    summary: str
    tables: Callable[[], list[Table]] = field(default=lambda: [], compare=False)


# --- Reading a figure's spec -------------------------------------------------------------------


def _local(number: str, language: str) -> str:
    """A number written by app.charts.number_text ('0.67', '1 − 4.1e-9') as the language writes it
    ('0,67')."""
    return localized_number_text(number, language)


@cache
def _axis_words(message: str) -> frozenset[str]:
    """An axis title in every language the course is written in, lower case ('query', 'requête', ...)."""
    return frozenset(translator(code)(message).lower() for code in LANGUAGES)


def figure_language(layout: dict) -> str:
    """The language a figure's words are written in: app/charts/figures.py records it in the layout's ``meta``
    (English figures carry none)."""
    meta = layout.get("meta")
    return meta.get("language", ENGLISH) if isinstance(meta, dict) else ENGLISH


def plain(text) -> str:
    """Plotly label text as a person reads it: tags dropped (<br> as a space), entities undone."""
    text = re.sub(r"<br\s*/?>", " ", str(text or ""), flags=re.IGNORECASE)
    return " ".join(html.unescape(re.sub(r"</?[a-zA-Z][^<>]*>", "", text)).split())


def _title(value) -> str:
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


def _axis(layout: dict, ref: str, letter: str) -> dict:
    """The layout of axis 'x', 'x2'... as a trace names it."""
    suffix = ref[1:] if ref and len(ref) > 1 else ""
    return layout.get(f"{letter}axis{suffix}", {}) or {}


def _labels(axis: dict, positions: list, *, counted: bool, language: str = ENGLISH) -> list[str]:
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
            labels.append(f"{float(position):g}")
    return _distinct(labels)


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


def _distinct(labels: list[str]) -> list[str]:
    """Repeated labels get their position, "the (5)", as in the charts' hover text."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{label} ({i + 1})" if counts[label] > 1 else label for i, label in enumerate(labels)]


def _positions(trace: dict, letter: str, n: int) -> list:
    explicit = trace.get(letter)
    if explicit is not None and not isinstance(explicit, dict):
        return list(explicit)
    if isinstance(explicit, dict):
        return values_of(explicit).tolist()
    start, step = trace.get(f"{letter}0", 0), trace.get(f"d{letter}", 1)
    return [start + i * step for i in range(n)]


def _panel_names(data: list[dict], layout: dict) -> list[str]:
    """Each trace's panel title: the paper annotation just above its axes, else its name, else ""."""
    notes = [a for a in layout.get("annotations", []) or [] if a.get("xref", "paper") == "paper"
             and a.get("yref", "paper") == "paper" and _is_number(a.get("x")) and _is_number(a.get("y"))]
    names = []
    for trace in data:
        x_domain = _axis(layout, trace.get("xaxis", "x"), "x").get("domain", [0, 1])
        y_domain = _axis(layout, trace.get("yaxis", "y"), "y").get("domain", [0, 1])
        above = [a for a in notes if x_domain[0] - 1e-6 <= a["x"] <= x_domain[1] + 1e-6
                 and -0.01 <= a["y"] - y_domain[1] <= 0.2]
        if above:
            names.append(plain(min(above, key=lambda a: a["y"] - y_domain[1])["text"]))
        else:
            names.append(plain(trace.get("name", "")))
    return names


# --- Heatmaps ------------------------------------------------------------------------------------


@dataclass
class _Grid:
    """One heatmap panel as read back: values [n_rows, n_cols] and what rows and columns are called."""

    name: str
    values: np.ndarray | None  # None: drawn as a picture
    rows: list[str]
    cols: list[str]
    attention: bool  # rows are queries and columns keys
    weights: bool  # every row is a distribution on 0..1


def _grids(data: list[dict], layout: dict, names: list[str], language: str = ENGLISH) -> list[_Grid]:
    grids = []
    for trace, name in zip(data, names, strict=True):
        kind = trace.get("type")
        if kind not in ("heatmap", "image") or trace.get("hoverinfo") == "skip":
            continue  # an off-axis trace drawn for its colour bar alone
        x_axis = _axis(layout, trace.get("xaxis", "x"), "x")
        y_axis = _axis(layout, trace.get("yaxis", "y"), "y")
        attention = (_title(y_axis.get("title")).lower() in _axis_words(QUERY_AXIS)
                     or _title(x_axis.get("title")).lower() in _axis_words(KEY_AXIS))
        if kind == "image":  # its axes' ranges are [0.5, n + 0.5]
            n_rows, n_cols = (int(round(max(a.get("range", [0.5, 0.5])) - 0.5)) for a in (y_axis, x_axis))
            grids.append(_Grid(name, None, [""] * n_rows, [""] * n_cols, attention, False))
            continue
        values = values_of(trace["z"])  # [n_rows, n_cols]
        if values.ndim == 1:
            values = values[None, :]
        rows = _labels(y_axis, _positions(trace, "y", values.shape[0]), counted=True, language=language)
        cols = _labels(x_axis, _positions(trace, "x", values.shape[1]), counted=True, language=language)
        rows, cols = _same_tokens(rows, cols, x_axis)
        weights = trace.get("zmin") == 0 and trace.get("zmax") == 1 and describe.looks_like_weights(values)
        grids.append(_Grid(name, values, rows, cols, attention, weights))
    if any(g.attention for g in grids):  # only the first panel of a row titles its axes
        for g in grids:
            g.attention = True
    return grids


def _same_tokens(rows: list[str], cols: list[str], x_axis: dict) -> tuple[list[str], list[str]]:
    """Self-attention's keys are its queries: when the x axis had room for some labels only and
    each of those is the row label at the same position, the columns take the rows' labels."""
    shown = x_axis.get("ticktext")
    if len(rows) != len(cols) or shown is None or len(shown) >= len(cols):
        return rows, cols
    positions = values_of(x_axis["tickvals"])
    ticked = [(int(v) - 1, plain(t)) for v, t in zip(positions, shown, strict=False)]
    bare = [_bare(label) for label in rows]
    if ticked and all(0 <= i < len(rows) and bare[i] == text for i, text in ticked):
        return rows, list(rows)
    return rows, cols


def _bare(label: str) -> str:
    """'the (5)' -> 'the': a label without the position _distinct gave it."""
    return re.sub(r" \(\d+\)$", "", label)


def _quoted(label: str) -> str:
    return QUOTED.format(label)


def grid_sentence(grid: _Grid, language: str = ENGLISH) -> str:
    """One panel in words: where a head's queries look, or a matrix's largest and smallest cell."""
    _ = translator(language)
    if grid.values is None:
        return _(PICTURE).format(rows=len(grid.rows), cols=len(grid.cols))
    if grid.weights:
        return weights_sentence(grid.values, grid.rows, grid.cols, language)
    if describe.looks_like_distances(grid.values):
        return distances_sentence(grid.values, grid.rows, language)
    facts = describe.matrix_facts(grid.values)
    if facts.largest is None:
        return _(NOTHING_SHOWN)
    at = CELL_AT_ATTENTION if grid.attention else CELL_AT

    def where(cell: describe.Cell) -> str:
        return at.format(row=_quoted(grid.rows[cell.row]), col=_quoted(grid.cols[cell.col]))

    high, low = format_number(facts.largest.value), format_number(facts.smallest.value)
    text = _(ALL_EQUAL).format(value=_local(high, language)) if high == low else _(EXTREMES).format(
        high=_local(high, language), high_at=where(facts.largest), low=_local(low, language),
        low_at=where(facts.smallest))
    return text + (f" ({_(MASKED_CELLS).format(count=facts.masked)})" if facts.masked else "")


def distances_sentence(distances, names: list[str], language: str = ENGLISH) -> str:
    """"'head 1' and 'head 3' are furthest apart (0.81), 'head 1' and 'head 2' closest (0.05)"."""
    _ = translator(language)
    far, near = describe.pair_facts(distances)
    far_value, near_value = (_local(format_number(cell.value), language) for cell in (far, near))
    if len(names) == 2:
        return _(ONE_PAIR).format(a=_quoted(names[0]), b=_quoted(names[1]), value=far_value)
    if far.value == near.value:
        return _(EVERY_PAIR).format(value=far_value)
    return _(DISTANCES).format(far_a=_quoted(names[far.row]), far_b=_quoted(names[far.col]), far=far_value,
                               near_a=_quoted(names[near.row]), near_b=_quoted(names[near.col]),
                               near=near_value)


def weights_sentence(weights, queries: list[str], keys: list[str], language: str = ENGLISH) -> str:
    """"'sat' attends most to 'cat' (0.67); 'the' is nearly flat". weights [n_q, n_k]."""
    _ = translator(language)
    facts = describe.weights_facts(weights)
    sharpest = facts.sharpest
    if sharpest is None:
        return _(NOTHING_SHOWN)
    flat = facts.flat
    if len(flat) == len(facts.rows):
        return _(ALL_FLAT)
    clauses = [_(FOCUS).format(query=_quoted(queries[sharpest.row]), key=_quoted(keys[sharpest.col]),
                               value=_local(format_number(sharpest.value, near_one=True), language))]
    if flat:
        names = LIST_SEPARATOR.join(_quoted(queries[r.row]) for r in flat)
        clauses.append(_(FLAT_ONE if len(flat) == 1 else FLAT_MANY).format(queries=names))
    return CLAUSE_SEPARATOR.join(clauses)


def _grid_table(grid: _Grid, language: str = ENGLISH) -> Table:
    _ = translator(language)
    if grid.values is None:
        return Table(grid.name, [], [], _(NO_NUMBERS).format(name=grid.name, rows=len(grid.rows),
                                                             cols=len(grid.cols)))
    masked = _(MASKED)
    cells = [[_local(hover_number(v, near_one=grid.weights), language) if np.isfinite(v) else masked
              for v in row] for row in grid.values.tolist()]
    return Table(grid.name, list(grid.cols), list(zip(grid.rows, cells, strict=True)))


# --- Bars, lines, histograms --------------------------------------------------------------------


@dataclass
class _Series:
    name: str
    kind: str  # "bar", "scatter", "histogram"
    labels: list[str]  # per value: its category (bars) or its x (points)
    values: np.ndarray  # [n]
    notes: list[str] = field(default_factory=list)  # per bar: words printed on it ("flat"), or ""


def _series(data: list[dict], layout: dict, names: list[str], language: str = ENGLISH) -> list[_Series]:
    found = []
    for index, trace in enumerate(data):
        kind = trace.get("type", "scatter")
        name = _series_name(trace, names, index)
        if kind == "histogram":
            values = values_of(trace.get("x") if trace.get("x") is not None else trace.get("y"))
            found.append(_Series(name, kind, [], values))
            continue
        if kind not in ("bar", "scatter") or trace.get("mode") == "text":
            continue
        across, along = ("y", "x") if trace.get("orientation") == "h" else ("x", "y")
        if trace.get(along) is None:
            continue
        values = values_of(trace[along])  # [n]
        axis = _axis(layout, trace.get(f"{across}axis", across), across)
        labels = _labels(axis, _positions(trace, across, values.size), counted=False, language=language)
        found.append(_Series(name, kind, labels, values, _notes(trace, values)))
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


def series_sentence(series: _Series, y_title: str, language: str = ENGLISH) -> str:
    _ = translator(language)

    def number(value) -> str:
        return _local(format_number(value), language)

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
        bars = [BAR.format(label=_quoted(label), value=number(value))
                for label, value in zip(series.labels, series.values, strict=True)]
        notes = series.notes or [""] * len(bars)
        return LIST_SEPARATOR.join(BAR_NOTE.format(bar=bar, note=note) if note else bar
                                   for bar, note in zip(bars, notes, strict=True))
    if series.kind == "bar":
        return _(SERIES).format(high_label=_quoted(series.labels[high.col]), high=number(high.value),
                                low_label=_quoted(series.labels[low.col]), low=number(low.value))
    if facts.size == 1:
        return _(ONE_POINT).format(y_title=y_title or _(Y_VALUE), value=number(high.value),
                                   at=series.labels[high.col])
    return _(POINTS).format(count=facts.size, y_title=y_title or _(Y_VALUE), low=number(facts.lowest.value),
                            low_at=series.labels[facts.lowest.col], high=number(facts.highest.value),
                            high_at=series.labels[facts.highest.col])


def _series_tables(found: list[_Series], x_title: str, language: str = ENGLISH) -> list[Table]:
    """Series over the same labels share one table (a column each); others get their own."""
    _ = translator(language)
    tables: list[Table] = []
    shared = [s for s in found if s.kind != "histogram"]
    groups: dict[tuple, list[_Series]] = {}
    for s in shared:
        groups.setdefault(tuple(s.labels), []).append(s)
    for labels, members in groups.items():
        columns = [m.name or _(Y_VALUE) for m in members]
        rows = [(label, [_local(hover_number(m.values[i]), language) if np.isfinite(m.values[i]) else ""
                         for m in members])
                for i, label in enumerate(labels)]
        tables.append(Table(LIST_SEPARATOR.join(columns), [x_title] + columns if x_title else columns, rows))
    for s in (s for s in found if s.kind == "histogram"):
        finite = s.values[np.isfinite(s.values)]
        counts, edges = np.histogram(finite, bins=HISTOGRAM_BINS) if finite.size else ([], [0])
        rows = [(_(BIN).format(low=_local(format_number(lo), language),
                               high=_local(format_number(hi), language)), [f"{int(c):d}"])
                for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)]
        tables.append(Table(s.name or _(Y_VALUE), [_(COUNT)], rows))
    return tables


# --- The whole figure ----------------------------------------------------------------------------


def of_figure(fig, language: str | None = None) -> ChartText:
    """Any figure's summary and tables, read from its spec, in ``language`` (by default the language
    the figure's words are written in). Kept on the figure, one per language: the app's figures are
    shared by every reader and never change once built."""
    spec = fig.to_dict() if hasattr(fig, "to_dict") else fig
    layout = spec.get("layout", {}) or {}
    language = language or figure_language(layout)
    kept = getattr(fig, "_chart_text", None)
    if isinstance(kept, dict) and language in kept:
        return kept[language]
    text = _of_spec(spec.get("data", []) or [], layout, language)
    try:
        object.__setattr__(fig, "_chart_text", {**(kept if isinstance(kept, dict) else {}), language: text})
    except (AttributeError, TypeError):
        pass
    return text


def _of_spec(data: list[dict], layout: dict, language: str = ENGLISH) -> ChartText:
    title = _title(layout.get("title"))
    names = _panel_names(data, layout)
    grids = _grids(data, layout, names, language)
    x_title = _title(_axis(layout, "x", "x").get("title"))
    y_title = _title(_axis(layout, "y", "y").get("title"))
    found = _series(data, layout, names, language)
    parts = ([(g.name, grid_sentence(g, language)) for g in grids]
             + [(s.name, series_sentence(s, y_title, language)) for s in found])
    summary = join_summary(title, parts, language)

    def tables() -> list[Table]:  # read again from the spec: a shared figure keeps no second copy
        made = ([_grid_table(g, language) for g in _grids(data, layout, names, language)]
                + _series_tables(_series(data, layout, names, language), x_title, language))
        untitled = title or translator(language)(UNTITLED)
        return cut_tables([t if t.caption else Table(untitled, t.columns, t.rows, t.note) for t in made],
                          language=language)

    return ChartText(summary, tables)


def join_summary(title: str, parts: list[tuple[str, str]], language: str = ENGLISH) -> str:
    """"Title. head 1: ...; head 2: ... and 4 more."; "Title: ..." for a lone untitled panel."""
    _ = translator(language)
    said = parts[:MAX_PANELS_SAID]
    if len(said) == 1 and said[0][0] in ("", title):
        return PANEL_PREFIX.format(panel=title, text=said[0][1]) + "." if title else said[0][1] + "."
    sentences = [PANEL_PREFIX.format(panel=name or _(PANEL_NAME).format(number=i + 1), text=text)
                 for i, (name, text) in enumerate(said)]
    if len(parts) > len(said):
        sentences.append(_(MORE_PANELS).format(count=len(parts) - len(said)))
    body = ". ".join(sentences)
    return ". ".join(p for p in (title, body) if p) + "." if title or body else _(UNTITLED) + "."


def cut_tables(tables: list[Table], budget: int = MAX_TABLE_CELLS, *, language: str = ENGLISH) -> list[Table]:
    """Tables cut by rows so that all of them together hold at most ``budget`` cells."""
    cut = []
    for table in tables:
        width = max(1, len(table.columns))
        keep = max(1, budget // width) if budget > 0 else 0
        if keep < len(table.rows):
            table = Table(table.caption, table.columns, table.rows[:keep],
                          translator(language)(TABLE_CUT).format(shown=keep, total=len(table.rows)))
        budget -= width * len(table.rows)
        cut.append(table)
    return cut


def table_html(tables: list[Table]) -> str:
    """Tables as HTML for st.markdown(..., unsafe_allow_html=True): every label through html_text,
    headers as <th scope>, a caption per table."""
    out = []
    for table in tables:
        head = "".join(f'<th scope="col">{html_text(c)}</th>' for c in table.columns)
        # a header for the row labels' column too, or an empty corner above them
        labelled = bool(table.rows) and len(table.rows[0][1]) < len(table.columns)
        corner = "" if labelled else "<td></td>"
        body = "".join(f'<tr><th scope="row">{html_text(label)}</th>'
                       + "".join(f"<td>{html_text(cell)}</td>" for cell in cells) + "</tr>"
                       for label, cells in table.rows)
        note = f"<p>{html_text(table.note)}</p>" if table.note else ""
        out.append(f'<table class="chart-numbers"><caption>{html_text(table.caption)}</caption>'
                   f"<thead><tr>{corner}{head}</tr></thead><tbody>{body}</tbody></table>{note}")
    return "\n".join(out)


def of_grids(values, rows: list[str], cols: list[str], names: list[str], *, title: str = "",
             attention: bool = False, language: str = ENGLISH) -> ChartText:
    """The text of panels the figure sends as pictures, from the arrays themselves.
    values [panels, n_rows, n_cols]; rows, cols and names as a person reads them."""
    values = np.asarray(values, dtype=float)  # [panels, n_rows, n_cols]
    rows, cols = _distinct([str(r) for r in rows]), _distinct([str(c) for c in cols])
    grids = [_Grid(name, panel, rows, cols, attention, describe.looks_like_weights(panel))
             for name, panel in zip(names, values, strict=True)]
    summary = join_summary(title, [(g.name, grid_sentence(g, language)) for g in grids], language)
    return ChartText(summary,
                     lambda: cut_tables([_grid_table(g, language) for g in grids], language=language))


def of_heads(weights, heads: list[str], queries: list[str], keys: list[str], *,
             language: str = ENGLISH) -> ChartText:
    """Heads' weights [h, n_q, n_k] in words ("head 3: 'sat' attends most to 'cat' (0.67)") and
    as tables, for a chart that draws them other than as a grid (the head view's lines)."""
    return of_grids(weights, queries, keys, heads, attention=True, language=language)


def of_head_view(weights, heads: list[int], tokens: list[str], query: int | None, *,
                 language: str = ENGLISH) -> ChartText:
    """The head view's lines (weights [h, n, n], heads 0-based, query None for every row) as each
    chosen head's sentence and tables."""
    weights = np.asarray(weights, dtype=float)[sorted(heads)]  # [chosen, n, n]
    rows = list(range(weights.shape[1])) if query is None else [query]
    queries = _distinct([str(t) for t in tokens])
    head = translator(language)(HEAD_NAME)
    return of_heads(weights[:, rows, :], [head.format(number=h + 1) for h in sorted(heads)],
                    [queries[r] for r in rows], queries, language=language)


def of_concat(concat, tokens: list[str], n_heads: int, d_v: int, *, language: str = ENGLISH) -> ChartText:
    """The concatenation [n, h * d_v] drawn as a picture: its extremes by head and column, and its numbers."""
    labels = [CONCAT_COLUMN.format(head=h + 1, col=j + 1) for h in range(n_heads) for j in range(d_v)]
    return of_grids(np.asarray(concat)[None], tokens, labels, [""], title=CONCAT_TITLE, language=language)


def of_model(weights: list, *, language: str = ENGLISH) -> ChartText:
    """The model view (layers x [h, n, n]): each layer's heads grouped by the pattern they follow,
    and a table of every head's mean normalised entropy and pattern."""
    _ = translator(language)
    layers = []
    table = []
    for layer, layer_weights in enumerate(weights):  # [h, n, n]
        patterns = [head_pattern(w) for w in layer_weights]
        spread = [float(np.mean(normalised_entropy(w))) for w in layer_weights]
        groups: dict[str, list[int]] = {}
        for head, pattern in enumerate(patterns):
            groups.setdefault(pattern, []).append(head + 1)
        said = CLAUSE_SEPARATOR.join(
            _(PATTERN_HEADS).format(pattern=pattern, heads=LIST_SEPARATOR.join(map(str, numbers)))
            for pattern, numbers in groups.items())
        layers.append(_(LAYER_PATTERNS).format(layer=layer + 1, groups=said))
        table.append((_(LAYER_NAME).format(number=layer + 1),
                      [HEAD_CELL.format(spread=_local(f"{s:.2f}", language), pattern=p)
                       for s, p in zip(spread, patterns, strict=True)]))
    n_heads = len(weights[0]) if weights else 0
    summary = _(MODEL_OVERVIEW).format(layers=len(weights), heads=n_heads) + " " + ". ".join(layers) + "."
    columns = [_(HEAD_NAME).format(number=h + 1) for h in range(n_heads)]
    return ChartText(summary, lambda: [Table(_(MODEL_TABLE), columns, table)])


def described(summary: str, fig, language: str | None = None) -> ChartText:
    """A summary written by the page for this figure, with the tables read from the figure."""
    return ChartText(summary, of_figure(fig, language).tables)
