"""Every chart has a text alternative: a summary in words as its accessible name, and its numbers
as a table on request.

Pure tests read figures the app draws (app/charts/chart_text.py against naive loops over the same
arrays); AppTest tests walk the workbench, the presenter and Compare and check every chart there.
"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser

import numpy as np
import pytest

from app.charts import (
    bar_figures,
    chart_tables,
    chart_text,
    figure_reading,
    figure_style,
    figures,
    number_text,
)
from mha_core.analysis import FLAT_AT, head_pattern
from tests.apptest_util import (
    decode,
    edit_cell,
    fresh_app,
    goto,
    open_address,
    presenter_screens,
    unescaped,
)

# --- Reading tables back ------------------------------------------------------------------------


class _Tables(HTMLParser):
    """Each <table>: its caption, header row and body rows as the text of their cells."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": "", "rows": []})
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "caption":
            self._in_caption = False
        elif tag in ("td", "th") and self._row is not None:
            self._row.append("".join(self._cell or []))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1]["rows"].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._in_caption:
            self.tables[-1]["caption"] += data
        elif self._cell is not None:
            self._cell.append(data)


def read_tables(markup: str) -> list[dict]:
    parser = _Tables()
    parser.feed(markup)
    return parser.tables


# --- A naive reference for one head's sentence --------------------------------------------------


def expected_weights_sentence(weights, queries, keys) -> str:
    """The sharpest row's top key (first of equals) and the flat rows, by plain loops."""
    best = None
    flat = []
    for i, row in enumerate(weights.tolist()):
        seen = [(j, v) for j, v in enumerate(row) if math.isfinite(v)]
        col, value = max(seen, key=lambda jv: jv[1])  # max keeps the first of equals
        if best is None or value > best[2]:
            best = (i, col, value)
        entropy = -sum(v * math.log(v) for _, v in seen if v > 0)
        if len(seen) > 1 and entropy / math.log(len(seen)) >= FLAT_AT:
            flat.append(i)
    text = (f"'{queries[best[0]]}' attends most to '{keys[best[1]]}' "
            f"({number_text.format_number(best[2], near_one=True)})")
    if flat:
        verb = "is" if len(flat) == 1 else "are"
        text += "; " + ", ".join(f"'{queries[i]}'" for i in flat) + f" {verb} nearly flat"
    return text


TOKENS = ["the", "cat", "<b>sat</b>"]
HEAD_2 = np.array([[1 / 3, 1 / 3, 1 / 3], [0.20, 0.10, 0.70], [0.02, 0.67, 0.31]])  # [n_q, n_k]


def test_a_head_is_summed_up_as_its_sharpest_row_and_its_flat_ones():
    weights = np.stack([np.eye(3) * 0.9 + 0.1 / 3, HEAD_2])  # [h, n_q, n_k]
    fig = figures.head_grids(weights, TOKENS, TOKENS, kind="weights", head_names=["Head 1", "Head 2"])
    summary = chart_text.of_figure(fig).summary
    assert f"Head 2: {expected_weights_sentence(HEAD_2, TOKENS, TOKENS)}." in summary
    assert summary.startswith(f"Head 1: {expected_weights_sentence(weights[0], TOKENS, TOKENS)}")


def test_the_issues_example_sentence():
    weights = np.array([[[1 / 3, 1 / 3, 1 / 3], [0.30, 0.40, 0.30], [0.10, 0.67, 0.23]]])
    fig = figures.head_grids(weights, ["the", "cat", "sat"], ["the", "cat", "sat"], kind="weights",
                             head_names=["Head 2"])
    assert chart_text.of_figure(fig).summary == ("Head 2: 'sat' attends most to 'cat' (0.67); 'the', 'cat' "
                                                 "are nearly flat.")


@pytest.mark.parametrize("seed", range(6))
def test_random_heads_match_the_reference_and_the_printed_precision(seed):
    rng = np.random.default_rng(seed)
    h, n_q, n_k = 3, int(rng.integers(1, 7)), int(rng.integers(1, 7))
    weights = rng.dirichlet(np.full(n_k, rng.choice([0.3, 3.0, 50.0])), size=(h, n_q))  # [h, n_q, n_k]
    queries, keys = [f"q{i}" for i in range(n_q)], [f"k{j}" for j in range(n_k)]
    fig = figures.head_grids(weights, queries, keys, kind="weights")
    summary = chart_text.of_figure(fig).summary
    for head in range(h):
        if all(len(keys) > 1 and _flat(row) for row in weights[head]):
            assert f"head {head + 1}: every query spreads its weight nearly evenly" in summary
        else:
            assert f"head {head + 1}: {expected_weights_sentence(weights[head], queries, keys)}" in summary


def _flat(row) -> bool:
    return -sum(v * math.log(v) for v in row if v > 0) / math.log(len(row)) >= FLAT_AT


def test_masked_cells_take_no_part_and_say_masked_in_the_table():
    causal = np.tril(np.ones((3, 3), dtype=bool))
    weights = np.array([[[1.0, 0, 0], [0.5, 0.5, 0], [0.1, 0.2, 0.7]]])
    fig = figures.head_grids(weights, TOKENS, TOKENS, kind="weights", mask=causal, head_names=["A"])
    text = chart_text.of_figure(fig)
    assert text.summary == "A: 'the' attends most to 'the' (1.00); 'cat' is nearly flat."
    rows = read_tables(chart_tables.table_html(text.tables()))[0]["rows"]
    assert rows[1] == ["the", "1.00", "masked", "masked"]


def test_a_matrix_says_its_largest_and_smallest_cell_at_the_printed_precision():
    values = np.array([[0.123, -2.5], [3.456, 0.0]])  # [2, 2]
    fig = figures.matrix_heatmap(values, ["the", "cat"], figure_style.dims("d", 2), title="X [2 × 2]")
    assert chart_text.of_figure(fig).summary == ("X [2 × 2]: largest 3.46 at 'cat', 'd1', smallest -2.50 at "
                                                 "'the', 'd2'.")


def test_the_table_holds_every_number_at_hover_precision_and_labels_literally():
    weights = np.stack([HEAD_2, HEAD_2[::-1]])  # [h, n_q, n_k]
    fig = figures.head_grids(weights, TOKENS, TOKENS, kind="weights", head_names=["A", "B"])
    markup = chart_tables.table_html(chart_text.of_figure(fig).tables())
    assert "<b>" not in markup and "&lt;b&gt;sat&lt;/b&gt;" in markup
    assert markup.count('scope="col"') == 2 * 3 and markup.count('scope="row"') == 2 * 3
    tables = read_tables(markup)
    assert [t["caption"] for t in tables] == ["A", "B"]
    for table, head in zip(tables, weights, strict=True):
        assert table["rows"][0] == ["", *TOKENS]
        assert [row[0] for row in table["rows"][1:]] == TOKENS
        assert [row[1:] for row in table["rows"][1:]] == [
            [number_text.hover_number(v, near_one=True) for v in line] for line in head.tolist()]


def test_labels_that_thin_out_on_the_axis_are_named_by_position():
    n = 30
    tokens = [f"t{i}" for i in range(n)]
    values = np.random.default_rng(1).normal(size=(n, n))
    fig = figures.matrix_heatmap(values, tokens, tokens, title="big")
    tables = chart_text.of_figure(fig).tables()
    labels = tables[0].columns
    spec_ticks = fig["layout"]["xaxis"]["ticktext"]
    assert len(spec_ticks) < n  # the axis shows some labels only
    assert all(label in (tokens[i], f"position {i + 1}") for i, label in enumerate(labels))
    assert len(tables[0].rows) == n


def test_repeated_tokens_are_told_apart_by_position():
    weights = np.array([[[0.1, 0.9], [0.8, 0.2]]])
    fig = figures.head_grids(weights, ["the", "the"], ["the", "the"], kind="weights", head_names=["A"])
    assert chart_text.of_figure(fig).summary == "A: 'the (1)' attends most to 'the (2)' (0.90)."


def test_a_picture_panel_says_so_and_big_tables_are_cut():
    n = 80  # above figure_layout.IMAGE_FROM_CELLS: sent as a picture
    fig = figures.head_grids(np.full((1, n, n), 1 / n), list(map(str, range(n))), list(map(str, range(n))),
                             kind="weights", head_names=["A"])
    text = chart_text.of_figure(fig)
    assert text.summary == f"A: {n} × {n} cells drawn as a picture, too many to list."
    wide = chart_tables.Table("t", ["a"] * 100, [(str(i), ["1"] * 100) for i in range(80)])
    cut = chart_tables.cut_tables([wide])
    assert len(cut[0].rows) == chart_tables.MAX_TABLE_CELLS // 100 and "of 80 rows" in cut[0].note


def test_bars_are_read_out_one_by_one():
    weights = np.stack([HEAD_2, HEAD_2[::-1]])
    fig = bar_figures.query_bars(weights, 2, TOKENS, head_names=["A", "B"])
    text = chart_text.of_figure(fig)
    assert text.summary == ("A: 'the' 0.02, 'cat' 0.67, '<b>sat</b>' 0.31. "
                            "B: 'the' 0.33, 'cat' 0.33, '<b>sat</b>' 0.33.")
    table = read_tables(chart_tables.table_html(text.tables()))[0]
    assert table["rows"][0] == ["key", "A", "B"]
    assert table["rows"][2] == ["cat", number_text.hover_number(0.67), number_text.hover_number(1 / 3)]


# --- Every chart of the pages ---------------------------------------------------------------------


def charts_and_numbers(at) -> list[tuple[object, object]]:
    """Each plotly chart of the last run with the element drawn right after it."""
    found = []

    def walk(node):
        children = list(getattr(node, "children", {}).values())
        for index, child in enumerate(children):
            if getattr(child, "type", None) == "plotly_chart":
                found.append((child, children[index + 1] if index + 1 < len(children) else None))
            walk(child)

    walk(at.main)
    return found


def chart_key(element) -> str:
    return element.proto.id.rsplit("-", 1)[-1]


OWN_WORDS = {"model_overview"}  # charts whose page writes their summary, not naming each panel


def assert_every_chart_is_described(at) -> list[str]:
    """Every chart has a summary naming its panels and a closed 'Numbers as a table' after it."""
    pairs = charts_and_numbers(at)
    assert pairs, "no chart drawn"
    for element, after in pairs:
        key, spec = chart_key(element), json.loads(element.proto.spec)
        summary = element.proto.alt
        assert len(summary) > 20, (key, summary)
        for note in spec["layout"].get("annotations", []) if key not in OWN_WORDS else []:
            if note.get("xref", "paper") == "paper" and len(spec["data"]) > 1:
                assert figure_reading.plain(note["text"]) in summary, (key, note["text"], summary)
        assert after is not None and getattr(after, "type", None) == "expander", key
        assert after.label == chart_tables.TABLE_LABEL, key
        assert not after.children, f"{key}: the closed table was built"
    return [chart_key(element) for element, _ in pairs]


def open_every_table(at, keys: list[str]) -> dict[str, str]:
    """Open every chart's table and return each one's HTML, by chart key."""
    for key in keys:
        at.session_state[f"{key}_numbers"] = True
    at.run()
    assert not at.exception
    opened = {}
    for element, after in charts_and_numbers(at):
        if chart_key(element) not in keys:
            continue
        markup = [m.value for m in after.children.values() if getattr(m, "type", None) == "markdown"
                  and "<table" in m.value]
        assert markup, chart_key(element)
        opened[chart_key(element)] = markup[0]
    return opened


def assert_tables_hold_the_heatmaps(at, opened: dict[str, str]) -> None:
    """Every heatmap value of every chart is in its table at hover precision."""
    for element, _ in charts_and_numbers(at):
        if chart_key(element) not in opened:
            continue
        spec = json.loads(element.proto.spec)
        cells = [row[1:] for table in read_tables(opened[chart_key(element)]) for row in table["rows"][1:]]
        flat = {cell for row in cells for cell in row}
        for trace in spec["data"]:
            if trace["type"] != "heatmap" or trace.get("hoverinfo") == "skip":
                continue
            values = decode(trace["z"]).astype(float)
            weights = (trace.get("zmin") == 0 and trace.get("zmax") == 1
                       and chart_text.describe.looks_like_weights(values))
            for v in values.ravel().tolist():
                want = number_text.hover_number(v, near_one=weights) if math.isfinite(v) else "masked"
                assert want in flat, (chart_key(element), v)


def test_every_workbench_chart_has_its_summary_and_table():
    at = fresh_app()
    keys = assert_every_chart_is_described(at)
    assert {"chart_weights", "chart_scores", "chart_concat", "chart_disagreement"} <= set(keys)
    weights = next(e for e, _ in charts_and_numbers(at) if chart_key(e) == "chart_weights")
    assert "attends most to" in weights.proto.alt
    opened = open_every_table(at, keys)
    assert_tables_hold_the_heatmaps(at, opened)
    for element, after in charts_and_numbers(at):  # the summary is written out above the numbers
        captions = [unescaped(m.value) for m in after.children.values() if type(m).__name__ == "Caption"]
        assert captions == [element.proto.alt], chart_key(element)


def test_every_presenter_chart_on_every_screen_has_its_summary_and_table():
    at = open_address({"example": "the_cat_sat_two_heads"}, "present")
    seen = set()
    for _ in presenter_screens(at):
        if charts_and_numbers(at):
            seen.update(assert_every_chart_is_described(at))
    assert len(seen) >= 4, seen
    keys = assert_every_chart_is_described(at) if charts_and_numbers(at) else []
    if keys:
        assert_tables_hold_the_heatmaps(at, open_every_table(at, keys))


def test_compare_charts_have_their_summaries_and_tables():
    at = fresh_app()
    at.button(key="compare_pin").click().run()
    edit_cell(at, "w_q", 0, 0, "-1", head=0)
    assert not at.exception
    keys = assert_every_chart_is_described(at)
    compare = [k for k in keys if k.startswith("compare_")]
    assert set(compare) == {"compare_weights_A", "compare_weights_B", "compare_weights_delta",
                            "compare_output"}
    delta = next(e for e, _ in charts_and_numbers(at) if chart_key(e) == "compare_weights_delta")
    assert "B − A: head 1" in delta.proto.alt
    assert_tables_hold_the_heatmaps(at, open_every_table(at, compare))


def test_distances_name_the_furthest_and_closest_heads():
    distances = np.array([[0, 0.5, 1.2], [0.5, 0, 0.3], [1.2, 0.3, 0]])
    fig = figures.disagreement_heatmap(distances, metric="l2")
    assert chart_text.of_figure(fig).summary == ("'head 1' and 'head 3' are furthest apart (1.20), "
                                                 "'head 2' and 'head 3' closest (0.30).")
    two = figures.disagreement_heatmap(np.array([[0, 0.81], [0.81, 0]]), metric="l2")
    assert chart_text.of_figure(two).summary == "'head 1' and 'head 2' are 0.81 apart."


def test_a_bars_words_are_read_with_it():
    fig = bar_figures.entropy_bars(np.array([0.2, 0.97]), flat_at=FLAT_AT)
    assert chart_text.of_figure(fig).summary == "'head 1' 0.20, 'head 2' 0.97 (flat)."


def test_keys_whose_labels_thinned_out_take_the_queries_labels():
    n = 20  # the key axis has no room for every label; the query axis does
    tokens = [f"w{i}" for i in range(n)]
    weights = np.full((1, n, n), 0.1 / (n - 1))
    weights[0, np.arange(n), (np.arange(n) + 7) % n] = 0.9
    weights[0, 0, 7] = 0.95
    weights[0, 0, [j for j in range(n) if j != 7]] = 0.05 / (n - 1)
    fig = figures.head_grids(weights, tokens, tokens, kind="weights", head_names=["A"], width=400)
    assert len(fig["layout"]["xaxis"]["ticktext"]) < n
    assert chart_text.of_figure(fig).summary == "A: 'w0' attends most to 'w7' (0.95)."


def test_the_head_view_and_the_model_overview_in_words():
    weights = np.array([[[1.0, 0.0], [0.3, 0.7]], [[0.5, 0.5], [0.5, 0.5]]])  # [h, n, n]
    text = chart_text.of_head_view(weights, [1, 0], ["a", "b"], query=None)
    assert text.summary == ("head 1: 'a' attends most to 'a' (1.00). head 2: every query spreads its weight "
                            "nearly evenly.")
    one_row = chart_text.of_head_view(weights, [0], ["a", "b"], query=1)
    assert one_row.summary == "head 1: 'b' attends most to 'b' (0.70)."
    overview = chart_text.of_model([weights, weights[::-1]])
    assert overview.summary.startswith("2 layers of 2 heads, each head's pattern. layer 1: ")
    table = overview.tables()[0]
    assert [label for label, _ in table.rows] == ["layer 1", "layer 2"]
    assert table.columns == ["head 1", "head 2"]
    assert table.rows[0][1][1] == f"1.00 {head_pattern(weights[1])}"


def test_the_labs_and_the_real_model_charts_have_their_summaries_and_tables():
    from mha_core.pretrained import ModelNotInstalled, load_minilm

    at = fresh_app()
    goto(at, "labs")
    assert not at.exception
    labs = set(assert_every_chart_is_described(at))
    assert {"lab_chart_weights", "lab_chart_gap", "lab_chart_spread"} <= labs
    try:
        load_minilm()
    except ModelNotInstalled:  # pragma: no cover - the Makefile installs it
        return
    goto(at, "model")
    alts = {}
    for tab in ("Model overview", "One layer's heads", "Lines (head view)"):  # only the open tab runs
        at.session_state["model_tab"] = tab
        at.run()
        assert not at.exception
        assert_every_chart_is_described(at)
        alts.update({chart_key(e): e.proto.alt for e, _ in charts_and_numbers(at)})
    assert "attends most to" in alts["model_lines"]  # the head view's lines, in words
    assert alts["model_overview"].startswith("6 layers of 12 heads") and "layer 6:" in alts["model_overview"]
    assert "drawn as a picture" not in alts["model_contributions"]  # described from the arrays
    assert "furthest apart" in alts["model_disagreement"]
    at.session_state["model_tab"] = "Model overview"
    at.run()
    opened = open_every_table(at, ["model_overview"])
    assert read_tables(opened["model_overview"])[0]["rows"][0][1:] == [f"head {h}" for h in range(1, 13)]


def test_numbered_columns_between_the_ticks_keep_their_names():
    values = np.zeros((2, 300))
    values[1, 216] = 3.0  # [2, 300]
    fig = figures.matrix_heatmap(values, ["le", "chat"], figure_style.dims("d", 300), title="X")
    assert "d217" not in fig["layout"]["xaxis"]["ticktext"]
    assert chart_text.of_figure(fig).summary.startswith("X: largest 3.00 at 'chat', 'd217', smallest 0.00")


def test_a_cell_opened_from_the_browser_is_three_small_integers_or_nothing():
    """What the cell opener's JavaScript sends is checked before it touches a selection: a scripted
    page may send anything (issue 15's rule: every route in is bounded)."""
    from app.adapter.cell_opener import MOST_POSITIONS, cell_of

    assert cell_of({"head": 1, "query": 2, "key": 0}) == (1, 2, 0)
    for sent in (None, "1.2.0", [1, 2, 0], {"head": 1, "query": 2}, {"head": -1, "query": 0, "key": 0},
                 {"head": True, "query": 0, "key": 0}, {"head": 1.0, "query": 0, "key": 0},
                 {"head": MOST_POSITIONS, "query": 0, "key": 0}, {"head": "1", "query": 0, "key": 0}):
        assert cell_of(sent) is None, sent
