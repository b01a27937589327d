"""Issue 29, 7 and 8: what a reader reads, on every page and in every language (tests/page_walk.py walks
the pages under AppTest, in the states that show the most).

7. No control depends on an emoji font: Debian's Chromium and many school machines have none and draw
   an emoji as an empty box ("🎲 re-roll"). A widget's label, options and help, an expander's or tab's
   label carry no emoji; an icon is one of Streamlit's Material icons (":material/casino:").
8. Numbers are written the reader's way: in a language whose decimal mark is a comma, no decimal point
   between digits (a point between groups of three is German's thousands mark: 1.048.576). The inputs
   read a decimal comma too (issue 40, 5: mha_core/typed_number.py), so the examples of what to type
   are written the reader's way as well.

Issue 40, 4: every bold of a message renders in its language. CommonMark opens ``**`` only when
the next character is no punctuation or the one before is space or punctuation (and closes it the
other way round): "**尺寸：**3 × 3" stays as typed, "**尺寸**：3 × 3" is bold. Each translation (a value
in place of each ``{field}``) is read by that rule; tests/course/test_language_walk.py reads Chromium's page.

English and German run in ``make test-fast``; the other languages' walks are marked slow. The
catalogues are checked whole: a translation writes no emoji and no decimal point of its own.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from babel.messages.pofile import read_po

from app.views.model import SENTENCES
from course.i18n import LANGUAGES, LOCALE_DIR, number_marks
from tests.apptest_util import unescaped
from tests.page_walk import SEPARATORS, Shown, english_sentences, read, walk

FAST = ("en", "de")  # the rest are walked in `make test`
WALKED = [code if code in FAST else pytest.param(code, marks=pytest.mark.slow) for code in LANGUAGES]
COMMA_LANGUAGES = [code for code in LANGUAGES if number_marks(code)[0] == ","]

# Arrows every text font has (U+2190..U+2193, no emoji form): "G · 'it' → 'cat'" is a lab's label.
PLAIN_ARROWS = range(0x2190, 0x2194)
EMOJI_BLOCKS = (range(0x1F000, 0x1FB00), range(0x2600, 0x27C0), range(0x2B00, 0x2C00))
JOINERS = ("\ufe0f", "\u200d")  # emoji presentation selector, zero-width joiner

DECIMAL_POINT = re.compile(r"(?<=\d)\.(?=\d)")
POINT_GROUPED = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:\.\d{3})+(?!\d)")  # 1.048.576 where "." groups
# Messages (by their start) that are no label but Markdown text, keeping a sign every text font draws
# (✓ U+2713, ✎ U+270E): where each is shown.
# Inputs English on purpose: the Real model page's sample sentences (the model reads English).
ENGLISH_INPUTS = tuple(SENTENCES)
SIGNED_TEXT = {"answered ✓": "the Class page's list of students",
               "✎ **Edited**": "the caption under the sidebar's example picker",
               "Shape algebra:": "the size lab's note under its table of shapes"}


PLACEHOLDER = re.compile(r"\{[^{}]*\}")
ESCAPED = re.compile(r"\\.")


def punctuation_or_space(char: str) -> bool:
    """CommonMark's punctuation (Unicode P and S) or white space; "" is a line's start or end."""
    return char == "" or char.isspace() or unicodedata.category(char)[0] in "PS"


def unrendered_bold(text: str) -> list[str]:
    """The ``**`` pairs of a Markdown message that CommonMark would show as text, each with its
    neighbours. A field is read as a letter (a value that starts or ends with one: the hard case), an
    escaped character as a letter too."""
    text = ESCAPED.sub("x", PLACEHOLDER.sub("x", text))
    found = []
    for n, run in enumerate(re.finditer(r"(?<!\*)\*\*(?!\*)", text)):
        before, after = text[run.start() - 1:run.start()], text[run.end():run.end() + 1]
        if n % 2 == 0:  # opens: not before a space, and before punctuation only after space or punctuation
            renders = not (after == "" or after.isspace()) and (
                not punctuation_or_space(after) or punctuation_or_space(before))
        else:  # closes: the mirror image
            renders = not (before == "" or before.isspace()) and (
                not punctuation_or_space(before) or punctuation_or_space(after))
        if not renders:
            found.append(text[max(0, run.start() - 12):run.end() + 12])
    return found


def emoji(text: str) -> list[str]:
    """The characters of ``text`` that need an emoji font (or a symbol font a school machine lacks)."""
    def needs_one(char: str) -> bool:
        code = ord(char)
        if code in PLAIN_ARROWS:
            return False
        return (char in JOINERS or any(code in block for block in EMOJI_BLOCKS)
                or (code > 127 and unicodedata.category(char) in ("So", "Sk")))
    return [char for char in text if needs_one(char)]


def decimal_points(text: str, language: str) -> list[str]:
    """Numbers in ``text`` written with a decimal point, for a language whose decimal mark is a comma
    (around each: the words next to it, to find it). Markdown's escapes are read as shown: 0\\.5 is 0.5."""
    text = unescaped(text)
    if number_marks(language)[1] == ".":
        text = POINT_GROUPED.sub("#", text)
    return [text[max(0, m.start() - 30):m.end() + 12] for m in DECIMAL_POINT.finditer(text)]


def control_problem(item: Shown) -> str | None:
    """Why a control's text would not draw without an emoji font; None when it draws."""
    if item.field.endswith("icon") and item.text and not item.text.startswith(":material/"):
        return f"icon {item.text!r} is no Material icon"
    found = emoji(item.text)
    return f"{''.join(found)!r} in {item.text[:80]!r}" if found else None


def first_places(problems) -> list[str]:
    """Each problem once, with the first place the walk met it: "button label: ... (at labs · ...)"."""
    first: dict[str, str] = {}
    for problem, where in problems:
        first.setdefault(problem, where)
    return [f"{problem} (at {where})" for problem, where in sorted(first.items())]


@pytest.fixture(scope="module", params=WALKED)
def shown(request, tmp_path_factory) -> tuple[str, list[Shown]]:
    """Every page of the walk in one language, read: (language, what it shows)."""
    language = request.param
    with pytest.MonkeyPatch.context() as patch:  # the Learn page trains: no run cached elsewhere shown
        patch.setenv("MHA_CHECKPOINT_DIR", str(tmp_path_factory.mktemp(f"checkpoints-{language}")))
        items = []
        for where, at in walk(language):
            assert not at.exception, (where, [e.value for e in at.exception])
            items += read(at, where)
    return language, items


def test_the_checks_find_what_they_look_for():
    assert emoji("🎲 neu würfeln") == ["🎲"] and emoji("⬇ Download as JSON") == ["⬇"]
    assert emoji("↺ Reset") == ["↺"] and emoji("◀ Zurück") == ["◀"] and emoji("Weiter ▶") == ["▶"]
    assert emoji("🔍 Genauer hinsehen") == ["🔍"] and emoji("answered ✓") == ["✓"]
    assert emoji("G · 'it' → 'cat'") == [] and emoji("F · ÷ √64") == [] and emoji("Köpfe h, d_k × 2") == []
    assert control_problem(Shown("", "button", "icon", ":material/casino:", True)) is None
    assert control_problem(Shown("", "button", "icon", "🎲", True)) is not None
    assert len(decimal_points("größte Abweichung 0.0e+00", "de")) == 1
    assert decimal_points("0,67 und 1.048.576 und 2,1e-9", "de") == []
    assert decimal_points("| k1 | 0\\.3333 |", "de") != []  # an escaped point shows as a point
    assert decimal_points("1.048.576", "fr") != []  # French groups with a narrow space
    assert len(decimal_points("Dezimalzahlen mit Punkt (1.5); Tippe eine Zahl wie 0.5, -2 ein", "de")) == 2
    assert len(decimal_points("ticks 0.71 and 1.4", "es")) == 2 and decimal_points("0.71", "zh_CN") != []
    assert unrendered_bold("**老师提问：**{}") and unrendered_bold("**为什么用窄切片？**{h} 个")
    assert unrendered_bold("x**: y**z") and unrendered_bold("** bold**")
    assert unrendered_bold("**老师提问**：{}") == [] and unrendered_bold("**Teacher asks:** {}") == []
    assert unrendered_bold("你的答案是 **{answer}**：错误。正确答案：**{correct}**") == []
    assert unrendered_bold("**此设置无法绘制。** 你") == [] and unrendered_bold("a **(b)** c") == []


def test_no_control_depends_on_an_emoji_font(shown):
    language, items = shown
    found = first_places((f"{item.kind} {item.field}: {problem}", item.where)
                         for item in items if item.control and (problem := control_problem(item)))
    assert not found, (language, found)


def test_the_walk_reads_the_controls_it_should(shown):
    """The walk reaches the sidebar's downloads, the presenter's buttons and the labs' examples."""
    _, items = shown
    kinds = {(item.kind, item.field) for item in items if item.control}
    assert {("download_button", "label"), ("button", "icon"), ("toggle", "label"), ("expander", "label"),
            ("tab", "label"), ("selectbox", "options")} <= kinds
    pages_reached = {item.where.split(" · ")[0] for item in items}
    assert pages_reached == {"workbench", "present", "labs", "quiz", "learn", "model", "class", "examples"}


def test_numbers_are_written_the_reader_s_way(shown):
    language, items = shown
    if number_marks(language)[0] != ",":
        pytest.skip(f"{language} writes a decimal point")
    assert sum("0,67" in item.text for item in items) > 3  # the check reads the page's numbers
    floats = [item for item in items if item.field == "cells" and item.text.startswith("float column")]
    found = first_places([*((f"{item.kind} {item.field}: {context!r}", item.where)
                            for item in items if item not in floats
                            for context in decimal_points(item.text, language)),
                          *((f"{item.kind}: {item.text} (a browser writes a float with a point)", item.where)
                            for item in floats)])
    assert not found, (language, found)


def test_no_english_sentence_is_left_in_another_language(shown):
    """Issue 40, 6: what the walk reads (Compare's sentences and charts among it) is in the reader's
    language; tests/course/test_language_walk.py reads Chromium's pages."""
    language, items = shown
    if language == "en":
        assert len(english_sentences([item.text for item in items])) > 10  # the check finds English
        return
    found = first_places((f"{item.kind} {item.field}: {sentence!r}", item.where) for item in items
                         for sentence in english_sentences([item.text])
                         if not any(sentence.startswith(input_text[:40]) for input_text in ENGLISH_INPUTS))
    assert not found, (language, found)


def test_every_chart_writes_its_own_numbers_the_reader_s_way(shown):
    """Plotly's own numbers (ticks, %{y:.3f} in hover text) take the layout's separators."""
    language, items = shown
    marks = "".join(number_marks(language))
    found = first_places((f"{item.kind}: separators {item.text!r}", item.where)
                         for item in items if item.field == SEPARATORS and item.text != marks)
    assert not found, (language, found)


def catalogue(code: str | None):
    path = LOCALE_DIR / "messages.pot" if code is None else LOCALE_DIR / code / "LC_MESSAGES" / "messages.po"
    with open(path, "rb") as file:
        return [message for message in read_po(file) if message.id]


@pytest.mark.parametrize("code", [None, *(code for code in LANGUAGES if code != "en")])
def test_no_message_carries_an_emoji(code):
    """Labels are mostly translated messages: none carries an emoji (nor adds one to its English),
    but for the few texts that are no label (SIGNED_TEXT)."""
    signed = tuple(SIGNED_TEXT)
    found = [(message.id, message.string) for message in catalogue(code)
             if not message.id.startswith(signed) and (emoji(message.id) or emoji(message.string))]
    assert not found, found


@pytest.mark.parametrize("code", COMMA_LANGUAGES)
def test_no_translation_writes_a_decimal_point(code):
    """A number written inside a translation (22,7 M parameters) is written the language's way."""
    found = [(message.id, points) for message in catalogue(code)
             if (points := decimal_points(message.string, code))]
    assert not found, found


@pytest.mark.parametrize("code", [None, *(code for code in LANGUAGES if code != "en")])
def test_every_bold_of_a_message_renders(code):
    """Issue 40, 4: no bold a reader would see as '**老师提问：**'."""
    found = [(message.id, marks) for message in catalogue(code)
             for text in ([message.id] if code is None else [message.string])
             if text and (marks := unrendered_bold(text))]
    assert not found, found
