"""The lesson with a room, in Chromium (issue 40): a follower's phone shows the teacher's current screen
first, a past question's result below it (finding 2); nothing on the projector tells the real softmax
row before Reveal, the class's forecast shown or closed (finding 3); one Reveal (finding 8).

Skips when Chromium or Playwright is missing, unless REQUIRE_BROWSER=1 (CI), where that fails.
"""

from __future__ import annotations

import pytest

from course.steps import screen_position
from tests.app.test_present_fit import LOADED, present_softmax_in_a_room, settled, show_the_answers
from tests.browser_env import ARTIFACTS, IDLE, PROJECTOR, no_exception_on, press_next, screen_shown

pytestmark = pytest.mark.browser

PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
CHIPS = "[class*='st-key-chip_add_'] button"
# Every heatmap row on the main page, as numbers rounded to 2 places (what a reader could see).
HEATMAP_ROWS = """() => Array.from(document.querySelectorAll("[data-testid='stMain'] .js-plotly-plot"))
    .flatMap(gd => (gd._fullData || []).filter(t => t.type === 'heatmap')
        .flatMap(t => Array.from(t.z || [])
            .map(row => Array.from(row).map(v => Math.round(v * 100) / 100))))"""
CLASS_SHOWN = "() => document.querySelector(\"[data-testid='stMain'] h1\")?.innerText === 'Class'"
TOP_OF = "(s) => { const e = document.querySelector(s); return e ? e.getBoundingClientRect().top : null; }"


def draw_and_send(student, taps=(0, 0, 1)) -> None:
    """A student taps chips onto keys (one tap at a time, each drawn) and sends the row."""
    student.wait_for_selector(CHIPS, timeout=LOADED)
    for key in taps:
        student.wait_for_selector(IDLE, timeout=LOADED)
        before = student.locator(CHIPS).nth(key).inner_text().count("●")
        student.locator(CHIPS).nth(key).click()
        student.wait_for_function(
            "([s, k, n]) => document.querySelectorAll(s)[k].innerText.split('●').length - 1 === n",
            arg=[CHIPS, key, before + 1], timeout=LOADED)
    student.wait_for_selector(IDLE, timeout=LOADED)
    student.locator("[class*='st-key-forecast_send_'] button").click()
    student.wait_for_function("() => document.body.innerText.includes('Your answer is in')", timeout=LOADED)


def asked_a_drawing(live):
    """The teacher on the softmax screen of a room asks it to draw a forecast: (teacher, code)."""
    url, browser = live
    teacher = browser.new_context(viewport=PROJECTOR).new_page()
    code = present_softmax_in_a_room(teacher, url)
    teacher.locator(".st-key-present_draw button").click()
    teacher.wait_for_selector(".st-key-room_show_answers", timeout=LOADED)
    return teacher, code


def test_the_projector_tells_no_real_row_before_reveal(live):
    """Finding 3: with the class's forecasts in, "Show the answers" and then Close draw the class's
    average alone; the head's real row (read from the page after Reveal) is on no chart before."""
    url, browser = live
    teacher, code = asked_a_drawing(live)
    student = browser.new_context(viewport=PROJECTOR).new_page()
    student.goto(f"{url}/?room={code}")
    draw_and_send(student)
    teacher.wait_for_function("() => document.body.innerText.includes('1 of 1 answered')", timeout=LOADED)
    assert teacher.locator(".st-key-present_reveal button").count() == 1  # one Reveal, not two
    assert teacher.locator(".st-key-room_reveal").count() == 0
    show_the_answers(teacher, "room_forecast_chart")
    settled(teacher)
    seen = {"shown": teacher.evaluate(HEATMAP_ROWS)}
    teacher.locator(".st-key-room_close button").click()
    teacher.wait_for_function("() => document.body.innerText.includes('answers closed')", timeout=LOADED)
    settled(teacher)
    seen["closed"] = teacher.evaluate(HEATMAP_ROWS)
    text_before = teacher.evaluate("() => document.body.innerText")
    teacher.screenshot(path=str(ARTIFACTS / "room-forecast-before-reveal.png"))
    teacher.locator(".st-key-present_reveal button").click()
    teacher.wait_for_selector(".st-key-present_reveal", state="detached", timeout=LOADED)
    teacher.locator(".st-key-present_room_view button:has-text(\"The room's answers\")").click()
    teacher.wait_for_selector(".st-key-room_forecast_chart .js-plotly-plot", timeout=LOADED)
    settled(teacher)
    after = teacher.evaluate(HEATMAP_ROWS)
    real = [row for row in after if row not in seen["shown"]]  # the real softmax's row, shown now
    assert real, after
    assert all(seen[when] and not any(row in seen[when] for row in real) for when in seen), (seen, real)
    assert "total variation" not in text_before  # how close the class came tells the real row too
    assert "total variation" in teacher.evaluate("() => document.body.innerText")
    no_exception_on(teacher)
    student.context.close()
    teacher.context.close()


def test_a_phone_shows_the_teachers_screen_first_after_a_question(live):
    """Finding 2: after a revealed forecast the teacher moves on; the phone's first screenful holds the
    teacher's screen (its title near the top), the old question's result below it."""
    url, browser = live
    teacher, code = asked_a_drawing(live)
    phone = browser.new_context(**PHONE).new_page()
    phone.goto(f"{url}/?room={code}")
    softmax = screen_position("softmax")
    screen_shown(phone, softmax)
    draw_and_send(phone)
    teacher.wait_for_function("() => document.body.innerText.includes('1 of 1 answered')", timeout=LOADED)
    teacher.locator(".st-key-present_reveal button").click()
    phone.wait_for_selector(".st-key-own_forecast .js-plotly-plot", timeout=LOADED)
    press_next(teacher)
    screen_shown(teacher, softmax + 1)
    settled(teacher)
    screen_shown(phone, softmax + 1)
    phone.wait_for_selector(IDLE, timeout=LOADED)
    phone.wait_for_selector(".st-key-own_forecast .js-plotly-plot", timeout=LOADED)
    phone.wait_for_timeout(500)
    phone.screenshot(path=str(ARTIFACTS / "phone-after-the-question.png"))
    title = phone.evaluate(TOP_OF, "[data-testid='stMain'] h3")
    result = phone.evaluate(TOP_OF, ".st-key-own_forecast")
    assert title is not None and title < PHONE["viewport"]["height"] / 3, title
    assert result is not None and result > title, (title, result)
    teacher.locator("[data-testid='stExpandSidebarButton']").click()  # Present collapsed the sidebar
    teacher.locator("[data-testid='stSidebarNav'] a:has-text('Class')").click()  # the Class page too
    phone.wait_for_function(CLASS_SHOWN, timeout=LOADED)
    phone.wait_for_selector(IDLE, timeout=LOADED)
    phone.wait_for_timeout(500)
    heading = phone.evaluate(TOP_OF, "[data-testid='stMain'] h1")
    result = phone.evaluate(TOP_OF, ".st-key-own_forecast")
    assert heading is not None and heading < PHONE["viewport"]["height"] / 3, heading
    assert result is None or result > heading, (heading, result)
    no_exception_on(phone)
    phone.context.close()
    teacher.context.close()
