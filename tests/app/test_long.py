"""Long sequences on the workbench (issue 9, part 3): pictures above 64 x 64 cells, a window with
numbers, float32 past the threshold, and a rerun that changes nothing reusing the result."""

from __future__ import annotations

import numpy as np

from app import result_cache
from app.charts import figure_layout
from course.examples import generated_setup
from mha_core import LIMITS, multi_head_attention
from tests.apptest_util import chart_specs, fresh_app, heatmap_values, pick_example, texts

N = 80  # tokens: 80 x 80 per head is past the picture threshold (64 x 64)


def long_page(n: int = N):
    at = fresh_app()
    pick_example(at, "random")
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(n))).run()
    assert not at.exception and not at.error, texts(at.error)
    return at


def last_result(at):
    """The result the session's last run showed (kept in the server's result cache, not the session)."""
    return result_cache.result_of(at.session_state["result_key"])


def test_a_long_grid_is_a_picture_with_a_window_that_has_its_numbers():
    at = long_page()
    specs = chart_specs(at)
    assert N * N > figure_layout.IMAGE_FROM_CELLS
    assert all(t["type"] != "heatmap" or t.get("x0", 1) < 0 for t in specs["chart_weights"]["data"])
    assert any(t["type"] == "image" for t in specs["chart_weights"]["data"])
    assert any("sent as a picture" in caption for caption in texts(at.caption))
    at.number_input(key="zoom_query").set_value(30).run()
    at.number_input(key="zoom_key").set_value(61).run()
    at.selectbox(key="pick_zoom_head").set_value("head 2").run()
    result = last_result(at)
    window = chart_specs(at)["chart_zoom"]
    np.testing.assert_allclose(heatmap_values(window)[0], result.weights[1, 29:41, 60:72], atol=1e-6)
    assert "texttemplate" in window["data"][0]  # the numbers, on the window's cells


def test_the_result_is_reused_when_nothing_changed_and_float32_past_the_threshold():
    at = long_page()
    first = last_result(at)
    at.run()
    assert last_result(at) is first  # not computed again
    assert first.weights.dtype == np.float64  # 2 x 80 x 80 is under the float32 threshold
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(800))).run()
    result = last_result(at)
    assert 2 * 800 * 800 >= LIMITS.float32_from and result.weights.dtype == np.float32
    reference = generated_setup("random", at.session_state["origin_seed"])
    work = at.session_state["work"]
    arrays = {name: work[name] for name in ("x", "w_q", "w_k", "w_v", "w_o")}
    in_float64 = multi_head_attention(mask=reference.mask, scale=reference.scaling.core_argument(), **arrays)
    assert in_float64.weights.dtype == np.float64
    np.testing.assert_allclose(result.weights, in_float64.weights, atol=1e-6)  # float32 loses nothing seen
    assert work["w_q"].shape == reference.w_q.shape  # sizes other than the tokens stayed


def test_one_head_more_than_the_attention_limit_is_refused_next_to_the_heads():
    at = fresh_app()
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(LIMITS.tokens))).run()
    at.number_input(key="d_model").set_value(13 * 8).run()
    at.number_input(key="n_heads").set_value(13).run()
    assert not at.exception
    assert any("attention cells is over the limit" in e for e in texts(at.sidebar.error))
    assert "chart_weights" not in chart_specs(at)
