"""Pure figure tests: data, labels, colour ranges, literal tokens, repeated tokens."""

import json

import numpy as np
import plotly.io as pio
import pytest

from app import figures


def spec(fig) -> dict:
    """The figure as the browser receives it."""
    return json.loads(pio.to_json(fig, validate=False))


def z_of(trace) -> np.ndarray:
    from tests.apptest_util import decode
    return decode(trace["z"]).astype(float)


def test_weights_grid_has_one_panel_per_head_on_one_fixed_scale(rng):
    weights = rng.dirichlet(np.ones(4), size=(3, 4))  # [h=3, n_q=4, n_k=4]
    fig = spec(figures.head_grids(weights, list("abcd"), list("abcd"), kind="weights"))
    heatmaps = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == 3
    for head, trace in enumerate(heatmaps):
        np.testing.assert_allclose(z_of(trace), weights[head], atol=1e-6)
        assert (trace["zmin"], trace["zmax"]) == (0.0, 1.0)
    assert [t["showscale"] for t in heatmaps] == [False, False, True]
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["head 1", "head 2", "head 3"]


def test_score_grids_share_one_range_centred_at_zero(rng):
    scores = np.stack([rng.normal(size=(3, 3)), 5 * rng.normal(size=(3, 3))])
    fig = spec(figures.head_grids(scores, list("abc"), list("abc"), kind="scores"))
    bound = np.abs(scores).max()
    for trace in fig["data"]:
        assert trace["zmin"] == pytest.approx(-bound) and trace["zmax"] == pytest.approx(bound)


def test_repeated_tokens_keep_every_row_and_column():
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    weights = np.full((1, 6, 6), 1 / 6)
    fig = spec(figures.head_grids(weights, tokens, tokens, kind="weights"))
    assert z_of(fig["data"][0]).shape == (6, 6)
    assert fig["layout"]["yaxis"]["tickvals"] == list(range(6))
    assert fig["layout"]["yaxis"]["ticktext"] == tokens
    assert fig["layout"]["xaxis"]["ticktext"] == tokens
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"  # queries read top to bottom


def test_masked_cells_are_blank_not_minus_infinity():
    scaled = np.array([[[1.0, -np.inf], [0.5, 0.2]]])
    fig = spec(figures.head_grids(scaled, ["a", "b"], ["a", "b"], kind="scores"))
    z = z_of(fig["data"][0])
    assert np.isnan(z[0, 1]) and z[0, 0] == 1.0
    assert fig["data"][0]["text"][0][1] == ""


def test_tokens_are_escaped_in_ticks_and_hover():
    tokens = ["<b>x</b>", "$x$", "a&b"]
    fig = spec(figures.head_grids(np.full((1, 3, 3), 1 / 3), tokens, tokens, kind="weights"))
    assert fig["layout"]["xaxis"]["ticktext"] == ["&lt;b&gt;x&lt;/b&gt;", "&#36;x&#36;", "a&amp;b"]
    hover = json.dumps(fig["data"][0]["hovertext"])
    assert "<b>" not in hover and "$x$" not in hover


def test_numbers_are_printed_only_on_small_grids():
    small = spec(figures.matrix_heatmap(np.eye(3), list("abc"), list("xyz")))
    assert small["data"][0]["text"][0] == ["1.00", "0.00", "0.00"]
    big = spec(figures.matrix_heatmap(np.eye(20), [str(i) for i in range(20)], [str(i) for i in range(20)]))
    assert "text" not in big["data"][0]


def test_query_bars_carry_each_heads_row(rng):
    weights = rng.dirichlet(np.ones(3), size=(2, 3))  # [h=2, n_q=3, n_k=3]
    fig = spec(figures.query_bars(weights, 1, ["a", "b", "c"]))
    assert [t["name"] for t in fig["data"]] == ["head 1", "head 2"]
    for head, trace in enumerate(fig["data"]):
        np.testing.assert_allclose(z_of({"z": trace["y"]}), weights[head, 1], atol=1e-6)
    assert fig["data"][0]["marker"]["color"] != fig["data"][1]["marker"]["color"]


def test_concat_bands_outline_each_head():
    fig = spec(figures.concat_bands(np.ones((2, 6)), ["a", "b"], n_heads=3, d_v=2))
    shapes = fig["layout"]["shapes"]
    assert [(s["x0"], s["x1"]) for s in shapes] == [(-0.5, 1.5), (1.5, 3.5), (3.5, 5.5)]
    assert len({s["line"]["color"] for s in shapes}) == 3


def test_disagreement_and_entropy_figures():
    d = np.array([[0.0, 0.813], [0.813, 0.0]])
    fig = spec(figures.disagreement_heatmap(d, metric="l2"))
    np.testing.assert_allclose(z_of(fig["data"][0]), d, atol=1e-6)
    assert fig["data"][0]["zmax"] == pytest.approx(np.sqrt(2))
    bars = spec(figures.entropy_bars(np.array([0.99, 0.5]), flat_at=0.95))
    assert bars["data"][0]["text"] == ["flat", ""]


def test_side_by_side_uses_one_scale_for_input_and_output():
    fig = spec(figures.side_by_side(np.ones((2, 2)), -3 * np.ones((2, 2)), ["a", "b"],
                                    left_title="input X", right_title="output"))
    assert {t["zmin"] for t in fig["data"]} == {-3.0} and {t["zmax"] for t in fig["data"]} == {3.0}


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        figures.head_grids(np.zeros((1, 2, 2)), ["a", "b"], ["a", "b"], kind="heat")
