"""When the sidebar's setting is refused: the reason where the charts were, and one-click fixes.

The pure part, ``fixes_for(values, errors, last_good, example_tokens)``, finds for each input at fault
the smallest changes of the sidebar's values that make the setting drawable again, keeping the
person's last change where one can (4 heads on d_model 2: "d_model 4", "d_k = d_v = 1 per head"
rather than "2 heads"). Every fix it offers is checked with ``refused`` (the sidebar's own checks)
before it is shown. ``refusal_ui`` draws the reason and the fixes on the workbench and the presenter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import streamlit as st

from app import i18n
from app.safe import lit
from app.session import session_keys
from course.i18n import N_
from mha_core import LIMITS, head_width
from mha_core.setup import attention_size_problem, token_problem, without_invisible

LAST_GOOD = "last_good_setting"  # the sidebar's sizes the last time they were drawable
session_keys.register(session_keys.Key(LAST_GOOD, __name__))

TOKEN_BOXES = {"tokens_text": "query tokens", "kv_tokens_text": "key/value tokens"}
SIZE_KEYS = ("d_model", "n_heads")


@dataclass(frozen=True)
class Fix:
    """One click's worth of sidebar changes, with the words on its button."""

    label: str
    changes: tuple[tuple[str, object], ...]  # (sidebar key, new value)


# --- The sidebar's checks, on plain values ----------------------------------------------------------


def token_text_problem(text: str, what: str) -> str | None:
    """Why a token box's text cannot be used, or None (its length first: a client can send more)."""
    if len(text) > LIMITS.token_text:
        return i18n.t("{count} characters is over the limit of {limit}.").format(
            count=i18n.number(len(text)), limit=i18n.number(LIMITS.token_text))
    return token_problem(text.split(), what)


NOT_WHOLE = N_("h = {h} does not divide d_model = {d_model}: d_k = d_model / h = {d_k} is not a whole "
               "number. Choose h among {divisors}, make d_model a multiple of h (e.g. {multiple}), or set "
               "d_k and d_v yourself.")


def head_split_problem(d_model: int, n_heads: int) -> str | None:
    """Why d_k = d_v = d_model / h cannot be used, or None."""
    if d_model % n_heads:
        divisors = ", ".join(f"{h:d}" for h in range(1, d_model + 1) if d_model % h == 0)
        multiple = n_heads * max(1, round(d_model / n_heads))
        return i18n.t(NOT_WHOLE).format(h=f"{n_heads:d}", d_model=f"{d_model:d}", divisors=divisors,
                                        d_k=i18n.number(d_model / n_heads, 2), multiple=f"{multiple:d}")
    d_k = head_width(d_model, n_heads)
    if d_k > LIMITS.d_head:
        return i18n.t("d_k = {d_k} is over the limit {limit}: use more heads.").format(
            d_k=f"{d_k:d}", limit=f"{LIMITS.d_head:d}")
    return None


def token_lists(values: Mapping) -> tuple[list[str], list[str]]:
    tokens = str(values.get("tokens_text", "")).split()
    cross = values.get("mode") == "cross-attention"
    return tokens, (str(values.get("kv_tokens_text", "")).split() if cross else tokens)


def problems(values: Mapping) -> dict[str, str]:
    """Each input at fault, by the sidebar's key for it (the checks of app/sidebar_inputs.sidebar_ui)."""
    found = {}
    boxes = ("tokens_text", "kv_tokens_text") if values.get("mode") == "cross-attention" else ("tokens_text",)
    for box in boxes:
        problem = token_text_problem(str(values.get(box, "")), TOKEN_BOXES[box])
        if problem:
            found[box] = problem
    tokens, kv_tokens = token_lists(values)
    n_heads = int(values["n_heads"])
    too_big = attention_size_problem(n_heads, len(tokens), len(kv_tokens)) if tokens and kv_tokens else None
    if too_big:
        found["attention_size"] = too_big
    split = None if values.get("custom_head_width") else head_split_problem(int(values["d_model"]), n_heads)
    if split:
        found["n_heads"] = split
    return found


def refused(values: Mapping) -> bool:
    return bool(problems(values))


# --- Fixes ------------------------------------------------------------------------------------------


def fixes_for(values: Mapping, last_good: Mapping | None, example_tokens: tuple[str, ...] = ()) -> list[Fix]:
    """The fixes for every input at fault, none undoing the last change where that leaves one, each
    checked to leave a setting the sidebar accepts (a fix of one input completed by a fix of what is
    still at fault: "12 heads + keep the first 900 tokens"); at most four."""
    for known in (last_good, None):
        keep = CHANGED_BY.get(last_change(values, known), ())
        working = [whole for fix in candidates(values, known, example_tokens)
                   if (whole := completed(values, fix, example_tokens, keep)) is not None]
        if working:
            return list(dict.fromkeys(working))[:4]
    return []


CHANGED_BY = {"d_model": ("d_model",), "n_heads": ("n_heads",), "tokens": tuple(TOKEN_BOXES)}


def candidates(values: Mapping, last_good: Mapping | None, example_tokens: tuple[str, ...]) -> list[Fix]:
    """Fixes of each input at fault on its own, in the order the inputs are drawn."""
    errors = problems(values)
    found: list[Fix] = []
    for box in TOKEN_BOXES:
        if box in errors:
            found += token_fixes(values, box, example_tokens)
    if "attention_size" in errors:
        found += size_fixes(values, last_good)
    if "n_heads" in errors:
        found += split_fixes(values, last_good)
    return found


def completed(values: Mapping, fix: Fix, example_tokens: tuple[str, ...], keep: tuple[str, ...] = (),
              depth: int = 2) -> Fix | None:
    """``fix``, joined by a fix of whatever it leaves at fault that changes none of ``keep`` (the last
    change), or None if it leaves a refused setting."""
    changed = {**values, **dict(fix.changes)}
    if not refused(changed):
        return fix
    if depth == 0:
        return None
    for more in candidates(changed, None, example_tokens):
        if any(key in keep for key, _ in more.changes):
            continue
        whole = completed(changed, more, example_tokens, keep, depth - 1)
        if whole is not None:
            return Fix(f"{fix.label} + {whole.label}", fix.changes + whole.changes)
    return None


def last_change(values: Mapping, last_good: Mapping | None) -> str | None:
    """Which of d_model, h or the tokens differs from the last drawable setting (None: several, or
    none known)."""
    if not last_good:
        return None
    tokens, kv_tokens = token_lists(values)
    now = {"d_model": int(values["d_model"]), "n_heads": int(values["n_heads"]),
           "tokens": (len(tokens), len(kv_tokens))}
    changed = [name for name, value in now.items() if last_good.get(name) != value]
    return changed[0] if len(changed) == 1 else None


def heads_fix(n_heads: int) -> Fix:
    return Fix(i18n.t("{count} heads").format(count=f"{n_heads:d}") if n_heads > 1 else i18n.t("1 head"),
               (("n_heads", n_heads),))


def d_model_fix(d_model: int) -> Fix:
    return Fix(f"d_model {d_model:d}", (("d_model", d_model),))


def own_width_fix(width: int) -> Fix:
    return Fix(i18n.t("d_k = d_v = {width} per head").format(width=f"{width:d}"),
               (("custom_head_width", True), ("d_k", width), ("d_v", width)))


def split_fixes(values: Mapping, last_good: Mapping | None) -> list[Fix]:
    """d_model / h not whole, or too wide a head: a d_model h divides, a width of one's own, or an h
    that divides d_model; none that undoes the last change (h or d_model) when it is known."""
    d_model, n_heads = int(values["d_model"]), int(values["n_heads"])
    fits = [h for h in range(1, LIMITS.n_heads + 1) if head_split_problem(d_model, h) is None]
    nearest_h = min(fits, key=lambda h: (abs(h - n_heads), h), default=None)
    wide = d_model // n_heads > LIMITS.d_head
    multiple = n_heads * (LIMITS.d_head if wide else max(1, math.ceil(d_model / n_heads)))
    keep_heads = [d_model_fix(multiple)] if multiple <= LIMITS.d_model else []
    own = [own_width_fix(max(1, min(LIMITS.d_head, d_model // n_heads)))]
    keep_d_model = [heads_fix(nearest_h)] if nearest_h is not None else []
    order = {"n_heads": (keep_heads, own), "d_model": (keep_d_model, own)}  # never undo the last change
    return [fix for group in order.get(last_change(values, last_good), (keep_heads, own, keep_d_model))
            for fix in group]


def size_fixes(values: Mapping, last_good: Mapping | None) -> list[Fix]:
    """h × n_q × n_k over the limit: fewer heads (a count the split allows) or fewer query tokens; not
    the one that undoes the last change when it is known."""
    tokens, kv_tokens = token_lists(values)
    n_heads, d_model = int(values["n_heads"]), int(values["d_model"])
    own_width = bool(values.get("custom_head_width"))
    heads = [h for h in range(n_heads - 1, 0, -1)
             if attention_size_problem(h, len(tokens), len(kv_tokens)) is None
             and (own_width or head_split_problem(d_model, h) is None)]
    fewer_heads = [heads_fix(heads[0])] if heads else []
    fewer_tokens = [tokens_fix(values, kept_tokens(n_heads, len(tokens), len(kv_tokens),
                                                   values.get("mode") == "cross-attention"))]
    order = {"n_heads": (fewer_tokens,), "tokens": (fewer_heads,)}  # never undo the last change
    return [fix for group in order.get(last_change(values, last_good), (fewer_heads, fewer_tokens))
            for fix in group]


def kept_tokens(n_heads: int, n_q: int, n_k: int, cross: bool) -> int:
    """How many query tokens fit h × n_q × n_k in the limit (n_k = n_q in self-attention)."""
    if cross:
        return max(1, min(n_q, LIMITS.attention_cells // (n_heads * n_k)))
    return max(1, min(n_q, math.isqrt(LIMITS.attention_cells // n_heads)))


def tokens_fix(values: Mapping, count: int, box: str = "tokens_text") -> Fix:
    kept = str(values.get(box, "")).split()[:count]
    return Fix(i18n.t("keep the first {count} tokens").format(count=i18n.number(count)),
               ((box, " ".join(kept)),))


def token_fixes(values: Mapping, box: str, example_tokens: tuple[str, ...]) -> list[Fix]:
    """A token box at fault: the example's tokens for an empty box, else its text cut or cleaned."""
    text = str(values.get(box, ""))
    tokens = text[:LIMITS.token_text].split()
    if not tokens:
        return [Fix(i18n.t("the example's tokens: {tokens}").format(tokens=" ".join(example_tokens)),
                    ((box, " ".join(example_tokens)),))] if example_tokens else []
    cleaned = [without_invisible(token)[:LIMITS.token_chars] for token in tokens]
    cleaned = [token for token in cleaned if token]
    if len(cleaned) > LIMITS.tokens:
        return [tokens_fix({box: " ".join(cleaned)}, LIMITS.tokens, box)]
    if cleaned != tokens:
        return [Fix(i18n.t("remove invisible characters and cut tokens to {chars} characters")
                    .format(chars=f"{LIMITS.token_chars:d}"), ((box, " ".join(cleaned)),))]
    return [Fix(i18n.t("keep the first {count} characters").format(count=i18n.number(LIMITS.token_text)),
                ((box, text[:LIMITS.token_text]),))]


# --- Drawn --------------------------------------------------------------------------------------------


def remember(sizes) -> None:
    """The drawable sizes of this run (a Sizes: a follower's page has no sidebar of its own to read),
    for the next refusal's 'last change'."""
    st.session_state[LAST_GOOD] = {"d_model": sizes.d_model, "n_heads": sizes.n_heads,
                                   "tokens": (sizes.n_q, sizes.n_k)}


def apply(changes: tuple[tuple[str, object], ...]) -> None:
    """A fix's button: the sidebar's widgets take the new values before the next run draws them."""
    for key, value in changes:
        st.session_state[key] = value


REFUSED = N_("**This setting cannot be drawn.** Nothing you typed in the grids is lost; the steps come back "
             "as soon as it is fixed, here or in the sidebar.")


def refusal_ui(errors: Mapping[str, str], example_tokens: tuple[str, ...], *,
               following: bool = False) -> None:
    """The reason for each input at fault, and the fixes as buttons, where the charts were."""
    ss = st.session_state
    values = {key: ss.get(key) for key in ("mode", "tokens_text", "kv_tokens_text", "d_model", "n_heads",
                                           "custom_head_width")}
    with st.container(border=True, key="refused_setting"):
        st.markdown(i18n.t(REFUSED))
        for message in errors.values():
            st.error(lit(message), icon=":material/warning:")
        if following or values["d_model"] is None or values["n_heads"] is None:
            return
        fixes = fixes_for(values, ss.get(LAST_GOOD), example_tokens)
        if not fixes:
            return
        st.markdown(i18n.t("**One click fixes it:**"))
        for column, (position, fix) in zip(st.columns(len(fixes)), enumerate(fixes), strict=True):
            column.button(lit(fix.label), key=f"setting_fix_{position}", on_click=apply, args=(fix.changes,),
                          width="stretch")
