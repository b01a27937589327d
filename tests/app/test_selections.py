"""The page's selections and the example picker: a chosen token, head or cell survives every change
that keeps it (and says so when it cannot), sizes changed and changed back give back exactly what was
there, and the picker names what is on screen, with Reset restoring it (issue 7's findings 1, 4, 5,
8, 9 and 10; each test failed on the code before its fix)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from course.examples import all_examples
from mha_core import LIMITS
from tests.apptest_util import (
    chart_specs,
    edit_cell,
    heatmap_values,
    pick,
    pick_example,
    picker_label,
    texts,
    work,
)
from tests.live_server import streamlit_server
from tests.st_protocol import Run, Session

EXAMPLES = all_examples()


def weights(at) -> np.ndarray:
    return np.stack(heatmap_values(chart_specs(at)["chart_weights"]))


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
@pytest.mark.server
def test_a_selection_whose_label_went_stale_is_kept_or_reset(server, name, stale, sentence):
    """Findings 1 and 8 over the browser's own protocol: the old code compared the stale label
    with an int (TypeError) and, with a sentence of the same length, failed every rerun after."""
    runs = asyncio.run(_stale_label_session(server, name, stale, sentence))
    for run in runs:
        # A picker among the steps reruns its fragment alone, as a browser sends it (the steps, or
        # the drill-down inside them); the sidebar's tokens run the whole page, every chart again.
        assert run.status in ("ok", "fragment ok") and not run.errors, (run.status, run.errors)
        if run.status == "ok":
            assert {"chart_bars", "chart_weights"} <= set(run.charts)
    assert runs[-1].status == "ok"


@pytest.mark.server
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


def test_an_empty_head_selector_falls_back_to_the_shown_head(at):
    pick(at, "shown_head", "head 2")
    at.session_state["pick_shown_head"] = None  # what the segmented control sent (old: shown_head None)
    at.run()
    assert not at.exception
    at.number_input(key="n_heads").set_value(1).run()  # "the next change" failed every rerun
    assert not at.exception and "chart_weights" in chart_specs(at)


@pytest.mark.parametrize("key, widget, there, back", [
    ("cat_chases_mouse", "n_heads", 4, 2), ("cat_chases_mouse", "d_model", 8, 4),
    ("the_cat_sat_two_heads", "n_heads", 1, 2), ("visual_walkthrough", "n_heads", 6, 3),
])
def test_a_size_changed_and_changed_back_restores_the_example_exactly(at, key, widget, there, back):
    pick_example(at, key)
    at.number_input(key=widget).set_value(there).run()
    assert any("New cells" in i for i in texts(at.info)) or there < back  # new cells are announced
    assert picker_label(at).endswith("(edited)")
    at.number_input(key=widget).set_value(back).run()
    assert not at.exception
    for name in ("x", "w_q", "w_k", "w_v", "w_o"):
        np.testing.assert_array_equal(work(at, name), getattr(EXAMPLES[key], name), err_msg=name)
    assert picker_label(at) == EXAMPLES[key].title  # the picker says so: it is the example again


def test_an_edit_made_at_another_size_is_kept_when_coming_back(at):
    pick_example(at, "cat_chases_mouse")
    at.number_input(key="n_heads").set_value(4).run()
    edit_cell(at, "x", row=0, col=0, value="9")
    at.number_input(key="n_heads").set_value(2).run()
    assert heatmap_values(chart_specs(at)["chart_x"])[0][0, 0] == 9
    np.testing.assert_array_equal(work(at, "w_q"), EXAMPLES["cat_chases_mouse"].w_q)


def test_the_picker_names_an_edited_example_and_reset_restores_it(at):
    pick_example(at, "ex_a_single_head")
    assert picker_label(at) == "A: single head, the bare core"
    assert "reset" not in [button.key for button in at.button]
    edit_cell(at, "x", row=0, col=0, value="2")
    assert picker_label(at) == "A: single head, the bare core (edited)"
    at.button(key="reset").click().run()
    assert picker_label(at) == "A: single head, the bare core"
    np.testing.assert_allclose(weights(at), EXAMPLES["ex_a_single_head"].run().weights, atol=1e-6)


def test_picking_the_shown_example_again_resets_it(at):
    edit_cell(at, "x", row=0, col=0, value="5")
    assert picker_label(at).endswith("(edited)")
    pick_example(at, "the_cat_sat_two_heads")
    assert picker_label(at) == EXAMPLES["the_cat_sat_two_heads"].title
    assert work(at, "x")[0, 0] == 2


def test_reset_gives_back_the_random_example_drawn_with_its_own_seed(at):
    from course.examples import generated_setup
    at.number_input(key="seed").set_value(7).run()
    pick_example(at, "random")
    drawn = generated_setup("random", 7)
    at.number_input(key="seed").set_value(8).run()  # the box changes; the example on screen does not
    edit_cell(at, "x", row=0, col=0, value="5")
    assert picker_label(at) == "random (seeded) (edited)"
    at.button(key="reset").click().run()
    assert picker_label(at) == "random (seeded)"
    np.testing.assert_array_equal(work(at, "x"), drawn.x)
