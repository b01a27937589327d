"""Issues 17 and 28: the course's steps are one registry (course/steps.py), and it is the only list.

Each layout (the workbench, the presenter, the downloadable page, the exported script, the quiz's
step references) draws what the registry lists, in its order, numbered by their place in it; what a
step derives is computed once (mha_core/derive.py) and checked here against a naive loop; each step
is drawn by one file, app/steps/<its name>.py (its charts, which the workbench, the presenter and the
downloadable page all draw, its workbench section, its presenter screens). A test adds a step to the
registry and finds it on every layout; another gives it a drawing of its own, in its one file.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import json
import re
import sys
import types
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import streamlit as st

from app import page_export
from app.charts import figure_style, figures
from app.steps import drawing as step_drawing
from app.steps.section import grid
from app.steps.view import Charts, StepView
from app.views import present
from course import steps as course_steps
from course.examples import all_examples
from course.steps import SCREENS, STEPS, Screen, Step
from mha_core.derive import compare_heads, cost_of
from tests.apptest_util import (
    chart_specs,
    forecast_prompt,
    fresh_app,
    goto,
    pick_example,
    presenter_screens,
    texts,
)

CHAPTER_EXAMPLES = sorted(all_examples())
ROOT = Path(__file__).resolve().parents[2]


def workbench_headings(at) -> list[tuple[int, str]]:
    """The step headings on the workbench, in the page's order: (number, title)."""
    found = (re.match(r"### (\d+)\. (.+?)\n", text) for text in texts(at.markdown))
    return [(int(m[1]), m[2]) for m in found if m]


def presenter_walk(at) -> list[tuple[str, str | None]]:
    """Next through every screen (revealing each forecast): each screen's title and the forecast it
    asks (None if none), in order."""
    seen = []
    for _ in presenter_screens(at):
        title = next(text for text in texts(at.markdown) if text.startswith("### "))
        seen.append((title.split(" · ", 1)[1], forecast_prompt(at)))
    assert at.button(key="present_next").disabled  # the walk ended on the last screen
    return seen


def presenter_titles(at) -> list[str]:
    """Next through every screen (revealing each forecast): the screen titles seen, in order."""
    return [title for title, _ in presenter_walk(at)]


def page_sections(page: str) -> list[tuple[int, str]]:
    """The downloadable page's step sections, in its order: (number, title)."""
    found = re.findall(r'<h2 id="step-(\d+)-title">\d+\. ([^<]+)</h2>', page)
    return [(int(n), html.unescape(title)) for n, title in found]


def page_skip_links(page: str) -> list[tuple[int, str]]:
    """The downloadable page's links to its steps, in its order: (the number it links to, its title);
    each must name the number it links to."""
    found = re.findall(r'<a href="#step-([^"]+)">([^<.]+)\. ([^<]+)</a>', page)
    assert all(target == number for target, number, _ in found), found
    return [(int(number), html.unescape(title)) for _, number, title in found]


def registry_order() -> list[tuple[int, str]]:
    return [(number, step.title) for number, step in enumerate(course_steps.STEPS.values(), start=1)]


def test_every_layout_draws_the_registry_s_steps_in_its_order():
    at = fresh_app()
    assert not at.exception
    assert workbench_headings(at) == registry_order()
    goto(at, "present")
    assert presenter_titles(at) == [screen.title for screen in SCREENS]
    setup = all_examples()["the_cat_sat_two_heads"].setup()
    page = page_export.page_html(setup, title="t")
    assert page_sections(page) == registry_order()
    assert page_skip_links(page) == registry_order()  # each to its section (they named the step once)


def test_the_presenter_s_screens_are_the_registry_s_and_each_is_drawn_by_its_step_s_file():
    assert present.SCREENS is SCREENS
    order = list(STEPS)
    assert [order.index(s.step) for s in SCREENS] == sorted(order.index(s.step) for s in SCREENS)
    for name, step in STEPS.items():
        assert step.name == name and all(screen.step == name for screen in step.screens)
        drawing = step_drawing.drawing_of(name)
        assert drawing.name == name and drawing.charts is not None and drawing.section is not None, name
        assert set(drawing.screens) == {screen.key for screen in step.screens}, name  # each drawn there
    assert [n for n, step in STEPS.items() if not step.screens] == ["output"]  # on the W_O screen


def test_every_file_in_app_steps_draws_a_step_of_the_registry_or_is_the_kit():
    """A step's file is found by the step's name: a file named for no step would be drawn nowhere."""
    files = {path.stem for path in (ROOT / "app" / "steps").glob("*.py")} - {"__init__"}
    assert files - step_drawing.KIT == set(STEPS)
    for bad in ("drawing", "view", "../state", ""):
        with pytest.raises(ValueError):
            step_drawing.drawing_of(bad)


@pytest.mark.parametrize("key", CHAPTER_EXAMPLES)
def test_what_heads_compared_derives_matches_a_naive_loop(key):
    result = all_examples()[key].run()
    h, n_q, n_k = result.weights.shape
    for query in range(n_q):
        compared = compare_heads(result.weights, query, "l2")
        if h == 1 or n_k == 1:
            assert not compared.comparable
            continue
        rows = result.weights[:, query, :].astype(float)  # [h, n_k]
        naive = {(a, b): sum((rows[a, k] - rows[b, k]) ** 2 for k in range(n_k)) ** 0.5
                 for a, b in combinations(range(h), 2)}
        (a, b), value = max(naive.items(), key=lambda item: item[1])
        assert compared.pair[2] == pytest.approx(value, abs=1e-12)
        assert naive[compared.pair[:2]] == pytest.approx(value, abs=1e-12)  # a tie may name either pair
        for head in range(h):
            p = rows[head][rows[head] > 0]
            entropy = -sum(x * np.log2(x) for x in p) / np.log2(n_k)
            assert compared.entropy[head] == pytest.approx(entropy, abs=1e-9)
            assert (head in compared.flat) == (entropy >= 0.95)


@pytest.mark.parametrize("key", CHAPTER_EXAMPLES)
def test_what_concatenation_and_raw_scores_derive_match_naive_loops(key):
    setup = all_examples()[key].setup()
    result = setup.run()
    derived = STEPS["concatenation"].derive(setup, result, {})
    h, n_q, d_v = result.head_outputs.shape
    d_model = setup.w_o.shape[1]
    for head in range(h):
        for i in range(n_q):
            for j in range(d_model):
                naive = sum(result.head_outputs[head, i, c] * setup.w_o[head * d_v + c, j]
                            for c in range(d_v))
                assert derived.per_head[head, i, j] == pytest.approx(naive, rel=1e-9, abs=1e-9)
    assert derived.gap <= 1e-9 * max(1.0, float(np.abs(result.output).max()))
    cost = STEPS["raw_scores"].derive(setup, result, {})
    sz = setup.sizes
    assert cost == cost_of(sz)
    assert cost.total == sum(setup.arrays()[name].size for name in ("w_q", "w_k", "w_v", "w_o"))  # the arrays
    assert cost.four_d_squared == (cost.total == 4 * sz.d_model ** 2 and sz.n_heads * sz.d_k == sz.d_model)


def test_example_i_costs_four_d_model_squared():
    """Chapter 003, example I: d_model = 512, h = 8: 4 x 512^2 = 1,048,576 parameters."""
    setup = all_examples()["ex_i_parameter_count"].setup()
    cost = STEPS["raw_scores"].derive(setup, setup.run(), {})
    assert cost.total == 1_048_576 and cost.four_d_squared


def test_each_derived_value_is_frozen():
    setup = all_examples()["the_cat_sat_two_heads"].setup()
    result = setup.run()
    for number, step in STEPS.items():
        if step.derive is None:
            continue
        derived = step.derive(setup, result, {"focus_query": 1})
        assert dataclasses.is_dataclass(derived) and derived.__dataclass_params__.frozen, number


ADDED = Step("Positions: where each token sits", r"X' = X + P", "Add each position's own vector.",
             "Attention alone cannot tell 'cat chases mouse' from 'mouse chases cat'.",
             screens=(Screen("positions", "Where each token sits"),))
ADDED_TITLE = "|X| by position"


def add_step(monkeypatch, name: str, step: Step, *, before: str) -> None:
    """``step`` in the course's registry before step ``before``: one entry, as an edit of course/steps.py
    would add it. A restart would build the registry anew; here every module that holds the registry
    (its STEPS or SCREENS, under whatever name) is given the new one."""
    items = list(course_steps.STEPS.items())
    at = [name for name, _ in items].index(before)
    steps, screens = course_steps.registry(dict(items[:at] + [(name, step)] + items[at:]))
    old = {id(course_steps.STEPS): steps, id(course_steps.SCREENS): screens}
    for module in list(sys.modules.values()):
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            if id(value) in old and attribute.isupper():
                monkeypatch.setattr(module, attribute, old[id(value)])


def added_charts(view):
    """The added step's one chart, built as every step's are (a pure function of the view)."""
    x = np.abs(view.result.output)  # [n_q, d_model]
    return Charts({"chart_positions": lambda: view.chart(figures.matrix_heatmap, x, view.q_tokens,
                                                         figure_style.dims("d", x.shape[1]),
                                                         title=ADDED_TITLE)})


def quiz_step_reference(at) -> str:
    return next(text for text in texts(at.caption) if "about step" in text)


def test_a_step_added_to_the_registry_is_on_every_layout_and_renumbers_the_ones_after_it(monkeypatch):
    """One entry in course/steps.py, before the projections: the workbench, the presenter, the
    downloadable page, the exported script and the quiz's step references show it in its place and
    number every later step one higher. With no file of its own it is drawn plainly."""
    at = fresh_app()
    goto(at, "quiz")
    before = quiz_step_reference(at)
    steps, screens = len(STEPS), [screen.title for screen in SCREENS]
    add_step(monkeypatch, "positions", ADDED, before="projections")

    at = fresh_app()
    assert not at.exception
    headings = workbench_headings(at)
    added = course_steps.number_of("positions")
    assert course_steps.number_of("embeddings") + 1 == added == course_steps.number_of("projections") - 1
    assert headings[added - 1] == (added, ADDED.title)
    assert headings == registry_order() and len(headings) == steps + 1
    pick_example(at, "the_cat_sat_two_heads")
    goto(at, "present")
    titles = presenter_titles(at)
    at_screen = course_steps.screen_position("positions")
    assert titles == [*screens[:at_screen], "Where each token sits", *screens[at_screen:]]
    goto(at, "quiz")
    after = quiz_step_reference(at)
    number, title = re.search(r"about step (\d+): (.+)$", before).groups()
    assert after == before.replace(f"step {number}:", f"step {int(number) + 1}:")  # the same question
    assert title != ADDED.title

    setup = all_examples()["the_cat_sat_two_heads"].setup()
    assert page_sections(page_export.page_html(setup, title="t")) == registry_order()
    from course.export import setup_to_script
    named = re.findall(r"^# Step (\d+) · (.+)$", setup_to_script(setup), flags=re.MULTILINE)
    assert [(int(n), title) for n, title in named] == registry_order()  # the new one too, in its place


def test_a_step_s_own_file_draws_its_charts_section_and_screen_everywhere(monkeypatch):
    """app/steps/positions.py (here a module made by the test) is the added step's one home: its
    charts on the workbench, the presenter and the downloadable page, its section, its screen."""
    def section(page):
        st.markdown("### drawn by the added step's section")
        for key, fig in added_charts(page.view).items():
            grid(fig, key=key)

    def screen(projector):
        st.caption("drawn by the added screen")

    module = types.ModuleType("app.steps.positions")
    module.DRAWING = step_drawing.StepDrawing("positions", added_charts, section,
                                              {"positions": step_drawing.ScreenDrawing(screen)})
    monkeypatch.setitem(sys.modules, "app.steps.positions", module)
    add_step(monkeypatch, "positions", ADDED, before="projections")

    at = fresh_app()
    assert not at.exception
    assert "### drawn by the added step's section" in texts(at.markdown)
    assert ADDED_TITLE in json.dumps(chart_specs(at)["chart_positions"]["layout"])
    pick_example(at, "the_cat_sat_two_heads")
    goto(at, "present")
    at_screen = course_steps.screen_position("positions")
    assert presenter_titles(at)[at_screen] == "Where each token sits"
    for _ in SCREENS:  # Back from the last screen to the added one (a bounded walk)
        if next(text for text in texts(at.markdown) if text.startswith("### ")).startswith(
                f"### {at_screen + 1} / "):
            break
        at.button(key="present_back").click().run()
    assert "drawn by the added screen" in texts(at.caption)
    setup = all_examples()["the_cat_sat_two_heads"].setup()
    written = page_export.step_figures(setup, setup.run(), list(setup.tokens), list(setup.key_tokens))
    titles = [fig.to_dict()["layout"]["annotations"][0]["text"] for fig in written["positions"]]
    assert titles == [ADDED_TITLE]


# Step 6's grid of heads by keys for one query: the presenter's drawing of the rows the workbench shows
# as grouped bars (chart_bars); the downloaded page writes both.
NOT_ON_THE_WORKBENCH = {"chart_heads_row"}


def spec_data(fig) -> str:
    return json.dumps(fig["data"], sort_keys=True)


@pytest.mark.parametrize("key", ["the_cat_sat_two_heads", "decoder_gqa", "ex_h_cross_attention"])
def test_the_workbench_and_the_downloaded_page_draw_the_same_charts_for_every_step(key):
    """One function per step builds its charts: each chart the workbench draws (the shown head, the
    focus query) is that function's, and the downloaded page writes every chart of every step (each
    head's, where the workbench shows one head at a time), in the registry's order."""
    at = fresh_app()
    pick_example(at, key)
    assert not at.exception
    drawn = chart_specs(at)
    example = all_examples()[key]
    result = example.run()
    query = int(at.session_state["selections"].get("focus_query", 0))  # step 6 compares the heads for it
    view = StepView(example, result, list(example.tokens), list(example.key_tokens), query=query)
    exported = page_export.step_figures(example, result, view.q_tokens, view.k_tokens, query=query)
    assert list(exported) == list(STEPS)
    on_the_workbench = 0
    for name, written in exported.items():
        drawing = step_drawing.drawing_of(name)
        charts = drawing.charts(view)
        assert set(charts) - set(drawn) <= NOT_ON_THE_WORKBENCH, name  # the workbench draws the rest
        for chart_key in set(charts) & set(drawn):
            assert spec_data(drawn[chart_key]) == spec_data(charts[chart_key].to_dict()), chart_key
            on_the_workbench += 1
        heads = range(result.n_heads) if drawing.one_head_at_a_time else (0,)
        every = [fig for head in heads
                 for fig in drawing.charts(dataclasses.replace(view, head=head)).values()]
        assert [spec_data(fig.to_dict()) for fig in written] == [spec_data(fig.to_dict()) for fig in every]
    assert on_the_workbench >= 10  # X, Q/K/V, S, scaled, A, outputs, bars, concat, C, output (and more)


def imported_packages(package: str) -> dict[str, set[str]]:
    """Each module of a package -> the top-level packages it imports (anywhere in the file)."""
    found = {}
    for path in sorted((ROOT / package).glob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[path.name] = names
    return found


@pytest.mark.parametrize(("package", "never"), [
    ("mha_core", {"course", "app", "classroom", "streamlit", "plotly", "pandas"}),  # the maths, no UI
    ("course", {"app", "classroom", "streamlit", "plotly", "pandas"}),  # the course: maths and text, no UI
])
def test_each_layer_imports_only_the_layers_before_it(package, never):
    wrong = {module: names & never for module, names in imported_packages(package).items() if names & never}
    assert not wrong, wrong


def test_the_live_class_imports_no_page_and_sends_what_pages_register_as_followed():
    """Issue 17: app/room/live.py took the labs' and the model page's key lists by importing them (an
    arrow back up); the pages now register their keys and live reads the registry."""
    from app.session import session_keys
    from app.views import labs, learn, model  # noqa: F401 (importing a page registers its keys, as the app does)

    room = sorted((ROOT / "app" / "room").glob("*.py"))
    assert len(room) >= 5 and any(path.name == "following.py" for path in room)  # page_inputs' home
    live_imports = set().union(*(imported_modules(path) for path in room))
    assert not {name for name in live_imports if name.startswith("app.views")}, live_imports
    followed = set(session_keys.followed())
    assert {"model_text", "pick_model_layer", "lab_gap", "lab_d_k", "learn_task",
            "learn_checkpoint"} <= followed
    assert {key.owner for key in session_keys.REGISTRY.values() if key.followed} == {
        "app.labs.score_lab", "app.labs.scaling_lab", "app.labs.size_and_cost_lab", "app.views.learn",
        "app.views.model"}  # the Labs' tabs, Learn and the Real model page
    assert not followed & {"room", "teacher_secret", "student_secret", "language"}  # never a follower's


def test_a_session_key_belongs_to_one_owner():
    from app.session import session_keys

    with pytest.raises(ValueError, match="registered twice"):
        session_keys.register(session_keys.Key("room", "another page"))


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_the_exported_script_names_each_step_as_the_registry_does_and_computes_with_the_formula():
    """Every step of the registry, in its order, numbered as the page numbers it; the steps that
    compute something are those of the script's STEP_CODE; the attention formula is the core's own
    source (mha_core/attention.py), and the script's numbers are the core's (tests/course/test_export.py)."""
    from course.export import STEP_CODE, formula_source, setup_to_script
    from mha_core import attention

    script = setup_to_script(all_examples()["the_cat_sat_two_heads"].setup())
    named = re.findall(r"^# Step (\d+) · (.+)\n#   \$(.+)\$$", script, flags=re.MULTILINE)
    assert [(int(n), title) for n, title, _ in named] == registry_order()
    assert [formula for _, _, formula in named] == [step.formula for step in STEPS.values()]  # each its own
    assert set(STEP_CODE) <= set(STEPS)  # code only for steps of the registry
    assert formula_source() in script and formula_source().count("def ") == 2
    assert attention.attention.__code__.co_filename.endswith("mha_core/attention.py")
    assert script.count("softmax_rows(") == 2 and "np.exp" not in script.replace(formula_source(), "")


# --- a screen's name in links and rooms (issue 28) ---------------------------------------------------


def test_a_link_names_its_screen_and_an_old_number_opens_the_same_screen_after_a_step_is_added(monkeypatch):
    """?step=softmax names the screen; ?step=4, as links wrote it before, opens softmax too, and still
    does when a new step's screen comes first (the number means the screen it meant then)."""
    assert [course_steps.screen_position(screen.key) for screen in SCREENS] == list(range(len(SCREENS)))
    numbered = course_steps.NUMBERED_LINKS
    assert [course_steps.screen_name(course_steps.screen_position(str(n)))
            for n in range(1, len(numbered) + 1)] == list(numbered)
    far = len(numbered) + 90  # past the last: the presenter says so and clamps
    assert course_steps.screen_position(str(far)) == len(SCREENS) + far - len(numbered) - 1 >= len(SCREENS)
    for bad in ("", "0", "softmax2", "-1", "１", "4.0", "1000"):
        assert course_steps.screen_position(bad) is None, bad
    softmax_link = str(numbered.index("softmax") + 1)  # ?step=4 as links wrote it
    first = Screen("added_first", "A screen added first", step="embeddings")
    monkeypatch.setattr(course_steps, "SCREENS", (first, *SCREENS))
    assert course_steps.screen_position(softmax_link) == course_steps.screen_position("softmax")
    assert course_steps.SCREENS[course_steps.screen_position(softmax_link)].key == "softmax"
    assert course_steps.screen_position("added_first") == course_steps.SCREENS.index(first)


@pytest.mark.parametrize("step", ["softmax", str(course_steps.NUMBERED_LINKS.index("softmax") + 1)])
def test_the_presenter_opens_on_a_named_screen_and_writes_its_name(step):
    from tests.apptest_util import open_address, shown

    at = open_address({"example": "the_cat_sat_two_heads", "step": step}, "present")
    assert not at.exception
    assert any("Scale, then softmax" in text for text in shown(at.markdown))
    assert at.query_params["step"] == "softmax"


def test_a_link_to_no_screen_says_so_and_keeps_the_first():
    from tests.apptest_util import open_address, shown

    at = open_address({"example": "the_cat_sat_two_heads", "step": "<b>nope</b>"}, "present")
    assert not at.exception
    notes = " ".join(shown(at.warning))
    assert "link parameter step" in notes and "softmax" in notes  # what it takes, on the presenter too
    assert at.query_params["step"] == "arrows"


def output_title_on_the_concatenate_screen() -> str:
    from tests.apptest_util import open_address

    at = open_address({"example": "decoder_gqa", "step": "concatenate"}, "present")
    at.button(key="present_reveal").click().run()
    assert not at.exception
    return json.dumps(chart_specs(at)["present_output"]["layout"], ensure_ascii=False).replace("<br>", " ")


def test_the_output_s_title_names_x_s_screen_by_its_place(monkeypatch):
    """The presenter's output shown alone says where X was (its screen's number): counted, so a step
    added in front moves it."""
    def x_screen() -> str:
        return f"(X: screen {course_steps.screen_position('arrows') + 1})"

    before = x_screen()
    assert before in output_title_on_the_concatenate_screen()
    first = Step("Tokens: words become ids", r"t", "Each word gets an id.", "A grid needs numbers.",
                 screens=(Screen("tokens", "Words become ids"),))
    add_step(monkeypatch, "tokens", first, before="embeddings")
    assert x_screen() != before and x_screen() in output_title_on_the_concatenate_screen()
