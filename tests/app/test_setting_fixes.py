"""No setting leaves a blank main area: every refusal the sidebar can reach, on every example, shows its
reason where the charts were and a one-click fix that works and keeps the person's last change."""

from __future__ import annotations

import pytest

from app.setting_fixes import fixes_for, problems
from mha_core import LIMITS
from tests.apptest_util import all_examples, fresh_app, pick_example, unescaped

EXAMPLES = list(all_examples())
BASE = {"mode": "self-attention", "tokens_text": "the cat sat", "kv_tokens_text": "", "d_model": 2,
        "n_heads": 2, "custom_head_width": False}
GOOD = {"d_model": 2, "n_heads": 2, "tokens": (3, 3)}


def labels(fixes) -> list[str]:
    return [fix.label for fix in fixes]


def applied(values: dict, fix) -> dict:
    return {**values, **dict(fix.changes)}


def test_four_heads_on_d_model_2_offer_the_issues_two_fixes_and_never_two_heads():
    values = {**BASE, "n_heads": 4}
    fixes = fixes_for(values, GOOD)
    assert labels(fixes) == ["d_model 4", "d_k = d_v = 1 per head"]
    assert all(not problems(applied(values, fix)) for fix in fixes)


def test_a_changed_d_model_keeps_the_d_model_and_fixes_the_heads():
    values = {**BASE, "d_model": 5, "n_heads": 4}
    fixes = fixes_for(values, {**GOOD, "d_model": 4, "n_heads": 4})
    assert labels(fixes) == ["5 heads", "d_k = d_v = 1 per head"]  # the nearest h dividing 5; never d_model 8
    assert all(applied(values, fix)["d_model"] == 5 for fix in fixes)


def test_with_no_known_last_change_every_kind_of_fix_is_offered():
    offered = labels(fixes_for({**BASE, "n_heads": 4}, None))
    assert offered == ["d_model 4", "d_k = d_v = 1 per head", "2 heads"]


def test_a_head_too_wide_is_fixed_by_more_heads_or_a_width_of_ones_own():
    values = {**BASE, "d_model": 300, "n_heads": 2}  # d_k = 150 > 128
    fixes = fixes_for(values, {**GOOD, "n_heads": 2, "d_model": 2})
    assert labels(fixes) == ["3 heads", f"d_k = d_v = {LIMITS.d_head} per head"]


def test_two_faults_at_once_get_one_fix_for_both():
    """16 heads over 900 tokens on d_model 2: too many cells and a split that is not whole."""
    values = {**BASE, "tokens_text": " ".join(["w"] * 900), "n_heads": 16}
    fixes = fixes_for(values, {**GOOD, "tokens": (900, 900)})
    assert fixes and all(not problems(applied(values, fix)) for fix in fixes)
    assert all(applied(values, fix)["n_heads"] == 16 for fix in fixes)  # the last change, kept
    assert "+" in fixes[0].label


@pytest.mark.parametrize("text, kept", [
    (" ".join(["w"] * (LIMITS.tokens + 1)), LIMITS.tokens),
    ("the " + "x" * (LIMITS.token_chars + 1) + " sat", 3),
    ("the c\u202eat sat", 3),
])
def test_a_token_box_at_fault_is_cut_or_cleaned_keeping_its_words(text, kept):
    values = {**BASE, "tokens_text": text, "n_heads": 1, "d_model": 2}
    (fix, *_) = fixes_for(values, {**GOOD, "n_heads": 1})
    tokens = applied(values, fix)["tokens_text"].split()
    assert len(tokens) == kept and tokens[0] in ("w", "the")
    assert not problems(applied(values, fix))


def test_an_emptied_box_is_offered_the_examples_tokens():
    (fix,) = fixes_for({**BASE, "tokens_text": "  "}, GOOD, ("the", "cat", "sat"))
    assert dict(fix.changes) == {"tokens_text": "the cat sat"}


# --- Every refusal the sidebar can reach, on every example, through the page ---------------------


def refusals(state) -> list[tuple[str, dict, str]]:
    """(what, sidebar changes, the key whose new value a fix must keep) for one example's sizes."""
    d_model, n_heads = int(state["d_model"]), int(state["n_heads"])
    found = []
    if state["custom_head_width"]:  # a width of one's own takes any h and d_model, until switched off
        if problems({**BASE, "d_model": d_model, "n_heads": n_heads}):
            found.append(("d_k = d_model / h again", {"custom_head_width": False}, "custom_head_width"))
        return found + token_refusals(state)
    heads = next((h for h in range(n_heads + 1, LIMITS.n_heads + 1) if d_model % h), None)
    if heads is not None:
        found.append(("more heads", {"n_heads": heads}, "n_heads"))
    if n_heads > 1:
        width = next(d for d in range(d_model + 1, LIMITS.d_model + 1) if d % n_heads)
        found.append(("another d_model", {"d_model": width}, "d_model"))
    if n_heads * (LIMITS.d_head + 1) <= LIMITS.d_model:
        found.append(("a head too wide", {"d_model": n_heads * (LIMITS.d_head + 1)}, "d_model"))
    return found + token_refusals(state)


def token_refusals(state) -> list[tuple[str, dict, str]]:
    found = [
        ("no tokens", {"tokens_text": " "}, ""),
        ("too many tokens", {"tokens_text": " ".join(["w"] * (LIMITS.tokens + 1))}, ""),
        ("a token too long", {"tokens_text": "a " + "x" * (LIMITS.token_chars + 1)}, ""),
        ("an invisible character", {"tokens_text": "a b\u200bc"}, ""),
        ("too many cells", {"tokens_text": " ".join(["w"] * 900), "n_heads": 16}, ""),  # two changes at once
    ]
    if state["mode"] == "cross-attention":
        found[-1][1]["kv_tokens_text"] = " ".join(["v"] * 900)
        found.append(("no key/value tokens", {"kv_tokens_text": ""}, ""))
    return found


def main_text(at) -> str:
    return " ".join(unescaped(e.value) for kind in ("markdown", "error") for e in at.main.get(kind))


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_every_refusal_shows_its_reason_and_a_fix_that_draws_the_steps(example):
    at = fresh_app()
    pick_example(at, example)
    for what, changes, kept in refusals(at.session_state):
        for key, value in changes.items():
            at.session_state[key] = value
        at.run()
        assert not at.exception, what
        assert "This setting cannot be drawn." in main_text(at), what
        assert at.main.get("error"), what  # the reason, in words, where the charts were
        if what == "more heads":  # the sentence's grid X still stands: its step is drawn
            assert at.get("plotly_chart"), f"{example}: {what}: step 1 not drawn"
        fixes = [b for b in at.main.button if (b.key or "").startswith("setting_fix_")]
        assert fixes, f"{example}: {what} has no fix"
        fixes[0].click().run()
        assert not at.exception, what
        assert "This setting cannot be drawn." not in main_text(at), f"{example}: {what}: {fixes[0].label}"
        assert at.get("plotly_chart"), f"{example}: {what}: no chart after {fixes[0].label}"
        if kept:
            assert at.session_state[kept] == changes[kept], f"{example}: {what}: the last change was undone"
        pick_example(at, example)  # the next refusal starts from the example as given


# --- Words that name the example's tokens say so once the sentence is the reader's own ----------------


def quoted_tokens(text: str, tokens) -> set[str]:
    return {token for token in tokens if f"'{token}'" in text or f"‘{token}’" in text}


def in_the_card(text: str, example) -> bool:
    """The example's card: its title, its story and what to look for (it says they describe it as given)."""
    return (text.startswith(f"**{example.title}**") or text == example.story or "What to look for" in text
            or "describe the example as the chapter gives it" in text)


@pytest.mark.parametrize("key", [key for key, ex in all_examples().items() if ex.lesson is not None])
def test_after_a_new_sentence_no_text_names_a_token_that_is_gone_unless_it_says_as_given(key):
    at = fresh_app()
    pick_example(at, key)
    example = all_examples()[key]
    old = set(at.session_state["tokens_text"].split()) | set(at.session_state["kv_tokens_text"].split())
    new = " ".join(f"t{i}" for i in range(len(at.session_state["tokens_text"].split())))
    at.text_input(key="tokens_text").set_value(new).run()
    assert not at.exception
    texts = [unescaped(e.value) for kind in ("markdown", "caption") for e in at.main.get(kind)]
    assert not [text for text in texts if quoted_tokens(text, old) and not in_the_card(text, example)]
    look_for = [text for text in texts if "What to look for" in text]
    assert look_for and all("in the example as given" in text for text in look_for)
    assert any("describe the example as the chapter gives it" in text for text in texts)
    assert any("Reset" in button.label for button in at.main.button)
