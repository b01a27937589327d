"""Issue 40, 9 ("a step really is one place"): a step added in front, as docs/architecture.md says a step
is added (one entry in course/steps.py's registry), here "positional encoding" between the embeddings
and the projections. Nothing after it changes but its number: every later step's forecast (seeded by
the step's name, course.steps.seed_of), every old numeric link (?step=N opens the screen it opened,
course.steps.NUMBERED_LINKS), the exported script's code and numbers; and the exported script and
its CSV archive show the new step in its place. No position or count is written here as a literal:
each is read from the registry.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import zipfile

from course import steps as course_steps
from course.examples import all_examples
from course.export import setup_to_csv_zip, setup_to_script
from course.quiz import forecast
from course.steps import Screen, Step
from tests.apptest_util import open_address, texts
from tests.course.test_registry import add_step, presenter_walk

NEW = "positional_encoding"
POSITIONAL_ENCODING = Step("Positional encoding: where each token sits", r"X' = X + P",
                           "Add to each token's row a vector of its own position.",
                           "Attention alone cannot tell 'cat chases mouse' from 'mouse chases cat'.",
                           screens=(Screen("positions", "Where each token sits"),))
EXAMPLE = "the_cat_sat_two_heads"
CHAPTER_EXAMPLES = sorted(all_examples())


def add_in_front(monkeypatch) -> None:
    """The new step between the embeddings and the projections."""
    add_step(monkeypatch, NEW, POSITIONAL_ENCODING, before="projections")
    assert course_steps.number_of(NEW) == course_steps.number_of("embeddings") + 1


def forecasts() -> dict[tuple, tuple | None]:
    """Every step's forecast (the quiz's) and every presenter screen's, as the presenter draws it
    (seeded by the screen's name), for each chapter example and a few seeds: what it asks and its
    answer, by (example, step or screen, seed). The new step's are left out: it has none to keep."""
    examples = all_examples()
    found = {}
    for key in CHAPTER_EXAMPLES:
        setup = examples[key]
        result = setup.run()
        for name in course_steps.STEPS:
            for seed in range(3):
                found[key, "step", name, seed] = forecast(setup, result, name, seed)
        for screen in course_steps.SCREENS:
            seed = course_steps.seed_of(screen.key)
            found[key, "screen", screen.key] = forecast(setup, result, screen.step, seed, idea=screen.idea)
    return {where: None if question is None else (question.kind, question.prompt, question.answer,
                                                   question.choices, question.cell)
            for where, question in found.items() if NEW not in where and "positions" not in where}


def test_every_later_step_s_forecast_is_the_one_it_was(monkeypatch):
    """The quiz drew a step's forecast with 100 + its position and the presenter a screen's with its
    position: a step in front changed every later question (this fails on 3e03e5c). By name now."""
    before = forecasts()
    assert sum(asked is not None for asked in before.values()) > len(before) // 2  # most ask something
    add_in_front(monkeypatch)
    assert forecasts() == before


def test_the_presenter_asks_every_later_screen_what_it_asked(monkeypatch):
    """The presenter itself, Next through every screen of one example, before and after."""
    walked = presenter_walk(open_address({"example": EXAMPLE}, "present"))
    add_in_front(monkeypatch)
    after = presenter_walk(open_address({"example": EXAMPLE}, "present"))
    at = course_steps.screen_position("positions")
    assert after == [*walked[:at], ("Where each token sits", None), *walked[at:]]


def old_links() -> dict[str, str | None]:
    """What every numbered link (?step=1, ?step=2, ... as links wrote them, and a few past the last)
    opens: a screen's name, or None past the last screen."""
    opened = {}
    for number in range(1, len(course_steps.NUMBERED_LINKS) + 4):
        position = course_steps.screen_position(str(number))
        opened[str(number)] = (course_steps.screen_name(position) if position < len(course_steps.SCREENS)
                               else None)
    return opened


def test_every_old_numeric_link_opens_the_screen_it_opened(monkeypatch):
    before = old_links()
    assert [before[str(n)] for n in range(1, len(course_steps.NUMBERED_LINKS) + 1)] == list(
        course_steps.NUMBERED_LINKS)  # the links as they were numbered: screen by screen
    assert before[str(len(course_steps.NUMBERED_LINKS) + 1)] is None
    add_in_front(monkeypatch)
    assert old_links() == before
    for number, name in before.items():  # the presenter opens it, and writes its name in the address
        if name is None:
            continue
        at = open_address({"example": EXAMPLE, "step": number}, "present")
        assert not at.exception and at.query_params["step"] == name, number
        position = course_steps.screen_position(name)
        heading = (f"### {position + 1} / {len(course_steps.SCREENS)} · "
                   f"{course_steps.SCREENS[position].title}")
        assert heading in texts(at.markdown), number


def step_headings(script: str) -> list[tuple[int, str, str]]:
    """The script's step sections, in its order: (number, title, formula), in any language ("Step 2 · ",
    "Schritt 2 · ")."""
    found = re.findall(r"^# \D+ (\d+) · (.+)\n#   \$(.+)\$$", script, flags=re.MULTILINE)
    return [(int(number), title, formula) for number, title, formula in found]


def registry_headings() -> list[tuple[int, str, str]]:
    return [(course_steps.number_of(name), step.title, step.formula)
            for name, step in course_steps.STEPS.items()]


def printed(script: str, tmp_path) -> str:
    path = tmp_path / "exported.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_exported_script_shows_the_new_step_in_its_place_and_computes_the_same(monkeypatch, tmp_path):
    """The script was a fixed template: a new step never showed. Its sections are the registry's now,
    each with its number, title and formula; a step with no code of its own changes no code."""
    setup = all_examples()[EXAMPLE].setup()
    before = setup_to_script(setup)
    assert step_headings(before) == registry_headings()
    add_in_front(monkeypatch)
    after = setup_to_script(setup)
    assert step_headings(after) == registry_headings()
    number = course_steps.number_of(NEW)
    assert (number, POSITIONAL_ENCODING.title, POSITIONAL_ENCODING.formula) in step_headings(after)
    assert POSITIONAL_ENCODING.what in after
    later = {title: n for n, title, _ in step_headings(before) if n >= number}
    assert later and all((n + 1, title) in [(m, t) for m, t, _ in step_headings(after)]
                         for title, n in later.items())  # every later step one further on
    assert ast.dump(ast.parse(after)) == ast.dump(ast.parse(before))  # the same code: comments only
    assert printed(after, tmp_path) == printed(before, tmp_path)
    german = setup_to_script(setup, language="de")
    assert [n for n, _, _ in step_headings(german)] == [n for n, _, _ in registry_headings()]


def test_the_csv_archive_names_its_files_by_the_steps_numbers_as_they_are_now(monkeypatch):
    setup = all_examples()[EXAMPLE].setup()

    def files() -> dict[str, bytes]:
        archive = zipfile.ZipFile(io.BytesIO(setup_to_csv_zip(setup)))
        return {name: archive.read(name) for name in archive.namelist()}

    before = files()
    weights = f"{course_steps.number_of('softmax')}_weights_head1.csv"
    assert weights in before
    add_in_front(monkeypatch)
    after = files()
    number = course_steps.number_of(NEW)

    def moved(name: str) -> str:
        step, rest = name.split("_", 1)
        return f"{int(step) + (int(step) >= number)}_{rest}"

    assert after == {moved(name): content for name, content in before.items()}
    assert f"{course_steps.number_of('softmax')}_weights_head1.csv" in after and weights not in after

