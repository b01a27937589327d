"""A live class in AppTest (issue 10, first part): a teacher's session and students' sessions on
the embedded store (SQLite in a temporary directory)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.room import live
from app.views.learn import TRAIN_KEY
from classroom import MAX_STUDENTS_PER_ROOM
from classroom.watch import VERSION_MAX_AGE
from course.examples import all_examples
from tests.apptest_util import (
    ENTRY,
    address,
    chart_specs,
    edit_cell,
    fresh_app,
    goto,
    heatmap_values,
    open_address,
    pick,
    pick_example,
    shown,
    texts,
    to_screen,
    work,
)
from tests.live_server import streamlit_server
from tests.st_protocol import Run, Session, element_key

EXAMPLES = all_examples()


# Every test its own store (tests/conftest.py); seconds of AppTest runs: make test-fast leaves it out.
pytestmark = [pytest.mark.usefixtures("embedded_store"), pytest.mark.slow]


def rerun_after_a_poll(student) -> None:
    """The page's rerun once the server's watch has read the room again (at most VERSION_MAX_AGE)."""
    time.sleep(VERSION_MAX_AGE)
    student.run()


def teacher_with_room():
    teacher = fresh_app()
    goto(teacher, "class")
    teacher.button(key="live_start").click().run()
    assert not teacher.exception
    return teacher, teacher.session_state["room"]


def test_a_student_follows_the_teachers_setup_page_and_step():
    teacher, code = teacher_with_room()
    assert len(code) == 4 and any(code in m for m in texts(teacher.markdown))
    pick_example(teacher, "ex_e_negative_score")
    student = open_address({"room": code})
    assert not student.exception
    assert student.session_state["origin"] == "ex_e_negative_score"
    goto(teacher, "present")
    softmax = to_screen(teacher, "softmax", reveal=False)
    rerun_after_a_poll(student)  # what the poll's rerun does
    assert student.session_state["last_page"] == "present"
    assert student.session_state["selections"]["present_step"] == softmax
    assert teacher.session_state["room"] == code and live.store().followers(code) == 1


def test_explore_on_my_own_then_follow_again():
    teacher, code = teacher_with_room()
    student = open_address({"room": code})
    student.button(key="live_explore").click().run()
    pick_example(student, "ex_c_equal_scores")  # the student's own
    version = live.store().version(code)
    goto(teacher, "workbench")
    pick_example(teacher, "ex_d_one_huge_score")
    rerun_after_a_poll(student)
    assert student.session_state["origin"] == "ex_c_equal_scores"  # not dragged back while exploring
    assert live.store().version(code) > version  # the teacher's changes, and none of the student's
    student.button(key="live_follow").click().run()
    rerun_after_a_poll(student)
    assert student.session_state["origin"] == "ex_d_one_huge_score"
    np.testing.assert_allclose(np.stack(heatmap_values(chart_specs(student)["chart_weights"])),
                               EXAMPLES["ex_d_one_huge_score"].run().weights, atol=1e-9)


def test_a_student_who_drew_the_sidebar_then_follows_takes_the_teachers_next_change():
    """Found by the stateful machine: a student who had the sidebar drawn (exploring, or before typing
    the code in the Class page's join box) and then followed lost the seed input's state (Streamlit
    drops a widget's state when it is not drawn); the teacher's next change raised on their page."""
    teacher, code = teacher_with_room()
    explorer = open_address({"room": code})
    explorer.button(key="live_explore").click().run()
    explorer.button(key="live_follow").click().run()
    joiner = fresh_app()
    goto(joiner, "class")
    joiner.text_input(key="live_join_code").input(code)
    next(b for b in joiner.button if b.label == "Join").click().run()
    assert joiner.session_state.get("room") == code
    goto(teacher, "workbench")
    for example in ("ex_d_one_huge_score", "ex_c_equal_scores"):
        pick_example(teacher, example)
        for student in (explorer, joiner):
            rerun_after_a_poll(student)
            assert not student.exception, [e.value for e in student.exception]
            assert student.session_state["origin"] == example
            np.testing.assert_allclose(np.stack(heatmap_values(chart_specs(student)["chart_weights"])),
                                       EXAMPLES[example].run().weights, atol=1e-9)


def test_an_answer_sent_after_the_teacher_closed_answers_is_refused_with_a_message():
    """Found by the stateful machine: a student whose form was drawn while answers were open pressed
    Send after the teacher closed them, before their page's poll (the server's watch still had the
    room open): the store refused the answer and the page said nothing."""
    from classroom.watch import RoomWatch

    server_watch, slow = live.watch, RoomWatch(live.store(), max_age=3600)  # no poll has come yet
    live.watch = lambda: slow
    try:
        teacher, code = teacher_with_room()
        goto(teacher, "quiz")
        teacher.button(key="quiz_ask").click().run()
        question_id, question = teacher.session_state["asked"]
        student = open_address({"room": code})
        send = f"FormSubmitter:live_answer_{question_id}-Send"
        assert any(b.key == send for b in student.button)
        live.store().close(code, teacher.session_state["teacher_secret"], question_id)
        if question.choices:
            student.radio(key="live_value").set_value(question.choices[0])
        else:
            student.text_input(key="live_value").input(question.answer_text)
        student.button(key=send).click().run()
    finally:
        live.watch = server_watch
    assert not student.exception
    said = " ".join(shown(student.warning) + shown(student.sidebar.warning) + shown(student.info))
    assert "closed" in said and "not counted" in said, said
    assert live.store().tally(code, question_id).total == 0


def test_unknown_codes_and_tampered_secrets_get_no_controls():
    teacher, code = teacher_with_room()
    stranger = open_address({"room": "ZZZZ" if code != "ZZZZ" else "YYYY"})
    assert not stranger.exception and "room" not in stranger.session_state
    assert any("There is no room" in w.replace("\\", "") for w in texts(stranger.sidebar.warning))
    forger = open_address({"room": code, "teacher": "not-the-secret"})
    assert not forger.exception
    assert not forger.session_state["teacher_secret"] and forger.session_state["following"]
    assert any("not valid" in w.replace("\\", "") for w in texts(forger.sidebar.warning))
    returning = open_address({"room": code, "teacher": teacher.session_state["teacher_secret"]})
    assert returning.session_state["teacher_secret"] and not returning.session_state["following"]
    assert "teacher" not in returning.query_params  # the secret does not stay in the address


def test_the_room_answers_a_quiz_question_and_sees_the_answer_on_reveal():
    teacher, code = teacher_with_room()
    students = [open_address({"room": code}) for _ in range(3)]
    goto(teacher, "quiz")
    teacher.button(key="quiz_ask").click().run()
    assert not teacher.exception
    question_id, question = teacher.session_state["asked"]
    wrong = next((c for c in question.choices if not question.check(c)), "999")
    for student, value, nickname in zip(students, [question.answer_text, question.answer_text, wrong],
                                        ["<b>ann</b>", "", "=cmd()"], strict=True):
        rerun_after_a_poll(student)
        if question.choices:
            student.radio(key="live_value").set_value(value)
        else:
            student.text_input(key="live_value").input(value)
        student.text_input(key="live_nickname").input(nickname)
        student.button(key="FormSubmitter:live_answer_" + question_id + "-Send").click().run()
        assert not student.exception and student.session_state["answered"] == question_id
    tally = live.store().tally(code, question_id)
    assert tally.total == 3
    goto(teacher, "class")
    assert any("**3** answers" in m and "67%" in m for m in texts(teacher.markdown))
    teacher.button(key="live_reveal").click().run()
    rerun_after_a_poll(students[0])
    assert any(question.answer_text in s for s in shown(students[0].success))  # escaped (app.safe)
    table = live.store().answers_csv(code, teacher.session_state["teacher_secret"])
    rows = list(csv.reader(io.StringIO(table)))
    cells = [cell for row in rows for cell in row]
    assert "<b>ann</b>" in cells and "'=cmd()" in cells  # literal; a formula cannot run in a spreadsheet


def test_a_students_session_never_changes_the_room():
    teacher, code = teacher_with_room()
    student = open_address({"room": code})
    version = live.store().version(code)
    student.button(key="live_explore").click().run()
    pick_example(student, "ex_a_single_head")
    goto(student, "present")
    assert live.store().version(code) == version
    assert "teacher_secret" not in student.session_state or not student.session_state["teacher_secret"]


def test_a_following_student_is_led_and_exploring_gives_the_presenter_back():
    teacher, code = teacher_with_room()
    goto(teacher, "present")
    student = open_address({"room": code})
    assert student.session_state["last_page"] == "present"
    assert student.button(key="present_next").disabled  # the teacher leads
    student.button(key="live_explore").click().run()
    student.button(key="present_next").click().run()
    assert not student.exception and student.session_state["selections"]["present_step"] == 1  # one on


def teachers_edited_setup(teacher) -> None:
    """A setup no example has: other tokens (the arrays grow), two heads of d_model 4, one cell typed."""
    pick_example(teacher, "the_cat_sat_two_heads")
    teacher.text_input(key="tokens_text").input("le | chat *noir*").run()
    edit_cell(teacher, "x", 2, 1, "0.125")
    assert not teacher.exception and not teacher.error


def test_a_follower_reads_the_teachers_grids_and_exploring_makes_them_editable():
    teacher, code = teacher_with_room()
    goto(teacher, "workbench")
    teachers_edited_setup(teacher)
    student = open_address({"room": code})
    assert not student.exception
    # following: none of the sidebar's inputs, the grids as tables with the teacher's numbers
    assert not student.sidebar.text_input and not student.sidebar.number_input
    assert not [s for s in student.selectbox if s.key == "example_picker"]
    assert not student.get("dataframe")
    assert any("following the teacher" in m and "edited" in m for m in texts(student.sidebar.markdown))
    tables = [m for m in texts(student.markdown) if m.startswith("| |")]
    assert any("| 2 · \\| | 0 | 2 |" in t and "| 3 · chat | 1 | 0.125 |" in t and "| 4 · \\*noir\\* |" in t
               for t in tables), tables[:1]
    teacher_weights = heatmap_values(chart_specs(teacher)["chart_weights"])
    np.testing.assert_array_equal(heatmap_values(chart_specs(student)["chart_weights"]), teacher_weights)
    # exploring: the inputs and editors come back holding the teacher's setup, and it is the same
    student.button(key="live_explore").click().run()
    assert not student.exception and not student.session_state["following"]
    assert student.text_input(key="tokens_text").value == "le | chat *noir*"
    assert student.number_input(key="d_model").value == teacher.number_input(key="d_model").value
    assert student.get("dataframe") and work(student, "x")[2, 1] == 0.125
    np.testing.assert_array_equal(heatmap_values(chart_specs(student)["chart_weights"]), teacher_weights)
    edit_cell(student, "x", 0, 0, "7")  # the student's own now
    assert not student.exception and not np.array_equal(
        heatmap_values(chart_specs(student)["chart_weights"]), teacher_weights)


def test_a_room_ending_under_a_follower_leaves_it_the_setup_it_was_shown():
    teacher, code = teacher_with_room()
    goto(teacher, "workbench")
    teachers_edited_setup(teacher)
    student = open_address({"room": code})
    student.run()  # Streamlit drops the values of inputs a run does not draw
    teacher_secret = teacher.session_state["teacher_secret"]
    live.store().end_room(code, teacher_secret)
    rerun_after_a_poll(student)
    assert not student.exception and "room" not in student.session_state
    assert any("ended" in w for w in texts(student.sidebar.warning))
    assert student.text_input(key="tokens_text").value == "le | chat *noir*"
    assert work(student, "x")[2, 1] == 0.125 and not student.error


def test_a_full_room_says_so_and_the_page_still_works():
    teacher, code = teacher_with_room()
    for n in range(MAX_STUDENTS_PER_ROOM):  # heartbeats admit nobody (issue 15): each joins, own address
        live.store().join(code, f"student-{n}", client=f"10.0.{n // 200}.{n % 200}")
    late = open_address({"room": code})
    assert not late.exception and "room" not in late.session_state
    assert any("full" in w for w in texts(late.sidebar.warning))
    assert late.text_input(key="tokens_text").value  # a page of its own, as without a room


def test_a_student_reconnecting_after_a_restart_is_the_same_student():
    """A server restart loses every session; the browser reconnects with its address and its
    ``mha_student`` cookie (tests/classroom/test_class_door.py sends a real one), which AppTest cannot
    send: the second session is given the same secret, as st.context.cookies would. Its answer counts once."""
    teacher, code = teacher_with_room()
    question = live.store().ask(code, teacher.session_state["teacher_secret"], "Which head?", ["A", "B"])
    student = open_address({"room": code})
    me = student.session_state["student_id"]
    assert "me" not in student.query_params and "me" not in teacher.query_params  # no identity in addresses
    assert live.store().answer(code, question.id, me, "A")  # as Send does (app/room/questions.py)
    again = AppTest.from_file(str(ENTRY), default_timeout=60)
    again.session_state["student_secret"] = student.session_state["student_secret"]  # the browser's cookie
    for name, value in student.query_params.items():  # the same address
        again.query_params[name] = value
    again.run()
    assert not again.exception and again.session_state["student_id"] == me
    assert not live.store().answer(code, question.id, again.session_state["student_id"], "B")
    tally = live.store().tally(code, question.id)
    assert tally.total == 1 and tally.counts["A"] == 1


def test_the_teachers_reveal_reveals_on_every_following_screen():
    teacher, code = teacher_with_room()
    goto(teacher, "present")
    qkv = to_screen(teacher, "qkv", reveal=False)  # a forecast generated from the setup
    student = open_address({"room": code})
    assert student.button(key="present_reveal").disabled  # the teacher leads the reveal too
    assert not any(m.startswith("**Answer:**") for m in texts(student.markdown))
    teacher.button(key="present_reveal").click().run()
    answer = next(m for m in texts(teacher.markdown) if m.startswith("**Answer:**"))
    rerun_after_a_poll(student)
    assert answer in texts(student.markdown) and chart_specs(student)
    teacher.button(key="present_next").click().run()
    rerun_after_a_poll(student)
    assert student.session_state["selections"]["present_step"] == qkv + 1
    assert not any(m.startswith("**Answer:**") for m in texts(student.markdown))


def test_redis_going_away_and_back_leaves_every_page_working(redis_store):
    teacher, code = teacher_with_room()
    goto(teacher, "present")
    student = open_address({"room": code})
    assert student.session_state["last_page"] == "present"
    redis_store.stop()
    rerun_after_a_poll(student)
    assert not student.exception and any("connection is lost" in w for w in texts(student.sidebar.warning))
    teacher.button(key="present_next").click().run()  # the room cannot take it: said, not raised
    assert not teacher.exception
    assert any("Could not update the room" in w for w in texts(teacher.sidebar.warning))
    goto(teacher, "class")
    teacher.button(key="live_end_ask").click().run().button(key="live_end").click().run()
    assert not teacher.exception and teacher.session_state["room"] == code  # not ended, still led
    redis_store.start()  # appendonly: the room comes back with it
    goto(teacher, "present")
    teacher.button(key="present_next").click().run()
    rerun_after_a_poll(student)
    assert not student.exception
    step = teacher.session_state["selections"]["present_step"]
    assert step == 2 and student.session_state["selections"]["present_step"] == step  # two Nexts on


def test_a_follower_sees_the_labs_and_the_model_text_as_the_teacher_set_them():
    teacher, code = teacher_with_room()
    goto(teacher, "labs")
    teacher.text_input(key="lab_scores").input("1, 4, 2").run()
    teacher.text_input(key="lab_keys").input("le chat *noir*").run()
    student = open_address({"room": code})
    assert student.session_state["last_page"] == "labs"
    assert student.text_input(key="lab_scores").value == "1, 4, 2"
    assert student.text_input(key="lab_keys").value == "le chat *noir*"
    assert bar_values(chart_specs(student)["lab_chart_weights"]) == bar_values(
        chart_specs(teacher)["lab_chart_weights"])
    goto(teacher, "model")
    teacher.text_area(key="model_text").set_value("a room reads one sentence").run()
    pick(teacher, "model_layer", "layer 3")
    rerun_after_a_poll(student)
    assert student.session_state["last_page"] == "model"
    assert student.text_area(key="model_text").value == "a room reads one sentence"
    assert student.session_state["selections"]["model_layer"] == 2
    assert not student.exception


def test_a_follower_sees_the_model_its_teacher_trained_at_the_teacher_s_checkpoint():
    """Issue 18: the teacher trains on the Learn page; the class sees the same run (one server keeps it
    for every session) at the checkpoint the teacher drags to, and the letters the teacher typed."""
    teacher, code = teacher_with_room()
    goto(teacher, "learn")
    teacher.selectbox(key="learn_steps").set_value(200)
    teacher.button(key=TRAIN_KEY).click().run(timeout=180)
    steps = list(teacher.select_slider(key="learn_checkpoint").options)
    teacher.select_slider(key="learn_checkpoint").set_value(int(steps[6])).run()
    teacher.text_input(key="learn_prompt").set_value("A B C A B").run()
    student = open_address({"room": code})
    assert student.session_state["last_page"] == "learn" and not student.exception
    assert student.session_state["learn_steps"] == 200
    assert student.session_state["learn_checkpoint"] == int(steps[6])
    assert student.table[0].value.equals(teacher.table[0].value)  # what each head became, then
    def continued(at):
        return [m for m in texts(at.markdown) if m.startswith("The model continues")]

    assert continued(student) and continued(student) == continued(teacher)


def test_the_room_forecasts_the_induction_head_before_the_heads_are_shown():
    """Issue 18: the teacher asks which head will become the induction head; the heads stay hidden on every
    screen of the room until Reveal, and the answer is the head the trained model's scores name."""
    teacher, code = teacher_with_room()
    goto(teacher, "learn")
    teacher.selectbox(key="learn_steps").set_value(200)
    teacher.button(key=TRAIN_KEY).click().run(timeout=180)
    roles = teacher.table[0].value  # what each head became, read from the scores
    teacher.button(key="learn_ask").click().run()
    assert not teacher.exception and not teacher.table  # hidden from the projector until Reveal
    question_id, question = teacher.session_state["asked"]
    induction = roles[roles["role"] == "induction head"]
    expected = "none of them" if induction.empty else (
        f"layer {induction.index[0]} · head {induction['head'].iloc[0]}")
    assert question.answer_text == expected and len(question.choices) == 2 * 2 + 1
    assert any(question.prompt in m for m in shown(teacher.markdown))  # on the projector, as asked
    student = open_address({"room": code})
    assert student.session_state["last_page"] == "learn" and not student.exception
    assert not student.table  # the student's own page hides them too
    student.radio(key="live_value").set_value(question.choices[0])
    student.button(key="FormSubmitter:live_answer_" + question_id + "-Send").click().run()
    assert not student.exception and student.session_state["answered"] == question_id
    teacher.button(key="room_reveal").click().run()
    assert not teacher.exception and teacher.table[0].value.equals(roles)
    rerun_after_a_poll(student)
    assert student.table and student.table[0].value.equals(roles)
    verdict = shown(student.success) + shown(student.error)
    assert any(f"The right answer: **{expected}**" in v or "right." in v for v in verdict), verdict


def test_a_learn_setting_the_page_does_not_offer_is_put_back_to_its_default():
    """A room's (or a crafted session's) learn_layers = 99 or True never reaches Config."""
    defaults = {"learn_layers": 2, "learn_mlp": False, "learn_task": "induction", "learn_prompt": ""}
    student = fresh_app()  # on the workbench: the values arrive before the Learn page draws its widgets
    for key, value in (("learn_layers", 99), ("learn_mlp", 1), ("learn_task", "chess"),
                       ("learn_prompt", "x" * 500)):
        student.session_state[key] = value
    goto(student, "learn")
    assert not student.exception
    assert {key: student.session_state[key] for key in defaults} == defaults


@pytest.mark.parametrize("key, value", [("lab_context", "abc"), ("lab_context", 10**30), ("lab_heads", None),
                                        ("lab_value_bytes", 3), ("lab_d_model", True), ("lab_window", 2.5),
                                        ("lab_scores", "1, " * 5000)])
def test_a_lab_value_no_input_could_hold_is_put_back_to_its_default(key, value):
    """A room's (or a crafted session's) lab_context = "abc" or 10**30 once raised inside the size lab
    (Streamlit's number input, then Babel formatting the limit's message): now the page's default."""
    from app.views.labs import DEFAULTS

    student = fresh_app()
    student.session_state[key] = value
    goto(student, "labs")
    assert not student.exception
    assert student.session_state[key] == DEFAULTS[key]


def bar_values(spec: dict) -> list:
    """A bar chart's data: the y of each trace."""
    return [list(trace.get("y", [])) for trace in spec["data"]]


# --- A follower shows the room's whole state (issue 15, finding 11) -----------------------------------


def room_address(at) -> dict[str, str]:
    """What a page's address says it shows, without the room's own code."""
    return {name: value for name, value in address(at).items() if name != "room"}


def test_a_follower_shows_the_head_the_teacher_picks():
    """The follower's own head picker kept its earlier value over the room's: the teacher picked head
    2, then head 1 again, and the student went on showing head 2."""
    teacher, code = teacher_with_room()
    goto(teacher, "workbench")
    pick_example(teacher, "the_cat_sat_two_heads")
    student = open_address({"room": code})
    for head in ("head 2", "head 1", "head 2"):
        pick(teacher, "shown_head", head)
        rerun_after_a_poll(student)
        assert not student.exception
        assert student.session_state["pick_shown_head"] == head, head
        assert room_address(student) == room_address(teacher), head


def test_a_follower_closes_the_drill_down_when_the_teacher_does():
    teacher, code = teacher_with_room()
    goto(teacher, "workbench")
    student = open_address({"room": code})
    for opened in (True, False):
        teacher.toggle(key="drill_open").set_value(opened).run()
        rerun_after_a_poll(student)
        assert student.session_state["drill_open"] is opened
        assert room_address(student) == room_address(teacher)


def test_a_follower_of_a_setup_too_large_for_a_link_shows_it_all_the_same():
    """A thousand random tokens do not fit in a link (the teacher's page says so): the students went on
    showing the example shown before, without a word. The room carries the whole setup instead."""
    teacher, code = teacher_with_room()
    goto(teacher, "workbench")
    pick_example(teacher, "ex_c_equal_scores")
    student = open_address({"room": code})
    pick_example(teacher, "random")
    teacher.text_input(key="tokens_text").input("a " * 1000).run()
    assert any("too large for a link" in c for c in texts(teacher.sidebar.caption))
    rerun_after_a_poll(student)
    assert not student.exception
    assert student.session_state["tokens_text"].split() == teacher.session_state["tokens_text"].split()
    for name, base in teacher.session_state["work"].items():
        mine = student.session_state["work"].get(name)
        assert (base is None and mine is None) or np.array_equal(mine, base), name
    assert heatmap_values(chart_specs(student)["chart_weights"])[0].shape == heatmap_values(
        chart_specs(teacher)["chart_weights"])[0].shape


def test_a_room_state_the_page_refuses_is_said_to_the_follower():
    """A room state over a limit (written straight into the store) was refused and the follower shown
    the default example without a word: follow_before_build dropped what apply_room_state refused."""
    teacher, code = teacher_with_room()
    from tests.app.test_abuse_core import over_limit_link

    live.store().set_state(code, teacher.session_state["teacher_secret"], page="", step=0,
                           setup_json=json.dumps({"s": over_limit_link()}), selections={})
    student = open_address({"room": code})
    assert not student.exception and student.session_state.get("room") == code
    said = " ".join(shown(student.sidebar.warning))
    assert "The teacher's setup could not be shown: the page's state" in said, said
    assert "attention cells is over the limit" in said


class FragmentTab(Session):
    """A tab over the websocket protocol that knows which fragment drew each keyed widget: the browser
    sends a change made inside a fragment as a run of that fragment alone."""

    def __init__(self, url: str):
        super().__init__(url)
        self.fragment_of: dict[str, str] = {}

    def _read(self, msg, run) -> None:
        super()._read(msg, run)
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            key = element_key(getattr(getattr(element, element.WhichOneof("type")), "id", "") or "")
            if key and msg.delta.fragment_id:
                self.fragment_of[key] = msg.delta.fragment_id

    async def choose_in_fragment(self, key: str, label: str):
        """Pick an option of a selectbox drawn in a fragment (by its label, as the browser sends it)."""
        self.set_string(key, label)
        state = self._client_state("")
        state.fragment_id = self.fragment_of[key]
        run, cache = await self._exchange(state, Run(0.0))
        self._cache.update(cache)
        return run


@pytest.mark.server
def test_a_query_the_teacher_picks_inside_a_fragment_reaches_the_room():
    """Step 6's query picker reruns alone (a fragment): the address took the new query, the room did
    not, so the class kept showing the old one until the teacher's next whole run."""
    room = live.store().create_room(client="teacher")
    with streamlit_server() as (url, _):
        async def teach():
            tab = FragmentTab(url)
            try:
                await tab.open(f"room={room.code}&teacher={room.teacher_secret}")
                before = live.store().state(room.code)
                return before, await tab.choose_in_fragment("pick_focus_query", "1 · the")
            finally:
                await tab.close()
        before, run = asyncio.run(teach())
    assert run.status == "fragment ok" and not run.errors, run.errors
    assert before.selections["query"] == "3"  # the default example's "sat"
    after = live.store().state(room.code)
    assert after.version > before.version and after.selections["query"] == "1"


def test_a_room_state_stored_before_the_rename_is_followed_under_today_s_name():
    """A room in Redis outlives a deploy: its state written as {"preset": …} (before the course called
    every one of them an example) is still followed, without a word of refusal."""
    teacher, code = teacher_with_room()
    live.store().set_state(code, teacher.session_state["teacher_secret"], page="", step=0,
                           setup_json=json.dumps({"preset": "cat_chases_mouse"}), selections={})
    student = open_address({"room": code})
    assert not student.exception and student.session_state.get("room") == code
    assert student.session_state["origin"] == "cat_chases_mouse"
    assert not shown(student.sidebar.warning) and not student.warning
