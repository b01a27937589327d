"""Pure figure tests: data, labels, colour ranges, literal tokens, repeated tokens, legibility.

Layout is checked on the spec (domains, margins, tick lists, fonts); one test opens the figures
of example H in Chromium and looks for blank panels and overlapping labels (skipped without it).
"""

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.colors import get_colorscale, sample_colorscale, unlabel_rgb
from plotly.offline import get_plotlyjs

from app.charts import bar_figures, figure_cache, figure_layout, figure_style, figures, number_text, pictures
from course.examples import all_examples
from mha_core import head_contributions, normalised_entropy, pairwise_disagreement
from tests.apptest_util import chart_specs, pick_example

MINUS = "\u2212"


def spec(fig) -> dict:
    """The figure as the browser receives it."""
    return json.loads(pio.to_json(fig, validate=False))


def z_of(trace) -> np.ndarray:
    from tests.apptest_util import (
    decode,
)
    return decode(trace["z"]).astype(float)


def heatmaps(fig: dict) -> list[dict]:
    return [t for t in fig["data"] if t["type"] == "heatmap"]


def axes(fig: dict, letter: str) -> list[dict]:
    """x or y axes of the panels, in panel order (xaxis, xaxis2, ...)."""
    layout = fig["layout"]
    names = [f"{letter}axis"] + [f"{letter}axis{i}" for i in range(2, 100)]
    return [layout[n] for n in names if n in layout]


def panel_boxes(fig: dict) -> list[tuple[float, float, float, float]]:
    """(x0, x1, y0, y1) of every panel in paper fractions."""
    return [(*x["domain"], *y["domain"]) for x, y in zip(axes(fig, "x"), axes(fig, "y"), strict=True)]


def plot_size(fig: dict, width: int = figure_layout.FULL_WIDTH) -> tuple[float, float]:
    """Pixel width (at the planned width) and height of the plot area inside the margins."""
    m = fig["layout"]["margin"]
    return width - m["l"] - m["r"], fig["layout"]["height"] - m["t"] - m["b"]


def label_px(text: str, font: float) -> float:
    return len(text) * 0.6 * font


# --- Data, scales and literal tokens ---------------------------------------------------------


def test_weights_grid_has_one_panel_per_head_on_one_fixed_scale(rng):
    weights = rng.dirichlet(np.ones(4), size=(3, 4))  # [h=3, n_q=4, n_k=4]
    fig = spec(figures.head_grids(weights, list("abcd"), list("abcd"), kind="weights"))
    assert len(heatmaps(fig)) == 3
    for head, trace in enumerate(heatmaps(fig)):
        np.testing.assert_allclose(z_of(trace), weights[head], atol=1e-6)
        assert trace["z"]["dtype"] == "f4"  # float32 on the wire
        assert (trace["zmin"], trace["zmax"]) == (0.0, 1.0)
    assert [t["showscale"] for t in heatmaps(fig)] == [False, False, True]
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["head 1", "head 2", "head 3"]


def test_score_grids_share_one_range_centred_at_zero(rng):
    scores = np.stack([rng.normal(size=(3, 3)), 5 * rng.normal(size=(3, 3))])
    fig = spec(figures.head_grids(scores, list("abc"), list("abc"), kind="scores"))
    bound = np.abs(scores).max()
    for trace in fig["data"]:
        assert trace["zmin"] == pytest.approx(-bound) and trace["zmax"] == pytest.approx(bound)
        assert trace["colorscale"] == figure_style.SIGNED_SCALE


def test_repeated_tokens_keep_every_row_and_column():
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    weights = np.full((1, 6, 6), 1 / 6)
    fig = spec(figures.head_grids(weights, tokens, tokens, kind="weights"))
    assert z_of(fig["data"][0]).shape == (6, 6)
    assert fig["data"][0]["x0"] == 1 and fig["data"][0]["y0"] == 1  # positions count from 1
    assert fig["layout"]["yaxis"]["tickvals"] == list(range(1, 7))
    assert fig["layout"]["yaxis"]["ticktext"] == tokens
    assert fig["layout"]["xaxis"]["ticktext"] == tokens
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"  # queries read top to bottom
    hover = fig["data"][0]["hovertext"]
    assert hover[0][4].startswith("query the (1), key the (5):")  # repeated tokens say where they are


def test_tokens_are_escaped_in_ticks_and_hover():
    tokens = ["<b>x</b>", "$x$", "a&b"]
    fig = spec(figures.head_grids(np.full((1, 3, 3), 1 / 3), tokens, tokens, kind="weights"))
    assert fig["layout"]["xaxis"]["ticktext"] == ["&lt;b&gt;x&lt;/b&gt;", "&#36;x&#36;", "a&amp;b"]
    hover = json.dumps(fig["data"][0]["hovertext"])
    assert "<b>" not in hover and "$x$" not in hover


def test_concat_bands_outline_each_head():
    fig = spec(figures.concat_bands(np.ones((2, 6)), ["a", "b"], n_heads=3, d_v=2))
    shapes = fig["layout"]["shapes"]
    assert [(s["x0"], s["x1"]) for s in shapes] == [(0.5, 2.5), (2.5, 4.5), (4.5, 6.5)]
    assert len({s["line"]["color"] for s in shapes}) == 3
    assert fig["layout"]["xaxis"]["ticktext"] == ["h1·1", "h1·2", "h2·1", "h2·2", "h3·1", "h3·2"]


def test_concat_bands_label_one_tick_per_head_when_columns_are_many(rng):
    fig = spec(figures.concat_bands(rng.normal(size=(3, 512)), ["a", "b", "c"], n_heads=8, d_v=64))
    axis = fig["layout"]["xaxis"]
    assert axis["ticktext"] == [f"head {i}" for i in range(1, 9)]
    assert axis["tickvals"] == [64 * i + 32.5 for i in range(8)]  # the middle of each band


def test_query_bars_carry_each_heads_row(rng):
    weights = rng.dirichlet(np.ones(3), size=(2, 3))  # [h=2, n_q=3, n_k=3]
    fig = spec(bar_figures.query_bars(weights, 1, ["a", "b", "c"]))
    assert [t["name"] for t in fig["data"]] == ["head 1", "head 2"]
    for head, trace in enumerate(fig["data"]):
        np.testing.assert_allclose(z_of({"z": trace["y"]}), weights[head, 1], atol=1e-6)
    assert fig["data"][0]["marker"]["color"] != fig["data"][1]["marker"]["color"]
    assert fig["data"][1]["hovertext"][2] == f"head 2, key c: weight {weights[1, 1, 2]:.4f}"


def test_disagreement_and_entropy_figures():
    d = np.array([[0.0, 0.813], [0.813, 0.0]])
    fig = spec(figures.disagreement_heatmap(d, metric="l2"))
    np.testing.assert_allclose(z_of(fig["data"][0]), d, atol=1e-6)
    assert fig["data"][0]["zmax"] == pytest.approx(np.sqrt(2))
    assert fig["data"][0]["hovertext"][0][1] == "head 1, head 2: distance 0.813"
    bars = spec(bar_figures.entropy_bars(np.array([0.99, 0.5]), flat_at=0.95))
    assert bars["data"][0]["text"] == ["flat", ""]


def test_side_by_side_uses_one_scale_for_input_and_output():
    fig = spec(figures.side_by_side(np.ones((2, 2)), -3 * np.ones((2, 2)), ["a", "b"],
                                    left_title="input X", right_title="output"))
    assert {t["zmin"] for t in fig["data"]} == {-3.0} and {t["zmax"] for t in fig["data"]} == {3.0}


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        figures.head_grids(np.zeros((1, 2, 2)), ["a", "b"], ["a", "b"], kind="heat")


# --- 1. Panels never overlap -----------------------------------------------------------------


def boxes_apart(boxes) -> bool:
    return all(a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2]
               for i, a in enumerate(boxes) for b in boxes[i + 1:])


@pytest.mark.parametrize("h", [1, 2, 3, 4, 5, 8, 12, 16])
def test_head_grids_wrap_into_rows_of_at_most_four_apart(rng, h):
    tokens = "the cat sat on the mat".split()
    fig = spec(figures.head_grids(rng.dirichlet(np.ones(6), size=(h, 6)), tokens, tokens, kind="weights"))
    boxes = panel_boxes(fig)
    assert len(boxes) == h and boxes_apart(boxes)
    rows = sorted({round(b[3], 6) for b in boxes}, reverse=True)  # panel tops, one per row of panels
    per_row = [sum(round(b[3], 6) == top for b in boxes) for top in rows]
    assert max(per_row) <= 4 and len(rows) == math.ceil(h / max(per_row))
    _, plot_h = plot_size(fig)
    tick, title = figure_layout.NORMAL.tick_font, figure_layout.NORMAL.title_font
    for upper, lower in zip(rows, rows[1:], strict=False):
        bottom_of_upper = min(b[2] for b in boxes if round(b[3], 6) == upper)
        gap_px = (bottom_of_upper - lower) * plot_h
        assert gap_px >= tick + title + figure_layout.TICK_PAD  # room for x tick labels and the next titles
    # Row labels only on the first panel of each row of panels, so none is drawn over a neighbour.
    y_axes = axes(fig, "y")
    firsts = [b[0] == min(o[0] for o in boxes) for b in boxes]
    assert [y["showticklabels"] for y in y_axes] == firsts
    assert all(y["ticktext"] == tokens for y in y_axes)


def test_left_margin_is_sized_from_the_longest_row_label():
    short = spec(figures.head_grids(np.full((2, 2, 2), 0.5), ["a", "b"], ["a", "b"], kind="weights"))
    long = spec(figures.head_grids(np.full((2, 2, 2), 0.5), ["a", "extraordinarily"], ["a", "b"],
                                   kind="weights"))
    font = figure_layout.NORMAL.tick_font
    assert long["layout"]["margin"]["l"] >= label_px("extraordinarily", font) + font  # label + "query"
    grown = long["layout"]["margin"]["l"] - short["layout"]["margin"]["l"]
    assert grown >= label_px("extraordinar", font) - 1


def test_height_grows_with_rows_of_panels_and_query_rows(rng):
    def height(h, n, n_cols=30):  # 30 columns: no numbers, so always four panels per row
        fig = figures.head_grids(rng.normal(size=(h, n, n_cols)), [f"t{i}" for i in range(n)],
                                 figure_style.dims("d", n_cols), kind="signed", cols_are_tokens=False)
        return fig["layout"]["height"]
    assert height(4, 6) < height(5, 6) < height(9, 6) < height(13, 6)  # one to four rows of panels
    assert height(4, 3) < height(4, 6) < height(4, 12) < height(4, 64)
    assert height(4, 512) <= height(4, 64) + figure_layout.NORMAL.max_panel  # tall grids stop growing


@pytest.mark.parametrize("h, n", [(1, 3), (2, 3), (4, 6), (8, 6), (16, 6), (8, 12)])
def test_head_grid_cells_are_square_ish(rng, h, n):
    tokens = [f"t{i}" for i in range(n)]
    fig = spec(figures.head_grids(rng.dirichlet(np.ones(n), size=(h, n)), tokens, tokens, kind="weights"))
    plot_w, plot_h = plot_size(fig)
    x0, x1, y0, y1 = panel_boxes(fig)[0]
    aspect = ((x1 - x0) * plot_w / n) / ((y1 - y0) * plot_h / n)
    assert 0.5 <= aspect <= figure_layout.MAX_CELL_ASPECT + 0.01


def test_qkv_panels_label_the_rows_of_q_and_of_k_only_when_k_has_its_own_tokens(rng):
    q, k, v = rng.normal(size=(3, 64)), rng.normal(size=(5, 64)), rng.normal(size=(5, 64))
    cross = spec(figures.qkv_panels(q, k, v, ["le", "chat", "dort"], ["the", "cat", "is", "sleeping", "."]))
    assert [y["showticklabels"] for y in axes(cross, "y")] == [True, True, False]
    boxes = panel_boxes(cross)
    assert boxes_apart(boxes)
    plot_w, _ = plot_size(cross)
    gap_px = (boxes[1][0] - boxes[0][1]) * plot_w * figure_layout.FIT_SLACK  # even drawn 20% narrower
    assert gap_px >= label_px("sleeping", figure_layout.NORMAL.tick_font) + figure_layout.TICK_LEN
    assert [a["text"] for a in cross["layout"]["annotations"]] == ["Q [3 × 64]", "K [5 × 64]", "V [5 × 64]"]
    self = spec(figures.qkv_panels(q[:3], k[:3], v[:3], list("abc"), list("abc")))
    assert [y["showticklabels"] for y in axes(self, "y")] == [True, False, False]


def test_side_by_side_labels_its_shared_rows_once(rng):
    fig = spec(figures.side_by_side(rng.normal(size=(3, 512)), rng.normal(size=(3, 512)), ["a", "b", "c"],
                                    left_title="input X", right_title="output"))
    assert [y["showticklabels"] for y in axes(fig, "y")] == [True, False]
    boxes = panel_boxes(fig)
    plot_w, _ = plot_size(fig)
    # The last label of the left panel and the first of the right one both stick out past the gap.
    gap_px = (boxes[1][0] - boxes[0][1]) * plot_w * figure_layout.FIT_SLACK
    assert gap_px >= (label_px("d512", 12) + label_px("d1", 12)) / 2


# --- 2. Large matrices render compactly ------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 512), (6, 512), (512, 512), (30, 30), (2, 30)])
def test_large_matrices_have_no_cell_text_gaps_or_hover_strings(rng, shape):
    rows, cols = [f"t{i}" for i in range(shape[0])], figure_style.dims("d", shape[1])
    trace = spec(figures.matrix_heatmap(rng.normal(size=shape), rows, cols))["data"][0]
    assert not {"text", "texttemplate", "xgap", "ygap", "hovertext", "customdata"} & set(trace)
    if shape[0] * shape[1] > figure_layout.IMAGE_FROM_CELLS:  # sent as a picture: the hover says where
        assert trace["type"] == "image" and "column %{x:.0f}" in trace["hovertemplate"]
    else:
        assert "%{z:.3g}" in trace["hovertemplate"]


@pytest.mark.parametrize("width", [figure_layout.HALF_WIDTH, figure_layout.FULL_WIDTH])
def test_long_axes_are_thinned_to_a_few_evenly_spaced_labels(rng, width):
    fig = spec(figures.matrix_heatmap(rng.normal(size=(512, 512)), [f"t{i}" for i in range(512)],
                                      figure_style.dims("d", 512), width=width))
    for axis in (fig["layout"]["xaxis"], fig["layout"]["yaxis"]):
        ticks = axis["tickvals"]
        assert 2 <= len(ticks) <= figure_layout.MAX_TICKS
        steps = np.diff(ticks[1:])
        assert np.all(steps == steps[0])  # evenly spaced after the first
        assert axis["ticktext"] == [("d" if axis is fig["layout"]["xaxis"] else "t") + str(t - (axis is fig[
            "layout"]["yaxis"])) for t in ticks]
    xaxis = fig["layout"]["xaxis"]
    assert xaxis["ticktext"][0] == "d1" and xaxis["ticktext"][-1] == "d512"  # a step that divides 512
    air = figure_layout.LABEL_AIR
    assert len(xaxis["tickvals"]) * (label_px("d512", 12) + air) <= width * figure_layout.FIT_SLACK


def test_short_labels_are_thinned_too(rng):
    fig = spec(figures.side_by_side(rng.normal(size=(200, 3)), rng.normal(size=(200, 3)), ["a"] * 200,
                                    left_title="", right_title="", width=2000))
    assert 2 <= len(fig["layout"]["yaxis"]["tickvals"]) <= 16  # never 200 labels, however much room
    fig = spec(figures.matrix_heatmap(rng.normal(size=(2, 300)), ["a", "b"], ["x"] * 300, width=3000))
    assert 2 <= len(fig["layout"]["xaxis"]["tickvals"]) <= 16


def test_tick_positions_are_round_and_within_budget():
    assert figure_layout.tick_positions(512, 16) == [0, *range(63, 512, 64)]  # d1, d64, ..., d512
    assert figure_layout.tick_positions(64, 4) == [0, 31, 63]
    assert figure_layout.tick_positions(6, 16) == list(range(6))
    for n in range(2, 700, 7):
        for budget in (2, 3, 5, 16):
            positions = figure_layout.tick_positions(n, budget)
            assert len(positions) <= max(budget, 2) and positions == sorted(set(positions))
            assert 0 <= positions[0] and positions[-1] < n


def workbench_figures(key: str, *, large: bool = False) -> dict[str, go.Figure]:
    """Every figure the workbench draws for an example, as app/views/workbench.py calls the builders."""
    s = all_examples()[key]
    r = s.run()
    tokens, kv = list(s.tokens), list(s.kv_tokens or s.tokens)
    h, d_model, d_v = r.weights.shape[0], s.x.shape[1], r.v.shape[-1]
    heads = [f"head {i + 1}" for i in range(h)]
    titled = [f"{name}: {figure_style.shape_title(f'A{i + 1}', r.weights.shape[1:])}"
              for i, name in enumerate(heads)]  # as the workbench names its panels
    kw = dict(large=large)
    return {
        "x": figures.matrix_heatmap(s.x, tokens, figure_style.dims("d", d_model), title="X", **kw),
        "qkv": figures.qkv_panels(r.q[0], r.k[0], r.v[0], tokens, kv, **kw),
        **{name: figures.head_grids(values, tokens, kv, kind=kind, head_names=titled, mask=r.mask, **kw)
           for name, values, kind in (("scores", r.scores, "scores"), ("scaled", r.scaled, "scores"),
                                      ("weights", r.weights, "weights"))},
        "heads": figures.head_grids(r.head_outputs, tokens, figure_style.dims("v", d_v), kind="signed",
                                    head_names=heads, cols_are_tokens=False, **kw),
        "bars": bar_figures.query_bars(r.weights, 0, kv, head_names=heads, **kw),
        "disagreement": figures.disagreement_heatmap(pairwise_disagreement(r.weights, 0, "js"), metric="js",
                                                     head_names=heads, **kw),
        "entropy": bar_figures.entropy_bars(normalised_entropy(r.weights[:, 0, :]), head_names=heads,
                                        flat_at=0.95, **kw),
        "concat": figures.concat_bands(r.concat, tokens, h, d_v, **kw, title="Concat(head_1, ..., head_h)"
                                       f"{figure_style.shape_title('', r.concat.shape)}: one band per head"),
        "contributions": figures.head_grids(head_contributions(r.head_outputs, s.w_o), tokens,
                                            figure_style.dims("d", d_model), kind="signed", head_names=heads,
                                            cols_are_tokens=False, **kw),
        "output": figures.side_by_side(s.x, r.output, tokens, left_title="input X", right_title="output",
                                       **kw),
    }


@pytest.mark.parametrize("key", ["ex_h_cross_attention", "ex_i_parameter_count"])
def test_examples_h_and_i_send_well_under_a_megabyte(key):
    figs = workbench_figures(key)
    total = sum(len(pio.to_json(fig, validate=False)) for fig in figs.values())
    assert total < 500_000  # measured 220 kB (H) and 364 kB (I); the page's budget is 1 MB
    for name in ("x", "concat", "contributions", "output", "heads"):
        for trace in heatmaps(spec(figs[name])):
            assert "text" not in trace and "xgap" not in trace, name


def test_every_figure_passes_plotlys_validation():
    """The builders skip validation for speed; st.plotly_chart validates, so the specs must be valid."""
    for large in (False, True):
        for fig in workbench_figures("ex_h_cross_attention", large=large).values():
            go.Figure(fig.to_plotly_json())  # raises on any invalid property


# --- 3. Numbers: too small or too close to 1 -------------------------------------------------


@pytest.mark.parametrize("value, digits, near_one, expected", [
    (0.0, 2, False, "0.00"), (-0.0, 2, False, "0.00"), (1 / 3, 2, False, "0.33"), (-1.25, 2, False, "-1.25"),
    (29.99, 2, False, "29.99"), (0.005, 2, False, "0.01"), (0.0049, 2, False, "4.9e-3"),
    (2.0611536e-9, 2, False, "2.1e-9"), (-2.0611536e-9, 2, False, "-2.1e-9"), (12345.0, 2, False, "1.2e4"),
    (0.99999999588, 2, True, f"1 {MINUS} 4.1e-9"), (0.99999999588, 2, False, "1.00"),
    (1.0, 2, True, "1.00"), (0.994, 2, True, "0.99"), (0.8133, 3, False, "0.813"),
    (float("nan"), 2, False, ""), (float("-inf"), 2, False, f"{MINUS}∞"),
])
def test_format_number(value, digits, near_one, expected):
    assert number_text.format_number(value, digits, near_one=near_one) == expected


@pytest.mark.parametrize("value, near_one, expected", [
    (0.0, False, "0"), (0.66981, False, "0.6698"), (29.99, False, "29.99"), (-1.33951, False, "-1.3395"),
    (1.0, False, "1.00"), (-12.345, False, "-12.345"), (20.0, False, "20.00"),
    (2.0611536e-9, True, "2.1e-9"), (0.99999999588, True, f"1 {MINUS} 4.1e-9 (0.99999999588)"),
    (0.5, True, "0.50"), (123456.0, False, "1.2346e5"),
])
def test_hover_number(value, near_one, expected):
    assert number_text.hover_number(value, near_one=near_one) == expected


def test_example_d_shows_tiny_and_near_one_weights_on_cells_and_in_hover():
    s = all_examples()["ex_d_one_huge_score"]
    r = s.run()
    trace = spec(figures.head_grids(r.weights, s.tokens, s.kv_tokens, kind="weights"))["data"][0]
    assert trace["text"] == [["2.1e-9", "2.1e-9", f"1 {MINUS} 4.1e-9"]]
    assert "weight 2.1e-9" in trace["hovertext"][0][0]
    assert f"weight 1 {MINUS} 4.1e-9 (0.9999999958" in trace["hovertext"][0][2]


def test_numbers_are_printed_only_when_the_grid_is_small_and_they_fit():
    small = spec(figures.matrix_heatmap(np.eye(3), list("abc"), list("xyz")))
    assert small["data"][0]["text"][0] == ["1.00", "0.00", "0.00"]
    assert small["data"][0]["texttemplate"] == "%{text}"
    big = spec(figures.matrix_heatmap(np.eye(20), [str(i) for i in range(20)], [str(i) for i in range(20)]))
    assert "text" not in big["data"][0]
    # 12 wide numbers in a half column do not fit: no text (the hover still has every number).
    crowded = spec(figures.matrix_heatmap(np.full((2, 12), -12.345), ["a", "b"], figure_style.dims("d", 12)))
    assert "text" not in crowded["data"][0] and "-12.345" in crowded["data"][0]["hovertext"][0][0]


def test_numbers_fit_their_cells_when_printed(rng):
    for h, n in [(1, 3), (2, 3), (3, 5), (4, 6), (8, 3)]:
        tokens = [f"t{i}" for i in range(n)]
        weights = rng.dirichlet(np.ones(n), size=(h, n))
        fig = figures.head_grids(weights, tokens, tokens, kind="weights")
        data = spec(fig)
        if "text" not in data["data"][0]:
            continue
        plot_w, plot_h = plot_size(data)
        x0, x1, y0, y1 = panel_boxes(data)[0]
        cell_w, cell_h = (x1 - x0) * plot_w / n, (y1 - y0) * plot_h / n
        widest = max(len(t) for trace in data["data"] for row in trace["text"] for t in row)
        assert widest * 0.6 * 12 <= cell_w * figure_layout.FIT_SLACK and 12 * 1.25 <= cell_h


def test_near_one_weights_wrap_onto_two_lines_when_one_is_too_wide():
    weights = np.array([[[1 - 4e-9, 2e-9, 2e-9], [0.5, 0.25, 0.25], [0.2, 0.3, 0.5]]] * 4)  # [4, 3, 3]
    fig = spec(figures.head_grids(weights, list("abc"), list("abc"), kind="weights", width=600))
    assert fig["data"][0]["text"][0][0] == f"1 {MINUS}<br>4.0e-9"


# --- 4. Masked cells -------------------------------------------------------------------------


def test_masked_cells_are_blank_not_minus_infinity():
    scaled = np.array([[[1.0, -np.inf], [0.5, 0.2]]])
    fig = spec(figures.head_grids(scaled, ["a", "b"], ["a", "b"], kind="scores"))
    z = z_of(fig["data"][0])
    assert np.isnan(z[0, 1]) and z[0, 0] == 1.0
    assert fig["data"][0]["text"][0][1] == ""
    assert fig["data"][0]["hovertext"][0][1] == "query a, key b: masked"


def test_a_mask_blanks_the_same_cells_in_scores_scaled_scores_and_weights():
    mask = np.tril(np.ones((3, 3), dtype=bool))  # [n_q, n_k], True = may attend
    scores = np.where(mask, 1.0, -np.inf)[None]  # [1, 3, 3]
    weights = np.where(mask, 1 / np.arange(1, 4)[:, None], 0.0)[None]  # masked weights are 0 from softmax
    drawn = []
    for values, kind in ((scores, "scores"), (scores * 0.5, "scores"), (weights, "weights")):
        trace = spec(figures.head_grids(values, list("abc"), list("abc"), kind=kind, mask=mask))["data"][0]
        drawn.append(np.isnan(z_of(trace)))
        assert [[t == "" for t in row] for row in trace["text"]] == (~mask).tolist()
        assert [["masked" in t for t in row] for row in trace["hovertext"]] == (~mask).tolist()
    for blank in drawn:
        np.testing.assert_array_equal(blank, ~mask)
    unmasked = spec(figures.head_grids(weights, list("abc"), list("abc"), kind="weights"))["data"][0]
    assert unmasked["text"][0][1] == "0.00"  # without the mask a zero weight is just zero


# --- 5. Hover text reads like prose ----------------------------------------------------------


def test_hover_text_names_query_key_and_quantity():
    weights = np.array([[[0.6698, 0.3302], [0.5, 0.5]]])
    w = spec(figures.head_grids(weights, ["t1", "t2"], ["k1", "k2"], kind="weights"))["data"][0]
    assert w["hovertext"][0][0] == "query t1, key k1: weight 0.6698"
    s = spec(figures.head_grids(weights * 3, ["t1", "t2"], ["k1", "k2"], kind="scores"))["data"][0]
    assert s["hovertext"][0][1] == "query t1, key k2: score 0.9906"
    assert s["hovertext"][1][0] == "query t2, key k1: score 1.50"
    v = spec(figures.head_grids(np.array([[[1.33951, -2.0]]]), ["t1"], ["v1", "v2"], kind="signed",
                                cols_are_tokens=False))["data"][0]
    assert v["hovertext"][0] == ["t1, v1: 1.3395", "t1, v2: -2.00"]
    everything = json.dumps([spec(f) for f in workbench_figures("ex_h_cross_attention").values()])
    assert "signed" not in everything
    big = spec(figures.head_grids(np.zeros((1, 3, 64)), ["a", "b", "c"], figure_style.dims("v", 64),
                                  kind="signed", cols_are_tokens=False))["data"][0]
    assert big["hovertemplate"] == "%{y}, column %{x}: %{z:.3g}<extra></extra>"


# --- 6. Colour scales ------------------------------------------------------------------------


def cielab(rgb) -> np.ndarray:
    c = np.asarray(rgb, dtype=float) / 255
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
    f = np.cbrt(xyz / np.array([0.95047, 1.0, 1.08883]))  # every colour here is above the linear toe
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(scale, a: float, b: float) -> float:
    colours = [cielab(unlabel_rgb(c)) for c in sample_colorscale(scale, [a, b])]
    return float(np.linalg.norm(colours[0] - colours[1]))


def test_weight_colours_tell_a_quarter_from_a_third():
    threshold = 15.0  # CIELAB distance: cividis's grey middle gives 10.4
    assert delta_e(get_colorscale("cividis"), 0.25, 0.33) < threshold
    assert delta_e(figure_style.WEIGHT_SCALE, 0.25, 0.33) > threshold
    samples = sample_colorscale(figure_style.WEIGHT_SCALE, list(np.linspace(0, 1, 11)))
    lightness = [cielab(unlabel_rgb(c))[0] for c in samples]
    assert np.all(np.diff(lightness) > 0)  # monotonic lightness: readable in grey and with colour blindness


def test_signed_values_are_red_blue_centred_at_zero(rng):
    fig = spec(figures.matrix_heatmap(rng.normal(size=(3, 4)) + 2, list("abc"), list("wxyz")))
    trace = fig["data"][0]
    assert trace["zmin"] == -trace["zmax"] and trace["colorscale"] == get_colorscale("RdBu_r")
    assert "color" not in trace.get("textfont", {})  # plotly picks dark or light text per cell


# --- 7. Cell text size and the large style ---------------------------------------------------


def font_sizes(fig: dict) -> dict[str, list[float]]:
    layout = fig["layout"]
    out = {"cell": [], "tick": [], "title": []}
    for trace in fig["data"]:
        if "textfont" in trace and "size" in trace["textfont"]:
            (out["cell"] if trace["type"] == "heatmap" else out["tick"]).append(trace["textfont"]["size"])
    for key, value in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            out["tick"].append(value["tickfont"]["size"])
    out["title"] += [a["font"]["size"] for a in layout.get("annotations", [])]
    if "size" in layout.get("font", {}):
        out["tick"].append(layout["font"]["size"])
    return out


def test_cell_text_is_at_least_12_px_and_at_least_20_px_when_large():
    normal = workbench_figures("the_cat_sat_two_heads")
    large = workbench_figures("the_cat_sat_two_heads", large=True)
    for name in normal:
        small_sizes, large_sizes = font_sizes(spec(normal[name])), font_sizes(spec(large[name]))
        assert all(size >= 12 for size in small_sizes["cell"] + small_sizes["tick"]), name
        assert all(size >= 20 for size in large_sizes["cell"]), name
        for kind in ("cell", "tick", "title"):
            if small_sizes[kind]:
                assert min(large_sizes[kind]) > max(small_sizes[kind]), (name, kind)
        assert large[name]["layout"]["height"] > normal[name]["layout"]["height"], name
    assert font_sizes(spec(normal["weights"]))["cell"] == [12, 12]
    assert font_sizes(spec(large["weights"]))["cell"] == [20, 20]


@pytest.mark.parametrize("h", [2, 8, 16])
def test_large_panels_stay_apart(rng, h):
    tokens = "the cat sat on the mat".split()
    fig = spec(figures.head_grids(rng.dirichlet(np.ones(6), size=(h, 6)), tokens, tokens, kind="weights",
                                  large=True))
    assert boxes_apart(panel_boxes(fig))


# --- 8. Titles with shapes -------------------------------------------------------------------


def test_shape_title():
    assert figure_style.shape_title("Q₁", (3, 64)) == "Q₁ [3 × 64]"
    assert figure_style.shape_title("scores", (8, 3, 5)) == "scores [8 × 3 × 5]"
    fig = spec(figures.matrix_heatmap(np.ones((3, 4)), list("abc"), list("wxyz"),
                                      title=figure_style.shape_title("X", (3, 4))))
    assert fig["layout"]["annotations"][0]["text"] == "X [3 × 4]"


def test_qkv_panels_take_their_titles():
    q = np.ones((2, 3))
    fig = spec(figures.qkv_panels(q, q, q, ["a", "b"], ["a", "b"], titles=("Q₂ [2 × 3]", "K₂ [2 × 3]", "V₂")))
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["Q₂ [2 × 3]", "K₂ [2 × 3]", "V₂"]


def test_long_titles_wrap_instead_of_running_into_the_neighbours(rng):
    names = [f"head {i + 1}: {figure_style.shape_title(f'A{i + 1}', (3, 5))}" for i in range(16)]
    fig = spec(figures.head_grids(rng.dirichlet(np.ones(6), size=(16, 6)), list("abcdef"), list("abcdef"),
                                  kind="weights", head_names=names, width=600))
    plot_w, _ = plot_size(fig, 600)
    x0, x1, _, _ = panel_boxes(fig)[0]
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles[0] == "head 1: A1<br>[3 × 5]"  # broken at a space, never inside the shape
    for text in titles:
        assert max(label_px(line, 14) for line in text.split("<br>")) <= (x1 - x0) * plot_w
    title = "Concat(head_1, ..., head_h) [6 × 512]: one coloured band per head"
    wide = spec(figures.concat_bands(rng.normal(size=(6, 512)), list("abcdef"), 8, 64, title=title,
                                     large=True))
    assert wide["layout"]["annotations"][0]["text"].count("<br>") == 1
    assert wide["layout"]["margin"]["t"] >= 2 * figure_layout.LARGE.title_font  # room for both lines


# --- In a real browser -----------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOOK = r"""() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
  const hit = (a, b) => a[0] < b[1] - 1 && b[0] < a[1] - 1 && a[2] < b[3] - 1 && b[2] < a[3] - 1;
  const problems = [];
  for (const div of document.querySelectorAll('.js-plotly-plot')) {
    const cells = Array.from(div.querySelectorAll('rect.nsewdrag')).map(box);
    const images = Array.from(div.querySelectorAll('.hm image')).map(box);
    if (images.length !== div.data.filter(t => t.type === 'heatmap').length ||
        images.some(b => b[1] - b[0] < 2 || b[3] - b[2] < 2)) problems.push(`${div.id}: blank panel`);
    const labels = Array.from(div.querySelectorAll(
        '.xtick text, .ytick text, .annotation-text, .xtitle, .ytitle, .cbaxis text'))
      .filter(t => t.textContent).map(t => [t.textContent, box(t)]);
    for (const [text, b] of labels)
      if (cells.some(c => hit(b, c))) problems.push(`${div.id}: "${text}" on cells`);
    labels.forEach(([a, p], i) => labels.slice(i + 1).forEach(([b, q]) => {
      if (hit(p, q)) problems.push(`${div.id}: "${a}" over "${b}"`); }));
  }
  return problems;
}"""


@pytest.mark.browser
def test_example_h_paints_every_panel_without_overlapping_labels(tmp_path):
    """Every figure of example H in one page (1280 x 720, bundled plotly.js): no blank panel, no
    label over another or over cells. Skipped without Chromium unless REQUIRE_BROWSER=1."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("REQUIRE_BROWSER") == "1":
            raise RuntimeError("REQUIRE_BROWSER=1 but no Chromium")
        pytest.skip("no Chromium")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    half = {"x", "disagreement", "entropy"}
    figs = workbench_figures("ex_h_cross_attention")
    width = {name: figure_layout.HALF_WIDTH if name in half else figure_layout.FULL_WIDTH for name in figs}
    divs = "".join(f'<div id="{name}" style="width:{width[name]}px"></div>' for name in figs)
    specs = ",".join(f'["{name}", {pio.to_json(fig, validate=False)}]' for name, fig in figs.items())
    page_file = tmp_path / "h.html"
    bundle = f"<script>{get_plotlyjs()}</script>"  # plotly's own bundled plotly.js: offline
    draw = (f"Promise.all([{specs}].map(([id, f]) => Plotly.newPlot(id, f.data, f.layout)))"
            ".then(() => { window.done = true; });")
    page_file.write_text(f"<html><head><meta charset='utf-8'>{bundle}</head><body>{divs}<script>{draw}"
                         "</script></body></html>")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(page_file.as_uri())
        page.wait_for_function("window.done === true", timeout=60_000)
        problems = page.evaluate(LOOK)
        browser.close()
    assert problems == []


# --- Large grids as images (issue 9) ------------------------------------------------------------


def _decoded_png(source: str) -> np.ndarray:
    """An image trace's PNG, decoded by Pillow (an independent reader): RGBA [h, w, 4]."""
    import base64
    import io

    from PIL import Image
    data = base64.b64decode(source.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))


def test_block_means_equal_a_loop_over_blocks():
    rng = np.random.default_rng(3)
    values = rng.random((37, 23))
    values[5, 7] = np.nan
    factor = 4
    got = pictures.block_means(values, factor)
    assert got.shape == (10, 6)
    for i in range(10):
        for j in range(6):
            block = values[i * factor:(i + 1) * factor, j * factor:(j + 1) * factor]
            np.testing.assert_allclose(got[i, j], np.nanmean(block))


def test_a_large_grid_is_sent_as_images_whose_pixels_are_its_block_means():
    rng = np.random.default_rng(4)
    weights = rng.dirichlet(np.ones(600), size=(3, 600))  # [3, 600, 600]: rows sum to 1
    weights[1, :, :3] = 0.9  # a first block of columns to find again in the picture
    labels = [f"w{i}" for i in range(600)]
    fig = figures.head_grids(weights, labels, labels, kind="weights")
    images = [trace for trace in fig["data"] if trace["type"] == "image"]
    assert len(images) == 3
    assert not any(trace["type"] == "heatmap" and trace.get("x0", 1) > 0 for trace in fig["data"])
    factor = images[0]["dx"]
    assert factor == math.ceil(600 / figure_layout.IMAGE_BLOCKS)
    for head, trace in enumerate(images):
        pixels = _decoded_png(trace["source"])
        expected = pictures.colour_mapped(pictures.block_means(weights[head], factor), 0.0, 1.0,
                                         figure_style.WEIGHT_SCALE)
        np.testing.assert_array_equal(pixels, expected)
    bright = _decoded_png(images[1]["source"])[:, 0, :3].mean()
    dark = _decoded_png(images[0]["source"])[:, 0, :3].mean()
    assert bright > dark + 50  # head 2's first key column stands out
    assert len(json.dumps(fig.to_dict())) < 2_000_000
    go.Figure(fig.to_dict())  # plotly accepts the spec


def test_masked_cells_of_an_image_are_transparent():
    values = np.full((100, 100), 0.5)
    mask = np.tril(np.ones((100, 100), dtype=bool))  # causal
    fig = figures.head_grids(values[None], [str(i) for i in range(100)], [str(i) for i in range(100)],
                             kind="weights", mask=mask)
    pixels = _decoded_png(next(t for t in fig["data"] if t["type"] == "image")["source"])
    assert pixels[0, 99, 3] == 0 and pixels[99, 0, 3] == 255


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (65, 65), (256, 130)])
def test_the_pictures_png_decodes_in_pillow_to_the_same_pixels(shape):
    """The hand-written encoder (kept: bench/png.py measures it 2 to 3x faster than Pillow's and
    smaller) checked against an independent decoder, Pillow, pixel for pixel."""
    import io

    from PIL import Image

    values = np.random.default_rng(1).normal(size=shape)
    values[0, 0] = np.nan  # a masked cell: transparent
    rgba = pictures.colour_mapped(values, -2.0, 2.0, figure_style.SIGNED_SCALE)  # [h, w, 4] uint8
    decoded = np.asarray(Image.open(io.BytesIO(pictures.png_bytes(rgba))).convert("RGBA"))
    assert decoded.shape == rgba.shape and np.array_equal(decoded, rgba)
    assert decoded[0, 0, 3] == 0


def test_the_figure_cache_is_bounded_by_bytes():
    figure_cache.clear()
    big = np.random.default_rng(0).normal(size=(24, 512))
    for i in range(40):  # 40 distinct large figures: far more than the budget
        figure_cache.figure(figures.matrix_heatmap, big + i, [f"t{j}" for j in range(24)],
                            [str(j) for j in range(512)])
    assert 0 < figure_cache.held_bytes() <= figure_cache.BUDGET_BYTES


@pytest.mark.parametrize("key", ["ex_h_cross_attention", "ex_i_parameter_count"])
def test_the_512_wide_examples_send_under_a_megabyte_of_charts(at, key):
    pick_example(at, key)
    assert not at.exception
    total = sum(len(json.dumps(spec)) for spec in chart_specs(at).values())
    assert total < 1_000_000, total


def test_large_type_grows_the_charts_and_the_pages_text(at):
    def cell_fonts():
        return {trace["textfont"]["size"] for trace in chart_specs(at)["chart_weights"]["data"]}

    def styles():
        return [str(element.proto) for element in at.get("html")]

    assert max(cell_fonts()) < 20 and not any("font-size: 1.4rem" in body for body in styles())
    at.toggle(key="large_type").set_value(True).run()
    assert min(cell_fonts()) >= 20
    assert any("font-size: 1.4rem" in body for body in styles())


def test_a_figure_of_a_named_array_is_keyed_on_its_name_not_its_bytes():
    """app/session/this_run.py names a shared result's arrays (figure_cache.name_arrays): a rerun keys their
    figures without reading 150 MB at 1,024 tokens, and a named array can no longer change."""
    from app.charts import figure_cache
    from app.charts.figure_spec import figure_spec

    built = []

    def builder(values):
        built.append(values)
        return figure_spec([], {})

    named = np.arange(6.0).reshape(2, 3)
    figure_cache.name_arrays(b"some result", {"scores": named})
    assert not named.flags.writeable
    first = figure_cache.figure(builder, named)
    assert figure_cache.figure(builder, named) is first and len(built) == 1
    figure_cache.figure(builder, named.copy())  # the same bytes, unnamed: keyed on the bytes, another key
    assert len(built) == 2


def test_a_layout_is_planned_once_per_shape_and_labels_and_each_figure_gets_its_own_copy():
    """figure_layout.layout_of keeps a layout by what it depends on (shapes, labels, titles), not by numbers:
    two grids of other numbers share it, and a figure that changes its copy (an image's ranges, shapes)
    leaves the kept one and the next figure's as they were."""
    rng = np.random.default_rng(0)
    tokens = ["the", "cat", "sat"]
    first = figures.head_grids(rng.random((2, 3, 3)), tokens, tokens, kind="weights")
    second = figures.head_grids(rng.random((2, 3, 3)), tokens, tokens, kind="weights")
    assert first["layout"] == second["layout"]
    assert first["data"][0]["z"] != second["data"][0]["z"]
    panel = figure_layout.Panel(np.zeros((3, 3)), tokens, tokens, title="A")
    plan = figure_layout.layout_of([panel], 4, figure_layout.NORMAL, figure_layout.FULL_WIDTH)
    plan.layout["xaxis"]["range"] = [0, 99]
    plan.layout["shapes"] = ["changed"]
    again = figure_layout.layout_of([panel], 4, figure_layout.NORMAL, figure_layout.FULL_WIDTH)
    assert "range" not in again.layout["xaxis"] and "shapes" not in again.layout
    panel_abc = figure_layout.Panel(np.zeros((3, 3)), tokens, ["a", "b", "c"], title="A")
    relabelled = figure_layout.layout_of([panel_abc], 4, figure_layout.NORMAL, figure_layout.FULL_WIDTH)
    assert relabelled.layout["xaxis"]["ticktext"] == ["a", "b", "c"] != again.layout["xaxis"]["ticktext"]
