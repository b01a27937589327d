"""The sidebar's inputs: tokens, sizes and options, read into plain ``Inputs`` with a message per
input at fault; kept while they are not drawn, and read from an ``Unseen`` while a student follows
a room."""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.adapter import streamlit_door
from app.safe import lit
from app.session import session_keys, state
from app.session.this_run import Inputs
from app.setting_fixes import head_split_problem, token_text_problem
from course.i18n import N_, number_marks
from mha_core import LIMITS, Scaling, Sizes, head_width
from mha_core.setup import attention_size_problem
from mha_core.typed_number import Refused, read_cell

SCALE_KINDS = {"sqrt": N_("1/√d_k (standard)"), "none": N_("none (raw scores)"),
               "sqrt_of": N_("1/√d for a d you choose"), "multiply": N_("multiply by a number")}
MASK_LABELS = {"none": N_("none"), "causal": N_("causal (no peeking ahead)"),
               "window": N_("sliding window (the last w tokens)"), "custom": N_("custom grid")}
# A kept g keeps its label when h changes: a browser sends a selectbox's label back, and shows the old
# label of a kept value whose label changed.
KV_HEAD_LABELS = {"all": N_("{g} (standard: one per head)"),
                  "one": N_("{g} (multi-query: all heads share it)"), "some": N_("{g} (grouped-query)")}
MODE_LABELS = {"self-attention": N_("self-attention"), "cross-attention": N_("cross-attention")}
MODES = tuple(MODE_LABELS)


SIDEBAR_KEYS = state.SIDEBAR_KEYS  # the widgets' keys, registered in app/session/state.py (state.MODE, ...)
KV_HEADS_FOR = state.KV_HEADS_FOR
# The multiplier as a reader with a decimal comma types it ("0,5"): Streamlit's number box writes a point
# in every language. The number itself stays under state.SCALE_MULTIPLIER, as every language keeps it.
MULTIPLIER_TEXT = "scale_multiplier_text"
MULTIPLIER_SHOWN = "scale_multiplier_shown"  # the number the text box was last written with or read as
session_keys.register(session_keys.Key(MULTIPLIER_TEXT, __name__),
                      session_keys.Key(MULTIPLIER_SHOWN, __name__))
MULTIPLIER_REFUSED = N_("{typed} is not a number this box takes: type one from {low} to {high}, e.g. "
                        "{example}. It keeps {kept}.")


def sidebar_values() -> dict:
    """What the sidebar's inputs hold now (to keep while they are not drawn: see Unseen)."""
    ss = st.session_state
    return {key: ss[key] for key in SIDEBAR_KEYS if ss.get(key) is not None}


def restore_sidebar(values: dict) -> None:
    """Put kept values back into the inputs (Streamlit dropped them while they were not drawn)."""
    for key, value in values.items():
        st.session_state[key] = value


class Unseen:
    """Stands in for st.sidebar while a student follows a room: each input returns the value kept
    for its key and nothing is drawn. The teacher's next change would overwrite anything typed
    there, and when the teacher changes something the whole class reruns at once, so every
    element a follower does not need is work saved a hundred times."""

    def __init__(self, values: dict):
        self._values = values

    def radio(self, label, options, *, key: str, **kwargs):
        return self._values.get(key, list(options)[0])

    def number_input(self, label, low, high, *, key: str, **kwargs):
        return self._values.get(key, low)

    def checkbox(self, label, *, key: str, **kwargs) -> bool:
        return bool(self._values.get(key, False))

    def text_input(self, label, *, key: str, **kwargs) -> str:
        return str(self._values.get(key, ""))

    selectbox, toggle = radio, checkbox

    def columns(self, spec, **kwargs) -> list[Unseen]:
        return [self] * (spec if isinstance(spec, int) else len(spec))

    def caption(self, *args, **kwargs) -> None:
        """Not drawn."""

    error = button = warning = caption


def sidebar_ui(sb=None) -> Inputs:
    """Tokens, sizes and options (in st.sidebar, or read from an Unseen). Returns them with a
    message per input at fault."""
    sb = st.sidebar if sb is None else sb
    errors: dict[str, str] = {}
    refused = streamlit_door.refused_values()  # values sent that Streamlit could not read (NaN to d_model)
    mode = sb.radio(i18n.t("Attention"), MODES, key=state.MODE, horizontal=True,
                    format_func=i18n.labels(MODE_LABELS))
    cross = mode == "cross-attention"
    tokens = _tokens_ui(sb, i18n.t("Tokens (queries)"), "tokens_text", errors)
    kv_tokens = (_tokens_ui(sb, i18n.t("Tokens (keys and values)"), "kv_tokens_text", errors) if cross
                 else tokens)
    d_model = int(sb.number_input("d_model", 1, LIMITS.d_model, key=state.D_MODEL, step=1))
    refused_note(sb, state.D_MODEL, refused)
    n_heads = int(sb.number_input(i18n.t("heads h"), 1, LIMITS.n_heads, key=state.N_HEADS, step=1))
    refused_note(sb, state.N_HEADS, refused)
    too_big = attention_size_problem(n_heads, len(tokens), len(kv_tokens)) if tokens and kv_tokens else None
    if too_big:
        errors["attention_size"] = too_big
        sb.error(lit(too_big), icon=":material/warning:")
    d_k = d_v = None
    if sb.checkbox(i18n.t("set d_k and d_v myself"), key=state.CUSTOM_HEAD_WIDTH):
        d_k = int(sb.number_input("d_k", 1, LIMITS.d_head, key=state.D_K, step=1))
        refused_note(sb, state.D_K, refused)
        d_v = int(sb.number_input("d_v", 1, LIMITS.d_head, key=state.D_V, step=1))
        refused_note(sb, state.D_V, refused)
    else:
        problem = head_split_problem(d_model, n_heads)
        if problem:
            errors["n_heads"] = problem
            sb.error(lit(problem), icon=":material/warning:")
        else:
            d_k = d_v = head_width(d_model, n_heads)
            sb.caption(i18n.t("d_k = d_v = d_model / h = {d_k}").format(d_k=f"{d_k:d}"))
    seed = _seed_ui(sb)
    refused_note(sb, state.SEED, refused)
    scaling = _scaling_ui(sb, errors)
    refused_note(sb, state.SCALE_SQRT_OF, refused)
    refused_note(sb, state.SCALE_MULTIPLIER, refused)
    kv_heads = _kv_heads_ui(sb, n_heads)
    mask_kind = sb.selectbox(i18n.t("Mask"), list(MASK_LABELS), key=state.MASK_KIND,
                             format_func=i18n.labels(MASK_LABELS))
    window = 2
    if mask_kind == "window":
        st.session_state.setdefault(state.WINDOW_SIZE, 2)
        window = int(sb.number_input(i18n.t("window w: tokens each query sees (itself included)"), 1,
                                     LIMITS.tokens, key=state.WINDOW_SIZE, step=1))
    refused_note(sb, state.WINDOW_SIZE, refused)
    use_bias = sb.checkbox(i18n.t("biases b_Q, b_K, b_V, b_O"), key=state.USE_BIAS)
    large = sb.toggle(i18n.t("large type (projector)"), key=state.LARGE_TYPE,
                      help=i18n.t("Bigger numbers, labels and cells, for the back of a room."))
    for key in list(refused):  # a widget elsewhere on the page (or one no longer drawn)
        refused_note(sb, key, refused, named=True)
    sizes = None
    if not errors:
        sizes = Sizes(n_q=len(tokens), n_k=len(kv_tokens), d_model=d_model, n_heads=n_heads, d_k=d_k, d_v=d_v,
                      cross=cross, bias=use_bias, kv_heads=kv_heads if kv_heads < n_heads else 0)
    return Inputs(tokens, kv_tokens, sizes, seed, scaling, mask_kind, large, errors, window)


def refused_note(sb, key: str, refused: dict[str, str], named: bool = False) -> None:
    """Under the input keyed key (or, named, anywhere in the sidebar): the value sent for it that Streamlit
    could not read or that is outside its bounds, refused (the input kept what it held)."""
    if key not in refused:
        return
    sent = refused.pop(key)
    text = (i18n.t("A value sent for {name} ({sent}) is not one it accepts and was refused; nothing changed.")
            if named else i18n.t("The value sent for this box ({sent}) is not one it accepts and was "
                                 "refused; it keeps {kept}."))
    kept = st.session_state.get(key)
    if isinstance(kept, (int, float)):
        kept = i18n.number(kept) if isinstance(kept, int) else i18n.numbers_in(f"{kept:g}")
    sb.warning(lit(text.format(name=key, sent=sent, kept=kept)), icon=":material/warning:")


def _kv_heads_ui(sb, n_heads: int) -> int:
    """Key/value heads g, a divisor of h (h: standard multi-head attention, 1: multi-query attention)."""
    choices = [g for g in range(n_heads, 0, -1) if n_heads % g == 0]  # h first: the standard
    ss = st.session_state
    standard_before = ss.get(state.KV_HEADS) == ss.get(KV_HEADS_FOR, n_heads)  # g was h before h changed
    # standard stays standard; else it must divide
    if ss.get(state.KV_HEADS) not in choices or standard_before:
        ss[state.KV_HEADS] = n_heads
    ss[KV_HEADS_FOR] = n_heads

    words = {kind: i18n.t(text) for kind, text in KV_HEAD_LABELS.items()}  # this run's language, kept

    def label(g: int) -> str:  # also called outside the run (AppTest, the widget's serde): no i18n.t here
        kind = "all" if g == n_heads else "one" if g == 1 else "some"
        return words[kind].format(g=f"{g:d}")

    g = sb.selectbox(i18n.t("key/value heads g"), choices, key=state.KV_HEADS, format_func=label,
                     help=i18n.t("Grouped-query attention, as in today's language models: g key/value heads, "
                                 "each shared by h/g query heads, make the KV cache h/g times smaller."))
    return g if g in choices else n_heads


def _tokens_ui(sb, label: str, key: str, errors: dict) -> list[str]:
    # max_chars also makes the server keep no more of what a client sends; its "30/41984" counter under
    # the box is hidden (app/style.py).
    text = sb.text_input(label, key=key, max_chars=LIMITS.token_text,
                         help=i18n.t("Separated by spaces; repeats are fine. Up to {tokens} tokens of "
                                     "{chars} characters.").format(tokens=f"{LIMITS.tokens:d}",
                                                                   chars=f"{LIMITS.token_chars:d}"))
    tokens = str(text)[:LIMITS.token_text + 1].split()  # a client can send more than max_chars
    problem = token_text_problem(str(text), "query tokens" if key == "tokens_text" else "key/value tokens")
    if problem:
        errors[key] = problem
        sb.error(lit(problem), icon=":material/warning:")
    return tokens


def _seed_ui(sb) -> int:
    def reroll():
        import secrets

        st.session_state[state.SEED] = secrets.randbelow(10_000)

    left, right = sb.columns([3, 2], vertical_alignment="bottom")
    seed = left.number_input(i18n.t("random seed"), 0, 1_000_000, key=state.SEED, step=1,
                             help=i18n.t("Fills new cells and the 'fill a matrix' helper; the same seed "
                                         "gives the same numbers."))
    right.button(i18n.t("re-roll"), icon=":material/casino:", on_click=reroll,
                 help=i18n.t("A new seed for the random fills."))
    return int(seed)


def _scaling_ui(sb, errors: dict) -> Scaling | None:
    kind = sb.selectbox(i18n.t("Scaling"), list(SCALE_KINDS), key=state.SCALE_KIND,
                        format_func=i18n.labels(SCALE_KINDS),
                        help=i18n.t("Chapter 001, example F: without 1/√d_k large scores make softmax nearly "
                                    "one-hot."))
    value = None
    if kind == "sqrt_of":
        low, high = LIMITS.sqrt_of
        st.session_state.setdefault(state.SCALE_SQRT_OF, 64)
        value = int(sb.number_input(i18n.t("d in 1/√d"), low, high, key=state.SCALE_SQRT_OF, step=1))
    elif kind == "multiply":
        value = _multiplier_ui(sb)
    try:
        return Scaling(kind, value)
    except ValueError as error:
        errors["scale_kind"] = str(error)
        sb.error(lit(error), icon=":material/warning:")
        return None


def _multiplier_ui(sb) -> float:
    """The number the scores are multiplied by, written and read the reader's way: Streamlit's number box
    where the language writes a decimal point, else a text box read by the one reader of typed numbers
    (mha_core/typed_number.py: "0,5" and "0.5" are both 0.5)."""
    low, high = LIMITS.multiplier
    ss = st.session_state
    ss.setdefault(state.SCALE_MULTIPLIER, 1.0)
    label = i18n.t("multiply the scores by")
    if isinstance(sb, Unseen) or number_marks(i18n.language())[0] == ".":
        return float(sb.number_input(label, low, high, key=state.SCALE_MULTIPLIER, step=0.1, format="%g"))
    kept = float(ss[state.SCALE_MULTIPLIER])
    ss[state.SCALE_MULTIPLIER] = kept  # a value of its own while no number box holds it: it outlives the run
    if MULTIPLIER_TEXT not in ss or ss.get(MULTIPLIER_SHOWN) != kept:
        ss[MULTIPLIER_TEXT] = _written(kept)  # new, or changed elsewhere (a link, Undo, a room, a fix)
        ss[MULTIPLIER_SHOWN] = kept
    sb.text_input(label, key=MULTIPLIER_TEXT, on_change=_take_typed_multiplier)
    typed = ss[MULTIPLIER_TEXT]
    if _typed_multiplier(typed) is None:
        sb.error(lit(i18n.t(MULTIPLIER_REFUSED).format(
            typed=str(typed).strip()[:30], low=_written(low), high=_written(high), example=_written(0.5),
            kept=_written(kept))), icon=":material/warning:")
    return kept


def _take_typed_multiplier() -> None:
    """The text box's change: a number it takes becomes the multiplier (before the run that follows)."""
    value = _typed_multiplier(st.session_state.get(MULTIPLIER_TEXT))
    if value is not None:
        st.session_state[state.SCALE_MULTIPLIER] = st.session_state[MULTIPLIER_SHOWN] = value


def _typed_multiplier(text) -> float | None:
    """A typed multiplier, or None where it is not a number within LIMITS.multiplier."""
    low, high = LIMITS.multiplier
    try:
        value = read_cell(str(text), limit=high)
    except Refused:
        return None
    return value if value >= low else None


def _written(value: float) -> str:
    """A multiplier as the reader writes it and the text box reads it back ('0,5'; never grouped: '1000')."""
    return i18n.numbers_in(f"{value:g}")
