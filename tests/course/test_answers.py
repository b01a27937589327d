"""One registry of answer kinds (course/answers.py; issue 28, 3): every kind the quiz asks has an
entry, the quiz's check, the room's stored form and the store's mark come from it, and its words are
in every catalogue."""

from __future__ import annotations

import pytest

from classroom.store import FORECAST, Question, is_right
from course import answers
from course.i18n import LANGUAGES, translator
from course.quiz import KINDS, RECALL

ASKED = (*KINDS, "strongest_head", *{q.kind for q in RECALL}, FORECAST)


@pytest.mark.parametrize("name", ASKED)
def test_every_kind_the_course_asks_is_in_the_registry(name):
    assert answers.kind_of(name) is answers.KINDS[name]


def test_a_kind_the_registry_does_not_know_is_free_text_marked_as_a_number():
    poll = answers.kind_of("poll")
    assert poll.form == answers.TEXT and poll.stored("  yes ") == "yes"
    asked = Question("q", "How many heads?", (), "poll", 0.0, correct="8", tolerance=0.0)
    assert is_right(asked, "8.0") and not is_right(asked, "eight") and not is_right(asked, "9")


@pytest.mark.parametrize(("name", "typed", "stored", "shown"), [
    ("weight", "67%", "0.67", "0.67"), ("weight", "0,666", "0.666", "0.67"),
    ("parameters", "1.048.576", "1048576.0", "1,048,576"), ("score", "-1,25", "-1.25", "-1.25"),
    ("shape", "(3, 5)", "3 × 5", "3 × 5")])
def test_a_typed_answer_is_stored_in_one_form_and_shown_back(name, typed, stored, shown):
    kind = answers.kind_of(name)
    assert kind.stored(typed) == stored
    assert kind.shown(stored) == shown


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_reasons_and_placeholders_are_in_every_language(language):
    words = [answers.NO_ANSWER, answers.CHOOSE, answers.SHAPE_HINT, answers.NOT_A_NUMBER,
             *(kind.placeholder for kind in answers.KINDS.values() if kind.placeholder)]
    _ = translator(language)
    if language != "en":
        assert all(_(word) != word for word in words if word not in ("e.g. 3 × 5",)), language
    with pytest.raises(answers.Unreadable, match=_(answers.SHAPE_HINT).split(",")[0]):
        answers.kind_of("shape").stored("three by five", language=language)


def test_number_and_shape_kinds_suggest_what_to_type():
    for kind in answers.KINDS.values():
        assert bool(kind.placeholder) == (kind.form in (answers.NUMBER, answers.SHAPE)), kind.name
