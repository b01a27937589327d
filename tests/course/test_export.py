"""Export as code: the script runs with NumPy alone and prints what mha_core computes, to 1e-9."""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course.examples import all_examples
from course.export import example_script, main, setup_to_script
from mha_core import Setup
from mha_core.codec import setup_to_json
from tests.strategies import random_setups

pytestmark = pytest.mark.slow  # seconds of AppTest runs or sweeps: make test-fast leaves it out

EXAMPLES = all_examples()


def run_script(text: str, tmp_path) -> dict[str, np.ndarray]:
    """Run an exported script in a fresh, isolated interpreter (-I: no PYTHONPATH, so no mha_core)."""
    path = tmp_path / "exported.py"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = dict(line.split(" = ", 1) for line in done.stdout.splitlines())
    return {name: np.array(ast.literal_eval(value)) for name, value in printed.items()}


def assert_same(printed: dict, setup: Setup) -> None:
    result = setup.run()
    np.testing.assert_allclose(printed["weights"], result.weights, rtol=0, atol=1e-9)
    np.testing.assert_allclose(printed["output"], result.output, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_examples_script_prints_the_cores_numbers(key, tmp_path):
    text = example_script(key)
    assert "import mha_core" not in text and len(text) < 20_000  # short, and NumPy alone
    assert_same(run_script(text, tmp_path), EXAMPLES[key])


def setups():
    return random_setups()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setups())
def test_a_random_setups_script_prints_the_cores_numbers(tmp_path, setup):
    assert_same(run_script(setup_to_script(setup), tmp_path), setup)


def test_the_command_line_exports_a_saved_file_and_an_example(tmp_path, capsys):
    saved = tmp_path / "attention-setup.json"
    saved.write_text(setup_to_json(EXAMPLES["cat_chases_mouse"]))
    assert main([str(saved)]) == 0
    assert_same(run_script(capsys.readouterr().out, tmp_path), EXAMPLES["cat_chases_mouse"])
    assert main(["--example", "ex_f_scaled"]) == 0
    assert "divided by √64" in capsys.readouterr().out
    assert main(["--preset", "ex_f_scaled"]) == 0  # the option's name before the rename still works
    assert "divided by √64" in capsys.readouterr().out


def test_the_command_line_refuses_a_bad_file_with_a_message(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mha-visualizer/setup-v2", "tokens": ["a"], "x": [["1.5"]]}')
    assert main([str(bad)]) == 2
    assert "x holds a string '1.5'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--example", "no_such_example"])


def test_a_setup_too_big_for_literals_is_refused():
    big = EXAMPLES["ex_i_parameter_count"].setup()  # no recipe: a million literals
    with pytest.raises(ValueError, match="too many to write out"):
        setup_to_script(big)


@settings(max_examples=10, deadline=None)
@given(setups())
def test_the_csv_zip_holds_every_step_with_its_labels_and_exact_numbers(setup):
    import csv
    import io
    import zipfile

    from course.export import setup_to_csv_zip

    archive = zipfile.ZipFile(io.BytesIO(setup_to_csv_zip(setup)))
    result, h = setup.run(), setup.sizes.n_heads
    expected = {"1_x": setup.x, "7_concat": result.concat, "7_w_o": setup.w_o, "8_output": result.output,
                f"4_weights_head{h}": result.weights[h - 1], f"3_scores_head{h}": result.scores[h - 1],
                f"2_w_q_head{h}": setup.w_q[h - 1], f"5_head_output_head{h}": result.head_outputs[h - 1]}
    assert len(archive.namelist()) == 4 + (setup.x_kv is not None) + 10 * h
    for name, values in expected.items():
        rows = list(csv.reader(io.StringIO(archive.read(f"{name}.csv").decode())))
        numbers = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
        np.testing.assert_array_equal(numbers, values)
    weights = list(csv.reader(io.StringIO(archive.read("4_weights_head1.csv").decode())))
    assert weights[0][1:] == [f"{i + 1} {t}" for i, t in enumerate(setup.key_tokens)]
    assert [row[0] for row in weights[1:]] == [f"{i + 1} {t}" for i, t in enumerate(setup.tokens)]


# --- Issue 15, finding 1: nothing from outside runs in an exported script ---------------------------

POC_NAME = 'x""";import os;os.system("touch PWNED");""".json'  # the file name from the issue
PLAIN = EXAMPLES["cat_chases_mouse"].setup()


def run_in_fresh_dir(text: str) -> tuple[str, list[str]]:
    """Run a script in a new empty directory (isolated interpreter): its stdout and the files there after."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "exported.py")
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        done = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True, timeout=120,
                              cwd=folder)
        assert done.returncode == 0, done.stderr
        return done.stdout, sorted(os.listdir(folder))


@functools.cache
def plain_output() -> str:
    """What the script of PLAIN prints with a plain title (the numbers every variant must print)."""
    return run_in_fresh_dir(setup_to_script(PLAIN, title="plain"))[0]


def test_the_file_name_from_the_issue_is_only_a_comment(tmp_path, capsys):
    """The script printed for this file used to close its docstring and run `touch PWNED`."""
    saved = tmp_path / POC_NAME
    saved.write_text(setup_to_json(PLAIN))
    assert main([str(saved)]) == 0
    text = capsys.readouterr().out
    ast.parse(text)
    stdout, left = run_in_fresh_dir(text)
    assert left == ["exported.py"]  # no PWNED
    assert stdout == plain_output()
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any("os.system" in line for line in code)


# Text a person, a file name or a link can carry: anything, lone surrogates included, and whatever ends a
# string, a comment or a line somewhere (str.splitlines ends a line at U+2028, \x1c or \x85 too).
NASTY = ['"""', "'''", "\\", "\\'", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029",
         "\x00", "\ud800", "\udfff", "\ufeff", "coding: unicode_escape", "\\u000a", "#", "{}", "{title}",
         "%s", "x" * 50_000]
any_character = st.characters(exclude_categories=())  # surrogates and controls too
outside_text = st.text(any_character, max_size=30) | st.lists(
    st.sampled_from(NASTY) | st.text(any_character, max_size=5), max_size=6).map("".join)


@settings(max_examples=25, deadline=None)
@given(title=outside_text, tokens=st.lists(outside_text, min_size=3, max_size=3), origin=outside_text)
def test_any_outside_text_is_inert_in_the_script(title, tokens, origin):
    setup = dataclasses.replace(PLAIN, tokens=tuple(tokens), origin=origin)
    text = setup_to_script(setup, title=title)
    ast.parse(text)
    assert len(text.splitlines()) == len(setup_to_script(PLAIN, title="plain").splitlines())
    stdout, left = run_in_fresh_dir(text)
    assert left == ["exported.py"]
    assert stdout == plain_output()


@pytest.mark.parametrize("text", NASTY, ids=lambda text: ascii(text)[:20])
def test_each_text_that_ends_a_string_or_a_line_stays_in_its_comment(text):
    example = EXAMPLES["ex_h_cross_attention"]  # cross-attention: key tokens too; a recipe
    setup = dataclasses.replace(example.setup(), tokens=(text, "a", "b"),
                                kv_tokens=("c", text, "d", "e", "f"))
    script = setup_to_script(setup, title=text, recipe=example.recipe)
    plain = setup_to_script(example, title="plain", recipe=example.recipe)
    assert script.isascii() or "√" in script
    assert len(script.splitlines()) == len(plain.splitlines())
    assert ast.dump(ast.parse(script)) == ast.dump(ast.parse(plain))  # the same code: the text is in comments


def test_a_recipe_from_outside_is_refused_and_an_examples_own_is_written():
    with pytest.raises(ValueError, match="only an example's own recipe"):
        setup_to_script(PLAIN, recipe="import os; os.system('touch PWNED')\n")
    example = EXAMPLES["ex_h_cross_attention"]
    assert example.recipe in setup_to_script(example, recipe=example.recipe)


def test_outside_text_never_reaches_the_first_two_lines():
    """Python reads a file's encoding from a comment on line 1 or 2 ("# coding: unicode_escape" would
    turn an escaped "\\n" in a later comment into a real line break)."""
    lines = setup_to_script(PLAIN, title="coding: unicode_escape").splitlines()
    assert "coding" not in "".join(lines[:2])
    assert any("unicode_escape" in line and line.startswith("# ") for line in lines[2:])
