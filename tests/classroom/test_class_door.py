"""Issue 15, "Threat model and what must hold", the app's side of the door: who may start a room,
who gets in, and who a student is.

AppTest sessions on the embedded store (SQLite in a temporary MHA_DATA_DIR) and, where AppTest cannot
show it, a real server: over Streamlit's websocket protocol (tests/st_protocol.py, which sends the
handshake's headers: a cookie, X-Forwarded-For) and in Chromium (the page writing its own cookie, a
second tab, a server restart). Each of the issue's findings 3, 4, 5, 6 and 9 has a test here that
failed on the code before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import re
import secrets
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from streamlit.proto.TextInput_pb2 import TextInput
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from app.room import door, identity, live
from classroom.sqlite_store import SqliteStore
from classroom.store import (
    HEARTBEAT_SECONDS,
    JOIN_BURST,
    JOIN_PER_SECOND,
    ROOMS_PER_CLIENT,
    WRONG_CODES_PER_MINUTE,
    TooSoon,
)
from classroom.watch import VERSION_MAX_AGE
from course.i18n import translator
from tests.apptest_util import ENTRY, fresh_app, goto, open_address, texts, unescaped
from tests.browser_env import settle as settle_page
from tests.live_server import streamlit_server
from tests.st_protocol import FollowerSession, Session

KEY = "correct horse battery staple"
SHOUTING = "**B** ![i](http://127.0.0.1:9/p.png)$x$"  # a nickname a student might try (38 characters)


# Every test its own store (tests/conftest.py); seconds of AppTest runs: make test-fast leaves it out.
pytestmark = [pytest.mark.usefixtures("embedded_store"), pytest.mark.slow]


# --- helpers ---------------------------------------------------------------------------------------


plain = unescaped  # what a Markdown text shows


def shown(at: AppTest) -> str:
    """Every text the page drew, main area and sidebar, escapes undone."""
    elements = [*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success,
                *at.sidebar.markdown, *at.sidebar.warning, *at.sidebar.caption]
    return "\n".join(plain(e.value) for e in elements)


def errors_next_to_the_start_button(at: AppTest) -> list[str]:
    return [plain(e.value) for e in at.main.error]


def class_page() -> AppTest:
    at = fresh_app()
    goto(at, "class")
    return at


def press_start(at: AppTest, key: str | None = None) -> None:
    if key is not None:
        at.text_input(key="live_teacher_key").input(key)
    at.button(key="live_start").click().run()
    assert not at.exception


def teacher_with_room() -> tuple[AppTest, str]:
    teacher = class_page()
    press_start(teacher)
    return teacher, teacher.session_state["room"]


def join_with_the_box(at: AppTest, code: str, nickname: str = "") -> None:
    at.text_input(key="live_join_code").input(code)
    at.text_input(key="live_join_nickname").input(nickname)
    at.button(key="FormSubmitter:live_join-Join").click().run()
    assert not at.exception


def session_with_the_cookie(secret: str, params: dict[str, str]) -> AppTest:
    """A session whose browser holds secret in its mha_student cookie. AppTest sends no cookies, so
    the session is given what st.context.cookies would have given (the real cookie: see below)."""
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.session_state["student_secret"] = secret
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    return at


def other_code(code: str) -> str:
    return "ZZZZ" if code != "ZZZZ" else "YYYY"


def roster(teacher: AppTest):
    return live.store().roster(teacher.session_state["room"], teacher.session_state["teacher_secret"])


# --- Starting rooms is a teacher's act (finding 3) ----------------------------------------------------


def test_without_a_teacher_key_anyone_on_this_machine_starts_a_room():
    at = class_page()
    assert not [t for t in at.text_input if t.key == "live_teacher_key"]  # `make run`: nothing to type
    press_start(at)
    assert len(at.session_state["room"]) == 4 and at.session_state["teacher_secret"]


def test_a_set_teacher_key_is_asked_for_and_a_wrong_one_is_refused_next_to_it(monkeypatch):
    monkeypatch.setenv("MHA_TEACHER_KEY", KEY)
    at = class_page()
    assert at.text_input(key="live_teacher_key").proto.type == TextInput.PASSWORD
    press_start(at)
    assert "room" not in at.session_state
    assert any("Type the teacher key" in e for e in errors_next_to_the_start_button(at))
    press_start(at, KEY + " ")  # surrounding spaces are forgiven, a different key is not
    assert "room" in at.session_state
    assert at.session_state["live_teacher_key"] == ""  # not kept once used
    other = class_page()
    press_start(other, "correct horse")
    assert "room" not in other.session_state
    assert any("not this server's teacher key" in e for e in errors_next_to_the_start_button(other))
    assert KEY not in shown(other) and KEY not in shown(at)


def test_the_key_can_come_from_a_file_and_an_unreadable_file_starts_no_room(monkeypatch, tmp_path):
    key_file = tmp_path / "teacher-key"
    key_file.write_text(KEY + "\n")
    monkeypatch.setenv("MHA_TEACHER_KEY_FILE", str(key_file))
    at = class_page()
    press_start(at, KEY)
    assert "room" in at.session_state
    monkeypatch.setenv("MHA_TEACHER_KEY_FILE", str(tmp_path / "missing"))
    locked_out = class_page()
    assert any("teacher key cannot be read" in e for e in errors_next_to_the_start_button(locked_out))
    locked_out.button(key="live_start").click().run()
    assert not locked_out.exception and "room" not in locked_out.session_state


def test_the_teacher_key_cannot_be_found_by_trying(monkeypatch):
    monkeypatch.setenv("MHA_TEACHER_KEY", KEY)
    at = class_page()
    for n in range(WRONG_CODES_PER_MINUTE):
        press_start(at, f"guess {n}")
        assert "room" not in at.session_state
    press_start(at, KEY)  # right, but this address has no tries left: refused before it is compared
    assert "room" not in at.session_state
    assert any(re.search(r"try again in \d+ s", e) for e in errors_next_to_the_start_button(at))


def test_one_session_leads_one_room_and_one_address_starts_a_few_a_minute():
    at = class_page()
    codes = []
    for _ in range(ROOMS_PER_CLIENT):
        press_start(at)
        codes.append(at.session_state["room"])
        assert not [b for b in at.button if b.key == "live_start"]  # the room's panel instead
        at.button(key="live_end_ask").click().run().button(key="live_end").click().run()
    press_start(at)  # one more from the same address within the minute
    assert "room" not in at.session_state and len(set(codes)) == ROOMS_PER_CLIENT
    assert any(re.search(r"Too many rooms started from your address: try again in \d+ s", e)
               for e in errors_next_to_the_start_button(at))


# --- Guessing codes does not pay (finding 6) --------------------------------------------------------


def test_wrong_codes_are_limited_and_then_even_the_right_one_waits():
    teacher, code = teacher_with_room()
    guesser = class_page()
    for n in range(WRONG_CODES_PER_MINUTE):
        join_with_the_box(guesser, f"ZZ{'ABCDEFGHJK'[n]}Z" if code[:2] != "ZZ" else f"YY{'ABCDEFGHJK'[n]}Y")
        assert "There is no room" in plain(guesser.warning[0].value)
    join_with_the_box(guesser, code)
    assert "room" not in guesser.session_state
    assert re.search(r"Too many room codes tried .*: try again in \d+ s", plain(guesser.warning[0].value))
    assert guesser.session_state.get("live_join_error")  # next to the box, not only in the sidebar


def test_a_link_counts_as_a_try_too():
    teacher, code = teacher_with_room()
    at = class_page()
    for _ in range(WRONG_CODES_PER_MINUTE):
        join_with_the_box(at, other_code(code))
    linked = at
    linked.query_params["room"] = code
    linked.run()
    assert "room" not in linked.session_state
    assert any("try again in" in plain(w) for w in texts(linked.sidebar.warning))


def test_an_ended_room_and_a_code_that_never_existed_look_the_same():
    teacher, code = teacher_with_room()
    teacher.button(key="live_end_ask").click().run().button(key="live_end").click().run()
    ended, never = class_page(), class_page()
    join_with_the_box(ended, code)
    join_with_the_box(never, other_code(code))
    said_ended = plain(ended.warning[0].value).replace(code, "CODE")
    said_never = plain(never.warning[0].value).replace(other_code(code), "CODE")
    assert said_ended == said_never == "There is no room CODE: check the code."


def test_a_wrong_teacher_secret_in_a_link_joins_as_a_student_and_counts_as_a_try():
    teacher, code = teacher_with_room()
    forger = open_address({"room": code, "teacher": "not-the-secret"})
    assert not forger.exception and not forger.session_state["teacher_secret"]
    assert forger.session_state["following"] and "teacher" not in forger.query_params
    assert len(forger.session_state["wrong_codes"]) == 1


# --- A student is one student (findings 4 and 5) ----------------------------------------------------


def test_a_classmates_id_in_the_address_is_ignored_and_dropped():
    teacher, code = teacher_with_room()
    question = live.store().ask(code, teacher.session_state["teacher_secret"], "Which head?", ["A", "B"])
    classmate = open_address({"room": code})
    their_id = classmate.session_state["student_id"]
    impostor = open_address({"room": code, "me": their_id})
    assert not impostor.exception and "me" not in impostor.query_params
    assert impostor.session_state["student_id"] != their_id
    assert live.store().answer(code, question.id, impostor.session_state["student_id"], "B")  # its own
    assert live.store().answer(code, question.id, their_id, "A")  # the classmate's still counts
    assert {s.id for s in roster(teacher)} == {their_id, impostor.session_state["student_id"]}


def test_the_browsers_secret_reaches_no_screen_store_or_file():
    teacher, code = teacher_with_room()
    question = live.store().ask(code, teacher.session_state["teacher_secret"], "Which head?", ["A", "B"])
    student = open_address({"room": code})
    secret, student_id = student.session_state["student_secret"], student.session_state["student_id"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", secret) and student_id == identity.student_id_of(secret)
    live.store().answer(code, question.id, student_id, "A")
    teacher.run()
    csv_text = live.store().answers_csv(code, teacher.session_state["teacher_secret"])
    for at in (student, teacher):
        assert secret not in shown(at) and secret not in str(dict(at.query_params))
    assert secret not in csv_text and student_id in csv_text
    assert all(secret not in s.id for s in roster(teacher))
    # the one place it goes: the component that writes the browser's cookie (app/adapter/page_scripts.py)
    components = student.sidebar.get("bidi_component")
    (setter,) = [e for e in components if "mha_keep_cookie" in e.proto.component_name]
    assert json.loads(setter.proto.json) == {"name": "mha_student", "value": secret, "max_age": 31536000}


def test_the_same_browser_in_two_tabs_is_one_student_who_answers_once():
    teacher, code = teacher_with_room()
    question = live.store().ask(code, teacher.session_state["teacher_secret"], "Which head?", ["A", "B"])
    secret = secrets.token_urlsafe(24)  # what a browser's cookie holds
    first = session_with_the_cookie(secret, {})
    goto(first, "class")
    join_with_the_box(first, code, "ann")
    second = session_with_the_cookie(secret, {"room": code})  # the link: no nickname
    assert first.session_state["student_id"] == second.session_state["student_id"]
    assert [(s.id, s.nickname) for s in roster(teacher)] == [(first.session_state["student_id"], "ann")]
    assert live.store().answer(code, question.id, first.session_state["student_id"], "A")
    assert not live.store().answer(code, question.id, second.session_state["student_id"], "B")
    assert live.store().tally(code, question.id).counts == {"A": 1, "B": 0}


# --- One name per student (issue 29): the refusal next to the nickname box, what was typed kept -------


def test_a_taken_nickname_is_refused_next_to_the_join_box_with_a_free_one_and_kept():
    teacher, code = teacher_with_room()
    join_with_the_box(class_page(), code, "Mara")
    second = class_page()
    join_with_the_box(second, code, "M\u0430ra")  # a Cyrillic а
    assert "room" not in second.session_state
    assert [plain(w.value) for w in second.main.warning] == [
        "The nickname “M\u0430ra” is taken in this room: try “M\u0430ra 2”."]
    assert second.text_input(key="live_join_nickname").value == "M\u0430ra"  # kept, to edit
    assert second.text_input(key="live_join_code").value == code
    join_with_the_box(second, code, "M\u0430ra 2")
    assert second.session_state["room"] == code
    assert sorted(s.nickname for s in roster(teacher)) == ["Mara", "M\u0430ra 2"]


def test_a_member_renaming_to_a_taken_name_keeps_their_own():
    teacher, code = teacher_with_room()
    join_with_the_box(class_page(), code, "Mara")
    student = class_page()
    join_with_the_box(student, code, "Bo")
    student.text_input(key="live_my_nickname").input("MARA").run()
    assert not student.exception
    refusal = "The nickname “MARA” is taken in this room: try “MARA 2”."
    assert refusal in [plain(w.value) for w in student.warning]
    assert sorted(s.nickname for s in roster(teacher)) == ["Bo", "Mara"]
    student.text_input(key="live_my_nickname").input("BO").run()  # their own name, in capitals
    assert sorted(s.nickname for s in roster(teacher)) == ["BO", "Mara"]


def test_the_refusal_is_in_the_readers_language():
    teacher, code = teacher_with_room()
    join_with_the_box(class_page(), code, "Mara")
    student = open_address({"lang": "de"})
    goto(student, "class")
    student.text_input(key="live_join_code").input(code)
    student.text_input(key="live_join_nickname").input(" mara ")
    student.button(key=f"FormSubmitter:live_join-{translator('de')('Join')}").click().run()
    assert not student.exception
    assert [plain(w.value) for w in student.main.warning] == [
        "Der Spitzname „mara“ ist in diesem Raum schon vergeben: versuch es mit „mara 2“."]


def test_an_answer_with_another_students_name_is_refused_next_to_the_nickname_box_and_kept():
    teacher, code = teacher_with_room()
    question = live.store().ask(code, teacher.session_state["teacher_secret"], "Which head?", ["A", "B"])
    join_with_the_box(class_page(), code, "Mara")
    student = open_address({"room": code})  # the link: no nickname at the door
    student.radio(key="live_value").set_value("B")
    student.text_input(key="live_nickname").input("MARA")
    send = f"FormSubmitter:live_answer_{question.id}-Send"
    student.button(key=send).click().run()
    assert not student.exception
    (form,) = student.get("form")
    drawn = [(type(e).__name__, getattr(e, "key", None)) for e in form][1:]  # under the form's block
    assert drawn.index(("Warning", None)) == drawn.index(("TextInput", "live_nickname")) + 1  # next to it
    refusals = [plain(w.value) for w in student.warning]
    assert "The nickname “MARA” is taken in this room: try “MARA 2”." in refusals
    assert live.store().tally(code, question.id).total == 0  # not counted under someone else's name
    assert student.radio(key="live_value").value == "B"  # the form and what was typed stay
    assert student.text_input(key="live_nickname").value == "MARA"
    student.text_input(key="live_nickname").input("Mara K.")
    student.button(key=send).click().run()
    assert "Your answer is in" in shown(student)
    assert live.store().tally(code, question.id).counts == {"A": 0, "B": 1}
    assert sorted(s.nickname for s in roster(teacher)) == ["Mara", "Mara K."]


# --- The teacher controls the door (finding 6 of the threat model) -----------------------------------


def wait_until_gone(student: AppTest, seconds: float = HEARTBEAT_SECONDS + 4) -> None:
    """The student's page reruns as its poll does until it has left the room (heartbeats are sent
    together every HEARTBEAT_SECONDS; the one after a removal says so)."""
    deadline = time.monotonic() + seconds
    while "room" in student.session_state and time.monotonic() < deadline:
        time.sleep(VERSION_MAX_AGE * 2)
        student.run()


def test_the_roster_shows_each_student_literally_with_when_they_joined_and_whether_they_answered():
    teacher, code = teacher_with_room()
    question = live.store().ask(code, teacher.session_state["teacher_secret"], "Which head?", ["A", "B"])
    shouter, quiet = class_page(), class_page()
    join_with_the_box(shouter, code, SHOUTING)
    join_with_the_box(quiet, code)
    live.store().answer(code, question.id, shouter.session_state["student_id"], "A")
    teacher.run()
    markdown = texts(teacher.markdown)
    assert "**2** joined · the door is open to anyone with the code" in markdown
    assert any(plain(m) == SHOUTING and m.startswith("\\*\\*B") for m in markdown)  # shown, not rendered
    assert "student 2" in markdown  # no nickname
    assert markdown.count("answered ✓") == 1 and markdown.count("not answered") == 1
    assert sum(bool(re.fullmatch(r"joined \d\d:\d\d:\d\d", plain(c.value))) for c in teacher.caption) == 2


def test_a_locked_room_tells_newcomers_and_lets_its_students_back():
    teacher, code = teacher_with_room()
    member = open_address({"room": code})
    teacher.button(key="live_lock").click().run()
    assert live.store().state(code).locked and teacher.button(key="live_lock").label == "Unlock the room"
    newcomer = open_address({"room": code})
    assert "room" not in newcomer.session_state
    assert any("The room is locked: ask your teacher to let you in." in plain(w)
               for w in texts(newcomer.sidebar.warning))
    second_tab = session_with_the_cookie(member.session_state["student_secret"], {"room": code})
    assert second_tab.session_state["room"] == code  # a member re-joins a locked room
    teacher.button(key="live_lock").click().run()
    assert not live.store().state(code).locked
    assert open_address({"room": code}).session_state["room"] == code


def test_a_removed_student_is_told_stops_following_and_cannot_come_back():
    teacher, code = teacher_with_room()
    student = class_page()
    join_with_the_box(student, code, "ann")
    stays = open_address({"room": code})
    teacher.run()
    removed_id = student.session_state["student_id"]
    teacher.button(key=f"live_remove_{removed_id}").click().run()  # asks first
    assert len(roster(teacher)) == 2 and not any(s.removed for s in roster(teacher))
    teacher.button(key=f"live_remove_yes_{removed_id}").click().run()
    assert [s.removed for s in roster(teacher) if s.id == removed_id] == [True]
    assert "~~ann~~" in texts(teacher.markdown)
    wait_until_gone(student)
    assert not student.exception and "room" not in student.session_state
    assert not student.session_state.get("following")
    assert any("Your teacher removed you from this room." in plain(w) for w in texts(student.sidebar.warning))
    again = session_with_the_cookie(student.session_state["student_secret"], {"room": code})
    assert "room" not in again.session_state
    assert any("removed you" in plain(w) for w in texts(again.sidebar.warning))
    stays.run()
    assert stays.session_state["room"] == code  # the others carry on


def test_a_student_removed_while_exploring_on_their_own_gets_no_more_questions():
    """Issue 40, 12: removed while 'Explore on my own' (no poll, no heartbeat), a student kept receiving
    every new question, its right answer and the bars until the room ended."""
    teacher, code = teacher_with_room()
    secret = teacher.session_state["teacher_secret"]
    student = class_page()
    join_with_the_box(student, code, "Quinn")
    student.button(key="live_explore").click().run()
    assert not student.session_state["following"] and student.session_state["room"] == code
    asked = live.store().ask(code, secret, "Which head attends?", ["A", "B"], correct="A")
    time.sleep(VERSION_MAX_AGE * 2)  # the server's watch reads the room's version anew
    student.run()
    assert "Which head attends?" in shown(student)  # a member exploring still answers
    live.store().remove(code, secret, student.session_state["student_id"])
    live.store().ask(code, secret, "And which query?", ["A", "B"], correct="B")
    live.store().reveal(code, secret, asked.id)
    time.sleep(VERSION_MAX_AGE * 2)
    student.run()
    assert not student.exception and "room" not in student.session_state
    assert "And which query?" not in shown(student) and "Which head attends?" not in shown(student)
    assert any("Your teacher removed you from this room." in plain(w) for w in texts(student.sidebar.warning))
    join_with_the_box(class_page(), code, "Quinn")  # the real Quinn: the removed one's name is free


def test_students_are_told_on_their_page_that_the_teacher_ended_the_room():
    """Issue 40, 7: after End room, students landed on a plain Class page with 'Start a room' and no
    word that the room had ended (the sidebar, which said it, is closed on a phone)."""
    teacher, code = teacher_with_room()
    follower, explorer = open_address({"room": code}), open_address({"room": code})
    goto(follower, "class")
    explorer.button(key="live_explore").click().run()
    live.store().end_room(code, teacher.session_state["teacher_secret"])
    for student in (follower, explorer):
        student.run()
        assert not student.exception and "room" not in student.session_state
        notice = [plain(w) for w in texts(student.main.warning) if f"Room {code} has ended" in plain(w)]
        assert notice and "your teacher ended it" in notice[0]
    follower.button(key="room_ended_ok").click().run()
    assert not any("has ended" in plain(w) for w in texts(follower.main.warning))
    join_with_the_box(follower, teacher_with_room()[1])
    explorer.run()
    assert "room_ended" in explorer.session_state  # not dismissed: still said


# --- The teacher's page keeps the room, and says when it is gone (finding 9) -------------------------


def test_a_room_redis_lost_is_not_led_any_more(redis_store):
    import redis

    teacher, code = teacher_with_room()
    goto(teacher, "present")
    assert "you lead it" in shown(teacher)
    redis.Redis.from_url(redis_store.url).flushall()  # Redis came back empty
    teacher.run()
    assert not teacher.exception and "room" not in teacher.session_state
    assert "you lead it" not in shown(teacher)
    assert any(f"Room {code} no longer exists" in plain(w) for w in texts(teacher.sidebar.warning))
    goto(teacher, "class")
    assert teacher.button(key="live_start")  # the door again, not a dead room's panel


def last_active(data_dir: Path, code: str) -> float:
    """When the store last saw the room's teacher (SQLite's own column)."""
    with contextlib.closing(sqlite3.connect(data_dir / "classroom.sqlite3")) as db:
        return db.execute("SELECT last_active FROM rooms WHERE code = ?", (code,)).fetchone()[0]


def test_the_teachers_page_tells_the_store_it_is_open_wherever_it_is(embedded_store):
    teacher, code = teacher_with_room()
    goto(teacher, "present")
    teacher.run()  # the page's state is published: nothing changes from here on
    before = last_active(embedded_store, code)
    time.sleep(1.1)
    teacher.run()  # the sidebar's fragment runs with the page (and every TEACHER_BEAT_SECONDS alone)
    assert "you lead it" in shown(teacher)
    assert last_active(embedded_store, code) - before >= 1.0


# --- A real server: the handshake's cookie and a proxy's address ------------------------------------


async def visit(url: str, query: str, headers: dict[str, str], page: str | None = None,
                press: str | None = None) -> Session:
    tab = Session(url, headers=headers)
    try:
        if page:
            tab.page_hash = calc_hash(page)
        run = await tab.open(query)
        if press:
            run = await tab.press(press)
        assert not [e for e in run.errors if e.startswith(("exception", "compilation"))], run.errors
    finally:
        await tab.close()
    return tab


def cookie(secret: str) -> dict[str, str]:
    return {"Cookie": f"mha_student={secret}"}


def drain(take) -> float:
    """Call take(n) until the store says TooSoon (its bucket is empty); when that was (monotonic)."""
    for n in itertools.count():
        try:
            take(n)
        except TooSoon:
            return time.monotonic()
    raise AssertionError("unreachable")


def refused_while_empty(url: str, query: str, headers: dict, take, refill_seconds: float, **how):
    """Empty a bucket from here, then visit at once. A token comes back every refill_seconds, so only
    a visit that ended within that window says anything: tried up to 3 times (a slow machine)."""
    for _ in range(3):
        emptied = drain(take)
        tab = asyncio.run(visit(url, query, headers, **how))
        if time.monotonic() - emptied < refill_seconds:
            return tab
    raise AssertionError(f"no visit ended within {refill_seconds} s of emptying the bucket")


@pytest.mark.server
def test_behind_a_proxy_the_limits_count_the_forwarded_address_and_the_cookie_is_the_student(
        embedded_store, monkeypatch):
    """MHA_CLIENT_IP_HEADER=X-Forwarded-For: the first address of that header is the client. The
    store's buckets of two addresses are emptied from here (the SQLite file the server uses): the
    server must refuse those addresses and no other, and must take the student from the cookie."""
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Forwarded-For")
    store = SqliteStore(embedded_store)
    room = store.create_room(client="teacher")
    link = f"room={room.code}"
    flood, student = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    not_ours = "<script>alert(1)</script>"
    with streamlit_server() as (url, _):
        asyncio.run(visit(url, "", {}))  # the server's first run imports everything: not timed below
        def a_class_joins(n: int) -> None:
            store.join(room.code, f"class-{time.time()}-{n}", client="10.0.0.7")

        refused = refused_while_empty(url, link, {"X-Forwarded-For": "10.0.0.7, 192.0.2.1", **cookie(flood)},
                                      a_class_joins, 1 / JOIN_PER_SECOND)
        starter = refused_while_empty(url, "", {"X-Forwarded-For": "10.0.0.9"},
                                      lambda n: store.create_room(client="10.0.0.9"), 60 / ROOMS_PER_CLIENT,
                                      page="class", press="live_start")

        async def others():
            admitted = await visit(url, link, {"X-Forwarded-For": "10.0.0.8", **cookie(student)})
            second_tab = await visit(url, link, {"X-Forwarded-For": "10.0.0.7", **cookie(student)})
            foreign = await visit(url, link, {"X-Forwarded-For": "10.0.0.11", **cookie(not_ours)})
            other = await visit(url, "", {"X-Forwarded-For": "10.0.0.10"}, page="class", press="live_start")
            return admitted, second_tab, foreign, other
        admitted, second_tab, foreign, other = asyncio.run(others())
    members = {s.id for s in store.roster(room.code, room.teacher_secret)}
    assert any(door.WAITING_AT_THE_DOOR in s for s in refused.said)  # waits for its turn (closed: never in)
    assert identity.student_id_of(flood) not in members
    assert identity.student_id_of(student) in members  # from another address, and again from the full one
    assert not any("Too many" in s for s in admitted.said + second_tab.said + foreign.said)
    assert identity.student_id_of(not_ours) not in members  # a cookie that is not one of ours is replaced
    assert any("Too many rooms started from your address" in s for s in starter.said)
    assert not any("Too many rooms" in s for s in other.said) and any("you lead it" in s for s in other.said)
    assert not any(student in s for s in admitted.said)  # the secret is on no screen
    store.close()


# --- Chromium: the page writes the cookie, a second tab and a restarted server read it ---------------


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def chromium():
    if not Path(CHROMIUM).exists():
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail("REQUIRE_BROWSER=1 but no Chromium")
        pytest.skip("no Chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            raise
        pytest.skip("playwright is not installed (requirements-dev.txt)")
    return sync_playwright


def open_room(context, url: str, code: str):
    page = context.new_page()
    page.goto(f"{url}/?room={code}", timeout=90_000)
    page.wait_for_function("(c) => document.body.innerText.includes('Room ' + c)", arg=code, timeout=60_000)
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=60_000)
    return page


# app/adapter/page_scripts.py wrote it here
WRITES_THE_COOKIE = "() => typeof window.mhaCookieWritten === 'string'"


def student_cookie(context) -> dict | None:
    return next((c for c in context.cookies() if c["name"] == "mha_student"), None)


@pytest.mark.browser
def test_the_browser_keeps_its_student_across_tabs_and_a_server_restart(embedded_store):
    sync_playwright = chromium()
    store = SqliteStore(embedded_store)
    room = store.create_room(client="teacher")
    question = store.ask(room.code, room.teacher_secret, "Which head?", ["A", "B"])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            with streamlit_server() as (url, _):
                first = open_room(context, url, room.code)
                first.wait_for_function("() => document.cookie.includes('mha_student=')", timeout=10_000)
                kept = student_cookie(context)
                assert kept and re.fullmatch(r"[A-Za-z0-9_-]{32}", kept["value"])
                assert kept["sameSite"] == "Lax" and kept["path"] == "/" and not kept["httpOnly"]
                assert 364 * 86400 < kept["expires"] - time.time() <= 365 * 86400
                student_id = identity.student_id_of(kept["value"])
                assert [s.id for s in store.roster(room.code, room.teacher_secret)] == [student_id]
                assert "me=" not in first.url and kept["value"] not in first.inner_text("body")
                assert store.answer(room.code, question.id, student_id, "A")  # answered before the restart
                second = open_room(context, url, room.code)  # a second tab
                assert [s.id for s in store.roster(room.code, room.teacher_secret)] == [student_id]
                assert not second.evaluate(WRITES_THE_COOKIE)  # the browser sent it: nothing to write
                assert first.evaluate(WRITES_THE_COOKIE)
            with streamlit_server() as (url, _):  # another process: no session survived
                again = open_room(context, url, room.code)
                assert [s.id for s in store.roster(room.code, room.teacher_secret)] == [student_id]
                assert student_cookie(context)["value"] == kept["value"]  # read, not replaced
                assert again.locator("[data-testid='stException']").count() == 0
            assert not store.answer(room.code, question.id, student_id, "B")
            assert store.tally(room.code, question.id).counts == {"A": 1, "B": 0}
        finally:
            browser.close()
    store.close()


settle = functools.partial(settle_page, timeout=90_000)  # tests.browser_env's, on a slow store


def teacher_cookie(context) -> dict | None:
    return next((c for c in context.cookies() if c["name"] == identity.TEACHER_COOKIE), None)


def step_in_address(page) -> str | None:
    return page.evaluate("() => new URL(location.href).searchParams.get('step')")


def presenter_buttons_enabled(page) -> dict[str, bool]:
    """Back, Next and Reveal on the presenter: whether each is there and can be pressed."""
    return {key: page.locator(f".st-key-{key} button").count() == 1
            and page.locator(f".st-key-{key} button").is_enabled()
            for key in ("present_back", "present_next", "present_reveal")}


@pytest.mark.browser
def test_a_teacher_who_reloads_the_presenter_still_leads_and_no_ghost_joins(embedded_store):
    """Issue 40, 1: F5 on the presenter made the teacher a follower of their own room (the address
    carries ?room=CODE, and reloading it joined the room as a student): Back, Next and Reveal went
    grey and the roster gained a "student" that never answered. The browser's teacher cookie makes
    the reload (and a server restart) the teacher again; the teacher link on another device opens
    the screen the room is on, not the Workbench."""
    from tests.browser_env import room_code

    sync_playwright = chromium()
    store = SqliteStore(embedded_store)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            with streamlit_server() as (url, _):
                teacher = context.new_page()
                teacher.goto(f"{url}/class", timeout=90_000)
                settle(teacher, ".st-key-live_start")
                teacher.locator(".st-key-live_start button").click()
                code = room_code(teacher)
                settle(teacher, ".st-key-live_end_ask")
                link = "/teacher=([A-Za-z0-9_-]{32})/"  # 'Lead from another device', in its expander
                secret = teacher.evaluate(f"() => document.body.textContent.match({link})[1]")
                store.check_teacher(code, secret)
                student = open_room(browser.new_context(viewport={"width": 390, "height": 844}), url, code)
                teacher.locator("[data-testid='stSidebarNav'] a[href$='/present']").click()
                settle(teacher, ".st-key-present_next")
                teacher.locator(".st-key-present_next button").click()
                settle(teacher, ".st-key-present_next")
                step = step_in_address(teacher)
                assert step and all(presenter_buttons_enabled(teacher).values())
                members = [s.id for s in store.roster(code, secret)]
                assert len(members) == 1

                teacher.reload()  # F5
                settle(teacher, ".st-key-present_next")
                room_code(teacher)  # "Room ABCD · you lead it" again
                assert presenter_buttons_enabled(teacher) == dict.fromkeys(presenter_buttons_enabled(teacher),
                                                                          True)
                assert step_in_address(teacher) == step and "room=" in teacher.url
                assert [s.id for s in store.roster(code, secret)] == members  # no ghost student
                assert teacher_cookie(context)["value"] == code + secret  # what made the reload the teacher
                teacher.locator(".st-key-present_next button").click()  # and leads: the student follows
                settle(teacher, ".st-key-present_next")
                moved = step_in_address(teacher)
                assert moved != step
                student.wait_for_function("(s) => new URL(location.href).searchParams.get('step') === s",
                                          arg=moved, timeout=10_000)

                second = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()  # a laptop
                second.goto(f"{url}/?room={code}&teacher={secret}", timeout=90_000)
                settle(second, ".st-key-present_next")  # the presenter, where the room is: not the Workbench
                room_code(second)
                settle(second, ".st-key-present_next")  # its first run publishes: the room reruns once
                assert "/present" in second.url and step_in_address(second) == moved
                assert "teacher=" not in second.url and all(presenter_buttons_enabled(second).values())
                student.wait_for_timeout(1500)
                assert "/present" in student.url and step_in_address(student) == moved  # not pulled away
                assert [s.id for s in store.roster(code, secret)] == members
            with streamlit_server() as (url, _):  # a server restart: the same browser leads again
                again = context.new_page()
                again.goto(f"{url}/present?room={code}", timeout=90_000)
                settle(again, ".st-key-present_next")
                room_code(again)
                assert all(presenter_buttons_enabled(again).values())
                assert [s.id for s in store.roster(code, secret)] == members
                for page in (again, second, student):
                    assert page.locator("[data-testid='stException']").count() == 0
        finally:
            browser.close()
    store.close()


# --- A class behind one address waits at the door instead of being turned away ----------------------

NAT = "198.51.100.7"  # a school's one public address (a documentation address)


def behind_the_nat(monkeypatch) -> None:
    """Every AppTest session of this test comes from NAT (AppTest sends no headers: the address the
    store's limits count is given, as client_address() would read it behind a proxy)."""
    monkeypatch.setattr(identity, "client_address", lambda: NAT)


def fill_the_join_bucket(code: str, client: str = NAT) -> None:
    """Classmates from client join until the store turns the next one away (the bucket is empty)."""
    for n in itertools.count():
        try:
            live.store().join(code, f"classmate-{n}-{secrets.token_hex(4)}", client=client)
        except TooSoon:
            return


def wait_for_the_turn(at: AppTest) -> None:
    """Sleep until the waiting page's next knock is due, then run it (AppTest's stand-in for the tick
    of the page's run_every fragment: nothing is clicked or typed)."""
    wait = at.session_state["door_wait"]
    time.sleep(max(0.0, wait.knock_at - live.clock()) + 0.1)
    at.run()
    assert not at.exception


def test_a_student_the_join_rate_turns_away_waits_and_is_let_in_by_itself(monkeypatch):
    behind_the_nat(monkeypatch)
    teacher, code = teacher_with_room()
    fill_the_join_bucket(code)
    student = open_address({"room": code})
    assert not student.exception and "room" not in student.session_state
    assert door.WAITING_AT_THE_DOOR in [plain(i) for i in texts(student.sidebar.info)]
    assert not any("Too many" in plain(w) for w in texts(student.sidebar.warning))
    assert not student.session_state.get("wrong_codes")  # a wait is no wrong code
    for _ in range(3):  # the classmates' NAT may win a token first on a slow machine: knock again
        wait_for_the_turn(student)
        if "room" in student.session_state:
            break
    assert student.session_state["room"] == code and student.session_state["following"]
    assert "door_wait" not in student.session_state and not student.session_state.get("wrong_codes")
    assert any(f"Room {code}" in plain(m) for m in texts(student.sidebar.markdown))
    assert door.WAITING_AT_THE_DOOR not in [plain(i) for i in texts(student.sidebar.info)]
    assert student.session_state["student_id"] in {s.id for s in roster(teacher)}


def test_the_join_box_waits_too_and_keeps_the_nickname(monkeypatch):
    behind_the_nat(monkeypatch)
    teacher, code = teacher_with_room()
    fill_the_join_bucket(code)
    student = class_page()
    join_with_the_box(student, code, "ann")
    assert "room" not in student.session_state and not student.session_state.get("live_join_error")
    assert door.WAITING_AT_THE_DOOR in [plain(i) for i in texts(student.main.info)]  # next to the box
    for _ in range(3):
        wait_for_the_turn(student)
        if "room" in student.session_state:
            break
    assert student.session_state["room"] == code and student.session_state["nickname"] == "ann"
    assert [s.nickname for s in roster(teacher) if s.id == student.session_state["student_id"]] == ["ann"]
    assert not student.session_state.get("wrong_codes")


def test_a_locked_room_still_refuses_at_once_and_a_wait_ends_with_the_join_box(monkeypatch):
    behind_the_nat(monkeypatch)
    teacher, code = teacher_with_room()
    fill_the_join_bucket(code)
    teacher.button(key="live_lock").click().run()
    newcomer = open_address({"room": code})
    assert "room" not in newcomer.session_state and "door_wait" not in newcomer.session_state
    assert any("The room is locked: ask your teacher to let you in." in plain(w)
               for w in texts(newcomer.sidebar.warning))
    assert not newcomer.sidebar.info
    teacher.button(key="live_lock").click().run()
    waiting = open_address({"room": code})
    assert waiting.session_state["door_wait"]
    teacher.button(key="live_lock").click().run()  # locked while the student waits: told at the next knock
    wait_for_the_turn(waiting)
    assert "room" not in waiting.session_state and "door_wait" not in waiting.session_state
    assert any("The room is locked" in plain(w) for w in texts(waiting.sidebar.warning))
    teacher.button(key="live_lock").click().run()
    fill_the_join_bucket(code)
    late = open_address({"room": code})
    started = live.clock()
    monkeypatch.setattr(live, "clock", lambda: started + door.DOOR_WAIT_SECONDS + 1)  # two minutes on
    fill_the_join_bucket(code)
    late.run()
    assert "room" not in late.session_state and "door_wait" not in late.session_state
    assert any("join with the box on the Class page" in plain(w) for w in texts(late.sidebar.warning))


@pytest.mark.server
def test_fifty_students_behind_one_address_all_get_in_by_themselves(embedded_store, monkeypatch):
    """The school's NAT over the websocket protocol (X-Forwarded-For, as the ingress writes it): 50
    tabs open ?room=CODE at once; the ones the join rate turns away wait, their pages knocking on the
    frontend's run_every timer (FollowerSession) and nothing else, until all 50 are in the room. Then
    one more from the same address types the code in the Class page's join box: it waits too."""
    monkeypatch.setenv("MHA_CLIENT_IP_HEADER", "X-Forwarded-For")
    store = SqliteStore(embedded_store)
    room = store.create_room(client="teacher")
    cookies = [secrets.token_urlsafe(24) for _ in range(50)]

    async def student(url: str, cookie: str, gate: asyncio.Semaphore, deadline: float,
                      box: bool = False) -> FollowerSession:
        tab = FollowerSession(url, headers={"X-Forwarded-For": NAT, "Cookie": f"mha_student={cookie}"})
        async with gate:  # the browsers' first runs, a few at a time (2 cores)
            if box:
                tab.page_hash = calc_hash("class")
                await tab.open("")
                tab.set_string("live_join_code", room.code)
                await tab.press("FormSubmitter:live_join-Join")
            else:
                await tab.open(f"room={room.code}")
        tab.knocked = time.monotonic()  # the first run is over: the door has said yes or wait
        while not any(f"Room {room.code}" in s for s in tab.said) and time.monotonic() < deadline:
            interval = min(tab.auto_reruns.values(), default=None)
            if interval is None:
                break  # no timer left: the page stopped waiting
            await asyncio.sleep(interval)
            await tab.rerun_fragment(next(iter(tab.auto_reruns)))
        await tab.close()
        return tab

    async def the_class(url: str):
        gate = asyncio.Semaphore(8)
        deadline = time.monotonic() + 40
        return await asyncio.gather(*(student(url, c, gate, deadline) for c in cookies))

    with streamlit_server() as (url, _):
        asyncio.run(visit(url, "", {}))  # the server's first run imports everything: not timed below
        started = time.monotonic()
        tabs = asyncio.run(the_class(url))
        seconds = time.monotonic() - started
        members = {s.id for s in store.roster(room.code, room.teacher_secret)}
        late = secrets.token_urlsafe(24)
        by_the_box = asyncio.run(student(url, late, asyncio.Semaphore(1), time.monotonic() + 20, box=True))
    assert members == {identity.student_id_of(c) for c in cookies}, \
        f"{len(members)} of 50 in, {seconds:.1f} s"
    walked_in = sum(not any(door.WAITING_AT_THE_DOOR in s for s in tab.said) for tab in tabs)
    knocking = max(tab.knocked for tab in tabs) - started  # s: the 50 first runs, 8 at a time
    assert walked_in <= JOIN_BURST + int(knocking * JOIN_PER_SECOND) + 1, (walked_in, knocking)
    assert walked_in < 50  # the door made some wait: the burst is not the whole class
    assert not any("Too many" in s for tab in tabs for s in tab.said)
    assert not any(e.startswith("exception") for tab in tabs for e in (tab.last.errors if tab.last else []))
    assert seconds < 20, f"{seconds:.1f} s"  # 10.5 s here: 45 at once, then the 5 turns of 2 s each
    assert any(door.WAITING_AT_THE_DOOR in s for s in by_the_box.said)  # the bucket was empty again
    assert identity.student_id_of(late) in {s.id for s in store.roster(room.code, room.teacher_secret)}
    store.close()
