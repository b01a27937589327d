"""The presenter's screens and their forecasts (issue 16, finding 1): nothing a forecast asks is on
screen before Reveal, and every screen's generated forecast is about that screen's idea."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.charts import figure_style
from app.views.present import SCREENS
from course.examples import all_examples
from course.quiz import forecast
from course.steps import screen_position
from tests.apptest_util import chart_specs, open_address, presenter_screens, shown

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()
SPLIT = screen_position("split")
CONCATENATE = screen_position("concatenate")
WEIGHTS = [list(stop) for stop in figure_style.WEIGHT_SCALE]  # the weights' one colour scale


def on_screen(at) -> str:
    """Every text the page shows: Markdown, captions, boxes and formulas."""
    elements = [*at.markdown, *at.caption, *at.success, *at.info, *at.warning, *at.latex]
    return " ".join(shown(elements))


def forecast_prompt(at) -> str | None:
    return next((text for text in shown(at.markdown) if text.startswith("**Forecast.**")), None)


def reveal_button(at):
    return next((button for button in at.button if button.key == "present_reveal"), None)


def walk_before_reveal(key: str):
    """(screen, the page before Reveal, the page after Reveal or None) for every screen of an example."""
    at = open_address({"example": key}, "present")
    for screen in presenter_screens(at, reveal=False):
        before = on_screen(at)
        button = reveal_button(at)
        after = None
        if button is not None:
            button.click().run()
            assert not at.exception
            after = on_screen(at)
        yield screen, before, after


@pytest.mark.parametrize("key", [k for k, s in EXAMPLES.items() if s.lesson is not None])
def test_the_lessons_point_is_never_on_screen_before_the_reveal_of_its_forecast(key):
    """The point ("Row 'sat': head 1 puts 0.67 on 'the'…") answers the forecast of its screen: it is
    on no screen up to that one until the room has forecast and the teacher pressed Reveal."""
    lesson = EXAMPLES[key].lesson
    point = lesson.look_for
    answer = lesson.forecast_answer
    point_screen = screen_position(lesson.screen)
    for screen, before, after in walk_before_reveal(key):
        if screen <= point_screen:
            assert point not in before, (key, screen + 1)
            assert not answer or answer not in before, (key, screen + 1)
        if screen == point_screen:
            assert after is not None, "the point's screen asks a forecast first"
            assert point in after
            if answer:
                assert answer in after


def test_the_cat_sat_disagreement_screen_shows_its_point_only_after_reveal():
    """The teacher's finding, as seen: the disagreement screen of 'the cat sat' before and after Reveal."""
    at = open_address({"example": "the_cat_sat_two_heads", "step": "disagreement"}, "present")
    assert "Where will 'sat' look in each head?" in forecast_prompt(at)
    assert "head 1 puts 0.67" not in on_screen(at)
    assert not at.success
    reveal_button(at).click().run()
    assert "head 1 puts 0.67 on 'the'" in on_screen(at)
    assert any("The point is on this screen" in text for text in shown(at.success))


MANY_HEADS = [k for k, s in EXAMPLES.items() if s.w_q.shape[0] > 1 and len(s.key_tokens) > 1]


@pytest.mark.parametrize("key", MANY_HEADS)
def test_the_split_screen_asks_about_the_heads_and_its_answer_is_the_cores(key):
    """Split into h heads: the forecast compares the heads (which gives a key the most weight from a
    query), not a dot product; the revealed answer is the head the weights say."""
    at = open_address({"example": key, "step": "split"}, "present")
    prompt = forecast_prompt(at)
    assert prompt is not None, key
    asked = re.search(r"Which head gives key “(\d+) · [^”]*” the most weight from query “(\d+) · ", prompt)
    assert asked, prompt
    assert "q · k" not in prompt and "score" not in prompt
    key_at, query_at = int(asked[1]) - 1, int(asked[2]) - 1
    weights = EXAMPLES[key].run().weights  # [h, n_q, n_k]
    best = int(np.argmax(weights[:, query_at, key_at]))
    reveal_button(at).click().run()
    assert f"**Answer:** head {best + 1}" in " ".join(shown(at.markdown))


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_each_screens_generated_forecast_is_about_that_screens_idea(key):
    """The forecast generated for a screen asks what that screen shows: shapes of Q, K, V on qkv,
    a score on dot_product, weights on softmax, a blend on weighted_sum, the heads on split,
    disagreement on disagreement, the concatenation's shapes on concatenate, the parameter count on
    cost (never the cost on the concatenation's screen)."""
    setup = EXAMPLES[key]
    result = setup.run()
    kinds = {screen_position(name): kind for name, kind in {
        "qkv": {"shape"}, "dot_product": {"top_key", "score"}, "softmax": {"top_key", "flat_head"},
        "weighted_sum": {"head_output", "top_key"}, "split": {"strongest_head"},
        "disagreement": {"disagreeing_pair", "flat_head"}, "concatenate": {"shape"},
        "cost": {"parameters"}}.items()}
    for screen in range(1, len(SCREENS)):
        for seed in range(3):
            question = forecast(setup, result, SCREENS[screen].step, seed=screen + 10 * seed,
                                idea=SCREENS[screen].idea)
            if question is None:
                one_key, one_head = result.weights.shape[2] == 1, result.weights.shape[0] == 1
                assert one_key or (screen == SPLIT and one_head), (key, screen + 1)  # nothing to ask
                continue
            assert question.kind in kinds[screen], (key, screen + 1, question.kind)
            if screen == CONCATENATE:
                assert "concatenation" in question.prompt or "W_O" in question.prompt, question.prompt
            if question.kind == "strongest_head":
                head, query, key_at = question.cell
                column = result.weights[:, query, key_at]  # [h]
                assert question.answer == f"head {int(np.argmax(column)) + 1}"
                assert np.sort(column)[-1] - np.sort(column)[-2] >= 0.01  # no tie is asked
                wrong = next(choice for choice in question.choices if choice != question.answer)
                assert question.check(question.answer) and not question.check(wrong)


@pytest.mark.parametrize("key", ["the_cat_sat_two_heads", "ex_h_cross_attention"])
def test_every_weight_on_the_presenter_is_drawn_in_one_colour_scale(key):
    """Finding 9: the presenter shows attention weights in one high-contrast scale everywhere (the
    heatmaps' own, figure_style.WEIGHT_SCALE): no screen draws them as bars in the heads' colours."""
    at = open_address({"example": key}, "present")
    weights_seen = 0
    for screen in presenter_screens(at):
        for name, spec in chart_specs(at).items():
            for trace in spec["data"]:
                assert trace["type"] != "bar", (key, screen + 1, name)
                if trace["type"] == "heatmap" and (trace.get("zmin"), trace.get("zmax")) == (0.0, 1.0):
                    assert [list(stop) for stop in trace["colorscale"]] == WEIGHTS, (key, screen + 1, name)
                    weights_seen += 1
    assert weights_seen >= 4  # softmax, the heads side by side, the heads' rows for a query, ...


def products(latex: str) -> dict[str, int]:
    """Each underbraced product of a parameter count and what it is under: {'W^Q': 64, ...}."""
    found = re.findall(r"\\underbrace\{([\d\s\\cdot]+)\}_\{([^}]*)\}", latex)
    return {name: int(np.prod([int(n) for n in re.findall(r"\d+", product)])) for product, name in found}


@pytest.mark.parametrize("key", EXAMPLES)
def test_the_cost_screen_counts_every_examples_parameters(key):
    """Issue 28: the cost screen wrote 2·h·d·d_k + h·d·d_v + h·d_v·d whatever the key/value heads,
    so the grouped decoder's products read 128 + 64 + 64 = 192 while they sum to 256. Its products now sum
    to the core's count (mha_core.derive.count_parameters), as the workbench's sizes line says."""
    from mha_core.derive import cost_of

    at = open_address({"example": key, "step": "cost"}, "present")
    if reveal_button(at) is not None:  # the count answers the screen's forecast
        reveal_button(at).click().run()
    assert not at.exception
    sizes = EXAMPLES[key].sizes
    cost = cost_of(sizes)
    formula = next(element.value for element in at.latex if r"\underbrace" in element.value)
    terms = products(formula)
    assert sum(terms.values()) == cost.total, (formula, cost)
    if sizes.groups < sizes.n_heads:
        assert terms["W^K"] == cost.per_key and terms["W^V"] == cost.per_value < terms["W^Q"]
    assert re.sub(r"[{,} $\n]", "", formula).endswith(f"={cost.total}")
