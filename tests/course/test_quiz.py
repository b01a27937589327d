"""The quiz: questions generated from a setup mark right answers right and wrong ones wrong, their
answers are mha_core's numbers, the draw is fixed by the seed, and the page runs on every example."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course.answers import kind_of, read_shape
from course.examples import DEFAULT_EXAMPLE, GENERATED, all_examples, generated_setup
from course.quiz import (
    FLAT_AT,
    KINDS,
    RECALL,
    TOP_MARGIN,
    WEIGHT_TOLERANCE,
    Question,
    forecast,
    generate,
    relative_tolerance,
)
from course.steps import STEPS
from mha_core import Setup
from mha_core.analysis import most_disagreeing_pair, normalised_entropy, pairwise_disagreement
from tests.apptest_util import fresh_app, goto, open_address, pick_example, texts
from tests.strategies import random_setups

EXAMPLES = all_examples()
JUNK = ["", "   ", "abc", "1,2,3", "0x10", "inf", "-inf", "nan", "1e999", "<script>", "3 × ", "½", "١٢",
        "--1"]


# ---------------------------------------------------------------------------------------------
# Random setups: masks, cross-attention, biases, any scaling, repeated tokens, one head, one token


@st.composite
def setups(draw) -> Setup:
    if draw(st.integers(0, 4)) == 0:
        return generated_setup("random", draw(st.integers(0, 10_000)))
    return draw(random_setups(max_tokens=6, max_d_model=6, max_heads=4, max_width=4, spreads=(0.0, 0.3, 2.0),
                              words=True))


def allowed_of(result) -> np.ndarray:
    h, n_q, n_k = result.weights.shape
    return np.ones((n_q, n_k), bool) if result.mask is None else result.mask


def position(label: str) -> int:
    """'5 · the' -> 4."""
    return int(label.split(" · ", 1)[0]) - 1


def quoted_positions(prompt: str) -> list[int]:
    return [int(n) - 1 for n in re.findall(r"“(\d+) · ", prompt)]


def head_in(prompt: str) -> int:
    return int(re.search(r"head (\d+)", prompt)[1]) - 1


def wrong_answers(question: Question) -> list[str]:
    if question.choices:
        return [c for c in question.choices if c != question.answer]
    if question.kind == "shape":
        rows, cols = read_shape(question.answer)
        return [f"{rows + 1} × {cols}", f"{rows} × {cols + 1}",
                f"{cols} × {rows}" if rows != cols else "0 × 0"]
    value = float(question.answer)
    return [repr(value + 10 * question.tolerance + 0.1), repr(value - 10 * question.tolerance - 0.1)]


def assert_marks_right_and_wrong(question: Question) -> None:
    assert question.check(question.answer_text), (question.prompt, question.answer_text)
    assert question.check(f"  {question.answer_text} ")
    if not isinstance(question.answer, str):
        assert question.check(repr(float(question.answer)))
    for wrong in wrong_answers(question):
        assert not question.check(wrong), (question.prompt, wrong)
    for junk in JUNK:
        assert not question.check(junk)
    assert not question.check(None)
    if question.choices:
        assert question.answer in question.choices and len(set(question.choices)) == len(question.choices)
    assert question.step in STEPS


def assert_answer_is_the_cores(question: Question, setup: Setup, result) -> None:
    """The answer recomputed from the core's arrays, independently of how the quiz found it."""
    allowed = allowed_of(result)
    if question.cell is not None:
        h, q, k = question.cell
        assert allowed[q, k], "a masked cell is never asked about"
    if question.kind == "weight":
        assert question.answer == result.weights[question.cell]
        assert question.tolerance == WEIGHT_TOLERANCE
    elif question.kind == "score":
        array = result.scores if question.step == "raw_scores" else result.scaled
        assert question.answer == array[question.cell]
        assert question.tolerance >= 0.005 and question.tolerance >= 0.005 * abs(question.answer)
    elif question.kind == "top_key":
        h, q, _ = question.cell
        values = (result.scores if question.step == "raw_scores" else result.weights)[h, q]
        row = np.where(allowed[q], values, -np.inf)
        assert position(question.answer) == int(np.argmax(row))
        assert allowed[q, position(question.answer)]
        assert np.sort(row)[-1] - np.sort(row)[-2] >= TOP_MARGIN  # no tie is asked
        assert all(allowed[q, position(c)] for c in question.choices)
    elif question.kind == "head_output":
        h, q = head_in(question.prompt), quoted_positions(question.prompt)[0]
        j = int(re.search(r"column (\d+)", question.prompt)[1]) - 1
        assert question.answer == result.head_outputs[h, q, j]
        assert allowed[q].any()
    elif question.kind == "flat_head":
        h, q = head_in(question.prompt), quoted_positions(question.prompt)[0]
        entropy = normalised_entropy(result.weights[h, q])
        assert question.answer == ("yes" if entropy >= FLAT_AT else "no")
        assert abs(entropy - FLAT_AT) >= 0.01 and allowed[q].sum() >= 2
    elif question.kind == "disagreeing_pair":
        assert result.n_heads >= 2
        if question.prompt.startswith("For which query"):  # two heads: the query they split most over
            distances = {position(c): pairwise_disagreement(result.weights, position(c))[0, 1]
                         for c in question.choices}
            assert position(question.answer) == max(distances, key=distances.get)
        else:
            q = quoted_positions(question.prompt)[0]
            a, b, _ = most_disagreeing_pair(pairwise_disagreement(result.weights, q))
            assert question.answer == f"head {a + 1} & head {b + 1}"
    elif question.kind == "parameters":  # every number the block holds: its arrays' sizes
        assert question.answer == sum(array.size for array in setup.arrays().values() if array is not setup.x
                                      and array is not setup.x_kv)
    elif question.kind == "shape":
        arrays = {"shape of Q of": result.q, "shape of K of": result.k, "shape of V of": result.v,
                  "raw scores": result.scores,
                  "attention weights": result.weights, "(weights times V)": result.head_outputs}
        for name, array in arrays.items():
            if name in question.prompt:
                assert read_shape(question.answer) == array.shape[1:]
        if "concatenation" in question.prompt:
            assert read_shape(question.answer) == result.concat.shape
        if "output of the attention block" in question.prompt:
            assert read_shape(question.answer) == result.output.shape
        if "shape of W_Q of" in question.prompt:
            assert read_shape(question.answer) == setup.w_q.shape[1:]
        if "shape of W_O" in question.prompt:
            assert read_shape(question.answer) == setup.w_o.shape
    else:
        pytest.fail(f"unknown kind {question.kind}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups(), st.integers(0, 998))
def test_generated_questions_mark_right_right_and_wrong_wrong(setup, seed):
    result = setup.run()
    questions = generate(setup, result, seed)
    assert 1 <= len(questions) <= 10
    assert len({q.prompt for q in questions}) == len(questions)
    for question in questions:
        assert question.kind in KINDS
        assert_marks_right_and_wrong(question)
        assert_answer_is_the_cores(question, setup, result)
    if result.n_heads == 1:
        assert "disagreeing_pair" not in {q.kind for q in questions}
    if result.weights.shape[2] == 1:
        assert "top_key" not in {q.kind for q in questions}


@settings(max_examples=30, deadline=None)
@given(setups(), st.integers(0, 998), st.sampled_from([*STEPS, "no_such_step", ""]))
def test_forecasts_are_answered_at_the_step_asked(setup, seed, step):
    result = setup.run()
    question = forecast(setup, result, step, seed)
    if step not in STEPS:
        assert question is None
    elif question is not None:
        assert question.step == step
        assert_marks_right_and_wrong(question)
        assert_answer_is_the_cores(question, setup, result)


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_generates_and_forecasts(key):
    setup = EXAMPLES[key]
    result = setup.run()
    questions = generate(setup, result, 0)
    assert len(questions) == 10
    for question in questions:
        assert_marks_right_and_wrong(question)
        assert_answer_is_the_cores(question, setup, result)
    for step in STEPS:
        question = forecast(setup, result, step, seed=3)
        assert question is None or question.step == step
        if question is not None:
            assert_marks_right_and_wrong(question)


def test_the_default_examples_forecasts_cover_every_step():
    setup = EXAMPLES[DEFAULT_EXAMPLE]
    result = setup.run()
    asked = {(step, seed): forecast(setup, result, step, seed) for step in STEPS for seed in range(4)}
    assert all(question is not None for question in asked.values())
    sixth = forecast(setup, result, "heads_compared", 0)
    assert sixth.kind == "disagreeing_pair" and sixth.answer == "3 · sat"  # chapter 002's 0.813


def test_generated_examples_generate():
    for kind in GENERATED:
        setup = generated_setup(kind, 5)
        questions = generate(setup, setup.run(), 1)
        assert questions and all(q.check(q.answer_text) for q in questions)


@pytest.mark.parametrize("key", ["ex_h_cross_attention", "ex_i_parameter_count"])
def test_generation_is_fast_on_the_512_wide_examples(key):
    setup = EXAMPLES[key]
    result = setup.run()
    took = min(_timed(generate, setup, result, seed) for seed in range(3))
    assert took < 0.05, f"{took * 1000:.0f} ms"


def _timed(call, *args) -> float:
    start = time.perf_counter()
    call(*args)
    return time.perf_counter() - start


def test_the_same_seed_gives_the_same_questions_and_other_seeds_other_draws():
    setup = EXAMPLES["visual_walkthrough"]
    result = setup.run()
    assert generate(setup, result, 7) == generate(setup, result, 7)
    assert generate(setup.setup(), setup.run(), 7) == generate(setup, result, 7)  # the inputs, not the object
    draws = {tuple(q.prompt for q in generate(setup, result, seed)[:3]) for seed in range(10)}
    assert len(draws) >= 8
    assert generate(setup, result, 7, count=4) == generate(setup, result, 7, count=10)[:4]


def test_kinds_are_mixed():
    setup = generated_setup("random", 0)
    kinds = {q.kind for q in generate(setup, setup.run(), 0)}
    assert len(kinds) >= 6


def test_ties_are_never_asked_as_a_top_key():
    equal = EXAMPLES["ex_c_equal_scores"]  # one query, three equal scores
    one_head = EXAMPLES["the_cat_sat_one_head"]  # row 'sat' (3) is exactly uniform
    for seed in range(30):
        assert all(q.kind != "top_key" for q in generate(equal, equal.run(), seed))
        tops = [q for q in generate(one_head, one_head.run(), seed) if q.kind == "top_key"]
        assert all(q.cell[1] != 2 for q in tops)


def test_a_one_token_setup_asks_no_top_key_and_no_disagreement():
    setup = EXAMPLES["ex_b_two_heads_one_token"]
    questions = generate(setup, setup.run(), 0, count=30)
    kinds = {q.kind for q in questions}
    assert "top_key" not in kinds and "flat_head" not in kinds and "disagreeing_pair" not in kinds
    assert len(questions) < 30  # a one-token setup has fewer different questions; no duplicates instead


def test_masked_keys_are_never_the_answer():
    setup = Setup(tokens=("a", "b", "c", "d"), x=np.eye(4), w_q=np.eye(4)[None] * 3, w_k=np.eye(4)[None] * 3,
                  w_v=np.eye(4)[None], w_o=np.eye(4), mask="causal")
    result = setup.run()  # each query prefers itself, the only key it may not see is later
    for seed in range(20):
        for question in generate(setup, result, seed):
            if question.cell is not None:
                h, q, k = question.cell
                assert k <= q
            if question.kind == "top_key":
                assert all(position(c) <= question.cell[1] for c in question.choices)


def test_repeated_tokens_get_unambiguous_labels():
    setup = EXAMPLES["ex_i_parameter_count"]  # 'the cat sat on the mat'
    questions = generate(setup, setup.run(), 0, count=40)
    assert all(len(set(q.choices)) == len(q.choices) for q in questions)
    named = " ".join(q.prompt + " " + " ".join(q.choices) for q in questions)
    assert "1 · the" in named and "5 · the" in named


def test_flat_is_the_workbenchs_flat():
    setup = EXAMPLES["the_cat_sat_one_head"]
    result = setup.run()
    flats = [q for seed in range(20) for q in generate(setup, result, seed) if q.kind == "flat_head"]
    assert {q.answer for q in flats} == {"yes", "no"}  # 'sat' is uniform, 'the' is not
    assert all((q.answer == "yes") == ("“3 · sat”" in q.prompt) for q in flats)


@pytest.mark.parametrize(("typed", "value"), [
    ("0.67", 0.67), (" 0,67 ", 0.67), ("−1.5", -1.5), ("2e-3", 0.002), (".5", 0.5), ("-0", 0.0)])
def test_numbers_are_read_with_a_decimal_comma(typed, value):
    assert kind_of("score").read_number(typed) == value


def test_parameter_counts_take_thousands_separators_and_weights_percentages():
    count, weight = kind_of("parameters"), kind_of("weight")
    assert count.read_number("1,048,576") == 1048576
    assert count.read_number("1 048 576") == 1048576
    assert count.read_number("1048576") == 1048576
    assert weight.read_number("67%") == pytest.approx(0.67)
    for junk in ("1,04,8576", "0,048,576", "1,5", "67%"):
        with pytest.raises(ValueError):
            count.read_number(junk)
    question = Question("parameters", "How many?", 1048576.0, 7, "")
    assert question.check("1,048,576") and question.check("1048576") and not question.check("1,048,577")


@pytest.mark.parametrize("typed", ["3x5", "3 × 5", "3 X 5", "3*5", "3 by 5", "(3, 5)", "[3,5]"])
def test_shapes_are_read_in_every_usual_spelling(typed):
    assert read_shape(typed) == (3, 5)
    assert Question("shape", "?", "3 × 5", 3, "").check(typed)
    assert not Question("shape", "?", "5 × 3", 3, "").check(typed)


def test_tolerances_are_as_documented():
    weight = Question("weight", "?", 0.665, 4, "", tolerance=WEIGHT_TOLERANCE)
    assert weight.check("0.67") and weight.check("0.66")
    assert not weight.check("0.671") and not weight.check("0.6")
    assert weight.check("66.5%")
    assert relative_tolerance(0.1) == pytest.approx(0.005, abs=1e-5)
    assert relative_tolerance(1000.0) == pytest.approx(5.0, rel=1e-3)
    big = Question("score", "?", 1234.5, 3, "", tolerance=relative_tolerance(1234.5))
    assert big.check("1230") and not big.check("1220")


def test_problem_says_why_an_answer_cannot_be_read():
    number = Question("weight", "?", 0.5, 4, "", tolerance=WEIGHT_TOLERANCE)
    assert "not a number" in number.problem("abc")
    assert number.problem("0.5") is None
    assert "rows × columns" in Question("shape", "?", "3 × 5", 3, "").problem("three by five")
    assert "options" in Question("top_key", "?", "1 · a", 4, "", choices=("1 · a", "2 · b")).problem("a")


def test_recall_holds_the_chapters_seven_questions():
    assert len(RECALL) == 7
    chapter_001 = [q for q in RECALL if "Chapter 001" in q.explanation]
    chapter_004 = [q for q in RECALL if "Chapter 004" in q.explanation]
    assert (len(chapter_001), len(chapter_004)) == (3, 4)
    for question in RECALL:
        assert question.kind == "recall" and len(question.choices) == 4
        assert_marks_right_and_wrong(question)
    assert RECALL[5].answer == "64"
    assert len({q.choices.index(q.answer) for q in RECALL}) > 1  # the right one is not always first


# ---------------------------------------------------------------------------------------------
# The page (AppTest)


def plain(markdown: str) -> str:
    """Markdown written with md_literal, read back: its backslash escapes undone."""
    return re.sub(r"\\(.)", r"\1", markdown)


def shown_question(at) -> str:
    """The prompt of the question on the page as plain text (the form's bold line, not a Recall one)."""
    line = next(m.value for m in at.markdown if m.value.startswith("**") and not m.value[2].isdigit()
                and "Score this session" not in m.value)
    return plain(line.strip("*"))


def score(at) -> tuple[int, int]:
    line = next(m.value for m in at.markdown if "Score this session" in m.value)
    right, asked = re.search(r"(\d+) right of (\d+) asked", line).groups()
    return int(right), int(asked)


def answer(at, question: Question, text: str, ident: str = "1_0") -> None:
    key = f"quiz_answer_{ident}"
    if question.choices:
        widget = next((w for w in at.radio if w.key == key), None) or at.selectbox(key=key)
        widget.set_value(text)
    else:
        at.text_input(key=key).input(text)
    at.button(key=f"quiz_check_{ident}").click().run()


@pytest.fixture(scope="module")
def quiz_app():
    at = fresh_app()
    goto(at, "quiz")
    return at


@pytest.mark.parametrize("key", [*EXAMPLES, *GENERATED])
def test_the_page_runs_on_every_example(quiz_app, key):
    at = quiz_app
    pick_example(at, key)
    assert not at.exception
    setup = generated_setup(key, at.session_state["origin_seed"]) if key in GENERATED else EXAMPLES[key]
    seed = at.session_state["selections"].get("quiz_seed", 0)
    first = generate(setup, setup.run(), seed)[0]
    assert shown_question(at) == first.prompt
    assert at.get("download_button")  # the worksheet


def test_answering_right_raises_the_score_junk_gets_a_hint_and_a_wrong_number_is_wrong():
    at = fresh_app()
    goto(at, "quiz")
    setup = EXAMPLES[DEFAULT_EXAMPLE]
    questions = generate(setup, setup.run(), 0)
    answer(at, questions[0], questions[0].answer_text)
    assert not at.exception
    assert score(at) == (1, 1)
    assert any("Right" in s for s in texts(at.success))
    assert any("Look at step" in link.proto.label for link in at.get("page_link"))
    typed = next(i for i, q in enumerate(questions) if i > 0 and not q.choices)
    for _ in range(typed):
        at.button(key="quiz_next").click().run()
    answer(at, questions[typed], "<b>junk</b>", ident=f"1_{typed}")
    assert not at.exception
    assert score(at) == (1, 1)  # junk is not an attempt: a hint, and the question stays open
    assert any("cannot be read" in w for w in texts(at.warning))
    assert not any(e.startswith("Wrong") for e in texts(at.error))
    wrong = float(questions[typed].answer) + 10 * questions[typed].tolerance + 0.1
    answer(at, questions[typed], str(wrong), ident=f"1_{typed}")
    assert score(at) == (1, 2)
    assert any(e.startswith("Wrong") for e in texts(at.error))


def test_the_arithmetic_is_shown_on_request():
    at = fresh_app()
    goto(at, "quiz")
    setup = EXAMPLES[DEFAULT_EXAMPLE]
    questions = generate(setup, setup.run(), 0)
    index = next(i for i, q in enumerate(questions) if q.cell is not None)
    for _ in range(index):
        at.button(key="quiz_next").click().run()
    answer(at, questions[index], wrong_answers(questions[index])[0], ident=f"1_{index}")
    assert not at.latex
    at.toggle(key=f"quiz_arithmetic_1_{index}").set_value(True).run()
    assert not at.exception and len(at.latex) == 3  # dot product, scaling, softmax of that cell


def test_a_link_gives_everyone_the_same_first_question():
    first = open_address({"quiz": "5"})
    goto(first, "quiz")
    second = open_address({"quiz": "5"})
    goto(second, "quiz")
    assert not first.exception and not second.exception
    assert first.session_state["selections"]["quiz_seed"] == 4
    assert shown_question(first) == shown_question(second)
    setup = EXAMPLES[DEFAULT_EXAMPLE]
    assert shown_question(first) == generate(setup, setup.run(), 4)[0].prompt


def test_a_new_quiz_draws_a_new_seed_and_puts_it_in_the_address():
    at = fresh_app()
    goto(at, "quiz")
    assert at.query_params["quiz"] in ("1", ["1"])
    at.button(key="quiz_new").click().run()
    seed = at.session_state["selections"]["quiz_seed"]
    assert seed != 0 and 0 <= seed < 999
    value = at.query_params["quiz"]
    assert (value[-1] if isinstance(value, list) else value) == str(seed + 1)


def test_a_new_setup_restarts_the_questions():
    at = fresh_app()
    goto(at, "quiz")
    at.button(key="quiz_next").click().run()
    at.button(key="quiz_next").click().run()
    assert at.session_state["quiz_index"] == 2
    pick_example(at, "ex_g_coreference")
    assert not at.exception
    assert at.session_state["quiz_index"] == 0 and at.session_state["quiz_given"] == {}
    expected = generate(EXAMPLES["ex_g_coreference"], EXAMPLES["ex_g_coreference"].run(), 0)[0]
    assert any("starts again" in i for i in texts(at.info))
    assert shown_question(at) == expected.prompt


def test_a_fault_in_an_input_says_what_to_fix():
    at = fresh_app()
    goto(at, "quiz")
    at.text_input(key="tokens_text").set_value("   ").run()
    assert not at.exception
    assert any("at least one token" in w for w in texts(at.warning))
    assert any(button.key == "quiz_check_recall_0" for button in at.button)  # Recall still works


def test_recall_answers_count_in_the_score():
    at = fresh_app()
    goto(at, "quiz")
    at.radio(key="quiz_answer_recall_5").set_value("64")
    at.button(key="quiz_check_recall_5").click().run()
    at.radio(key="quiz_answer_recall_0").set_value(RECALL[0].choices[0])
    at.button(key="quiz_check_recall_0").click().run()
    assert not at.exception
    assert score(at) == (1, 2)
