"""The file and link codecs: a clear ConfigError naming the field, or a valid setup; never a crash."""

import base64
import dataclasses
import json
import re
import time
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mha_core import LIMITS, Scaling, Setup, all_scenarios
from mha_core.codec import (
    FORMAT,
    ConfigError,
    limits_with,
    settings_from_link,
    setup_from_json,
    setup_from_link,
    setup_to_json,
    setup_to_link,
)

SCENARIOS = all_scenarios()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_document(**overrides) -> dict:
    document = json.loads(setup_to_json(SCENARIOS["the_cat_sat_two_heads"]))
    document.update(overrides)
    return document


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_every_preset_round_trips_exactly(key):
    scenario = SCENARIOS[key]
    text = setup_to_json(scenario)
    if scenario.d_model == 512:  # the exam-size examples: 1M numbers, about 23 MB of JSON
        with pytest.raises(ConfigError, match="limit is 1,000,000"):
            setup_from_json(text)
        return
    loaded = setup_from_json(text)
    assert loaded.same_inputs(scenario) and loaded.origin == key
    np.testing.assert_array_equal(loaded.run().output, scenario.run().output)


def test_custom_mask_and_biases_round_trip(rng):
    base = SCENARIOS["cat_chases_mouse"]
    mask = np.array([[True, False, True], [True, True, False], [False, False, True]])
    setup = dataclasses.replace(base, mask=mask, b_o=rng.normal(size=4), b_q=rng.normal(size=(2, 2)))
    loaded = setup_from_json(setup_to_json(setup))
    np.testing.assert_array_equal(loaded.mask, mask)
    np.testing.assert_array_equal(loaded.b_o, setup.b_o)


@pytest.mark.parametrize("document, words", [
    ({"format": "other"}, "format"),
    (valid_document(tokens=[]), "tokens"),
    (valid_document(tokens=["a b", "c", "d"]), "spaces"),
    (valid_document(tokens=["w"] * (LIMITS.tokens + 1)), f"limit of {LIMITS.tokens}"),
    (valid_document(x=[[1, 2], [3]]), "rectangular"),
    (valid_document(x=[[1, 2], [3, 4]]), r"x must have shape \[3, 2\]"),
    (valid_document(x=[[1, "a"], [0, 2], [1, 1]]), "numbers"),
    (valid_document(w_o=[[1.0]]), "w_o"),
    (valid_document(scaling=-1), "scaling"),
    (valid_document(scaling={"multiply": True}), "scaling"),
    (valid_document(scale=-1), "scale"),
    (valid_document(scale=True), "scale"),
    (valid_document(mask=[[1, 0, 1]]), "mask"),
    (valid_document(x_kv=[[1, 0]]), "come together"),
    (valid_document(w_q=[[[0.0] * 5000]]), "limit"),
])
def test_bad_documents_are_refused_with_the_field_named(document, words):
    with pytest.raises(ConfigError, match=words):
        setup_from_json(json.dumps(document))


@pytest.mark.parametrize("text, words", [
    ('{"format": "' + FORMAT + '", "tokens": ["a"], "x": [[NaN]]}', "NaN"),
    ('{"format": "' + FORMAT + '", "tokens": ["a"], "x": [[Infinity]]}', "Infinity"),
    ('{"format": "' + FORMAT + '", "tokens": ["a"], "x": [[1e309]]}', "too large"),
    ("[" * 100_000, "JSON"),
    ("not json", "JSON"),
    (b"\xff\xfe\x00", "JSON"),
])
def test_non_finite_and_malformed_text_is_refused(text, words):
    with pytest.raises(ConfigError, match=words):
        setup_from_json(text)


def test_oversized_files_are_refused_before_parsing():
    huge = "[" + "0," * 1_500_000 + "0]"  # 3 MB
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="limit is 1,000,000"):
        setup_from_json(huge)
    assert time.perf_counter() - started < 0.05  # refused on length alone, nothing parsed


def test_huge_declared_sizes_are_refused_before_allocating():
    """100,000 columns fit in the byte limit but are refused from the list length alone."""
    document = valid_document(x=[[0] * 100_000] * 3)
    with pytest.raises(ConfigError, match="axis 1 has 100000 entries"):
        setup_from_json(json.dumps(document), limits_with(file_bytes=10_000_000))


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.integers()
    | st.text(max_size=10) | st.sampled_from([1e308, -1e308, 5e-324]),
    lambda children: (st.lists(children, max_size=5)
                      | st.dictionaries(st.text(max_size=8), children, max_size=5)),
    max_leaves=40,
)


@FUZZ
@given(json_values)
def test_random_json_gives_a_config_error_or_a_setup(value):
    try:
        setup = setup_from_json(json.dumps(value))
    except ConfigError as error:
        assert str(error)
    else:
        assert isinstance(setup, Setup)


def mutation(draw_value):
    return st.sampled_from(["tokens", "x", "w_q", "w_k", "w_v", "w_o", "x_kv", "kv_tokens", "mask", "scale",
                            "b_q", "b_o"]).flatmap(lambda field: st.tuples(st.just(field), draw_value))


@FUZZ
@given(mutation(json_values | st.lists(st.lists(st.floats(width=64) | st.sampled_from([1e308, -1e308]),
                                                  min_size=1, max_size=4), min_size=1, max_size=4)))
def test_a_valid_setup_with_one_field_corrupted_loads_or_is_refused(field_and_value):
    field, value = field_and_value
    document = valid_document(**{field: value})
    text = json.dumps(document)  # NaN and inf become the JSON constants, which are refused
    try:
        setup = setup_from_json(text)
    except ConfigError as error:
        assert str(error)
        return
    assert np.isfinite(setup.run().output).all()


@FUZZ
@given(st.dictionaries(st.sampled_from(["preset", "tokens", "d_model", "heads", "seed", "x", ""])
                       | st.text(max_size=5), st.text(max_size=30) | st.lists(st.text(max_size=5)),
                       max_size=6))
def test_link_settings_are_within_limits_or_refused(params):
    accepted, refused = settings_from_link(params, LIMITS, presets=("ex_a_single_head",))
    assert set(accepted) <= {"preset", "tokens", "d_model", "heads", "seed"}
    assert 1 <= accepted.get("d_model", 1) <= LIMITS.d_model
    assert 1 <= accepted.get("heads", 1) <= LIMITS.n_heads
    assert 1 <= len(accepted.get("tokens", ["t"])) <= LIMITS.tokens
    assert all(isinstance(message, str) and message for message in refused)
    legacy = [name for name in params if name in ("preset", "tokens", "d_model", "heads", "seed")]
    assert len(accepted) + len(refused) == len(legacy)  # the others are the page's to read


def test_a_huge_size_in_a_link_is_refused():
    accepted, refused = settings_from_link({"d_model": "1000000000", "heads": "3"}, LIMITS)
    assert accepted == {"heads": 3}
    assert "d_model" in refused[0] and f"1 to {LIMITS.d_model}" in refused[0]


# --- Issue 7: findings 11 and 12, and the loader's strictness --------------------------------------


@pytest.mark.parametrize("entry, words", [
    ("1" + "0" * 400, "a whole number of 401 digits"),  # was OverflowError out of the loader
    ("1" + "0" * 5000, "a whole number of 5001 digits"),  # was ValueError (Python's 4300-digit cap)
    ('"1.5"', "a string '1.5'"),  # was read as 1.5
    ("true", "true/false"),  # was read as 1.0
    ("null", "null"),  # was "too large to represent"
    ("2e6", "2e+06 at entry 1, outside ±1,000,000"),
])
def test_every_entry_must_be_a_plain_number_and_the_message_says_what_was_found(entry, words):
    text = json.dumps(valid_document()).replace('"x": [[2.0,', f'"x": [[{entry},', 1)
    assert entry in text
    with pytest.raises(ConfigError, match=f"x holds {re.escape(words)}"):
        setup_from_json(text)


@pytest.mark.parametrize("scale", [5000, 1e-9, 0])
def test_an_old_files_scale_outside_the_pages_range_is_refused_not_changed(scale):
    """Finding 12: 5000 and 1e-9 were both silently loaded as x 1000."""
    document = valid_document(format="mha-visualizer/setup-v1", scale=scale)
    del document["scaling"]
    with pytest.raises(ConfigError, match="scale must be .* from 0.001 to 1000"):
        setup_from_json(json.dumps(document))


@pytest.mark.parametrize("scale", [0.3, 1 / 8, 999.0])
def test_a_scale_in_range_loads_exactly(scale):
    """0.3 came back as 0.30000003 through the temperature widget; the multiplier is kept as is."""
    document = valid_document(format="mha-visualizer/setup-v1", scale=scale)
    del document["scaling"]
    setup = setup_from_json(json.dumps(document))
    assert setup.scaling == Scaling("multiply", scale)
    assert setup.run().scale == scale
    assert setup_from_json(setup_to_json(setup)).scaling == setup.scaling


@pytest.mark.parametrize("token, words", [
    ("ca\u200bt", "U+200B"), ("\ufeffcat", "U+FEFF"), ("\u202ecat", "U+202E"), ("x" * 41, "41 characters"),
])
def test_invisible_or_overlong_tokens_are_refused_naming_them(token, words):
    text = json.dumps(valid_document()).replace('"the"', f'"{token}"', 1)
    with pytest.raises(ConfigError, match=re.escape(words)):
        setup_from_json(text)


def test_example_f_scaled_keeps_the_texts_d_k_of_64():
    setup = setup_from_json(setup_to_json(SCENARIOS["ex_f_scaled"]))
    assert setup.scaling == Scaling("sqrt_of", 64)
    assert "√64" in setup.scaling.describe(setup.sizes.d_k)


# --- the state link ---------------------------------------------------------------------------------


def edited(key: str, **arrays) -> Setup:
    return dataclasses.replace(SCENARIOS[key].setup(), **arrays)


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_an_unedited_preset_links_by_name(key):
    params, complete = setup_to_link(SCENARIOS[key].setup(), SCENARIOS[key])
    assert params == {"preset": key} and complete


def test_an_edited_cell_of_a_big_preset_fits_in_a_short_link():
    x = SCENARIOS["ex_h_cross_attention"].x.copy()
    x[2, 300] = 0.25
    setup = edited("ex_h_cross_attention", x=x)
    params, complete = setup_to_link(setup, SCENARIOS["ex_h_cross_attention"])
    assert complete and len(params["s"]) < 400
    back = setup_from_link(params["s"], SCENARIOS)
    assert back.same_inputs(setup) and back.origin == "ex_h_cross_attention"


def test_a_setup_of_its_own_round_trips_through_a_link(rng):
    base = SCENARIOS["cat_chases_mouse"]
    mask = np.array([[True, False, True], [True, True, False], [False, False, True]])
    setup = dataclasses.replace(base.setup(), mask=mask, x=rng.normal(size=(3, 4)).round(3), origin="",
                                b_q=np.ones((2, 2)), b_k=np.zeros((2, 2)), b_v=np.zeros((2, 2)),
                                b_o=np.zeros(4), scaling=Scaling("multiply", 0.3))
    params, complete = setup_to_link(setup, None)
    assert complete
    back = setup_from_link(params["s"], SCENARIOS)
    assert back.same_inputs(setup)


def test_a_state_too_big_for_a_link_falls_back_to_its_preset(rng):
    base = SCENARIOS["ex_i_parameter_count"]
    setup = dataclasses.replace(base.setup(), x=rng.normal(size=base.x.shape))
    params, complete = setup_to_link(setup, base)
    assert params == {"preset": "ex_i_parameter_count"} and not complete


@FUZZ
@given(st.text(max_size=200) | st.just("1.") | st.binary(max_size=100).map(
    lambda b: "1." + base64.urlsafe_b64encode(zlib.compress(b)).decode()))
def test_a_tampered_link_state_is_refused_with_a_message(state):
    with pytest.raises(ConfigError) as refused:
        setup_from_link(state, SCENARIOS)
    assert str(refused.value)


def test_a_truncated_link_state_is_refused():
    x = SCENARIOS["cat_chases_mouse"].x + 1
    params, _ = setup_to_link(edited("cat_chases_mouse", x=x), SCENARIOS["cat_chases_mouse"])
    for cut in (1, 5, len(params["s"]) // 2):
        with pytest.raises(ConfigError, match="state"):
            setup_from_link(params["s"][:-cut], SCENARIOS)


def test_a_link_bomb_is_refused_without_inflating_it():
    bomb = "1." + base64.urlsafe_b64encode(zlib.compress(b" " * 50_000_000, 9)).decode()
    assert len(bomb) < 2 * LIMITS.link_chars * 10
    with pytest.raises(ConfigError):
        setup_from_link(bomb, SCENARIOS)


def test_a_setup_far_too_big_for_a_link_is_not_even_encoded(rng, monkeypatch):
    """Every number costs at least a character, so 4 million are refused by counting them: the page
    wrote this link on every rerun, and encoding it took 20 s a run at every limit."""
    import mha_core.codec

    def no_encoding(*args, **kwargs):
        raise AssertionError("the link was encoded")

    monkeypatch.setattr(mha_core.codec.json, "dumps", no_encoding)
    h, d_model, d = 16, 512, 128
    zeros = np.zeros((h, d_model, d))
    setup = Setup(tokens=("a",), x=rng.normal(size=(1, d_model)), w_q=zeros, w_k=zeros, w_v=zeros,
                  w_o=np.zeros((h * d, d_model)))
    assert setup_to_link(setup, None) == ({}, False)
