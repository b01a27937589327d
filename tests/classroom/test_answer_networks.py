"""Issue 40, finding 13: one machine with fresh cookies cast 52 votes in 16 s, and the teacher's answer
panel said nothing. The store keeps each member's network (a hash of the room's code and the address
of their first join: classroom/store.py, network_of), on both backends; the teacher's answer panel on
the Class page says when at least 5 answers, and more than half, come from one address, naming both
readings (one school's network, or one machine) and blaming nobody."""

from __future__ import annotations

import pytest

from app.room import live
from app.room.room_answers import SHARED_ADDRESS_ANSWERS, shared_from_one_address
from classroom.store import NotTheTeacher, network_of
from tests.apptest_util import goto, shown
from tests.classroom.test_live import teacher_with_room
from tests.classroom.test_store import backend, clock, redis_server, room, store  # noqa: F401 (fixtures)

SCHOOL, HOME = "198.51.100.7", "203.0.113.9"
NOTE = "come from students who joined from one address"  # room_answers.SHARED_ADDRESS's words


def answered(store, room, question, clients: list[str]) -> None:  # noqa: F811 (the fixture's name)
    for i, client in enumerate(clients):
        student = f"student-{i}"
        store.join(room.code, student, client=client)
        assert store.answer(room.code, question.id, student, question.choices[i % 2])


def test_each_answer_names_the_network_its_student_joined_from(store, room):  # noqa: F811
    question = store.ask(room.code, room.teacher_secret, "Which?", ["a", "b"])
    answered(store, room, question, [SCHOOL, SCHOOL, HOME, SCHOOL, ""])
    networks = store.answer_networks(room.code, room.teacher_secret, question.id)
    school, home = network_of(room.code, SCHOOL), network_of(room.code, HOME)
    assert sorted(networks) == sorted([school, school, home, school, ""])
    assert school != home and SCHOOL not in school and len(school) == 16
    assert network_of("ZZZZ", SCHOOL) != school  # another room's name for the same address
    store.join(room.code, "student-0", client=HOME)  # a member's re-join keeps the first network
    assert sorted(store.answer_networks(room.code, room.teacher_secret, question.id)) == sorted(networks)
    with pytest.raises(NotTheTeacher):
        store.answer_networks(room.code, "not the secret", question.id)


def test_ending_the_room_takes_the_networks_with_it(backend, store, room):  # noqa: F811
    store.join(room.code, "s1", client=SCHOOL)
    store.end_room(room.code, room.teacher_secret)
    if backend.name == "redis":
        with backend.server.client() as client:
            assert not [key for key in client.keys("*") if "networks" in str(key)]


@pytest.mark.parametrize("networks, shared", [
    (["a"] * 5, 5), (["a"] * 5 + ["b"] * 4, 5), (["a"] * 4, 0),  # fewer than 5: nothing to say
    (["a"] * 5 + ["b"] * 5, 0),  # half is no majority
    (["a"] * 6 + [""] * 6, 0),  # unknown networks count in the total, never as one
    ([""] * 9, 0), (["a", "b", "c", "d", "e", "f"], 0), (["a"] * 52, 52)])
def test_many_answers_share_an_address_at_five_and_more_than_half(networks, shared):
    assert SHARED_ADDRESS_ANSWERS == 5
    assert shared_from_one_address(networks) == shared


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_store")
def test_the_teachers_answer_panel_says_when_many_answers_share_one_address():
    """Before, nothing: 6 of 7 answers from one address now show the note on the Class page, with both
    readings; 3 of 7 do not."""
    teacher, code = teacher_with_room()
    secret = teacher.session_state["teacher_secret"]

    def ask_and_answer(clients: list[str]) -> list[str]:
        goto(teacher, "quiz")
        teacher.button(key="quiz_next").click().run()
        teacher.button(key="quiz_ask").click().run()
        question_id, question = teacher.session_state[live.ASKED]
        for i, client in enumerate(clients):
            student = f"s-{question_id}-{i}"
            live.store().join(code, student, client=client)
            live.store().answer(code, question_id, student, question.choices[0] if question.choices else "1")
        goto(teacher, "class")
        assert not teacher.exception
        assert live.store().tally(code, question_id).total == len(clients)
        return [text for text in shown(teacher.info) if NOTE in text]

    assert ask_and_answer([SCHOOL, HOME, "192.0.2.1", SCHOOL, HOME, "192.0.2.2", SCHOOL]) == []
    notes = ask_and_answer([SCHOOL] * 6 + [HOME])
    assert len(notes) == 1 and "6 of the 7" in notes[0], notes
    assert "school" in notes[0] and "one machine" in notes[0] and "fresh cookies" in notes[0]
    assert secret == teacher.session_state["teacher_secret"]
