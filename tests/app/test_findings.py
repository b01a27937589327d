"""Issue 7's findings, one regression test each (AppTest; the browser-only ones are in test_browser.py).

Each test failed on the code before the fix; the comment says how.
"""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest

from app import figure_cache, figures
from course.examples import all_examples
from mha_core import LIMITS
from mha_core.codec import setup_from_link
from tests.apptest_util import (
    EXAMPLE_TITLES,
    address,
    chart_specs,
    edit_cell,
    fresh_app,
    goto,
    heatmap_values,
    open_address,
    pick,
    pick_example,
    texts,
    work,
)
from tests.live_server import streamlit_server
from tests.st_protocol import Run, Session

EXAMPLES = all_examples()


@pytest.fixture
def at():
    return fresh_app()


def weights(at) -> np.ndarray:
    return np.stack(heatmap_values(chart_specs(at)["chart_weights"]))


def picker(at) -> str:
    return at.selectbox(key="example_picker").value


# --- 1 and 8: selections that name a token, head or cell survive every change ---------------------


async def _stale_label_session(url: str, name: str, stale: str, sentence: str) -> list[Run]:
    session = Session(url)
    try:
        runs = [await session.open()]
        session.set_bool("drill_open", True)
        runs.append(await session.rerun())
        session.set_string("tokens_text", sentence)
        runs.append(await session.rerun())
        session.set_string(f"pick_{name}", stale)  # what Chromium sends: the label it last showed
        runs.append(await session.rerun())
        session.set_strings("pick_shown_head", ["head 2"])  # "then click any widget"
        runs.append(await session.rerun())
        session.set_string("tokens_text", "the cat sat")  # "even after typing the old sentence back"
        runs.append(await session.rerun())
        return runs
    finally:
        await session.close()


@pytest.fixture(scope="module")
def server():
    with streamlit_server() as (url, _):
        yield url


@pytest.mark.parametrize("name, stale", [
    ("focus_query", "3 · sat"), ("drill_query", "3 · sat"), ("drill_key", "2 · cat"),
    ("drill_head", "head 2"),
])
@pytest.mark.parametrize("sentence", ["a dog ran", "a b c", "one two"])
def test_a_selection_whose_label_went_stale_is_kept_or_reset(server, name, stale, sentence):
    """Findings 1 and 8 over the browser's own protocol: the old code compared the stale label
    with an int (TypeError) and, with a sentence of the same length, failed every rerun after."""
    runs = asyncio.run(_stale_label_session(server, name, stale, sentence))
    for run in runs:
        assert run.status == "ok" and not run.errors, run.errors
        assert {"chart_bars", "chart_weights"} <= set(run.charts)


def test_an_overlong_token_box_sent_past_max_chars_is_refused_on_the_server(server):
    """Finding 9: a client can send 83,000 characters a word; the server keeps max_chars of them
    (Streamlit cuts a text input's value there) and the page refuses the overlong token."""
    async def go():
        session = Session(server)
        try:
            await session.open()
            session.set_string("tokens_text", " ".join(["x" * 83_000] * 12))
            return await session.rerun()
        finally:
            await session.close()
    run = asyncio.run(go())
    kept = LIMITS.token_text  # what Streamlit keeps of the box: max_chars
    assert run.status == "ok" and any(f"token 1 has {kept:,} characters" in e.replace("\\", "")
                                      for e in run.errors), run.errors
    assert not run.charts and run.bytes < 200_000


def test_a_selection_is_kept_when_still_valid_and_reset_with_a_note_when_not(at):
    pick(at, "focus_query", "3 · sat")
    at.text_input(key="tokens_text").set_value("a dog ran").run()
    assert at.selectbox(key="pick_focus_query").value == "3 · ran"  # same position, new label
    at.text_input(key="tokens_text").set_value("a dog").run()
    assert at.selectbox(key="pick_focus_query").value == "1 · a"
    assert any("earlier choice is gone" in c for c in texts(at.caption))


# --- 10: navigation while a cell editor is open left the head selector empty -------------------------


def test_an_empty_head_selector_falls_back_to_the_shown_head(at):
    pick(at, "shown_head", "head 2")
    at.session_state["pick_shown_head"] = None  # what the segmented control sent (old: shown_head None)
    at.run()
    assert not at.exception
    at.number_input(key="n_heads").set_value(1).run()  # "the next change" failed every rerun
    assert not at.exception and "chart_weights" in chart_specs(at)


# --- 4: changing h (or d_model) and back gives back exactly what was there -------------------------


@pytest.mark.parametrize("key, widget, there, back", [
    ("cat_chases_mouse", "n_heads", 4, 2), ("cat_chases_mouse", "d_model", 8, 4),
    ("the_cat_sat_two_heads", "n_heads", 1, 2), ("visual_walkthrough", "n_heads", 6, 3),
])
def test_a_size_changed_and_changed_back_restores_the_example_exactly(at, key, widget, there, back):
    pick_example(at, key)
    at.number_input(key=widget).set_value(there).run()
    assert any("New cells" in i for i in texts(at.info)) or there < back  # new cells are announced
    assert picker(at).endswith("(edited)")
    at.number_input(key=widget).set_value(back).run()
    assert not at.exception
    for name in ("x", "w_q", "w_k", "w_v", "w_o"):
        np.testing.assert_array_equal(work(at, name), getattr(EXAMPLES[key], name), err_msg=name)
    assert picker(at) == EXAMPLES[key].title  # the picker says so: it is the example again


def test_an_edit_made_at_another_size_is_kept_when_coming_back(at):
    pick_example(at, "cat_chases_mouse")
    at.number_input(key="n_heads").set_value(4).run()
    edit_cell(at, "x", row=0, col=0, value="9")
    at.number_input(key="n_heads").set_value(2).run()
    assert heatmap_values(chart_specs(at)["chart_x"])[0][0, 0] == 9
    np.testing.assert_array_equal(work(at, "w_q"), EXAMPLES["cat_chases_mouse"].w_q)


# --- 5: the page says what it shows, and the URL is the state -----------------------------------


def test_the_picker_names_an_edited_example_and_reset_restores_it(at):
    pick_example(at, "ex_a_single_head")
    assert picker(at) == "A: single head, the bare core"
    assert "reset" not in [button.key for button in at.button]
    edit_cell(at, "x", row=0, col=0, value="2")
    assert picker(at) == "A: single head, the bare core (edited)"
    at.button(key="reset").click().run()
    assert picker(at) == "A: single head, the bare core"
    np.testing.assert_allclose(weights(at), EXAMPLES["ex_a_single_head"].run().weights, atol=1e-6)


def test_picking_the_shown_example_again_resets_it(at):
    edit_cell(at, "x", row=0, col=0, value="5")
    assert picker(at).endswith("(edited)")
    pick_example(at, "the_cat_sat_two_heads")
    assert picker(at) == EXAMPLES["the_cat_sat_two_heads"].title
    assert work(at, "x")[0, 0] == 2


def test_a_link_with_its_own_tokens_is_your_setup():
    fresh = open_address({"example": "ex_a_single_head", "tokens": "a b c"})
    assert not fresh.exception
    assert fresh.selectbox(key="example_picker").value == "your setup"


@pytest.mark.parametrize("action", ["example", "edit", "head", "scaling", "mask", "tokens", "bias"])
def test_the_address_bar_reopens_exactly_the_same_page(at, action):
    """Pick example A, reload: the old page went back to the link's example."""
    if action == "example":
        pick_example(at, "ex_a_single_head")
    elif action == "edit":
        edit_cell(at, "x", row=1, col=1, value="-1.25")
    elif action == "head":
        pick(at, "shown_head", "head 2")
    elif action == "scaling":
        at.selectbox(key="scale_kind").set_value("multiply").run()
        at.number_input(key="scale_multiplier").set_value(0.3).run()
    elif action == "mask":
        at.selectbox(key="mask_kind").set_value("causal").run()
    elif action == "tokens":
        at.text_input(key="tokens_text").set_value("the cat sat down").run()
    else:
        at.checkbox(key="use_bias").check().run()
        edit_cell(at, "b_o", row=0, col=1, value="0.5")
    assert not at.exception
    fresh = open_address(address(at))
    assert not fresh.exception and not fresh.warning, texts(fresh.warning)
    assert chart_specs(fresh) == chart_specs(at)
    assert picker(fresh) == picker(at)
    assert fresh.session_state["selections"] == at.session_state["selections"]


@pytest.mark.parametrize("state", ["1.AAAA", "2.whatever", "1." + "A" * 50, "1.eJzLSM3JyQcABiwCFQ"])
def test_a_tampered_or_foreign_state_link_opens_the_default_with_a_message(state):
    fresh = open_address({"s": state})
    assert not fresh.exception
    assert fresh.session_state["origin"] == "the_cat_sat_two_heads"
    assert any("state" in w for w in texts(fresh.warning)), texts(fresh.warning)


def test_two_hundred_unknown_link_parameters_give_one_summary_that_clears():
    fresh = open_address({f"p{i}": "1" for i in range(200)})
    warnings = texts(fresh.warning)
    assert len(warnings) == 1 and "200 parameters" in warnings[0]
    fresh.number_input(key="n_heads").set_value(1).run()
    assert not fresh.warning


def test_the_link_state_of_an_edited_example_names_the_example(at):
    pick_example(at, "ex_d_one_huge_score")
    edit_cell(at, "x_kv", row=2, col=0, value="10")
    state = address(at)["s"]
    setup = setup_from_link(state, EXAMPLES)
    assert setup.origin == "ex_d_one_huge_score" and setup.x_kv[2, 0] == 10


# --- 6: the chapters' numbers are on the page ------------------------------------------------------


def page_text(at) -> str:
    return " ".join(texts(at.markdown) + texts(at.caption) + texts(at.latex) + texts(at.info))


def test_example_i_shows_its_parameter_counts(at):
    pick_example(at, "ex_i_parameter_count")
    text = page_text(at)
    assert "1,048,576" in text and "262,144" in text


def test_example_d_shows_the_winners_weight_without_rounding_it_to_one(at):
    pick_example(at, "ex_d_one_huge_score")
    at.toggle(key="drill_open").set_value(True).run()
    spec = chart_specs(at)["chart_weights"]
    cells = json.dumps(spec["data"][0].get("text"))
    assert "2.1e-9" in cells and "1 \\u2212 4.1e-9" in cells
    pick(at, "drill_key", "3 · k3")
    line = next(latex for latex in texts(at.latex) if "a_{1,3}" in latex)
    exact = float(re.search(r"\(= (0\.9+\d*)\)", line).group(1))
    assert abs(exact - 0.99999999588) <= 5e-12  # the chapter's number to its printed precision
    assert "4.1" in line


def test_example_h_writes_its_shapes(at):
    pick_example(at, "ex_h_cross_attention")
    titles = json.dumps([chart_specs(at)[key]["layout"].get("annotations", []) for key in
                         ("chart_scores", "chart_heads", "chart_qkv")], ensure_ascii=False)
    for shape in ("S₁ [3 × 5]", "head₁ [3 × 64]", "Q₁ [3 × 64]", "K₁ [5 × 64]", "V₁ [5 × 64]"):
        assert shape in titles, shape


def test_example_f_scaled_says_d_k_is_64(at):
    pick_example(at, "ex_f_scaled")
    assert "√64" in page_text(at) and r"\sqrt{64}" in page_text(at)


def test_example_b_names_no_head_against_itself_and_explains_the_empty_entropy(at):
    pick_example(at, "ex_b_two_heads_one_token")
    text = page_text(at)
    assert "head 1 vs head 1" not in text.replace("*", "")
    assert "With one key every head puts all of its weight on it" in text
    assert "chart_entropy" not in chart_specs(at)


def test_step_4_formula_follows_the_scaling_and_the_mask(at):
    at.selectbox(key="scale_kind").set_value("none").run()
    formula = next(text for text in texts(at.markdown) if "operatorname{softmax}" in text)
    assert r"\sqrt" not in formula
    at.selectbox(key="mask_kind").set_value("causal").run()
    formula = next(text for text in texts(at.markdown) if "operatorname{softmax}" in text)
    assert r"-\infty" in formula


def test_masked_cells_look_the_same_in_scores_and_weights(at):
    at.selectbox(key="mask_kind").set_value("causal").run()
    specs = chart_specs(at)
    scaled = np.stack(heatmap_values(specs["chart_scaled"]))
    drawn = np.stack(heatmap_values(specs["chart_weights"]))
    np.testing.assert_array_equal(np.isnan(scaled), np.isnan(drawn))
    assert np.isnan(drawn[:, 0, 1:]).all()
    assert "masked" in json.dumps(specs["chart_weights"]["data"][0])


# --- 7: no internal words in hover text ----------------------------------------------------------


def test_hover_text_has_no_internal_words(at):
    for key, spec in chart_specs(at).items():
        assert "signed" not in json.dumps(spec), key


# --- 9: one session cannot take the server down ------------------------------------------------------


def test_the_figure_cache_is_bounded_by_bytes():
    figure_cache.clear()
    big = np.random.default_rng(0).normal(size=(24, 512))
    for i in range(40):  # 40 distinct large figures: far more than the budget
        figure_cache.figure(figures.matrix_heatmap, big + i, [f"t{j}" for j in range(24)],
                            [str(j) for j in range(512)])
    assert 0 < figure_cache.held_bytes() <= figure_cache.BUDGET_BYTES


# --- the exam-size examples draw compactly ------------------------------------------------------------


@pytest.mark.parametrize("key", ["ex_h_cross_attention", "ex_i_parameter_count"])
def test_the_512_wide_examples_send_under_a_megabyte_of_charts(at, key):
    pick_example(at, key)
    assert not at.exception
    total = sum(len(json.dumps(spec)) for spec in chart_specs(at).values())
    assert total < 1_000_000, total


# --- saving -----------------------------------------------------------------------------------------


def test_saving_with_an_empty_cell_says_why_instead_of_writing_a_bad_file(at):
    edit_cell(at, "x", row=0, col=0, value="")
    assert any("Cannot save now" in c for c in texts(at.caption))


def test_every_page_opens_after_any_example(at):
    for key in EXAMPLE_TITLES:
        pick_example(at, key)
        goto(at, "examples")
        goto(at, "workbench")
        assert not at.exception, key


# --- 9: the most one session can hold ----------------------------------------------------------------

SESSION_BUDGET_BYTES = 160 * 2**20  # README, "Limits": a session within the editable sizes
LONG_SESSION_BUDGET_BYTES = 640 * 2**20  # README, "Limits": a long sequence at the attention limit


def session_bytes(at, set_sizes) -> tuple[int, int]:
    """What the session keeps (bases, what resizing remembers, the last result) and the peak
    allocation of the rerun that makes every array and figure anew."""
    import tracemalloc

    tracemalloc.start()
    set_sizes()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not at.exception and not at.error, texts(at.error)
    kept = [*at.session_state["work"].values(), *at.session_state["reservoir"].values()]
    held = sum(a.nbytes for a in kept if a is not None)  # the result kept is made in the rerun: in peak
    return held, peak


def at_sizes(at, n_q: int, n_k: int, n_heads: int, d_k: int) -> None:
    at.radio(key="mode").set_value("cross-attention").run()
    at.text_input(key="kv_tokens_text").set_value(" ".join(f"k{i}" for i in range(n_k))).run()
    at.text_input(key="tokens_text").set_value(" ".join(f"q{i}" for i in range(n_q))).run()
    at.checkbox(key="use_bias").check().run()
    at.checkbox(key="custom_head_width").check().run()
    at.number_input(key="d_k").set_value(d_k).run()
    at.number_input(key="d_v").set_value(d_k).run()
    at.number_input(key="n_heads").set_value(n_heads).run()


def test_one_session_at_the_editable_sizes_stays_within_its_memory_budget():
    """24 + 24 tokens, d_model 512, 16 heads of width 128, biases (the sizes of a class's setups)."""
    at = fresh_app()
    at_sizes(at, 24, 24, 16, 128)
    held, peak = session_bytes(at, lambda: at.number_input(key="d_model").set_value(512).run())
    print(f"session at the editable sizes: holds {held / 2**20:.1f} MiB, peaks at {peak / 2**20:.1f} MiB")
    assert held + peak <= SESSION_BUDGET_BYTES, (held / 2**20, peak / 2**20)


def test_one_long_session_at_the_attention_limit_stays_within_its_memory_budget():
    """1024 + 1024 tokens, 12 heads of width 128, d_model 768, biases: every limit reached at once."""
    at = fresh_app()
    at_sizes(at, LIMITS.tokens, LIMITS.tokens, 12, 128)
    assert 12 * LIMITS.tokens * LIMITS.tokens == LIMITS.attention_cells
    held, peak = session_bytes(at, lambda: at.number_input(key="d_model").set_value(LIMITS.d_model).run())
    print(f"long session at every limit: holds {held / 2**20:.1f} MiB, peaks at {peak / 2**20:.1f} MiB")
    assert held + peak <= LONG_SESSION_BUDGET_BYTES, (held / 2**20, peak / 2**20)
    assert any(trace["type"] == "image" for trace in chart_specs(at)["chart_weights"]["data"])


def test_one_head_more_than_the_attention_limit_is_refused_next_to_the_heads():
    at = fresh_app()
    at.text_input(key="tokens_text").set_value(" ".join(f"w{i}" for i in range(LIMITS.tokens))).run()
    at.number_input(key="d_model").set_value(13 * 8).run()
    at.number_input(key="n_heads").set_value(13).run()
    assert not at.exception
    assert any("attention cells is over the limit" in e for e in texts(at.sidebar.error))
    assert "chart_weights" not in chart_specs(at)


def test_large_type_grows_the_charts_and_the_pages_text(at):
    def cell_fonts():
        return {trace["textfont"]["size"] for trace in chart_specs(at)["chart_weights"]["data"]}

    def styles():
        return [str(element.proto) for element in at.get("html")]

    assert max(cell_fonts()) < 20 and not any("font-size" in body for body in styles())
    at.toggle(key="large_type").set_value(True).run()
    assert min(cell_fonts()) >= 20
    assert any("font-size: 1.4rem" in body for body in styles())


def test_a_link_to_a_drill_down_cell_opens_the_drill_down_on_it():
    fresh = open_address({"example": "the_cat_sat_two_heads", "drill": "2.3.1"})
    assert not fresh.exception and fresh.toggle(key="drill_open").value
    assert fresh.selectbox(key="pick_drill_head").value == "head 2"
    assert fresh.selectbox(key="pick_drill_query").value == "3 · sat"
    assert any(r"q_{3} \cdot k_{1}" in line for line in texts(fresh.latex))
    fresh.toggle(key="drill_open").set_value(False).run()
    assert "drill" not in address(fresh)  # a closed drill-down is not in the address


def test_reset_gives_back_the_random_example_drawn_with_its_own_seed(at):
    from course.examples import generated_setup
    at.number_input(key="seed").set_value(7).run()
    pick_example(at, "random")
    drawn = generated_setup("random", 7)
    at.number_input(key="seed").set_value(8).run()  # the box changes; the example on screen does not
    edit_cell(at, "x", row=0, col=0, value="5")
    assert picker(at) == "random (seeded) (edited)"
    at.button(key="reset").click().run()
    assert picker(at) == "random (seeded)"
    np.testing.assert_array_equal(work(at, "x"), drawn.x)
