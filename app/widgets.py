"""*_ui() functions: draw widgets, return plain values. No maths here beyond checking inputs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from app import state
from app.state import LIMITS, Shapes
from mha_core import head_width
from mha_core.init import FILLS

SCALE_MODES = {"sqrt": "1/√d_k (standard)", "none": "none (raw scores)", "temperature": "1/temperature"}
MASK_KINDS = {"none": "none", "causal": "causal (no peeking ahead)", "custom": "custom grid"}


@dataclass(frozen=True)
class Inputs:
    """Everything the sidebar decided, as plain values."""

    tokens: list[str]
    kv_tokens: list[str]
    shapes: Shapes | None  # None while a size is invalid
    seed: int
    scale: str | float
    mask_kind: str
    errors: dict  # widget name -> message shown next to it


def tokens_of(text: str) -> list[str]:
    return text.split()


def sidebar_ui() -> Inputs:
    """The preset picker, tokens, sizes and options. Returns them with any size errors."""
    sb = st.sidebar
    sb.selectbox("Preset", state.preset_names(), key="preset", format_func=state.preset_label,
                 on_change=state.load_preset, help="Every worked example of the textbook, or a random "
                 "or blank start.")
    errors: dict[str, str] = {}
    mode = sb.radio("Attention", ["self-attention", "cross-attention"], key="mode", horizontal=True)
    cross = mode == "cross-attention"
    tokens = tokens_of(sb.text_input("Tokens (queries)", key="tokens_text",
                                     help="Separated by spaces; repeats are fine."))
    _check_tokens("tokens_text", tokens, errors, sb)
    kv_tokens = tokens
    if cross:
        kv_tokens = tokens_of(sb.text_input("Tokens (keys and values)", key="kv_tokens_text"))
        _check_tokens("kv_tokens_text", kv_tokens, errors, sb)
    d_model = sb.number_input("d_model", 1, LIMITS.d_model, key="d_model", step=1)
    n_heads = sb.number_input("heads h", 1, LIMITS.n_heads, key="n_heads", step=1)
    custom = sb.checkbox("set d_k and d_v myself", key="custom_head_width")
    if custom:
        d_k = sb.number_input("d_k", 1, LIMITS.d_head, key="d_k", step=1)
        d_v = sb.number_input("d_v", 1, LIMITS.d_head, key="d_v", step=1)
    else:
        try:
            d_k = d_v = head_width(int(d_model), int(n_heads))
            sb.caption(f"d_k = d_v = d_model / h = {d_k}")
        except ValueError as error:
            errors["n_heads"] = str(error)
            sb.error(str(error), icon="⚠️")
            d_k = d_v = None
    if not custom and d_k is not None and d_k > LIMITS.d_head:
        errors["n_heads"] = f"d_k = {d_k} is over the limit {LIMITS.d_head}: use more heads."
        sb.error(errors["n_heads"])
    seed = _seed_ui(sb)
    scale = _scale_ui(sb)
    mask_kind = sb.selectbox("Mask", list(MASK_KINDS), key="mask_kind", format_func=MASK_KINDS.get)
    use_bias = sb.checkbox("biases b_Q, b_K, b_V, b_O", key="use_bias")
    shapes = None
    if not errors and d_k is not None:
        shapes = Shapes(len(tokens), len(kv_tokens), int(d_model), int(n_heads), int(d_k), int(d_v),
                        cross, use_bias)
    return Inputs(tokens, kv_tokens, shapes, seed, scale, mask_kind, errors)


def _check_tokens(key: str, tokens: list[str], errors: dict, where) -> None:
    if not tokens:
        errors[key] = "Type at least one token (words separated by spaces)."
    elif len(tokens) > LIMITS.tokens:
        errors[key] = (f"{len(tokens)} tokens is over the limit of {LIMITS.tokens}: the grids would be "
                       "too large to read. Remove some tokens.")
    if key in errors:
        where.error(errors[key], icon="⚠️")


def _seed_ui(sb) -> int:
    st.session_state.setdefault("seed", 0)

    def reroll():
        st.session_state.seed = int(np.random.default_rng().integers(0, 10_000))

    left, right = sb.columns([3, 2], vertical_alignment="bottom")
    seed = left.number_input("random seed", 0, 1_000_000, key="seed", step=1)
    right.button("🎲 re-roll", on_click=reroll, help="A new seed for the random fills.")
    return int(seed)


def _scale_ui(sb) -> str | float:
    mode = sb.selectbox("Scaling", list(SCALE_MODES), key="scale_mode", format_func=SCALE_MODES.get,
                        help="Seed 001 example F: without 1/√d_k large scores make softmax nearly one-hot.")
    if mode != "temperature":
        return mode
    temperature = sb.number_input("temperature T (scores × 1/T)", min_value=0.001, max_value=1000.0,
                                  key="temperature", step=0.1, format="%.3f")
    return 1.0 / float(temperature)


def fill_ui(shapes: Shapes, seed: int) -> None:
    """Fill a chosen matrix (or one head of it) with random, identity/select or zeros."""
    with st.sidebar.expander("Fill a matrix", expanded=False):
        targets = ["x"] + (["x_kv"] if shapes.cross else []) + ["w_q", "w_k", "w_v", "w_o"]
        target = st.selectbox("matrix", targets, key="fill_target", format_func=MATRIX_LABELS.get)
        head = None
        if target.startswith("w_") and target != "w_o":
            heads = ["all heads"] + [f"head {i + 1}" for i in range(shapes.n_heads)]
            chosen = st.selectbox("which head", heads, key="fill_head")
            head = None if chosen == "all heads" else heads.index(chosen) - 1
        kind = st.radio("with", FILLS, key="fill_kind", horizontal=True)
        st.button("Fill", key="fill_go", on_click=state.fill_matrix, args=(target, kind, seed, head))


MATRIX_LABELS = {"x": "X (embeddings)", "x_kv": "X_kv (key/value embeddings)", "w_q": "W_Q", "w_k": "W_K",
                 "w_v": "W_V", "w_o": "W_O", "b_q": "b_Q", "b_k": "b_K", "b_v": "b_V", "b_o": "b_O",
                 "mask": "mask"}


def md_literal(text: str) -> str:
    """Text for st.markdown/st.error shown literally: every ASCII punctuation mark backslash-escaped."""
    return "".join("\\" + c if c.isascii() and not c.isalnum() and not c.isspace() else c
                   for c in str(text))


def row_labels(tokens: list[str]) -> list[str]:
    """Unique, literal row labels for editors: '1 · the', '5 · the'."""
    return [f"{i + 1} · {token}" for i, token in enumerate(tokens)]


def matrix_problem(values: np.ndarray, name: str, rows: list[str] | None = None) -> str | None:
    """A message for an empty or non-finite cell, naming where it is; None when all is well."""
    bad = np.argwhere(~np.isfinite(values))
    if bad.size == 0:
        return None
    index = tuple(int(i) for i in bad[0])
    where = f"row {md_literal(rows[index[-2]])}, column {index[-1] + 1}" if rows and values.ndim >= 2 else (
        f"entry {index[-1] + 1}")
    what = "is empty" if np.isnan(values[index]) else "is infinite"
    more = f" ({len(bad)} cells in all)" if len(bad) > 1 else ""
    return (f"{MATRIX_LABELS.get(name, name)}: the cell at {where} {what}{more}. Type a finite number; "
            "the other matrices keep their values and the steps below come back once it is fixed.")


def editor_ui(name: str, rows: list[str], *, head: int | None = None, col_prefix: str = "",
              boolean: bool = False) -> None:
    """An st.data_editor on the matrix's base (one head of it for per-head matrices); its edits
    are read back through session state (state.current_value), never from its return value."""
    base = st.session_state.bases[name]
    base2d = state.as_grid(base[head] if head is not None else base)
    n_rows, n_cols = base2d.shape
    if max(n_rows, n_cols) > LIMITS.editable:
        st.caption(f"{n_rows} × {n_cols}: too large to edit cell by cell (limit {LIMITS.editable}); "
                   "use 'Fill a matrix' in the sidebar.")
        return
    frame = pd.DataFrame(base2d.astype(bool) if boolean else base2d,
                         columns=[f"c{j}" for j in range(n_cols)], index=rows)
    config = {f"c{j}": (st.column_config.CheckboxColumn(f"{col_prefix}{j + 1}") if boolean
                        else st.column_config.NumberColumn(f"{col_prefix}{j + 1}", format="%.4g"))
              for j in range(n_cols)}
    key = state.editor_key(name, head)
    st.data_editor(frame, key=key, column_config=config, width="content", on_change=state.keep_edits,
                   args=(name, key))


SAVE_LIMIT = 40_000  # numbers; about 0.8 MB of JSON, inside the 1 MB upload limit


def save_load_ui(setup_json, n_numbers: int) -> None:
    """Download the current setup as JSON; upload one back. setup_json: () -> str, run on click."""
    with st.sidebar.expander("Save or load this setup", expanded=False):
        too_big = n_numbers > SAVE_LIMIT
        st.download_button("⬇ Download as JSON", data=setup_json, file_name="attention-setup.json",
                           mime="application/json", key="setup_download", on_click="ignore",
                           disabled=too_big)
        if too_big:
            st.caption(f"{n_numbers:,} numbers is too many to save as a file (limit {SAVE_LIMIT:,}); "
                       "share the page's link instead, e.g. ?preset=<example>.")
        st.file_uploader("Load a saved setup", type=["json"], key="setup_file", max_upload_size=1,
                         on_change=state.load_uploaded)
        message = st.session_state.get("load_message")
        if message:
            st.error(f"Could not load {md_literal(message)}. Nothing on the page was changed.", icon="⚠️")
