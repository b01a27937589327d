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

from course.examples import all_examples
from mha_core import LIMITS, Scaling, Setup, Window
from mha_core.codec import (
    FORMAT,
    ConfigError,
    limits_with,
    settings_from_link,
    setup_from_document,
    setup_from_json,
    setup_from_link,
    setup_to_json,
    setup_to_link,
)

EXAMPLES = all_examples()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_document(**overrides) -> dict:
    document = json.loads(setup_to_json(EXAMPLES["the_cat_sat_two_heads"]))
    document.update(overrides)
    return document


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_round_trips_exactly(key):
    example = EXAMPLES[key]
    text = setup_to_json(example)
    if example.d_model == 512:  # the exam-size examples: 1M numbers, about 23 MB of JSON
        with pytest.raises(ConfigError, match="limit is 1,000,000"):
            setup_from_json(text)
        return
    loaded = setup_from_json(text)
    assert loaded.same_inputs(example) and loaded.origin == key
    np.testing.assert_array_equal(loaded.run().output, example.run().output)


def test_custom_mask_and_biases_round_trip(rng):
    base = EXAMPLES["cat_chases_mouse"]
    mask = np.array([[True, False, True], [True, True, False], [False, False, True]])
    setup = dataclasses.replace(base, mask=mask, b_o=rng.normal(size=4), b_q=rng.normal(size=(2, 2)))
    loaded = setup_from_json(setup_to_json(setup))
    np.testing.assert_array_equal(loaded.mask, mask)
    np.testing.assert_array_equal(loaded.b_o, setup.b_o)


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_grouped_key_value_heads_and_a_sliding_window_round_trip_through_file_and_link(kv_heads, rng):
    h, g, d = 4, kv_heads, 8
    setup = Setup(tokens=tuple("abcde"), x=rng.normal(size=(5, d)), w_q=rng.normal(size=(h, d, 2)),
                  w_k=rng.normal(size=(g, d, 2)), w_v=rng.normal(size=(g, d, 2)),
                  w_o=rng.normal(size=(h * 2, d)), b_k=rng.normal(size=(g, 2)),
                  b_q=rng.normal(size=(h, 2)), b_v=rng.normal(size=(g, 2)), b_o=rng.normal(size=d),
                  mask=Window(2))
    assert setup.sizes.groups == kv_heads and setup.mask_kind == "window"
    link = setup_to_link(setup, None)[0]["s"]
    for loaded in (setup_from_json(setup_to_json(setup)), setup_from_link(link, EXAMPLES)):
        assert loaded.same_inputs(setup) and loaded.mask == Window(2)
        np.testing.assert_array_equal(loaded.run().output, setup.run().output)
    assert not setup.same_inputs(dataclasses.replace(setup, mask=Window(3)))


@pytest.mark.parametrize("overrides, words", [
    (dict(w_k=np.ones((3, 2, 2)).tolist(), w_v=np.ones((3, 2, 2)).tolist()),
     "key/value heads = 3 must divide"),
    (dict(w_k=np.ones((1, 2, 1)).tolist()), r"w_v must have shape \[1, 2, 1\]"),
    (dict(mask={"window": 0}), "window must be a whole number of tokens from 1"),
    (dict(mask={"window": 2.5}), "window must be a whole number"),
    (dict(mask={"window": True}), "window must be a whole number"),
    (dict(mask={"window": 2, "extra": 1}), "mask must be null"),
])
def test_a_wrong_key_value_head_count_or_window_is_named(overrides, words):
    document = valid_document(**overrides)
    with pytest.raises(ConfigError, match=words):
        setup_from_document(document)


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
@given(st.dictionaries(st.sampled_from(["example", "tokens", "d_model", "heads", "seed", "x", ""])
                       | st.text(max_size=5), st.text(max_size=30) | st.lists(st.text(max_size=5)),
                       max_size=6))
def test_link_settings_are_within_limits_or_refused(params):
    accepted, refused = settings_from_link(params, LIMITS, examples=("ex_a_single_head",))
    assert set(accepted) <= {"example", "tokens", "d_model", "heads", "seed"}
    assert 1 <= accepted.get("d_model", 1) <= LIMITS.d_model
    assert 1 <= accepted.get("heads", 1) <= LIMITS.n_heads
    assert 1 <= len(accepted.get("tokens", ["t"])) <= LIMITS.tokens
    assert all(isinstance(message, str) and message for message in refused)
    legacy = [name for name in params if name in ("example", "tokens", "d_model", "heads", "seed")]
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
    setup = setup_from_json(setup_to_json(EXAMPLES["ex_f_scaled"]))
    assert setup.scaling == Scaling("sqrt_of", 64)
    assert "√64" in setup.scaling.describe(setup.sizes.d_k)


# --- the state link ---------------------------------------------------------------------------------


def edited(key: str, **arrays) -> Setup:
    return dataclasses.replace(EXAMPLES[key].setup(), **arrays)


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_an_unedited_example_links_by_name(key):
    params, complete = setup_to_link(EXAMPLES[key].setup(), EXAMPLES[key])
    assert params == {"example": key} and complete


def test_an_edited_cell_of_a_big_example_fits_in_a_short_link():
    x = EXAMPLES["ex_h_cross_attention"].x.copy()
    x[2, 300] = 0.25
    setup = edited("ex_h_cross_attention", x=x)
    params, complete = setup_to_link(setup, EXAMPLES["ex_h_cross_attention"])
    assert complete and len(params["s"]) < 400
    back = setup_from_link(params["s"], EXAMPLES)
    assert back.same_inputs(setup) and back.origin == "ex_h_cross_attention"


def test_a_setup_of_its_own_round_trips_through_a_link(rng):
    base = EXAMPLES["cat_chases_mouse"]
    mask = np.array([[True, False, True], [True, True, False], [False, False, True]])
    setup = dataclasses.replace(base.setup(), mask=mask, x=rng.normal(size=(3, 4)).round(3), origin="",
                                b_q=np.ones((2, 2)), b_k=np.zeros((2, 2)), b_v=np.zeros((2, 2)),
                                b_o=np.zeros(4), scaling=Scaling("multiply", 0.3))
    params, complete = setup_to_link(setup, None)
    assert complete
    back = setup_from_link(params["s"], EXAMPLES)
    assert back.same_inputs(setup)


def test_a_state_too_big_for_a_link_falls_back_to_its_example(rng):
    base = EXAMPLES["ex_i_parameter_count"]
    setup = dataclasses.replace(base.setup(), x=rng.normal(size=base.x.shape))
    params, complete = setup_to_link(setup, base)
    assert params == {"example": "ex_i_parameter_count"} and not complete


@FUZZ
@given(st.text(max_size=200) | st.just("1.") | st.binary(max_size=100).map(
    lambda b: "1." + base64.urlsafe_b64encode(zlib.compress(b)).decode()))
def test_a_tampered_link_state_is_refused_with_a_message(state):
    with pytest.raises(ConfigError) as refused:
        setup_from_link(state, EXAMPLES)
    assert str(refused.value)


def test_a_truncated_link_state_is_refused():
    x = EXAMPLES["cat_chases_mouse"].x + 1
    params, _ = setup_to_link(edited("cat_chases_mouse", x=x), EXAMPLES["cat_chases_mouse"])
    for cut in (1, 5, len(params["s"]) // 2):
        with pytest.raises(ConfigError, match="state"):
            setup_from_link(params["s"][:-cut], EXAMPLES)


def test_a_link_bomb_is_refused_without_inflating_it():
    bomb = "1." + base64.urlsafe_b64encode(zlib.compress(b" " * 50_000_000, 9)).decode()
    assert len(bomb) < 2 * LIMITS.link_chars * 10
    with pytest.raises(ConfigError):
        setup_from_link(bomb, EXAMPLES)


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


# --- Issue 15, finding 7: every limit holds inside the decoder, before anything is built or run -----

def zeros_document(n_q=1, d_model=1, h=1, d_k=1, d_v=1, n_k=None) -> dict:
    """The smallest JSON of these sizes: zeros everywhere, one-character tokens (cross-attention if n_k)."""
    document = {"format": FORMAT, "tokens": ["t"] * n_q, "x": [[0] * d_model] * n_q,
                "w_q": [[[0] * d_k] * d_model] * h, "w_k": [[[0] * d_k] * d_model] * h,
                "w_v": [[[0] * d_v] * d_model] * h, "w_o": [[0] * d_model] * (h * d_v)}
    if n_k is not None:
        document.update(kv_tokens=["k"] * n_k, x_kv=[[0] * d_model] * n_k)
    return document


def link_of(document: dict) -> str:
    text = json.dumps(document, separators=(",", ":")).encode()
    return "1." + base64.urlsafe_b64encode(zlib.compress(text, 9)).decode().rstrip("=")


def refusal(decode, text):
    """decode(text)'s ConfigError message, with the peak memory (bytes) and time the refusal took."""
    import tracemalloc

    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ConfigError) as refused:
            decode(text)
        return str(refused.value), tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


ROUTES = {"file": lambda document: (setup_from_json, json.dumps(document, separators=(",", ":"))),
          "link": lambda document: (lambda state: setup_from_link(state, EXAMPLES), link_of(document))}
OVER_LIMITS = {  # each one step over one limit, everything else tiny
    "attention cells": (dict(n_q=1024, h=13), "13 × 1024 × 1024 = 13,631,488 attention cells is over the "
                                              "limit of 12,582,912"),
    "attention cells, cross": (dict(n_q=1024, n_k=1000, h=16), "attention cells is over the limit"),
    "d_model": (dict(d_model=LIMITS.d_model + 1), "d_model = 769 is over the limit of 768"),
    "heads": (dict(h=LIMITS.n_heads + 1), "heads = 17 is over the limit of 16"),
    "d_k": (dict(d_k=LIMITS.d_head + 1), "d_k = 129 is over the limit of 128"),
    "d_v": (dict(d_v=LIMITS.d_head + 1), "d_v = 129 is over the limit of 128"),
    "tokens": (dict(n_q=LIMITS.tokens + 1), "1025 tokens is over the limit of 1024"),
    "key tokens": (dict(n_k=LIMITS.tokens + 1), "kv_tokens: 1025 tokens is over the limit of 1024"),
}


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("limit", list(OVER_LIMITS))
def test_a_setup_over_any_limit_is_refused_before_an_array_is_built(route, limit):
    sizes, words = OVER_LIMITS[limit]
    decode, text = ROUTES[route](zeros_document(**sizes))
    message, peak, seconds = refusal(decode, text)
    assert words in message
    assert peak < 3_000_000, f"{peak:,} bytes allocated to refuse it"  # the attention grid alone: 100+ MB
    assert seconds < 2.0  # generous: the machine is shared; the memory is the measure


def test_the_link_from_the_issue_is_refused_without_running_it():
    """16 heads × 1024 × 1024 in a short link was decoded and run (0.4 s, ~244 MB here ~200 MB) before
    the page refused it."""
    state = link_of(zeros_document(n_q=1024, d_model=16, h=16))
    assert len(state) < 3_500
    message, peak, seconds = refusal(lambda s: setup_from_link(s, EXAMPLES), state)
    assert "16 × 1024 × 1024 = 16,777,216 attention cells is over the limit of 12,582,912" in message
    assert peak < 3_000_000 and seconds < 2.0


def test_an_array_larger_than_any_setup_is_refused_from_its_lengths():
    most = LIMITS.n_heads * LIMITS.d_model * LIMITS.d_head
    document = zeros_document() | {"w_q": [[[0] * 128] * 768] * 17}  # 1.67 M entries
    message, peak, _ = refusal(setup_from_document, document)
    assert f"w_q has 1,671,168 entries; the limit is {most:,}" in message
    assert peak < 100_000  # refused from the lists' lengths: not a list of its entries, nor an array


def test_link_length_and_deflate_bombs_are_refused_naming_the_limit():
    message, peak, seconds = refusal(lambda s: setup_from_link(s, EXAMPLES), "1." + "A" * 16_001)
    assert "16,003 characters; the limit is 16,000" in message and seconds < 0.5
    bomb = "1." + base64.urlsafe_b64encode(zlib.compress(b"[" + b"0," * 5_000_000 + b"0]", 9)).decode()
    assert len(bomb) < 2 * LIMITS.link_chars
    message, peak, seconds = refusal(lambda s: setup_from_link(s, EXAMPLES), bomb)
    assert "unpacks to more than 1,000,000 bytes" in message
    assert peak < 3_000_000 and seconds < 2.0


def test_a_link_over_its_examples_arrays_never_turns_them_into_lists():
    """A link that edits one cell of a 512-wide example filled every array from the example as a Python
    list (about 30 MB for example H) before checking anything."""
    x = EXAMPLES["ex_h_cross_attention"].x.copy()
    x[2, 300] = 0.25
    params, _ = setup_to_link(edited("ex_h_cross_attention", x=x), EXAMPLES["ex_h_cross_attention"])
    import tracemalloc

    tracemalloc.start()
    try:
        back = setup_from_link(params["s"], EXAMPLES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert back.x[2, 300] == 0.25 and back.same_inputs(edited("ex_h_cross_attention", x=x))
    arrays = sum(a.nbytes for a in back.arrays().values())
    assert peak < arrays + 2_000_000, f"{peak:,} bytes for {arrays:,} bytes of arrays"


def test_old_link_tokens_and_heads_that_ask_too_much_together_are_refused():
    words = " ".join(["w"] * 1024)
    accepted, refused = settings_from_link({"tokens": words, "heads": "16", "seed": "3"}, LIMITS)
    assert accepted == {"seed": 3}
    assert "attention cells is over the limit of 12,582,912" in refused[0]
    accepted, refused = settings_from_link({"tokens": words, "heads": "12"}, LIMITS)
    assert accepted["heads"] == 12 and len(accepted["tokens"]) == 1024 and not refused


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_example_is_within_the_limits(key):
    from mha_core.setup import size_problem

    assert size_problem(EXAMPLES[key].sizes) is None


def test_what_the_page_writes_loads_back_a_large_custom_mask():
    """A 500-token custom mask packed into a 5 kB link that the reader refused (5 MB of JSON), and a file
    of it could not be loaded either: both now say so when they are made."""
    n = 500
    setup = Setup(tokens=tuple(f"t{i}" for i in range(n)), x=np.zeros((n, 1)), w_q=np.zeros((1, 1, 1)),
                  w_k=np.zeros((1, 1, 1)), w_v=np.zeros((1, 1, 1)), w_o=np.zeros((1, 1)),
                  mask=np.ones((n, n), dtype=bool))
    params, complete = setup_to_link(setup, None)
    assert not complete and "s" not in params
    from mha_core.codec import save_problem

    assert "over the limit of 1,000,000" in save_problem(setup)
    small = dataclasses.replace(setup, tokens=setup.tokens[:100], x=setup.x[:100],
                                mask=setup.mask[:100, :100])
    assert save_problem(small) is None and setup_from_json(setup_to_json(small)).same_inputs(small)
    params, complete = setup_to_link(small, None)
    assert complete and setup_from_link(params["s"], EXAMPLES).same_inputs(small)


# --- Issue 15, finding 10: a message says in words what was refused, never a Python object ---------

def cat_sat_link(cells: str) -> str:
    """A link over the_cat_sat_two_heads whose x changes these cells (JSON text, written as is)."""
    document = json.loads(setup_to_json(EXAMPLES["the_cat_sat_two_heads"]))
    document.update({name: "=" for name in ("w_q", "w_k", "w_v", "w_o")}, base="the_cat_sat_two_heads",
                    x={"cells": "CELLS"})
    text = json.dumps(document).replace('"CELLS"', cells)
    return "1." + base64.urlsafe_b64encode(zlib.compress(text.encode())).decode()


@pytest.mark.parametrize("cells, words", [
    ("[[1" + "0" * 30 + ", 1.0]]", "x: the link's changed cell 1 names position a whole number of 31 digits; "
                                  "x has positions 0 to 5"),
    ("[[0, 1.0], [6, 1.0]]", "changed cell 2 names position 6; x has positions 0 to 5"),
    ("[[-1, 1.0]]", "names position -1"), ("[[1.5, 1.0]]", "names position 1.5"),
    ('[["0", 1.0]]', "names position a string"), ("[[0, 1" + "0" * 30 + "]]", "holds a whole number of 31"),
    ("[[0, 2e6]]", "holds 2000000.0; it must be a number within ±1,000,000"), ("[[0, 1e309]]", "holds inf"),
    ("[[0, null]]", "holds null"), ("[0]", "is not a [position, number] pair (got a number)"),
])
def test_a_links_bad_cell_is_described_in_words(cells, words):
    with pytest.raises(ConfigError) as refused:
        setup_from_link(cat_sat_link(cells), EXAMPLES)
    assert words in str(refused.value)
    assert "object at" not in str(refused.value) and "_Huge" not in str(refused.value)


@pytest.mark.parametrize("field, value", [("scaling", {"multiply": "HUGE"}), ("format", "HUGE"),
                                          ("mask", "HUGE"), ("scale", "HUGE"), ("x", [["HUGE", 1]])])
def test_a_number_too_long_to_read_is_named_by_its_digits_in_every_message(field, value):
    document = valid_document(**{field: value})
    if field == "scale":
        del document["scaling"]
    text = json.dumps(document).replace('"HUGE"', "1" + "0" * 30)
    with pytest.raises(ConfigError) as refused:
        setup_from_json(text)
    assert "a whole number of 31 digits" in str(refused.value)
    assert "object at" not in str(refused.value)


@FUZZ
@given(json_values | st.integers(min_value=10**21, max_value=10**40).map(lambda n: [n, {"k": [n]}]))
def test_no_message_shows_a_python_object(value):
    for field in ("format", "tokens", "x", "mask", "scaling", "origin"):
        document = valid_document(**{field: value})
        try:
            setup_from_json(json.dumps(document))
        except ConfigError as error:
            assert " object at 0x" not in str(error) and "_Huge" not in str(error), str(error)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_within_the_limits_nothing_overflows_so_the_decoder_need_not_run_a_setup(dtype):
    """The decoder no longer runs what it reads (that ran an oversized link before refusing it); this is
    why it need not: every entry at ±max_abs, d_model, heads and d_k at their limits, biases, the
    largest multiplier, in float32 (the page's long sequences) as in float64."""
    from mha_core import multi_head_attention

    big, h, d_model, d = LIMITS.max_abs, LIMITS.n_heads, LIMITS.d_model, LIMITS.d_head
    signs = np.where(np.arange(4 * d_model) % 3 == 0, -1.0, 1.0).reshape(4, d_model)  # [4, d_model]
    signs[0] = 1.0  # the largest score there is: 128 x (768 x 1e12 + 1e6)^2 x 1000, about 7.6e34
    full = np.full((h, d_model, d), big, dtype=dtype)
    result = multi_head_attention(
        (signs * big).astype(dtype), full, full, full, np.full((h * d, d_model), big, dtype=dtype),
        b_q=np.full((h, d), big, dtype=dtype), b_k=np.full((h, d), -big, dtype=dtype),
        b_v=np.full((h, d), big, dtype=dtype), b_o=np.full(d_model, big, dtype=dtype),
        scale=LIMITS.multiplier[1])
    assert np.isfinite(result.output).all() and np.isfinite(result.weights).all()
