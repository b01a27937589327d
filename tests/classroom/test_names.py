"""Issue 29, items 1 to 3, the parts that need no store: nicknames as a room keeps and compares them
(classroom/names.py), CSV cells a spreadsheet cannot run (classroom.store.csv_safe), one limit per
field for the page's boxes and the store, and the page's words for the store's refusals.

The store's side (one name per student, on both backends, racing stores included) is in
tests/classroom/test_store.py; the pages' (the refusal next to the nickname box) in
tests/classroom/test_class_door.py.
"""

from __future__ import annotations

import ast
import importlib
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.room import refusals
from classroom import names
from classroom.store import (
    FORMULA_CHARS,
    MAX_TEXT_CHARS,
    NAME_TAKEN,
    NICKNAME_CHARS,
    PLAIN_NUMBER,
    TOO_LONG,
    csv_safe,
)
from tests.classroom.test_store import LOOK_ALIKES, MARA, as_a_spreadsheet_reads, read_the_same

ROOT = Path(__file__).resolve().parents[2]
INVISIBLE = "\u202e\u200b\u200c\u200d\u2060\ufeff\u00ad\u2066\u2069\u180e\x00\x07\x1b\x7f"


# --- names.py: the form kept, the keys compared ------------------------------------------------------


@pytest.mark.parametrize("typed", [MARA, *LOOK_ALIKES, "MARA", "Ｍａｒａ", "Ma\u2060ra\ufeff", "\u202eMara",
                                   "Ma\u200dra", "\u041cara", "Mar\u0430\u200c"])
def test_every_look_alike_of_mara_reads_the_same(typed):
    assert read_the_same(names.clean(typed), MARA)


@pytest.mark.parametrize(("first", "second"), [("Ian", "ian"), ("Νικος", "νικος"), ("Η", "h"),
                                               ("Mοra", "Mora"), ("ΜΑΡΑ", "MAPA"), ("ﬁn", "fin")])
def test_case_and_look_alikes_between_scripts_are_folded(first, second):
    """Η (Greek capital eta) reads as h, η as n: the skeleton of the name as written and the one
    of its case fold are both compared."""
    assert read_the_same(names.clean(first), names.clean(second))


@pytest.mark.parametrize(("first", "second"), [("Mara", "Mora"), ("José", "Jose"), ("Борис", "Boris"),
                                               ("王伟", "王维"), ("Mara 1", "Mara l"), ("Mara 2", "Mara 3"),
                                               ("Ana", "Anna")])
def test_names_that_read_differently_stay_apart(first, second):
    assert not read_the_same(first, second)


@pytest.mark.parametrize("hidden", list(INVISIBLE))
def test_clean_removes_controls_and_invisible_characters(hidden):
    assert names.clean(f"{hidden}Ma{hidden}ra{hidden}") == MARA


def test_clean_collapses_blanks_and_keeps_what_is_seen():
    assert names.clean(" \tZoë  \n the\u3000best\u00a0 ") == "Zoë the best"
    assert names.clean("王伟") == "王伟" and names.clean("<b>Bo</b>") == "<b>Bo</b>"
    assert names.clean("Ｍａｒａ") == MARA  # NFKC: full width is plain width
    assert names.clean("") == "" and names.clean("\u200b \u202e") == ""


@given(st.text(max_size=60))
def test_clean_is_a_fixed_point_without_hidden_characters_or_loose_blanks(text):
    cleaned = names.clean(text)
    assert names.clean(cleaned) == cleaned
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") for ch in cleaned)
    assert not any(names.default_ignorable(ch) for ch in cleaned)
    decomposed = unicodedata.normalize("NFD", cleaned)
    assert names.capped_marks(decomposed) == decomposed
    assert cleaned == cleaned.strip() and "  " not in cleaned
    assert unicodedata.normalize("NFKC", cleaned) == cleaned


# Default_Ignorable_Code_Point, the whole property as DerivedCoreProperties.txt lists it (Unicode 14.0 to
# 17.0: unchanged), written out here to check names.default_ignorable's derivation on every code point.
DEFAULT_IGNORABLE = [(0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
                     (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F),
                     (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
                     (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]
THE_ISSUES_FOUR = ["\u17b5", "\u180b", "\ufff0", "\U000e0080"]  # outside Cc/Cf/Cs/Co, drawn as nothing


def test_default_ignorable_is_unicodes_property_on_every_code_point():
    expected = {point for first, last in DEFAULT_IGNORABLE for point in range(first, last + 1)}
    found = {point for point in range(0x110000) if names.default_ignorable(chr(point))}
    assert found == expected


@pytest.mark.parametrize("ignorable", THE_ISSUES_FOUR)
def test_the_issues_invisible_characters_outside_the_hidden_categories_are_dropped(ignorable):
    """Issue 40, 11: "Mara" and one of these after it were two names, pixel-identical on the roster."""
    assert unicodedata.category(ignorable) not in names.HIDDEN_CATEGORIES  # why they got through before
    assert names.clean(f"Mara{ignorable}") == MARA == names.clean(f"{ignorable}Ma{ignorable}ra")
    assert read_the_same(f"Mara{ignorable}", MARA)


@pytest.mark.parametrize("ignorable", [chr(first) for first, _ in DEFAULT_IGNORABLE]
                         + [chr(last) for _, last in DEFAULT_IGNORABLE])
def test_every_range_of_the_property_is_dropped_from_a_name(ignorable):
    assert names.clean(f"Bo{ignorable}b") == "Bob"


def test_a_stack_of_combining_marks_keeps_two_per_character():
    """Issue 40, 11: 36 combining marks on one letter overprinted the roster's rows above."""
    stacked = names.clean("Z" + "\u0301" * 36 + "oe\u0308\u0323\u0330\u0331")
    assert stacked == unicodedata.normalize("NFKC", "Z\u0301\u0301oe\u0323\u0330")  # in canonical order
    assert names.clean("\u1e92\u0301\u0301\u0301") == "\u1e92\u0301"  # Ẓ counts as Z and its mark
    assert names.clean("Nguyễn Thị Ánh") == "Nguyễn Thị Ánh"  # Vietnamese: two marks at most, composed
    assert names.clean("กิ่ง") == "กิ่ง" and names.clean("क़्") == "क़्"  # Thai and Devanagari: two marks
    assert names.clean("\u0301" * 5 + "a") == "\u0301\u0301a"  # marks with no character before them too


def test_a_suggestion_is_the_first_free_number_and_fits_the_limit():
    taken = names.keys("Mara") | names.keys("Mara 2") | names.keys("mara 3")
    assert names.suggestion("Mara", taken, NICKNAME_CHARS) == "Mara 4"
    assert names.suggestion("Mara 2", names.keys("Mara 2"), NICKNAME_CHARS) == "Mara 3"
    long = "x" * NICKNAME_CHARS
    suggested = names.suggestion(long, names.keys(long), NICKNAME_CHARS)
    assert suggested == "x" * (NICKNAME_CHARS - 2) + " 2" and len(suggested) == NICKNAME_CHARS


# --- CSV cells (item 2) --------------------------------------------------------------------------------


DANGEROUS = [' =HYPERLINK("http://example.test","hi")', "\t@SUM(1)", "=1+1", "+49 123", "-2+3", "@cmd",
             "\t", "\rhello", "\n=1", "  \t =2", "\x00=3", "\u200b=4", "\u202e=5", "\ufeff+6",
             "＝HYPERLINK()", "＋1", "－1", "＠SUM(1)", " ＝1", "\u3000=1", "\u00a0@x", "﹦1", "﹢1", "⁼1",
             "\x0b-1", "\x1f=1"]
HARMLESS = ["Mara", " plain ", "0.5", "3 × 5", "a=b", "x-1", "", "'quoted", "Zoë", "mail@example.test", "1+1",
            "(=)", "王伟"]


@pytest.mark.parametrize("cell", DANGEROUS)
def test_a_dangerous_cell_is_text_however_a_spreadsheet_trims_it(cell):
    assert as_a_spreadsheet_reads(cell).startswith(FORMULA_CHARS) or cell.startswith(("\t", "\r"))  # the case
    guarded = csv_safe(cell)
    assert guarded == "'" + cell  # the cell itself is kept, behind one quote
    assert not as_a_spreadsheet_reads(guarded).startswith(FORMULA_CHARS)
    assert not guarded.startswith(("\t", "\r"))


@pytest.mark.parametrize("cell", HARMLESS)
def test_harmless_text_is_unchanged(cell):
    assert csv_safe(cell) == cell


@given(st.text(max_size=20))
def test_no_cell_reaches_a_spreadsheet_as_a_formula(text):
    guarded = csv_safe(text)
    number = PLAIN_NUMBER.fullmatch(guarded)  # '-0' or '+1.5': a spreadsheet reads a number (issue 40, 13)
    assert number or not as_a_spreadsheet_reads(guarded).startswith(FORMULA_CHARS)
    assert guarded in (text, "'" + text)


# --- One limit per field, the page's and the store's (item 3) -------------------------------------------


# Every box whose text goes to the store: (file, widget key) -> the store's field.
STORED_BOXES = {
    ("app/room/student_answer.py", "live_value"): "answer",
    ("app/room/student_answer.py", "live_nickname"): "nickname",
    ("app/views/classroom.py", "live_join_nickname"): "nickname",
    ("app/views/classroom.py", "live_my_nickname"): "nickname",
}
TEXT_BOXES = ("text_input", "text_area", "chat_input")


def text_boxes(path: Path) -> dict[str, ast.expr | None]:
    """Each text box of a file that names a key: its key -> its max_chars expression (None: none)."""
    boxes = {}
    for node in ast.walk(ast.parse(path.read_text())):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if call and node.func.attr in TEXT_BOXES:
            words = {word.arg: word.value for word in node.keywords}
            if isinstance(words.get("key"), ast.Constant):
                boxes[words["key"].value] = words.get("max_chars")
    return boxes


def module_of(path: str):
    return importlib.import_module(path.removesuffix(".py").replace("/", "."))


@pytest.mark.parametrize(("path", "key"), list(STORED_BOXES))
def test_a_box_for_a_stored_field_stops_where_the_store_does(path, key):
    """max_chars is the store's constant (a name, not a number written twice) and equals its limit."""
    limit = text_boxes(ROOT / path)[key]
    assert limit is not None, f"{path}: {key} has no max_chars"
    assert not isinstance(limit, ast.Constant), f"{path}: {key} has max_chars={ast.unparse(limit)}"
    value = eval(compile(ast.Expression(limit), path, "eval"), vars(module_of(path)))
    assert value == MAX_TEXT_CHARS[STORED_BOXES[path, key]]


def test_every_nickname_and_answer_box_of_the_app_is_known_here():
    """A new box for a stored field is held to its limit too: it must be added to STORED_BOXES."""
    found = {(str(path.relative_to(ROOT)), key) for path in (ROOT / "app").rglob("*.py")
             for key in text_boxes(path) if "nickname" in key or key == "live_value"}
    assert found == set(STORED_BOXES)


def test_no_box_in_the_rooms_pages_writes_its_limit_as_a_number():
    literal = [f"{path.name}: {key}" for path in (ROOT / "app" / "room").glob("*.py")
               for key, limit in text_boxes(path).items() if isinstance(limit, ast.Constant)]
    assert not literal


@pytest.mark.parametrize(("typed", "anonymous"), [
    ("student 1", True), ("Student  12", True), ("élève 3", True), ("学生 4", True), ("student", False),
    ("student 1 2", False), ("Mara 1", False), ("students 1", False)])
def test_a_name_reads_as_the_rosters_label_of_a_student_without_one(typed, anonymous):
    assert names.reads_as_anonymous(names.clean(typed)) is anonymous


def test_the_roster_labels_a_student_without_a_name_as_names_does():
    """The label names.py refuses is the one the roster draws (app/views/classroom.py)."""
    source = (ROOT / "app" / "views" / "classroom.py").read_text()
    assert f'i18n.t("{names.ANONYMOUS}")' in source or "names.ANONYMOUS" in source
    assert names.suggestion("student 1", frozenset(), NICKNAME_CHARS) == "student 1 2"


def test_the_pages_words_for_a_refusal_are_the_stores():
    assert refusals.NAME_TAKEN == NAME_TAKEN and refusals.TOO_LONG == TOO_LONG
