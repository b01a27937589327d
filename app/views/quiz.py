"""Quiz: questions drawn from the live setup (course.quiz), the chapters' Recall set, a worksheet.

The page only draws. The quiz's seed is ``selections["quiz_seed"]`` (the link's ``quiz=<seed + 1>``),
so everyone who opens one link gets the same questions; what this session answered lives in
``quiz_*`` keys, and a new setup or seed starts a new round of questions (nothing stale).

Everything is in the reader's language (app.i18n), the generated questions too; a question asked
to the room is the same question in English (the room's store shows it to every student, whatever
their language), so a new language starts a new round of the same questions (its answers are
the language's choices).
"""

from __future__ import annotations

import secrets

import streamlit as st

from app import i18n
from app.room import following
from app.room.live import in_room, is_teacher
from app.room.questions import ask_button
from app.safe import lit
from app.session import session_keys, state
from app.session.this_run import Current
from app.steps.step_text import drill_lines
from classroom.store import ANSWER_CHARS
from course import answers
from course.quiz import Question, generate, recall
from course.steps import number_of
from course.worksheet import worksheet_html

QUIZ_LENGTH = 10  # questions drawn at a time; "New question" past the last draws more
SEEDS = 999  # a link counts the seed from 1 in at most three digits (address._apply_selections)
RADIO_UP_TO = 6  # more choices than this go in a selectbox


# The session keys this module owns (app/session/session_keys.py).
QUIZ_ASKED, QUIZ_FIRST, QUIZ_GIVEN, QUIZ_INDEX = "quiz_asked", "quiz_first", "quiz_given", "quiz_index"
QUIZ_LANGUAGE, QUIZ_NOTE, QUIZ_RECALL_GIVEN = "quiz_language", "quiz_note", "quiz_recall_given"
QUIZ_REFUSED, QUIZ_RIGHT, QUIZ_ROUND = "quiz_refused", "quiz_right", "quiz_round"
QUIZ_SEEN_SEED, QUIZ_SETUP = "quiz_seen_seed", "quiz_setup"
session_keys.register(*(session_keys.Key(name, __name__) for name in (
    QUIZ_ASKED, QUIZ_FIRST, QUIZ_GIVEN, QUIZ_INDEX, QUIZ_LANGUAGE, QUIZ_NOTE,
    QUIZ_RECALL_GIVEN, QUIZ_REFUSED, QUIZ_RIGHT, QUIZ_ROUND, QUIZ_SEEN_SEED, QUIZ_SETUP
)))


def render(current: Current, workbench_page) -> None:
    st.title(i18n.t("Quiz"))
    seed = _seed()
    score_slot = st.empty()  # filled last, so that this run's check is counted
    asked, recall_tab, sheet = st.tabs([i18n.t("Questions about this setup"),
                                        i18n.t("Recall: the chapters' questions"),
                                        i18n.t("Worksheet to print")])
    with recall_tab:
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
    score = i18n.t("**Score this session: {right} right of {total} asked** (each question's first answer "
                   "counts, as in a live class). Quiz seed {seed}: everyone who opens this page's link gets "
                   "the same questions.")
    score_slot.markdown(score.format(right=f"{right:d}", total=f"{total:d}", seed=f"{seed + 1:d}"))


def _seed() -> int:
    """The quiz's seed from the selections (a link may have set it), kept in the address bar."""
    selections = st.session_state[state.SELECTIONS]
    seed = selections.get("quiz_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEEDS:
        seed = 0
    selections["quiz_seed"] = seed
    following.sync_selection_params()
    return seed


def _new_quiz() -> None:
    selections = st.session_state[state.SELECTIONS]
    old = selections.get("quiz_seed", 0)
    selections["quiz_seed"] = (old + 1 + secrets.randbelow(SEEDS - 1)) % SEEDS  # never the same one


def _next_question() -> None:
    st.session_state.quiz_index = st.session_state.get("quiz_index", 0) + 1


def _fix_first(current: Current, workbench_page) -> None:
    problems = list(current.problems.values()) + ([current.error] if current.error else [])
    what = lit(problems[0]) if problems else i18n.t("an input is at fault")
    st.warning(i18n.t("The questions are about the live setup, and it cannot be computed now: {what}")
               .format(what=what), icon=":material/warning:")
    st.page_link(workbench_page, label=i18n.t("Fix it on the workbench"), icon=":material/calculate:")


def _round(current: Current, seed: int) -> int:
    """The round of questions: a new one whenever the setup's inputs or the seed change; a new
    language starts a new round of the same questions, at the same question."""
    ss = st.session_state
    seen = ss.get("quiz_setup")
    if seen is None or ss.get("quiz_seen_seed") != seed or not seen.same_inputs(current.setup):
        if seen is not None and ss.get("quiz_seen_seed") == seed:
            ss.quiz_note = i18n.t("The setup changed, so the quiz starts again with questions about it.")
        ss.quiz_round, ss.quiz_index, ss.quiz_given = ss.get("quiz_round", 0) + 1, 0, {}
    elif ss.get("quiz_language", i18n.language()) != i18n.language():  # the answers given were its choices
        ss.quiz_round, ss.quiz_given = ss.get("quiz_round", 0) + 1, {}
    ss.quiz_setup, ss.quiz_seen_seed, ss.quiz_language = current.setup, seed, i18n.language()
    return ss.quiz_round


def _questions(current: Current, workbench_page, seed: int) -> None:
    ss = st.session_state
    round_ = _round(current, seed)
    if ss.get("quiz_note"):
        st.info(lit(ss.pop("quiz_note")), icon=":material/refresh:")
    index = ss.get("quiz_index", 0)
    count = max(QUIZ_LENGTH, index + 1)
    questions = generate(current.setup, current.result, seed, count=count, language=i18n.language())
    position = index % len(questions)  # a tiny setup has fewer different questions: they come round again
    question = questions[position]
    ident = f"{round_}_{index}"
    st.caption(i18n.t("Question {number} · about step {step}: {title}")
               .format(number=f"{index + 1:d}", step=f"{number_of(question.step):d}",
                       title=i18n.step(question.step).title))
    given = _ask(question, ident, f"**{lit(question.prompt)}**")
    if given is not None and ident not in ss.quiz_given:
        _count(question.check(given))
        ss.setdefault("quiz_first", {})[ident] = given
    if given is not None:
        ss.quiz_given[ident] = given
    if ident in ss.quiz_given and ss.quiz_refused != ident:
        _feedback(question, ss.quiz_given[ident], workbench_page, ss.get("quiz_first", {}).get(ident))
        if question.cell is not None and st.toggle(
                i18n.t("Show the arithmetic (the drill-down of this cell)"), key=f"quiz_arithmetic_{ident}"):
            for line in drill_lines(current.result, *question.cell):
                st.latex(i18n.tex(line))
    left, right = st.columns(2)
    if in_room() and is_teacher():  # the room's store shows the question to every student: in English
        english = question if i18n.language() == "en" else generate(
            current.setup, current.result, seed, count=count)[position]
        ask_button(english, key="quiz_ask")
    left.button(i18n.t("New question"), key="quiz_next", on_click=_next_question, use_container_width=True)
    right.button(i18n.t("New quiz (new seed)"), key="quiz_new", on_click=_new_quiz, use_container_width=True)


def _ask(question: Question, ident: str, prompt: str) -> str | None:
    """The question in a form; what was submitted (None before Check, or when it cannot be read as
    an answer: then a hint says why, the attempt does not count, and no earlier verdict shows)."""
    st.session_state.quiz_refused = None
    with st.form(f"quiz_form_{ident}"):
        st.markdown(prompt)
        key = f"quiz_answer_{ident}"
        if question.choices and len(question.choices) <= RADIO_UP_TO:
            value = st.radio(i18n.t("Your answer"), question.choices, index=None, key=key, format_func=lit)
        elif question.choices:
            value = st.selectbox(i18n.t("Your answer"), question.choices, index=None, key=key,
                                 placeholder=i18n.t("Choose a key, query or pair"))
        else:
            hint = answers.kind_of(question.kind).placeholder
            value = st.text_input(i18n.t("Your answer"), key=key, placeholder=i18n.t(hint) if hint else "",
                                  max_chars=ANSWER_CHARS)  # as long as a room's answer may be
        checked = st.form_submit_button(i18n.t("Check"), key=f"quiz_check_{ident}", type="primary")
    if not checked:
        return None
    if value is None or not str(value).strip():
        st.session_state.quiz_refused = ident
        st.warning(i18n.t("Type or choose an answer first, then press Check."), icon=":material/edit:")
        return None
    problem = question.problem(str(value), language=i18n.language())
    if problem:
        st.session_state.quiz_refused = ident
        st.warning(i18n.t("That cannot be read as an answer ({problem}). Try again: this attempt does not "
                          "count.").format(problem=lit(problem)), icon=":material/edit:")
        return None
    return str(value)


def _count(right: bool) -> None:
    ss = st.session_state
    ss.quiz_asked = ss.get("quiz_asked", 0) + 1
    ss.quiz_right = ss.get("quiz_right", 0) + int(right)


def _feedback(question: Question, given: str, workbench_page, first: str | None = None) -> None:
    """Right or wrong for the latest answer, and which answer the score counted: the first."""
    language = i18n.language()
    answer = lit(question.answer_in(language))
    if question.check(given):
        st.success(i18n.t("Right: {answer}.").format(answer=answer), icon=":material/check_circle:")
    else:
        problem = question.problem(given, language=language)
        if problem:
            wrong = i18n.t("Wrong ({problem}). The right answer is **{answer}**.").format(
                problem=lit(problem), answer=answer)
        else:
            wrong = i18n.t("Wrong: you answered {given}. The right answer is **{answer}**.").format(
                given=lit(given[:60]), answer=answer)
        st.error(wrong, icon=":material/cancel:")
    if first is not None and first != given:
        if question.check(first):
            counted = i18n.t("The score counts your first answer to this question, {first}, which was right: "
                             "as in a live class, only the first answer counts.")
        else:
            counted = i18n.t("The score counts your first answer to this question, {first}, which was wrong: "
                             "as in a live class, only the first answer counts.")
        st.caption(counted.format(first=lit(first[:60])))
    elif first is not None:
        st.caption(i18n.t("This first answer is the one the score counts."))
    st.markdown(question.explanation)
    st.page_link(workbench_page, label=i18n.t("Look at step {step}: {title}").format(
        step=f"{number_of(question.step):d}", title=i18n.step(question.step).title),
        icon=":material/calculate:")


def _recall(workbench_page) -> None:
    ss = st.session_state
    st.caption(i18n.t("The chapters' own Recall questions (chapter 001, 'Reveal after guessing'; chapter "
                      "004, 'Check yourself'). Guess first, then check."))
    answered = ss.setdefault("quiz_recall_given", {})
    language = i18n.language()
    for i, question in enumerate(recall(language)):
        ident = f"recall_{i}" if language == "en" else f"recall_{language}_{i}"  # a language's own choices
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
    label = state.label_of(current.setup.origin)
    title = (i18n.t("Multi-head attention by hand: {label} (edited)") if current.edited
             else i18n.t("Multi-head attention by hand: {label}")).format(label=label)
    html = worksheet_html(current.setup, current.result, title=title, seed=seed, language=i18n.language())
    st.markdown(i18n.t(
        "A worksheet for the class, from this setup's live numbers: one head's Q, K and V, a few dot "
        "products to compute by hand, the softmax of one row (its scaled scores given) and one cell of the "
        "head's output; the answer key is on a separate page. Open the file in a browser and print it (A4). "
        "When d_k is over 8 the sheet gives the scores instead of asking for dot products."))
    st.download_button(i18n.t("Download the worksheet (HTML, prints on A4)"), data=html,
                       file_name=worksheet_file_name(seed), mime="text/html",
                       key="quiz_worksheet", on_click="ignore", icon=":material/print:")
