"""Quiz: questions drawn from the live setup (course.quiz), the chapters' Recall set, a worksheet.

The page only draws. The quiz's seed is ``selections["quiz_seed"]`` (the link's ``quiz=<seed + 1>``),
so everyone who opens one link gets the same questions; what this session answered lives in
``quiz_*`` keys, and a new setup or seed starts a new round of questions (nothing stale).
"""

from __future__ import annotations

import secrets

import streamlit as st

from app import i18n, state
from app.questions import ask_button
from app.safe import lit
from app.state import Current
from app.views.workbench import drill_lines
from course.quiz import RECALL, Question, generate
from course.worksheet import worksheet_html

QUIZ_LENGTH = 10  # questions drawn at a time; "New question" past the last draws more
SEEDS = 999  # a link counts the seed from 1 in at most three digits (state._apply_selections)
RADIO_UP_TO = 6  # more choices than this go in a selectbox
PLACEHOLDERS = {"weight": "e.g. 0.42", "score": "e.g. -1.25", "head_output": "e.g. 0.8",
                "shape": "e.g. 3 × 5", "parameters": "e.g. 1,048,576"}


def render(current: Current, workbench_page) -> None:
    st.title("Quiz")
    seed = _seed()
    score_slot = st.empty()  # filled last, so that this run's check is counted
    asked, recall, sheet = st.tabs(["Questions about this setup", "Recall: the chapters' questions",
                                    "Worksheet to print"])
    with recall:
        _recall(workbench_page)
    if current.result is None:
        for tab in (asked, sheet):
            with tab:
                _fix_first(current, workbench_page)
    else:
        with asked:
            _questions(current, workbench_page, seed)
        with sheet:
            _worksheet(current, seed)
    right, total = st.session_state.get("quiz_right", 0), st.session_state.get("quiz_asked", 0)
    score_slot.markdown(f"**Score this session: {right:d} right of {total:d} asked** (each question's first "
                        f"answer counts, as in a live class). Quiz seed {seed + 1}: everyone who opens this "
                        "page's link gets the same questions.")


def _seed() -> int:
    """The quiz's seed from the selections (a link may have set it), kept in the address bar."""
    selections = st.session_state.selections
    seed = selections.get("quiz_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEEDS:
        seed = 0
    selections["quiz_seed"] = seed
    state.sync_selection_params()
    return seed


def _new_quiz() -> None:
    selections = st.session_state.selections
    old = selections.get("quiz_seed", 0)
    selections["quiz_seed"] = (old + 1 + secrets.randbelow(SEEDS - 1)) % SEEDS  # never the same one


def _next_question() -> None:
    st.session_state.quiz_index = st.session_state.get("quiz_index", 0) + 1


def _fix_first(current: Current, workbench_page) -> None:
    problems = list(current.problems.values()) + ([current.error] if current.error else [])
    what = lit(problems[0]) if problems else "an input is at fault"
    st.warning(f"The questions are about the live setup, and it cannot be computed now: {what}",
               icon=":material/warning:")
    st.page_link(workbench_page, label="Fix it on the workbench", icon=":material/calculate:")


def _round(current: Current, seed: int) -> int:
    """The round of questions: a new one whenever the setup's inputs or the seed change."""
    ss = st.session_state
    seen = ss.get("quiz_setup")
    if seen is None or ss.get("quiz_seen_seed") != seed or not seen.same_inputs(current.setup):
        if seen is not None and ss.get("quiz_seen_seed") == seed:
            ss.quiz_note = "The setup changed, so the quiz starts again with questions about it."
        ss.quiz_round, ss.quiz_index, ss.quiz_given = ss.get("quiz_round", 0) + 1, 0, {}
    ss.quiz_setup, ss.quiz_seen_seed = current.setup, seed
    return ss.quiz_round


def _questions(current: Current, workbench_page, seed: int) -> None:
    ss = st.session_state
    round_ = _round(current, seed)
    if ss.get("quiz_note"):
        st.info(lit(ss.pop("quiz_note")), icon=":material/refresh:")
    index = ss.get("quiz_index", 0)
    questions = generate(current.setup, current.result, seed, count=max(QUIZ_LENGTH, index + 1))
    position = index % len(questions)  # a tiny setup has fewer different questions: they come round again
    question = questions[position]
    ident = f"{round_}_{index}"
    st.caption(f"Question {index + 1} · about step {question.step:d}: {i18n.step(question.step).title}")
    given = _ask(question, ident, f"**{lit(question.prompt)}**")
    if given is not None and ident not in ss.quiz_given:
        _count(question.check(given))
        ss.setdefault("quiz_first", {})[ident] = given
    if given is not None:
        ss.quiz_given[ident] = given
    if ident in ss.quiz_given and ss.quiz_refused != ident:
        _feedback(question, ss.quiz_given[ident], workbench_page, ss.get("quiz_first", {}).get(ident))
        if question.cell is not None and st.toggle("Show the arithmetic (the drill-down of this cell)",
                                                   key=f"quiz_arithmetic_{ident}"):
            for line in drill_lines(current.result, *question.cell):
                st.latex(line)
    left, right = st.columns(2)
    ask_button(question, key="quiz_ask")
    left.button("New question", key="quiz_next", on_click=_next_question, use_container_width=True)
    right.button("New quiz (new seed)", key="quiz_new", on_click=_new_quiz, use_container_width=True)


def _ask(question: Question, ident: str, prompt: str) -> str | None:
    """The question in a form; what was submitted (None before Check, or when it cannot be read as
    an answer: then a hint says why, the attempt does not count, and no earlier verdict shows)."""
    st.session_state.quiz_refused = None
    with st.form(f"quiz_form_{ident}"):
        st.markdown(prompt)
        key = f"quiz_answer_{ident}"
        if question.choices and len(question.choices) <= RADIO_UP_TO:
            value = st.radio("Your answer", question.choices, index=None, key=key, format_func=lit)
        elif question.choices:
            value = st.selectbox("Your answer", question.choices, index=None, key=key,
                                 placeholder="Choose a key, query or pair")
        else:
            value = st.text_input("Your answer", key=key, placeholder=PLACEHOLDERS.get(question.kind, ""),
                                  max_chars=60)
        checked = st.form_submit_button("Check", key=f"quiz_check_{ident}", type="primary")
    if not checked:
        return None
    if value is None or not str(value).strip():
        st.session_state.quiz_refused = ident
        st.warning("Type or choose an answer first, then press Check.", icon=":material/edit:")
        return None
    problem = question.problem(str(value))
    if problem:
        st.session_state.quiz_refused = ident
        st.warning(f"That cannot be read as an answer ({lit(problem)}). Try again: this attempt does "
                   "not count.", icon=":material/edit:")
        return None
    return str(value)


def _count(right: bool) -> None:
    ss = st.session_state
    ss.quiz_asked = ss.get("quiz_asked", 0) + 1
    ss.quiz_right = ss.get("quiz_right", 0) + int(right)


def _feedback(question: Question, given: str, workbench_page, first: str | None = None) -> None:
    """Right or wrong for the latest answer, and which answer the score counted: the first."""
    if question.check(given):
        st.success(f"Right: {lit(question.answer_text)}.", icon=":material/check_circle:")
    else:
        problem = question.problem(given)
        why = f" ({lit(problem)})" if problem else f": you answered {lit(given[:60])}"
        st.error(f"Wrong{why}. The right answer is **{lit(question.answer_text)}**.",
                 icon=":material/cancel:")
    if first is not None and first != given:
        verdict = "right" if question.check(first) else "wrong"
        st.caption(f"The score counts your first answer to this question, {lit(first[:60])}, which "
                   f"was {verdict}: as in a live class, only the first answer counts.")
    elif first is not None:
        st.caption("This first answer is the one the score counts.")
    st.markdown(question.explanation)
    st.page_link(workbench_page, label=f"Look at step {question.step:d}: {i18n.step(question.step).title}",
                 icon=":material/calculate:")


def _recall(workbench_page) -> None:
    ss = st.session_state
    st.caption("The chapters' own Recall questions (chapter 001, 'Reveal after guessing'; chapter 004, "
               "'Check yourself'). Guess first, then check.")
    answered = ss.setdefault("quiz_recall_given", {})
    for i, question in enumerate(RECALL):
        ident = f"recall_{i}"
        given = _ask(question, ident, f"**{i + 1}. {lit(question.prompt)}**")
        if given is not None and ident not in answered:
            _count(question.check(given))
            ss.setdefault("quiz_first", {})[ident] = given
        if given is not None:
            answered[ident] = given
        if ident in answered and ss.quiz_refused != ident:
            _feedback(question, answered[ident], workbench_page, ss.get("quiz_first", {}).get(ident))


def worksheet_file_name(seed: int) -> str:
    """The worksheet's file, numbered as the page and the sheet number the seed: from 1."""
    return f"attention-worksheet-{seed + 1}.html"


def _worksheet(current: Current, seed: int) -> None:
    label = state.label_of(current.setup.origin) + (" (edited)" if current.edited else "")
    html = worksheet_html(current.setup, current.result, title=f"Multi-head attention by hand: {label}",
                          seed=seed)
    st.markdown("A worksheet for the class, from this setup's live numbers: one head's Q, K and V, a few "
                "dot products to compute by hand, the softmax of one row (its scaled scores given) and one "
                "cell of the head's output; the answer key is on a separate page. Open the file in a "
                "browser and print it (A4). When d_k is over 8 the sheet gives the scores instead of "
                "asking for dot products.")
    st.download_button("Download the worksheet (HTML, prints on A4)", data=html,
                       file_name=worksheet_file_name(seed), mime="text/html",
                       key="quiz_worksheet", on_click="ignore", icon=":material/print:")
