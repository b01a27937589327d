"""*_ui() functions: draw widgets, return plain values. No maths here beyond checking inputs.

Selections that name a token, a head or a cell use ``choice_ui``: a browser sends a
selectbox's value back as its label text, which goes stale when the labels change (new
tokens, another h), so the position is kept in ``selections`` and the widget only shows it.
"""

from __future__ import annotations

import streamlit as st

from app import editors, i18n, page_export, session_keys, state
from app.charts import chart_tables, chart_text, number_text
from app.safe import lit, md
from app.state import Inputs
from course.export import setup_to_csv_zip, setup_to_script
from course.i18n import N_
from mha_core import LIMITS, Scaling, Sizes, head_width
from mha_core.codec import save_problem, setup_to_json
from mha_core.init import FILLS
from mha_core.setup import SPECS, attention_size_problem, token_problem

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
FILL_LABELS = {"random": N_("random"), "identity": N_("identity"), "zeros": N_("zeros")}  # mha_core's FILLS


IMAGE_FORMATS = ("png", "svg")  # what the camera button of every chart's modebar downloads
IMAGE_FORMAT = "image_format"  # the format chosen, kept while the radio that chose it is not drawn
IMAGE_FORMAT_CHOICE = "image_format_choice"  # that radio's own key
FILL_OPEN, SAVE_LOAD_OPEN = "fill_open", "save_load_open"  # the sidebar's two expanders, open or not
EDIT_PROJECTIONS, EDIT_OUTPUT_MIX = "edit_projections", "edit_output_mix"  # steps 2 and 7's Edit toggles
session_keys.register(session_keys.Key(EDIT_PROJECTIONS, "widgets", False),
                      session_keys.Key(EDIT_OUTPUT_MIX, "widgets", False),
                      session_keys.Key(IMAGE_FORMAT, "widgets", "png"),
                      session_keys.Key(IMAGE_FORMAT_CHOICE, "widgets"),
                      session_keys.Key(FILL_OPEN, "widgets", False),
                      session_keys.Key(SAVE_LOAD_OPEN, "widgets", False))


# The session keys this module owns (app/session_keys.py).
session_keys.register(*(session_keys.Key(name, "widgets") for name in ("editor_frames", "load_message")))


def image_format() -> str:
    chosen = st.session_state.get(IMAGE_FORMAT)
    return chosen if chosen in IMAGE_FORMATS else "png"
# The camera and "reset axes" only (dragging still zooms, a double click resets): plotly's eight buttons
# ran 190 px along the chart's top and covered the right-hand panels' titles; two fit beside them.
MODEBAR_BUTTONS = [["toImage", "resetScale2d"]]


def chart(fig, key: str, text: str | chart_text.ChartText | None = None) -> None:
    """A plotly figure whose modebar camera downloads it (made in the browser, offline) as a PNG
    at twice the screen's resolution or as an SVG, named after the chart.

    Its text alternative: a summary in words (``text``, or read from the figure) is the chart's
    accessible name, and "Numbers as a table" beside it shows the summary and every number, built
    only while it is open."""
    chosen = image_format()
    options = {"format": chosen, "filename": key.removeprefix("chart_")}
    if chosen == "png":
        options["scale"] = 2
    language = i18n.language()  # the summary and tables in the reader's language, whoever built the figure
    about = text if isinstance(text, chart_text.ChartText) else (
        chart_text.described(text, fig, language) if text else chart_text.of_figure(fig, language))
    config = {"displaylogo": False, "toImageButtonOptions": options, "modeBarButtons": MODEBAR_BUTTONS}
    st.plotly_chart(i18n.localized_figure(fig), key=key, config=config, alt=about.summary)
    numbers_ui(about, key)


def numbers_ui(about: chart_text.ChartText, key: str) -> None:
    """A chart's summary and numbers in a closed expander; its contents run only while it is open."""
    with st.expander(lit(i18n.t(chart_tables.TABLE_LABEL)), key=f"{key}_numbers", on_change="rerun",
                     type="compact", icon=":material/table:") as box:
        if box.open:
            st.caption(lit(about.summary))
            st.markdown(chart_tables.table_html(about.tables()), unsafe_allow_html=True)


def following() -> bool:
    """This session shows a room's page as its teacher does (app/room/door.py sets the flag on joining a
    room and drops it on leaving, so it implies being in one)."""
    return bool(st.session_state.get("following"))


WHOSE_EDIT = {  # (the numbers below?, following a room?) -> whose numbers an edited example shows
    (False, False): N_("(edited: the numbers are yours, not the chapter's)"),
    (False, True): N_("(edited by your teacher: the numbers are the teacher's, not the chapter's)"),
    (True, False): N_("(edited: the numbers below are yours, not the chapter's)"),
    (True, True): N_("(edited by your teacher: the numbers below are the teacher's, not the chapter's)"),
}


def whose_edit(below: bool = False) -> str:
    """' (edited: the numbers are yours, not the chapter's)'; a student following a room is told
    they are the teacher's."""
    return " " + i18n.t(WHOSE_EDIT[below, following()])


def choice_ui(where, label: str, labels: list[str], name: str, *, default: int = 0,
              segmented: bool = False, **kwargs) -> int:
    """A selectbox (or segmented control) over ``labels``, returning the chosen position.

    The position lives in ``selections[name]``: kept while it is valid, reset to ``default``
    with a note when the options no longer reach it, whatever the widget sent back.
    """
    ss = st.session_state
    key = f"pick_{name}"
    chosen = ss.get(key)
    position = ss.selections.get(name, default)
    if chosen in labels:
        position = labels.index(chosen)
    elif not 0 <= position < len(labels):
        if name in ss.selections:
            where.caption(i18n.t("{label}: the earlier choice is gone with the new inputs; showing {shown}.")
                          .format(label=lit(label), shown=lit(labels[default])))
        position = default
    ss.selections[name] = position
    ss[key] = labels[position]
    if segmented:
        where.segmented_control(label, labels, key=key, required=True, format_func=lit, **kwargs)
    else:
        where.selectbox(label, labels, key=key, **kwargs)
    return position


SIDEBAR_KEYS = ("mode", "tokens_text", "kv_tokens_text", "d_model", "n_heads", "custom_head_width", "d_k",
                "d_v", "seed", "scale_kind", "scale_sqrt_of", "scale_multiplier", "mask_kind", "use_bias",
                "large_type", "kv_heads", "window_size")
session_keys.register(*(session_keys.Key(name, "sidebar") for name in SIDEBAR_KEYS))
KV_HEADS_FOR = "kv_heads_for"  # the h the key/value heads were chosen for: standard (g = h) follows h
session_keys.register(session_keys.Key(KV_HEADS_FOR, "sidebar"))


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

    error = button = caption


def sidebar_ui(sb=None) -> Inputs:
    """Tokens, sizes and options (in st.sidebar, or read from an Unseen). Returns them with a
    message per input at fault."""
    sb = st.sidebar if sb is None else sb
    errors: dict[str, str] = {}
    mode = sb.radio(i18n.t("Attention"), MODES, key="mode", horizontal=True,
                    format_func=i18n.labels(MODE_LABELS))
    cross = mode == "cross-attention"
    tokens = _tokens_ui(sb, i18n.t("Tokens (queries)"), "tokens_text", errors)
    kv_tokens = (_tokens_ui(sb, i18n.t("Tokens (keys and values)"), "kv_tokens_text", errors) if cross
                 else tokens)
    d_model = int(sb.number_input("d_model", 1, LIMITS.d_model, key="d_model", step=1))
    n_heads = int(sb.number_input(i18n.t("heads h"), 1, LIMITS.n_heads, key="n_heads", step=1))
    too_big = attention_size_problem(n_heads, len(tokens), len(kv_tokens)) if tokens and kv_tokens else None
    if too_big:
        errors["attention_size"] = too_big
        sb.error(lit(too_big), icon=":material/warning:")
    d_k = d_v = None
    if sb.checkbox(i18n.t("set d_k and d_v myself"), key="custom_head_width"):
        d_k = int(sb.number_input("d_k", 1, LIMITS.d_head, key="d_k", step=1))
        d_v = int(sb.number_input("d_v", 1, LIMITS.d_head, key="d_v", step=1))
    else:
        try:
            d_k = d_v = head_width(d_model, n_heads)
            if d_k > LIMITS.d_head:
                errors["n_heads"] = i18n.t("d_k = {d_k} is over the limit {limit}: use more heads.").format(
                    d_k=f"{d_k:d}", limit=f"{LIMITS.d_head:d}")
            else:
                sb.caption(i18n.t("d_k = d_v = d_model / h = {d_k}").format(d_k=f"{d_k:d}"))
        except ValueError as error:
            errors["n_heads"] = str(error)
        if "n_heads" in errors:
            sb.error(lit(errors["n_heads"]), icon=":material/warning:")
    seed = _seed_ui(sb)
    scaling = _scaling_ui(sb, errors)
    kv_heads = _kv_heads_ui(sb, n_heads)
    mask_kind = sb.selectbox(i18n.t("Mask"), list(MASK_LABELS), key="mask_kind",
                             format_func=i18n.labels(MASK_LABELS))
    window = 2
    if mask_kind == "window":
        st.session_state.setdefault("window_size", 2)
        window = int(sb.number_input(i18n.t("window w: tokens each query sees (itself included)"), 1,
                                     LIMITS.tokens, key="window_size", step=1))
    use_bias = sb.checkbox(i18n.t("biases b_Q, b_K, b_V, b_O"), key="use_bias")
    large = sb.toggle(i18n.t("large type (projector)"), key="large_type",
                      help=i18n.t("Bigger numbers, labels and cells, for the back of a room."))
    sizes = None
    if not errors:
        sizes = Sizes(n_q=len(tokens), n_k=len(kv_tokens), d_model=d_model, n_heads=n_heads, d_k=d_k, d_v=d_v,
                      cross=cross, bias=use_bias, kv_heads=kv_heads if kv_heads < n_heads else 0)
    return Inputs(tokens, kv_tokens, sizes, seed, scaling, mask_kind, large, errors, window)


def _kv_heads_ui(sb, n_heads: int) -> int:
    """Key/value heads g, a divisor of h (h: standard multi-head attention, 1: multi-query attention)."""
    choices = [g for g in range(n_heads, 0, -1) if n_heads % g == 0]  # h first: the standard
    ss = st.session_state
    standard_before = ss.get("kv_heads") == ss.get(KV_HEADS_FOR, n_heads)  # g was h before h changed
    if ss.get("kv_heads") not in choices or standard_before:  # standard stays standard; else it must divide
        ss.kv_heads = n_heads
    ss[KV_HEADS_FOR] = n_heads

    words = {kind: i18n.t(text) for kind, text in KV_HEAD_LABELS.items()}  # this run's language, kept

    def label(g: int) -> str:  # also called outside the run (AppTest, the widget's serde): no i18n.t here
        kind = "all" if g == n_heads else "one" if g == 1 else "some"
        return words[kind].format(g=f"{g:d}")

    g = sb.selectbox(i18n.t("key/value heads g"), choices, key="kv_heads", format_func=label,
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
    problem = token_problem(tokens, "query tokens" if key == "tokens_text" else "key/value tokens")
    if len(str(text)) > LIMITS.token_text:
        problem = i18n.t("{count} characters is over the limit of {limit}.").format(
            count=i18n.number(len(str(text))), limit=i18n.number(LIMITS.token_text))
    if problem:
        errors[key] = problem
        sb.error(lit(problem), icon=":material/warning:")
    return tokens


def _seed_ui(sb) -> int:
    def reroll():
        import secrets

        st.session_state.seed = secrets.randbelow(10_000)

    left, right = sb.columns([3, 2], vertical_alignment="bottom")
    seed = left.number_input(i18n.t("random seed"), 0, 1_000_000, key="seed", step=1,
                             help=i18n.t("Fills new cells and the 'fill a matrix' helper; the same seed "
                                         "gives the same numbers."))
    right.button("🎲 " + i18n.t("re-roll"), on_click=reroll, help=i18n.t("A new seed for the random fills."))
    return int(seed)


def _scaling_ui(sb, errors: dict) -> Scaling | None:
    kind = sb.selectbox(i18n.t("Scaling"), list(SCALE_KINDS), key="scale_kind",
                        format_func=i18n.labels(SCALE_KINDS),
                        help=i18n.t("Chapter 001, example F: without 1/√d_k large scores make softmax nearly "
                                    "one-hot."))
    value = None
    if kind == "sqrt_of":
        low, high = LIMITS.sqrt_of
        st.session_state.setdefault("scale_sqrt_of", 64)
        value = int(sb.number_input(i18n.t("d in 1/√d"), low, high, key="scale_sqrt_of", step=1))
    elif kind == "multiply":
        low, high = LIMITS.multiplier
        st.session_state.setdefault("scale_multiplier", 1.0)
        value = float(sb.number_input(i18n.t("multiply the scores by"), low, high, key="scale_multiplier",
                                      step=0.1, format="%g"))
    try:
        return Scaling(kind, value)
    except ValueError as error:
        errors["scale_kind"] = str(error)
        sb.error(lit(error), icon=":material/warning:")
        return None


EDITED_NOTE = N_("✎ **Edited**: the numbers on the page differ from the example's.")


def picker_ui(slot, current: state.Current) -> None:
    """The example picker, naming what is on screen: 'A: single head (edited)', 'your setup'.

    Picking an example loads it exactly, so picking the one shown again resets it; Reset does the
    same while the page differs from its example.
    """
    ss = st.session_state
    origin = ss.origin
    titles = example_titles()  # the options are the English titles, each shown in the reader's language
    shown = _shown_option(current)
    options = ([shown] if shown not in titles.values() else []) + list(titles.values())
    words = {option: option for option in options}  # each label in this run's language, whenever asked for
    if shown not in titles.values():
        words[shown] = shown_label(current)  # 'A: ... (edited)' or 'your setup', already translated
    ss.example_picker = shown
    slot.selectbox(i18n.t("Example"), options, key="example_picker", on_change=_picked, args=(titles,),
                   format_func=i18n.labels(words),
                   help=i18n.t("Every worked example of the course, or a random or blank start. Picking the "
                               "one shown again resets it."))
    if current.edited:  # the box cuts its label's end, "(edited)", at the sidebar's width: say it here
        slot.caption(i18n.t(EDITED_NOTE))
    if current.edited and origin in titles:
        slot.button(i18n.t("↺ Reset to {title}").format(title=lit(i18n.t(titles[origin]))), key="reset",
                    on_click=state.open_over_edits, args=(state.load_example, origin),
                    help=i18n.t("Undo every change since the example was loaded."))


def example_titles() -> dict[str, str]:
    """Every example's title by key, in English (marked N_ where each is defined)."""
    titles = {key: example.title for key, example in state.examples().items()}
    titles.update(state.GENERATED_LABELS)
    return titles


def _shown_option(current: state.Current) -> str:
    """The picker's option for what the page shows, in English: a title, 'A: ... (edited)', 'your setup'."""
    title = example_titles().get(st.session_state.origin)
    if not current.edited:
        return title or state.YOUR_SETUP
    return f"{title} (edited)" if title else state.YOUR_SETUP


def shown_label(current: state.Current) -> str:
    """What the page shows, in the reader's language: 'A: single head', 'A: single head (edited)' or
    'your setup'."""
    origin = st.session_state.origin
    if not current.edited:
        return state.label_of(origin)
    title = example_titles().get(origin)
    return i18n.t("{title} (edited)").format(title=i18n.t(title)) if title else i18n.t(state.YOUR_SETUP)


def _picked(titles: dict) -> None:
    label = st.session_state.get("example_picker")
    for key, title in titles.items():
        if title == label:
            state.open_over_edits(state.load_example, key)


def undo_ui(current: state.Current) -> None:
    """After a deliberate opening over edits: what replaced what, and Undo to bring the edits back."""
    undo = st.session_state.get("undo")
    if undo is not None and current.edited:
        del st.session_state.undo  # the opened setup is being edited now: Undo would lose those edits
    if undo is None or current.edited or following():
        return
    _, replaced = undo
    with st.container(border=True, horizontal=True, vertical_alignment="center"):
        st.markdown(md(i18n.t("Opened **{}** over your edited setup ({})."), shown_label(current), replaced))
        st.button(i18n.t("Undo: bring my edits back"), key="undo_opening", icon=":material/undo:",
                  on_click=state.undo_opening)


def fill_ui(sizes: Sizes, seed: int) -> None:
    """Fill a chosen array (or one head of it) with random, identity/select or zeros."""
    with st.sidebar.expander(i18n.t("Fill a matrix"), key=FILL_OPEN, on_change="rerun") as box:
        if not box.open:  # its contents run only while it is open (a closed one cost every run its widgets)
            return
        targets = [spec.name for spec in sizes.present() if not spec.name.startswith("b_")]
        target = st.selectbox(i18n.t("matrix"), targets, key="fill_target",
                              format_func=lambda n: SPECS[n].label)
        head = None
        if SPECS[target].per_head:
            grouped = target != "w_q" and sizes.groups < sizes.n_heads  # W_K, W_V are [g, ...]
            count, name = ((sizes.groups, N_("key/value head {number}")) if grouped
                           else (sizes.n_heads, N_("head {number}")))
            heads = [i18n.t("all heads")] + [i18n.t(name).format(number=f"{i + 1:d}") for i in range(count)]
            head = choice_ui(st, i18n.t("which head"), heads, "fill_head") - 1
            head = None if head < 0 else head
        kind = st.radio(i18n.t("with"), FILLS, key="fill_kind", horizontal=True,
                        format_func=i18n.labels(FILL_LABELS))
        st.button(i18n.t("Fill"), key="fill_go", on_click=state.fill_array, args=(target, kind, seed, head))


def editor_ui(name: str, rows: list[str], columns: list[str], *, head: int | None = None,
              boolean: bool = False, editable: bool = True) -> None:
    """An st.data_editor on the array's base (one head of it for per-head arrays); its edits are
    read back through session state (state.read), never from its return value. Not ``editable``
    (or for a student following a room): the same numbers as a table."""
    base = st.session_state.work[name]
    grid = editors.as_grid(base[head] if head is not None else base)
    n_rows, n_cols = grid.shape
    if max(n_rows, n_cols) > LIMITS.editable:
        st.caption(i18n.t("{rows} × {columns}: too large to edit cell by cell (limit {limit}); use 'Fill a "
                          "matrix' in the sidebar.").format(rows=f"{n_rows:d}", columns=f"{n_cols:d}",
                                                            limit=f"{LIMITS.editable:d}"))
        return
    if following() or not editable:  # a following student reads the teacher's grids, not edits them
        st.markdown(read_only_grid(grid, rows, columns, boolean))
        return
    labelled = zip((editors.column_name(j) for j in range(n_cols)), columns, strict=True)
    if boolean:
        config = {key: st.column_config.CheckboxColumn(label) for key, label in labelled}
    else:
        config = {key: st.column_config.TextColumn(label, width="small") for key, label in labelled}
    config[editors.ROW_LABELS] = st.column_config.TextColumn("", disabled=True)
    key = state.key_of(name, head)
    try:
        st.data_editor(_frame(key, grid, rows, boolean), key=key, column_config=config, hide_index=True,
                       width="content", on_change=state.keep_edits, args=(name, key))
    except Exception:  # noqa: BLE001 - Streamlit applies the sent edits itself and can fail on any
        # edit a grid could not have sent (row 9 of 3, a column it does not have): the page has
        # read what it could (state.read, whose message says what was ignored), so the editor
        # starts again from that.
        state.set_base(name, state.read(name).value)
        editor_ui(name, rows, columns, head=head, boolean=boolean)


EDIT_LABEL = N_("Edit {matrices}")


def edit_toggle_ui(key: str, matrices: str) -> bool:
    """'Edit W_Q, W_K, W_V': a step's weights are tables until this is on, then editors (each editor
    drawn costs every rerun about a millisecond and its grid's script in the browser; X, the one
    edited most, is always an editor). A following student has nothing to edit."""
    if following():
        return False
    return st.toggle(i18n.t(EDIT_LABEL).format(matrices=lit(matrices)), key=key)


def read_only_grid(grid, rows: list[str], columns: list[str], boolean: bool = False) -> str:
    """An editor's grid [r, c] as a Markdown table: the cells as the editor shows them (shortened to
    four decimals when longer), labels literal. Drawn for a following student instead of the
    editors, it took the follower's workbench script from 25.6 to 15.3 ms (a whole class reruns at
    once when the teacher changes something).
    """
    def cell(value: float) -> str:
        if boolean:
            return "✓" if value else "·"
        text = editors.cell_text(value)
        return text if len(text) <= 10 else number_text.format_number(value, 4)

    header = "| | " + " | ".join(lit(c) for c in columns) + " |"
    rule = "| --- |" + " ---: |" * len(columns)
    body = ["| " + lit(label) + " | " + " | ".join(cell(v) for v in row) + " |"
            for label, row in zip(rows, grid.tolist(), strict=True)]
    return "\n".join([header, rule, *body])


def _frame(key: str, grid, rows: list[str], boolean: bool):
    """The editor's input frame, built once per base version and row labels (a key names a
    version of the base, so the frame can only change with its row labels)."""
    cache = st.session_state.setdefault("editor_frames", {})
    cached = cache.get(key)
    if cached is None or cached[0] != rows:
        if len(cache) > 64:  # old versions' frames
            cache.clear()
        cached = cache[key] = (list(rows), editors.grid_frame(grid, rows, boolean))
    return cached[1]


def save_load_ui(current: state.Current) -> None:
    """Download the current setup as JSON; upload one back."""
    with st.sidebar.expander(i18n.t("Save or load this setup"), key=SAVE_LOAD_OPEN, on_change="rerun") as box:
        if box.open:  # its contents run only while it is open
            _save_load_contents(current)


def _save_load_contents(current: state.Current) -> None:
    setup = current.setup  # the downloads' callables keep this, never the result (app/result_cache.py)
    problem = save_problem(setup)
    title = state.label_of(st.session_state.origin)
    title = i18n.t("{title} (edited)").format(title=title) if current.edited else title
    language = i18n.language()  # the button's data is built later, outside this run
    st.download_button(i18n.t("⬇ Download this page (HTML, opens offline)"),
                       data=lambda: page_export.page_for_download(setup, title, language),
                       file_name="attention-step-by-step.html", mime="text/html", key="page_download",
                       on_click="ignore", disabled=current.result is None,
                       help=i18n.t("Every step for these inputs in one file: the charts (interactive), "
                                   "the formulas, the text and each chart's numbers as a table. Opens in "
                                   "a browser with no network, for a learning platform or a student at "
                                   "home."))
    st.download_button(i18n.t("⬇ Download as JSON"), data=lambda: setup_to_json(setup),
                       file_name="attention-setup.json", mime="application/json", key="setup_download",
                       on_click="ignore", disabled=problem is not None)
    if problem:
        st.caption(i18n.t("Cannot save now: {problem}.").format(problem=lit(problem)))
    recipe = getattr(current.base, "recipe", "") if not current.edited else ""
    # The data is made on click, outside this run: it may use only what it is given here.
    st.download_button(i18n.t("⬇ Download as Python (NumPy only)"),
                       data=lambda: setup_to_script(setup, title=title, recipe=recipe, language=language),
                       file_name="attention_step_by_step.py", mime="text/x-python", key="script_download",
                       on_click="ignore", disabled=problem is not None and not recipe,
                       help=i18n.t("A short script that rebuilds these exact inputs and computes every "
                                   "step with plain NumPy, printing the weights and the output."))
    st.download_button(i18n.t("⬇ Download all numbers (CSV files, ZIP)"),
                       data=lambda: setup_to_csv_zip(setup), file_name="attention-number_text.zip",
                       mime="application/zip", key="numbers_download", on_click="ignore",
                       disabled=problem is not None or current.result is None,
                       help=i18n.t("One CSV file per matrix and step (X, each head's W, Q, K, V, scores, "
                                   "scaled scores, weights and output, the concatenation, W_O, the "
                                   "output), with the tokens as row and column labels."))
    ss = st.session_state
    ss.setdefault(IMAGE_FORMAT_CHOICE, image_format())  # the radio forgets its value while it is closed
    ss[IMAGE_FORMAT] = st.radio(i18n.t("Charts download as (the camera on each chart)"), IMAGE_FORMATS,
                                key=IMAGE_FORMAT_CHOICE, horizontal=True, format_func=str.upper)
    st.file_uploader(i18n.t("Load a saved setup"), type=["json"], key="setup_file",
                     max_upload_size=LIMITS.file_bytes // 1_000_000, on_change=_uploaded)
    message = st.session_state.get("load_message")
    if message:
        st.error(i18n.t("Could not load {what}. Nothing on the page was changed.")
                 .format(what=lit(message)), icon=":material/warning:")


def _uploaded() -> None:
    uploaded = st.session_state.get("setup_file")
    st.session_state.load_message = None if uploaded is None else state.load_file(uploaded.getvalue(),
                                                                                  uploaded.name)
