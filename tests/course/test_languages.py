"""Issue 17, languages: the catalogues are complete and faithful, and each reader reads the course in
their own language, a student following an English-speaking teacher's room too."""

from __future__ import annotations

import json
import re
import time

import pytest
from babel.messages.pofile import read_po

from classroom.watch import VERSION_MAX_AGE
from course.i18n import (
    LANGUAGES,
    LOCALE_DIR,
    from_accept_language,
    known,
    localized_number_text,
    localized_tex,
    number,
    translator,
)
from course.steps import SCREENS, STEPS, in_language, screen_position
from tests.apptest_util import (
    address,
    chart_specs,
    fresh_app,
    goto,
    open_address,
    pick_example,
    presenter_screens,
    texts,
    to_screen,
)

TRANSLATED = [code for code in LANGUAGES if code != "en"]
# What a translation keeps exactly as the English has it: symbols, formulas' names, Markdown.
PLACEHOLDER = re.compile(r"\{[a-z_]*\}")
FULL_WIDTH = str.maketrans("（）", "()")  # Chinese brackets around (Q), (K), (V)
TECHNICAL = re.compile(r"√?[A-Za-z]+_[A-Za-z0-9]+²?|n²|\((?:Q|K|V)\)|\*\*|\$|\{[a-z_]*\}|\b\d+\b")


def template() -> list[str]:
    with open(LOCALE_DIR / "messages.pot", "rb") as file:
        return sorted(m.id for m in read_po(file) if m.id)


def catalogue(code: str):
    with open(LOCALE_DIR / code / "LC_MESSAGES" / "messages.po", "rb") as file:
        return read_po(file)


def test_the_template_holds_every_message_of_the_registry():
    messages = set(template())
    for step in STEPS.values():
        assert {step.title, step.what, step.why} <= messages, step.title
    for screen in SCREENS:
        assert screen.title in messages and (screen.why is None or screen.why in messages)


@pytest.mark.parametrize("code", TRANSLATED)
def test_every_catalogue_translates_every_message_and_nothing_else(code):
    po = catalogue(code)
    assert sorted(m.id for m in po if m.id) == template()
    for message in po:
        if message.id:
            assert message.string and not message.fuzzy, (code, message.id)


@pytest.mark.parametrize("code", TRANSLATED)
def test_a_translation_keeps_its_message_s_symbols_numbers_and_markdown(code):
    for message in catalogue(code):
        if message.id:
            english = sorted(TECHNICAL.findall(message.id))
            written = message.string.translate(FULL_WIDTH)
            assert sorted(TECHNICAL.findall(written)) == english, (code, message.id, message.string)


def glossary_term(english: str) -> re.Pattern:
    """An English term as a word, plural too; 'attention' not inside 'self-attention'."""
    return re.compile(rf"(?<![-\w]){re.escape(english)}(?:s|es)?\b", re.IGNORECASE)


@pytest.mark.parametrize("code", TRANSLATED)
def test_each_language_uses_its_glossary_s_terms_in_every_message(code):
    glossary = json.loads((LOCALE_DIR / code / "glossary.json").read_text())
    assert {"attention", "head", "query", "key", "value", "softmax", "token"} <= set(glossary)
    for message in catalogue(code):
        words = PLACEHOLDER.sub("", message.id or "")  # "{token}" names a value, not the term
        for english, forms in glossary.items():
            if words and glossary_term(english).search(words):
                assert any(form.lower() in message.string.lower() for form in forms), \
                    (code, english, message.string)


@pytest.mark.parametrize("code", TRANSLATED)
def test_the_compiled_catalogue_is_the_committed_one(code):
    """make compiles each .po whenever it is newer: a stale or missing .mo fails here."""
    gettext = translator(code)
    for message in catalogue(code):
        if message.id:
            assert gettext(message.id) == message.string, (code, message.id)


def test_language_codes_from_links_and_browsers():
    assert [known(c) for c in ("de", "de-CH", "fr_CA", "pt", "pt-PT", "zh-Hans-CN", "zh-CN", "es-419")] == [
        "de", "de", "fr", "pt_BR", "pt_BR", "zh_CN", "zh_CN", "es"]
    assert [known(c) for c in ("zh-TW", "zh-Hant", "xx", "", None, "de\n", "../../etc", "en-GB")] == [
        None, None, None, None, None, "de", None, "en"]
    assert from_accept_language("de-CH,de;q=0.9,en;q=0.8") == "de"
    assert from_accept_language("en;q=0.5,fr;q=0.9") == "fr"  # by weight, not by position
    assert from_accept_language("it-IT,ja;q=0.9,pt;q=0.8") == "pt_BR"  # the first one the course has
    assert from_accept_language("it,ja") is None and from_accept_language(None) is None
    assert from_accept_language("de;q=abc,fr") == "fr"


def test_numbers_are_written_as_each_language_writes_them():
    assert [number(0.6667, code) for code in ("en", "de", "fr", "zh_CN")] == ["0.67", "0,67", "0,67", "0.67"]
    assert number(1_048_576, "en", 0) == "1,048,576" and number(1_048_576, "de", 0) == "1.048.576"
    assert number(1_048_576, "fr", 0).replace("\u202f", " ") == "1 048 576"


def step_headings(at) -> list[str]:
    return [m[1] for m in (re.match(r"### \d+\. (.+?)\n", text) for text in texts(at.markdown)) if m]


@pytest.mark.parametrize("code", TRANSLATED)
def test_a_link_s_language_shows_every_step_in_it_and_stays_in_the_address(code):
    steps, screens = in_language(code)
    at = open_address({"lang": code})
    assert not at.exception
    assert step_headings(at) == [step.title for step in steps.values()]
    assert not set(step_headings(at)) & {step.title for step in STEPS.values()}  # no English title left
    pick_example(at, "ex_e_negative_score")
    assert address(at)["lang"] == code  # a change of setup keeps the reader's language
    goto(at, "present")
    title = next(text for text in texts(at.markdown) if text.startswith("### "))
    assert title.endswith(screens[0].title)


def test_the_picker_changes_the_language_and_writes_it_in_the_address():
    at = fresh_app()
    assert "lang" not in address(at)  # nobody chose: each reader's own default
    at.selectbox(key="language").set_value("fr").run()
    assert not at.exception
    assert step_headings(at)[0] == in_language("fr")[0]["embeddings"].title
    assert address(at)["lang"] == "fr"
    assert at.selectbox(key="language").label == "Langue · Language"


def test_an_unknown_language_in_a_link_is_said_and_the_page_is_english():
    at = open_address({"lang": "<b>xx</b>"})
    assert not at.exception
    assert any("the language" in text and "xx" in text for text in texts(at.warning))
    assert step_headings(at)[0] == STEPS["embeddings"].title


def test_the_deployer_s_language_is_the_default(monkeypatch):
    monkeypatch.setenv("MHA_LANGUAGE", "es")
    at = fresh_app()
    assert step_headings(at)[0] == in_language("es")[0]["embeddings"].title
    assert "lang" not in address(at)


def test_a_student_reads_the_english_speaking_teacher_s_lesson_in_german(embedded_store):
    teacher = fresh_app()
    goto(teacher, "class")
    teacher.button(key="live_start").click().run()
    code = teacher.session_state["room"]
    goto(teacher, "present")
    teacher.button(key="present_next").click().run()  # the second screen, whatever it is
    student = open_address({"room": code, "lang": "de"})
    assert not student.exception
    german = in_language("de")[1]

    def heading(screens, position: int) -> str:
        return f"### {position + 1} / {len(SCREENS)} · {screens[position].title}"

    assert next(text for text in texts(student.markdown) if text.startswith("### ")) == heading(german, 1)
    asked = screen_position("dot_product")  # a screen with a forecast, after the second
    for _ in range(asked - 1):
        teacher.button(key="present_next").click().run()
    time.sleep(VERSION_MAX_AGE)  # the server's watch reads the room again
    student.run()
    shown = next(text for text in texts(student.markdown) if text.startswith("### "))
    assert shown == heading(german, asked)  # the teacher's step, in German
    teacher_heading = next(text for text in texts(teacher.markdown) if text.startswith("### "))
    assert teacher_heading == heading(SCREENS, asked)  # the teacher's stays English
    assert teacher.session_state["language"] == "en" and student.session_state["language"] == "de"
    assert any(text.startswith(f"**Raum {code}** · du folgst der Lehrkraft: ")
               for text in texts(student.sidebar.markdown))
    teacher.button(key="present_ask").click().run()  # the teacher asks the room that screen's forecast
    question_id, _ = teacher.session_state["asked"]
    time.sleep(VERSION_MAX_AGE)
    student.run()
    assert any(text.startswith("**Deine Lehrkraft fragt:** ") for text in texts(student.markdown))
    answer = student.radio(key="live_value") if student.radio else student.text_input(key="live_value")
    assert answer.label == "Deine Antwort"
    if student.radio:
        answer.set_value(answer.options[0])
    else:
        answer.input("3")
    student.button(key=f"FormSubmitter:live_answer_{question_id}-Senden").click().run()
    assert not student.exception
    assert any(text.startswith("Deine Antwort ist angekommen.") for text in texts(student.info))


def test_numbers_in_text_follow_the_language_and_labels_do_not():
    assert localized_number_text("0.67", "de") == "0,67"
    assert localized_number_text("1,048,576 and 2.1e-9", "es") == "1.048.576 and 2,1e-9"
    assert localized_number_text("1 − 4.1e-9 (0.999999995878)", "pt_BR") == "1 − 4,1e-9 (0,999999995878)"
    assert localized_number_text("1,048,576.5", "fr").replace("\u202f", " ") == "1 048 576,5"
    assert localized_number_text("0.67, then 3", "zh_CN") == "0.67, then 3"


def test_a_german_reader_s_charts_write_decimal_commas_on_cells_hover_and_axes():
    """Cells and hover of the cat sat's weights in German: '0,67'; the labels before a hover's number
    stay as typed (a token '3.14' is not a number to rewrite)."""
    at = open_address({"lang": "de", "example": "the_cat_sat_two_heads"})
    english = fresh_app()
    spec, english_spec = chart_specs(at)["chart_weights"], chart_specs(english)["chart_weights"]
    assert spec["layout"]["separators"] == ",." and "separators" not in english_spec["layout"]
    for trace, english_trace in zip(spec["data"], english_spec["data"], strict=True):
        if english_trace.get("text"):
            cells = [c for row in english_trace["text"] for c in row]
            assert [c for row in trace["text"] for c in row] == [c.replace(".", ",") for c in cells]
    hover = spec["data"][1]["hovertext"][2][1]  # head 2, query 'sat', key 'cat'
    assert hover == "Query sat, Key cat: Gewicht 0,6652"  # the words German too (the glossary's)
    at = open_address({"lang": "de", "example": "the_cat_sat_two_heads"})
    at.text_input(key="tokens_text").set_value("3.14 cat sat").run()
    hover = chart_specs(at)["chart_weights"]["data"][1]["hovertext"][0][0]
    assert hover.startswith("Query 3.14, Key 3.14: Gewicht ") and "," in hover.rpartition(": ")[2]


def test_the_presenter_speaks_german_with_german_numbers_on_every_screen():
    """Example I (d_model 512, h 8) walked screen by screen in German: no exception, the cost screen
    says its sentences in German with 4 · 512² written 1.048.576, and no presenter sentence stays English."""
    at = open_address({"lang": "de", "example": "ex_i_parameter_count"})
    goto(at, "present")
    seen = []
    for _ in presenter_screens(at, reveal=False):
        seen += texts(at.markdown) + texts(at.caption) + texts(at.info)
        if any(b.key == "present_reveal" for b in at.button):
            at.button(key="present_reveal").click().run()
            seen += texts(at.markdown) + texts(at.caption)
    assert any("**4 · 512² = 1.048.576**" in text for text in seen)
    assert any(text.startswith("**Rechenarbeit der Aufmerksamkeit** für") for text in seen)
    english = ("Work of attention", "Why narrow slices", "Most apart for this query", "blends the value rows",
               "its highest score in head", "The result appears here", "whatever h is")
    assert not [text for text in seen if any(words in text for words in english)]


def test_the_pickers_and_chart_titles_name_heads_queries_and_keys_in_the_reader_s_language():
    """Single words escape the sentence check of the page walk: the presenter's head picker (and its
    label, which a screen reader reads), the heads_compared step's heads-by-keys grid, the workbench's
    drill-down pickers and the disagreement screen's chart title were English on a German page."""
    at = open_address({"lang": "de", "example": "the_cat_sat_two_heads", "step": "disagreement"}, "present")
    assert not at.exception
    if any(b.key == "present_reveal" for b in at.button):
        at.button(key="present_reveal").click().run()
    grid = json.dumps(chart_specs(at)["present_heads_row"], ensure_ascii=False)
    assert "Kopf 1" in grid and "head 1" not in grid
    assert at.selectbox(key="pick_focus_query").label == "Query-Token"
    for _ in range(screen_position("disagreement") - screen_position("weighted_sum")):
        at.button(key="present_back").click().run()  # past split into heads (no picker) to the weighted sum
    at.button(key="present_reveal").click().run()
    picker = at.button_group(key="pick_shown_head")
    assert picker.label == "Kopf" and list(picker.options)[:2] == ["Kopf 1", "Kopf 2"]
    goto(at, "workbench")
    at.toggle(key="drill_open").set_value(True).run()
    assert [at.selectbox(key=f"pick_drill_{name}").label for name in ("head", "query", "key")] == [
        "Kopf", "Query", "Key"]
    concat = json.dumps(chart_specs(at)["chart_concat"]["layout"], ensure_ascii=False)
    assert "ein Band pro Kopf" in concat


@pytest.mark.parametrize(("code", "decimal"), [("de", "0{,}"), ("fr", "0{,}"), ("zh_CN", "0.")])
def test_the_drill_down_and_the_presenter_s_formulas_write_numbers_as_the_language_does(code, decimal):
    """Issue 17 asks for locale numbers in the drill-down too: its LaTeX wrote 0.6652 on a German page.
    The chapter's cell ('sat' attends to 'cat' in head 2: 0.67) checked to its printed precision."""
    at = open_address({"lang": code, "example": "the_cat_sat_two_heads", "drill": "2.3.2"})
    assert not at.exception
    lines = [line.strip("$\n") for line in texts(at.latex)]  # AppTest keeps st.latex's $$ … $$
    weight = next(line for line in lines if line.startswith("a_{3,2}"))
    assert weight.endswith(f"= {decimal}6652")
    assert round(float(weight.rsplit("= ", 1)[1].replace("{,}", ".")), 2) == 0.67
    english_decimal = re.compile(r"\d\.\d")
    assert code == "zh_CN" or not any(english_decimal.search(line) for line in lines), lines
    goto(at, "present")
    to_screen(at, "softmax", reveal=False)  # the softmax of one cell, written out with its weight 0.6652
    if any(b.key == "present_reveal" for b in at.button):
        at.button(key="present_reveal").click().run()
    worked = [line.strip("$\n") for line in texts(at.latex)]
    assert any(line.endswith(f"= {decimal}6652") for line in worked), worked
    assert code == "zh_CN" or not any(english_decimal.search(line) for line in worked)


@pytest.mark.parametrize(("code", "written"), [
    ("en", r"x = 0.25,\; n = 1{,}048{,}576"), ("de", r"x = 0{,}25,\; n = 1.048.576"),
    ("fr", r"x = 0{,}25,\; n = 1\,048\,576"), ("zh_CN", r"x = 0.25,\; n = 1{,}048{,}576")])
def test_a_formula_s_decimal_marks_and_thousands_follow_the_language(code, written):
    """TeX spaces a bare comma as punctuation: a decimal comma is braced, 1{,}048{,}576 becomes
    German's 1.048.576 and French's thin spaces; subscripts, TeX lengths and digits without a mark stay."""
    assert localized_tex(r"x = 0.25,\; n = 1{,}048{,}576", code) == written
    for kept in (r"a_{3,2}", r"\hspace{0.5em}", r"\mkern1.5mu", r"\sqrt{64}", r"q_{12} \cdot k_{3}"):
        assert localized_tex(kept, code) == kept


# German addresses the reader as "du": a capitalised Sie, Ihr..., Ihnen inside a sentence (sentence
# starts may be "sie": they, it), or an imperative "Wählen Sie" at a sentence's start, is formal.
FORMAL_INSIDE = re.compile(r"(?<![.:!?*] )(?<![.:!?*]\*\* )(?<!^)\b(Sie|Ihnen|Ihr|Ihre[mnrs]?)\b")
FORMAL_IMPERATIVE = re.compile(r"(?:^|[.:!?] )\w+en Sie\b")


def formal_address(text: str) -> bool:
    return bool(FORMAL_INSIDE.search(text) or FORMAL_IMPERATIVE.search(text))


def test_german_says_du_never_sie():
    """Issue 40, 6: no German message says "Sie" where the rest says "du"."""
    assert formal_address("Nichts, was Sie eingegeben haben") and formal_address("durch Ihre Lehrkraft")
    assert formal_address("keine ganze Zahl. Wählen Sie h")
    assert not formal_address("Eine Maske sperrt Keys: Sie bekommen das Gewicht 0. Ihre Ausgabe ist 0.")
    found = [(m.id, m.string) for m in catalogue("de") if m.id and formal_address(m.string)]
    assert not found, found


# --- Issue 40, 5: typed numbers are read and written the reader's way, by one reader --------------


def _editor_cells(at, name: str) -> list[str]:
    """The cells of an array's data editor as the browser receives them (text columns)."""
    from tests.apptest_util import key_of

    node = next(n for n in at.get("dataframe") if getattr(n.proto, "id", "") and
                key_of(at, name) in n.proto.id)
    frame = node.value
    return [str(cell) for column in frame.columns if column != "row" for cell in frame[column]]


@pytest.mark.parametrize(("code", "mark"), [("de", ","), ("en", ".")])
def test_the_x_editor_writes_and_reads_numbers_the_reader_s_way(code, mark):
    """Its cells carry the reader's decimal mark; "1,5" is 1.5 in every language; a refusal is in the
    reader's language and shows what to type in the reader's form."""
    from tests.apptest_util import edit_cell, unescaped

    at = open_address({"lang": code})
    pick_example(at, "random")  # random X: decimals in every cell
    decimals = [cell for cell in _editor_cells(at, "x") if re.search(r"\d[.,]\d", cell)]
    assert decimals and all(mark in cell and ("." if mark == "," else ",") not in cell for cell in decimals)
    edit_cell(at, "x", 0, 0, "1,5")  # read as 1.5: tests/app/test_app.py checks the weights it gives
    assert not at.exception and not at.error and "chart_weights" in chart_specs(at)
    edit_cell(at, "x", 0, 1, "abc")
    message = unescaped(" ".join(e.value for e in at.error))
    example = number(0.42, code)
    assert "'abc'" in message and example in message, message
    assert ("keine Zahl" in message) == (code == "de") and "use a point" not in message


def test_every_route_reads_typed_numbers_with_one_reader():
    """The grid's cells, a lab's list and a quiz answer read "1,5" alike; a count refuses "0,5" in the
    reader's form (a whole number with its separators), never with the form it refused."""
    from course.answers import KINDS
    from course.labs import parse_numbers
    from mha_core.setup import parse_number

    assert parse_number("1,5") == 1.5 == float(KINDS["score"].stored("1,5", language="de"))
    assert list(parse_numbers("0,5; 1,5 2", "scores", "de")) == [0.5, 1.5, 2.0]
    assert list(parse_numbers("0,5, 1,5", "scores", "de")) == [0.5, 1.5]  # as the lab writes them
    assert list(parse_numbers("2,2,2", "scores", "en")) == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="ist keine Zahl .*0,42"):
        parse_numbers("1, x", "scores", "de")
    whole = KINDS["parameters"].problem("0,5", language="de")
    assert "0,42" not in whole and number(1048576, "de", 0) in whole, whole


def test_the_labs_sliders_and_lists_write_numbers_the_reader_s_way():
    at = open_address({"lang": "de"}, "labs")
    assert not at.exception
    sliders = {w.key: w for w in at.select_slider if w.key in ("lab_temperature", "lab_gap")}
    assert set(sliders) == {"lab_temperature", "lab_gap"}
    shown = [text for slider in sliders.values() for text in slider.options]  # as the slider writes them
    assert "1,00" in shown and all("," in text and "." not in text for text in shown), shown
    at.button(key="lab_load_ex_f_scaled").click().run()
    assert not at.exception and not at.error
