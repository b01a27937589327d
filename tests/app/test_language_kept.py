"""The reader's language survives a page switch (issue 40, found walking the German lesson in Chromium).

A follower is sent to the teacher's page by ``st.switch_page``, which drops every widget's state: the
language picker's too, so a German student following the teacher from the Class page to the Workbench
read English from then on (and a teacher who picked a language got the browser's again on leading
again). The language is kept in a key no widget owns (app/i18n.py, KEPT).
"""

from __future__ import annotations

from tests.apptest_util import goto, open_address, texts
from tests.classroom.test_live import rerun_after_a_poll, teacher_with_room


def test_a_student_keeps_their_language_when_the_teacher_moves_to_another_page():
    teacher, code = teacher_with_room()  # on the Class page
    student = open_address({"room": code, "lang": "de"})
    assert student.session_state["language"] == "de"
    goto(teacher, "workbench")
    rerun_after_a_poll(student)  # the follower is switched to the teacher's page
    assert not student.exception
    assert student.session_state["last_page"] == ""  # the default page, the Workbench: not the Class page
    assert student.session_state["language"] == "de"
    assert any(text.startswith(f"**Raum {code}**") for text in texts(student.sidebar.markdown))
    goto(teacher, "present")
    rerun_after_a_poll(student)
    assert student.session_state["language"] == "de" and student.session_state["last_page"] == "present"


def test_a_teacher_who_picked_a_language_keeps_it_when_leading_again_switches_the_page():
    teacher, code = teacher_with_room()
    goto(teacher, "present")
    lead = {"room": code, "teacher": teacher.session_state["teacher_secret"]}
    again = open_address(lead)  # an English browser: the reader picks French
    again.selectbox(key="language").set_value("fr").run()
    goto(again, "class")
    again.session_state["lead_page"] = "present"  # as leading again does: the room's page, once
    again.run()
    assert not again.exception and again.session_state["language"] == "fr"


def test_the_pickers_fallback_in_the_browser_is_the_readers_language():
    """Walking the German lesson with three phones, one phone in three or four turned English on the Class
    page with nobody touching the picker (traced on the server: a rerun from the browser carried the
    picker's value 'en'). A browser's picker that lost its value (its phone's sidebar drawn again) falls
    back to the element's default, which was the first language, English: it is the reader's now."""
    from course.i18n import LANGUAGES

    for code in ("de", "zh_CN"):
        at = open_address({"lang": code})
        picker = at.sidebar.selectbox(key="language")
        assert list(LANGUAGES)[picker.proto.default] == code
        assert picker.value == code
