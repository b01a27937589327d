"""A chart in words and numbers: the short summary a screen reader reads as the chart's name, and
the numbers as tables (built only when someone opens them). This module holds the entry points
(``of_figure``, ``of_grids``, ``of_head_view``, ``of_model``, ...) and joins the panels' sentences.

``of_figure(fig)`` reads any figure the app draws (heatmap panels, bars, lines, histograms) from
its spec (app/charts/figure_reading.py): titles, axis labels, and the values themselves;
``course.describe`` finds the facts, grid_text.py and series_text.py only word them, and
chart_tables.py lays out the tables. Every sentence a person reads is a template at the top of the
module that words it, marked for the catalogues and translated where the sentence is built, in the
``language`` given (numbers written as that language writes them: 0,67 in German). Labels come from
users: they stay plain text here (an ARIA label and ``html_text`` in ``table_html`` show them
literally).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from app.charts.chart_tables import Table, cut_tables
from app.charts.chart_words import CLAUSE_SEPARATOR, LIST_SEPARATOR, local_number
from app.charts.figure_reading import axis_layout, distinct_labels, figure_language, panel_names, title_text
from app.charts.grid_text import Grid, grid_sentence, grid_table, read_grids
from app.charts.series_text import read_series, series_sentence, series_tables
from course import describe
from course.i18n import ENGLISH, N_, translator
from mha_core.analysis import head_pattern, normalised_entropy

# --- Words (templates) -------------------------------------------------------------------------

PANEL_PREFIX = "{panel}: {text}"
MORE_PANELS = N_("and {count} more")
PANEL_NAME = N_("panel {number}")
UNTITLED = N_("Chart")

HEAD_NAME = N_("head {number}")
LAYER_NAME = N_("layer {number}")
CONCAT_TITLE = "Concat(head_1, ..., head_h)"
CONCAT_COLUMN = "h{head:d}·{col:d}"
MODEL_OVERVIEW = N_("{layers} layers of {heads} heads, each head's pattern.")
LAYER_PATTERNS = N_("layer {layer}: {groups}")
PATTERN_HEADS = N_("{pattern} (heads {heads})")
HEAD_CELL = "{spread} {pattern}"
MODEL_TABLE = N_("Each head's mean normalised entropy and pattern")

MAX_PANELS_SAID = 16  # a summary names at most this many panels or series, then "and N more"


@dataclass(frozen=True)
class ChartText:
    """A chart's summary (its accessible name) and its tables, made when asked for."""

    summary: str
    tables: Callable[[], list[Table]] = field(default=lambda: [], compare=False)


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
    title = title_text(layout.get("title"))
    names = panel_names(data, layout)
    grids = read_grids(data, layout, names, language)
    x_title = title_text(axis_layout(layout, "x", "x").get("title"))
    y_title = title_text(axis_layout(layout, "y", "y").get("title"))
    found = read_series(data, layout, names, language)
    parts = ([(g.name, grid_sentence(g, language)) for g in grids]
             + [(s.name, series_sentence(s, y_title, language)) for s in found])
    summary = join_summary(title, parts, language)

    def tables() -> list[Table]:  # read again from the spec: a shared figure keeps no second copy
        made = ([grid_table(g, language) for g in read_grids(data, layout, names, language)]
                + series_tables(read_series(data, layout, names, language), x_title, language))
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


def of_grids(values, rows: list[str], cols: list[str], names: list[str], *, title: str = "",
             attention: bool = False, language: str = ENGLISH) -> ChartText:
    """The text of panels the figure sends as pictures, from the arrays themselves.
    values [panels, n_rows, n_cols]; rows, cols and names as a person reads them."""
    values = np.asarray(values, dtype=float)  # [panels, n_rows, n_cols]
    rows, cols = distinct_labels([str(r) for r in rows]), distinct_labels([str(c) for c in cols])
    grids = [Grid(name, panel, rows, cols, attention, describe.looks_like_weights(panel))
             for name, panel in zip(names, values, strict=True)]
    summary = join_summary(title, [(g.name, grid_sentence(g, language)) for g in grids], language)
    return ChartText(summary,
                     lambda: cut_tables([grid_table(g, language) for g in grids], language=language))


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
    queries = distinct_labels([str(t) for t in tokens])
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
                      [HEAD_CELL.format(spread=local_number(f"{s:.2f}", language), pattern=p)
                       for s, p in zip(spread, patterns, strict=True)]))
    n_heads = len(weights[0]) if weights else 0
    summary = _(MODEL_OVERVIEW).format(layers=len(weights), heads=n_heads) + " " + ". ".join(layers) + "."
    columns = [_(HEAD_NAME).format(number=h + 1) for h in range(n_heads)]
    return ChartText(summary, lambda: [Table(_(MODEL_TABLE), columns, table)])


def described(summary: str, fig, language: str | None = None) -> ChartText:
    """A summary written by the page for this figure, with the tables read from the figure."""
    return ChartText(summary, of_figure(fig, language).tables)
