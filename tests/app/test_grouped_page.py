"""Grouped-query attention and the sliding window on the workbench, driven as a person does (AppTest)."""

from __future__ import annotations

import numpy as np

from app import result_cache
from tests.apptest_util import address, edit_cell, fresh_app, open_address, shown, work


def _result(at):
    return result_cache.result_of(at.session_state["result_key"])


def _grouped(g: int = 2):
    at = fresh_app()
    at.sidebar.number_input(key="d_model").set_value(8).run()
    at.sidebar.number_input(key="n_heads").set_value(4).run()
    at.sidebar.selectbox(key="kv_heads").set_value(g).run()
    assert not at.exception
    return at


def test_key_value_heads_offer_the_divisors_of_h_and_default_to_standard_attention():
    at = fresh_app()
    at.sidebar.number_input(key="d_model").set_value(12).run()
    at.sidebar.number_input(key="n_heads").set_value(6).run()
    assert at.sidebar.selectbox(key="kv_heads").options == [
        "6 (standard: one per head)", "3 (grouped-query)", "2 (grouped-query)",
        "1 (multi-query: all heads share it)"]
    assert at.sidebar.selectbox(key="kv_heads").value == 6 and _result(at).groups == 6


def test_grouped_heads_share_keys_and_the_page_says_which():
    at = _grouped(2)
    result = _result(at)
    assert work(at, "w_k").shape == (2, 8, 2) and work(at, "w_v").shape == (2, 8, 2)
    assert result.groups == 2
    np.testing.assert_array_equal(result.k[0], result.k[1])
    assert not np.array_equal(result.k[1], result.k[2])
    sharing = [c for c in shown(at.caption) if "share 2 key/value heads" in c]
    assert sharing and "heads 1–2 read key/value head 1; heads 3–4 read key/value head 2" in sharing[0]


def test_the_parameter_count_holds_only_the_key_value_heads():
    at = _grouped(2)  # d_model 8, h 4, d_k = d_v = 2: W_Q 64, W_K 32, W_V 32, W_O 64
    line = next(t for t in shown(at.markdown) if "Parameters:" in t)
    assert "W_Q 64" in line and "W_K 32 and W_V 32 (only g = 2 key/value heads)" in line
    assert "**192** in all" in line


def test_editing_a_shared_key_matrix_changes_every_head_of_its_group_and_no_other():
    at = _grouped(2)
    before = _result(at).scores.copy()  # [h, n, n]
    edit_cell(at, "w_k", 0, 0, "5", head=1)  # key/value head 2: query heads 3 and 4
    assert not at.exception
    after = _result(at).scores
    changed = [not np.allclose(before[h], after[h]) for h in range(4)]
    assert changed == [False, False, True, True]


def test_a_changed_h_that_the_chosen_g_does_not_divide_falls_back_to_standard_attention():
    at = _grouped(2)
    at.sidebar.number_input(key="n_heads").set_value(8).run()  # d_k = 1; g = 2 still divides 8
    assert at.sidebar.selectbox(key="kv_heads").value == 2 and _result(at).groups == 2
    at.sidebar.number_input(key="d_model").set_value(9).run()
    at.sidebar.number_input(key="n_heads").set_value(3).run()
    assert not at.exception and at.sidebar.selectbox(key="kv_heads").value == 3
    assert _result(at).groups == 3 and work(at, "w_k").shape[0] == 3


def test_multi_query_attention_runs_and_its_link_reopens_it():
    at = _grouped(1)
    result = _result(at)
    assert result.groups == 1 and all(np.array_equal(result.v[0], result.v[h]) for h in range(4))
    multi_query = "Multi-query attention: all 4 query heads read one key/value head"
    assert any(multi_query in c for c in shown(at.caption))
    again = open_address(address(at))
    assert not again.exception and _result(again).groups == 1
    np.testing.assert_array_equal(_result(again).output, result.output)


def test_a_sliding_window_masks_all_but_the_last_w_keys():
    at = fresh_app()
    at.sidebar.selectbox(key="mask_kind").set_value("window").run()
    at.sidebar.number_input(key="window_size").set_value(2).run()
    assert not at.exception
    weights = _result(at).weights  # [h, n, n]
    n = weights.shape[1]
    outside = np.array([[not 0 <= i - j < 2 for j in range(n)] for i in range(n)])
    assert np.all(weights[:, outside] == 0) and np.allclose(weights.sum(axis=-1), 1)
    assert any("a sliding window of 2" in c for c in shown(at.caption))
    at.sidebar.number_input(key="window_size").set_value(3).run()
    wider = _result(at).weights
    assert np.count_nonzero(wider) > np.count_nonzero(weights)
    again = open_address(address(at))
    assert again.sidebar.selectbox(key="mask_kind").value == "window"
    assert again.sidebar.number_input(key="window_size").value == 3
    np.testing.assert_array_equal(_result(again).weights, wider)
