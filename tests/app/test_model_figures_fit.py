"""Issue 16, finding 7: the Real model page's figures (and the workbench's wide matrices) are
readable at the column widths they are planned for: a projector's 1280-px window and a 390-px phone.

Pure figure specs are measured in pixels: each panel's height per row, the spacing of neighbouring
tick labels against their font size, where the model view's labels sit against what the page says,
and every selected head's numbers in the head view, in colours that stand out on white.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.charts import figure_layout, figure_style, figures, model_figures, number_text
from tests.wcag import contrast_on_white

PHONE_WIDTH = 358  # px: a 390-px phone's column (Streamlit pads it 16 px a side)
WIDTHS = [figure_layout.FULL_WIDTH, figure_layout.HALF_WIDTH, PHONE_WIDTH]
TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", "[SEP]"]  # 12
HEADS = [f"head {i + 1}" for i in range(12)]


def text_px(text: str, font: float) -> float:
    return len(re.sub(r"<[^>]+>", "", text)) * 0.6 * font


def panel_shape(fig: dict, trace: dict) -> tuple[int, int]:
    """(rows, columns) a heatmap or picture trace stands for, read from its axes' ticks or its data."""
    if trace["type"] == "image":
        suffix = trace["xaxis"][1:]
        y_range = fig["layout"][f"yaxis{suffix}"]["range"]
        x_range = fig["layout"][f"xaxis{suffix}"]["range"]
        return round(y_range[0] - y_range[1]), round(x_range[1] - x_range[0])
    if isinstance(trace["z"], dict):  # a typed array: its shape as "3, 1024"
        return tuple(int(n) for n in str(trace["z"]["shape"]).split(","))
    return np.shape(trace["z"])


def panels(fig: dict, width: int) -> list[dict]:
    """Every panel's pixel box and shape, with its axes: what plotly draws at `width` px."""
    layout = fig["layout"]
    m = layout["margin"]
    plot_w, plot_h = width - m["l"] - m["r"], layout["height"] - m["t"] - m["b"]
    found = []
    for trace in fig["data"]:
        if trace["type"] not in ("heatmap", "image") or trace.get("hoverinfo") == "skip":
            continue  # a colour bar's own trace, outside its axes
        suffix = trace.get("xaxis", "x")[1:]
        xaxis, yaxis = layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"]
        rows, cols = panel_shape(fig, trace)
        found.append(dict(rows=rows, cols=cols, xaxis=xaxis, yaxis=yaxis,
                          w=(xaxis["domain"][1] - xaxis["domain"][0]) * plot_w,
                          h=(yaxis["domain"][1] - yaxis["domain"][0]) * plot_h))
    return found


def assert_readable(fig: dict, width: int, tick_font: int = figure_layout.NORMAL.tick_font) -> None:
    """Rows at least a label high where every row is labelled; labelled rows and columns never closer
    than their font size (horizontal labels: never overlapping); a picture never a strip."""
    for p in panels(fig, width):
        per_row, per_col = p["h"] / p["rows"], p["w"] / p["cols"]
        if p["rows"] <= figure_layout.MAX_TICKS:
            assert per_row >= tick_font, (p["rows"], p["cols"], round(per_row, 1))
        else:
            assert p["h"] >= 100, (p["rows"], p["cols"], round(p["h"]))
        y = p["yaxis"]
        if y.get("showticklabels", True) and len(y["tickvals"]) > 1:
            assert min(np.diff(y["tickvals"])) * per_row >= tick_font, (y["ticktext"], per_row)
        x = p["xaxis"]
        if len(x["tickvals"]) > 1:
            gaps = np.diff(x["tickvals"]) * per_col
            if x.get("tickangle") == -90:
                assert min(gaps) >= tick_font
            else:
                sizes = [text_px(t, tick_font) for t in x["ticktext"]]
                for gap, a, b in zip(gaps, sizes, sizes[1:], strict=False):
                    assert gap >= max((a + b) / 2, tick_font), (x["ticktext"], gap)


@pytest.fixture
def rng():
    return np.random.default_rng(16)


@pytest.mark.parametrize("width", WIDTHS)
def test_each_heads_contribution_is_a_readable_picture_not_a_strip(rng, width):
    """Finding 7: [12, 12, 384] contributions were 5-px strips with [CLS] and [SEP] on each other."""
    fig = figures.head_grids(rng.normal(size=(12, 12, 384)), TOKENS, figure_style.dims("d", 384),
                             kind="signed", head_names=HEADS, cols_are_tokens=False, width=width)
    assert_readable(fig, width)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("shape", [(16, 384), (12, 384), (12, 512), (3, 1024), (512, 512), (40, 384),
                                   (512, 3), (1024, 16)])  # wide, square and tall
def test_wide_matrices_of_the_workbench_and_model_page_are_readable(rng, width, shape):
    """Finding 7: X [16 x 384] after 'Open layer 3 in the workbench' was a 7-px strip."""
    rows = [f"t{i}" for i in range(shape[0])]
    fig = figures.matrix_heatmap(rng.normal(size=shape), rows, figure_style.dims("d", shape[1]),
                                 title=figure_style.shape_title("X", shape), width=width)
    assert_readable(fig, width)
    m = fig["layout"]["margin"]
    title_px = (figure_layout.NORMAL.title_font + 2) * figure_layout.LINE_HEIGHT
    assert m["t"] >= title_px  # the title is not clipped


@pytest.mark.parametrize("width", WIDTHS)
def test_the_concatenation_of_a_real_layer_is_readable(rng, width):
    fig = figures.concat_bands(rng.normal(size=(12, 384)), TOKENS, 12, 32, width=width)
    assert_readable(fig, width)


@pytest.mark.parametrize("width", [figure_layout.FULL_WIDTH, PHONE_WIDTH])
def test_the_model_overview_says_where_its_labels_are(rng, width):
    """Finding 7: the page said 'under each head' while the labels sit above."""
    weights = [rng.dirichlet(np.ones(12), size=(12, 12)) for _ in range(6)]
    labels = [[f"0.{head}\nbroad" for head in range(12)] for _ in range(6)]
    fig = model_figures.model_view(weights, labels, width=width)
    layout = fig["layout"]
    head_labels = [a for a in layout["annotations"] if not a["text"].startswith("layer ")]
    assert len(head_labels) == 72
    for index, note in enumerate(head_labels):
        y_domain = layout[f"yaxis{index + 1 if index else ''}"]["domain"]
        assert note["yanchor"] == "bottom" and note["y"] >= y_domain[1]  # above its thumbnail
    assert model_figures.LABELS_WHERE == "above"
    caption = model_figures.OVERVIEW_CAPTION
    assert "Above each head" in caption and "nder each" not in caption
    m = layout["margin"]
    plot_w = width - m["l"] - m["r"]
    thumbs = [(layout[f"xaxis{i + 1 if i else ''}"]["domain"]) for i in range(72)]
    assert min((d[1] - d[0]) * plot_w for d in thumbs) >= model_figures.THUMB_MIN_PX - 8  # never slivers


@pytest.mark.parametrize("heads", [[0, 6], [0, 1, 2, 3, 4, 5, 6, 7], [6]])
def test_the_head_view_gives_every_selected_heads_numbers_in_colours_that_show(rng, heads):
    """Finding 7: with heads 1 and 7 the keys carried head 1's numbers only, and head 7's #F0E442 was
    nearly invisible on white."""
    weights = rng.dirichlet(np.ones(12), size=(8, 12))  # [h, n, n]
    fig = model_figures.head_view(weights, heads, TOKENS, query=3)
    notes = fig["layout"].get("annotations", [])
    for k in range(len(TOKENS)):
        after_key = sorted((n for n in notes if n["y"] == k), key=lambda n: n["xshift"])
        expected = [number_text.format_number(float(weights[h, 3, k])) for h in heads]
        assert [n["text"] for n in after_key] == expected
        for note in after_key:
            assert contrast_on_white(note["font"]["color"]) >= 4.5, note
    shifts = sorted({n["xshift"] for n in notes})
    gaps = np.diff(shifts)
    assert all(g >= 4 * 0.6 * model_figures.LINE_FONT for g in gaps)  # "0.67" never runs into the next
    for trace in fig["data"]:
        if trace.get("mode") == "lines":
            assert contrast_on_white(trace["line"]["color"], trace.get("opacity", 1.0)) >= 3.0, trace["name"]
        if trace.get("mode") == "text":
            assert all("<" not in t for t in trace["text"])  # no markup: numbers are annotations of their own


def test_a_phones_column_gets_one_panel_a_row_each_with_its_row_labels(rng):
    """The phone: grids side by side at 820 px are one a row in a 358-px column, every one labelled."""
    tokens = ["le", "chat", "dort"]
    figs = [
        figures.head_grids(rng.dirichlet(np.ones(3), size=(4, 3)), tokens, tokens, kind="weights",
                           width=PHONE_WIDTH),
        figures.qkv_panels(*(rng.normal(size=(3, 64)) for _ in range(3)), tokens, tokens, width=PHONE_WIDTH),
        figures.side_by_side(rng.normal(size=(3, 8)), rng.normal(size=(3, 8)), tokens, left_title="X",
                             right_title="output", width=PHONE_WIDTH),
    ]
    for fig in figs:
        found = panels(fig, PHONE_WIDTH)
        assert len({round(p["xaxis"]["domain"][0], 6) for p in found}) == 1  # one column of panels
        assert all(p["yaxis"]["showticklabels"] for p in found)
        assert_readable(fig, PHONE_WIDTH)
    wide = figures.qkv_panels(*(rng.normal(size=(3, 64)) for _ in range(3)), tokens, tokens)
    assert len({round(p["xaxis"]["domain"][0], 6) for p in panels(wide, figure_layout.FULL_WIDTH)}) == 3


def test_a_pictures_colours_saturate_past_a_few_outliers_and_say_so(rng):
    """A real layer's contributions reach 3.9 in one dimension while 99.9% lie within 0.27: on one
    scale the picture was all but white. Colours saturate at the 99.9th percentile, and a sentence
    says where and why; values without such outliers are drawn as they are."""
    values = rng.normal(scale=0.1, size=(12, 12, 384))
    values[:, 0, 7] = 3.9  # one word piece in one dimension, in every head
    shown, note = model_figures.saturated(values)
    limit = np.percentile(np.abs(values), model_figures.SATURATE_PERCENTILE)
    assert np.abs(shown).max() == pytest.approx(limit) and limit < 1
    assert note and f"{limit:.2f}" in note and "3.90" in note
    plain = rng.normal(size=(12, 384))
    same, none = model_figures.saturated(plain)
    assert none is None and np.array_equal(same, plain)
