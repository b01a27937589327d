"""The setup loader and the link reader: a clear ConfigError or a valid setup, never a crash."""

import dataclasses
import json
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mha_core import all_scenarios, multi_head_attention
from mha_core.config import (
    FORMAT,
    ConfigError,
    Setup,
    SetupLimits,
    settings_from_link,
    setup_from_json,
    setup_to_json,
)

SCENARIOS = all_scenarios()
LIMITS = SetupLimits()
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
        with pytest.raises(ConfigError, match="limit is 2,000,000"):
            setup_from_json(text)
        return
    loaded = setup_from_json(text)
    expected = scenario.run()
    again = multi_head_attention(loaded.x, loaded.w_q, loaded.w_k, loaded.w_v, loaded.w_o, x_kv=loaded.x_kv,
                                 mask=loaded.mask, scale=loaded.scale)
    np.testing.assert_array_equal(again.output, expected.output)
    assert loaded.tokens == scenario.tokens and loaded.kv_tokens == scenario.kv_tokens


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
    (valid_document(tokens=["w"] * 30), "limit is 24"),
    (valid_document(x=[[1, 2], [3]]), "rectangular"),
    (valid_document(x=[[1, 2], [3, 4]]), "one row per token"),
    (valid_document(x=[[1, "a"], [0, 2], [1, 1]]), "numbers"),
    (valid_document(w_o=[[1.0]]), "w_o"),
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
    with pytest.raises(ConfigError, match="limit is 2,000,000"):
        setup_from_json(huge)
    assert time.perf_counter() - started < 0.05  # refused on length alone, nothing parsed


def test_huge_declared_sizes_are_refused_before_allocating():
    """100,000 columns fit in the byte limit but are refused from the list length alone."""
    document = valid_document(x=[[0] * 100_000] * 3)
    with pytest.raises(ConfigError, match="axis 1 has 100000 entries"):
        setup_from_json(json.dumps(document), SetupLimits(max_bytes=10_000_000))


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
    result = multi_head_attention(setup.x, setup.w_q, setup.w_k, setup.w_v, setup.w_o, x_kv=setup.x_kv,
                                  mask=setup.mask, scale=setup.scale, b_q=setup.b_q, b_o=setup.b_o)
    assert np.isfinite(result.output).all()


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
    assert len(accepted) + len(refused) == len(params)


def test_a_huge_size_in_a_link_is_refused():
    accepted, refused = settings_from_link({"d_model": "1000000000", "heads": "3"}, LIMITS)
    assert accepted == {"heads": 3}
    assert "d_model" in refused[0] and "1 to 512" in refused[0]
