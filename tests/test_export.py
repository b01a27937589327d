"""Export as code: the script runs with NumPy alone and prints what mha_core computes, to 1e-9."""

from __future__ import annotations

import ast
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from mha_core import Setup, all_scenarios
from mha_core.codec import setup_to_json
from mha_core.export import main, preset_script, setup_to_script
from tests.strategies import random_setups

SCENARIOS = all_scenarios()


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


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_every_presets_script_prints_the_cores_numbers(key, tmp_path):
    text = preset_script(key)
    assert "import mha_core" not in text and len(text) < 20_000  # short, and NumPy alone
    assert_same(run_script(text, tmp_path), SCENARIOS[key])


def setups():
    return random_setups()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(setups())
def test_a_random_setups_script_prints_the_cores_numbers(tmp_path, setup):
    assert_same(run_script(setup_to_script(setup), tmp_path), setup)


def test_the_command_line_exports_a_saved_file_and_a_preset(tmp_path, capsys):
    saved = tmp_path / "attention-setup.json"
    saved.write_text(setup_to_json(SCENARIOS["cat_chases_mouse"]))
    assert main([str(saved)]) == 0
    assert_same(run_script(capsys.readouterr().out, tmp_path), SCENARIOS["cat_chases_mouse"])
    assert main(["--preset", "ex_f_scaled"]) == 0
    assert "divided by √64" in capsys.readouterr().out


def test_the_command_line_refuses_a_bad_file_with_a_message(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "mha-visualizer/setup-v2", "tokens": ["a"], "x": [["1.5"]]}')
    assert main([str(bad)]) == 2
    assert "x holds a string '1.5'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--preset", "no_such_preset"])


def test_a_setup_too_big_for_literals_is_refused():
    big = SCENARIOS["ex_i_parameter_count"].setup()  # no recipe: a million literals
    with pytest.raises(ValueError, match="too many to write out"):
        setup_to_script(big)


@settings(max_examples=10, deadline=None)
@given(setups())
def test_the_csv_zip_holds_every_step_with_its_labels_and_exact_numbers(setup):
    import csv
    import io
    import zipfile

    from mha_core.export import setup_to_csv_zip

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
