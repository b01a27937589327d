"""The setup as a whole: the example picker naming what is on screen (and Reset), the Undo bar after
an opening over edits, and "Save or load this setup" (the downloads, the charts' image format, a
file uploaded)."""

from __future__ import annotations

import streamlit as st

from app import i18n, page_export
from app.safe import lit, md
from app.session import opening, session_keys, state, this_run
from app.widgets import IMAGE_FORMAT, IMAGE_FORMATS, following, image_format
from course.export import setup_to_csv_zip, setup_to_script
from course.i18n import N_
from mha_core import LIMITS
from mha_core.codec import save_problem, setup_to_json

IMAGE_FORMAT_CHOICE = "image_format_choice"  # the key of the radio choosing IMAGE_FORMAT (app/widgets.py)
SAVE_LOAD_OPEN = "save_load_open"  # the sidebar's "Save or load this setup" expander, open or not
# The session keys this module owns (app/session/session_keys.py).
LOAD_MESSAGE = "load_message"
session_keys.register(session_keys.Key(IMAGE_FORMAT_CHOICE, __name__),
                      session_keys.Key(SAVE_LOAD_OPEN, __name__, False),
                      session_keys.Key(LOAD_MESSAGE, __name__))


EDITED_NOTE = N_("✎ **Edited**: the numbers on the page differ from the example's.")


def picker_ui(slot, current: this_run.Current) -> None:
    """The example picker, naming what is on screen: 'A: single head (edited)', 'your setup'.

    Picking an example loads it exactly, so picking the one shown again resets it; Reset does the
    same while the page differs from its example.
    """
    ss = st.session_state
    origin = ss[state.ORIGIN]
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
        reset_button(slot, "reset")


def reset_button(where, key: str) -> None:
    """Back to the example as the chapter gives it (an opening: Undo brings the edits back)."""
    origin = st.session_state[state.ORIGIN]
    where.button(i18n.t("Reset to {title}").format(title=lit(i18n.t(example_titles()[origin]))), key=key,
                 icon=":material/restart_alt:", on_click=opening.open_over_edits,
                 args=(state.load_example, origin),
                 help=i18n.t("Undo every change since the example was loaded."))


def example_titles() -> dict[str, str]:
    """Every example's title by key, in English (marked N_ where each is defined)."""
    titles = {key: example.title for key, example in state.examples().items()}
    titles.update(state.GENERATED_LABELS)
    return titles


def _shown_option(current: this_run.Current) -> str:
    """The picker's option for what the page shows, in English: a title, 'A: ... (edited)', 'your setup'."""
    title = example_titles().get(st.session_state[state.ORIGIN])
    if not current.edited:
        return title or state.YOUR_SETUP
    return f"{title} (edited)" if title else state.YOUR_SETUP


def shown_label(current: this_run.Current) -> str:
    """What the page shows, in the reader's language: 'A: single head', 'A: single head (edited)' or
    'your setup'."""
    origin = st.session_state[state.ORIGIN]
    if not current.edited:
        return state.label_of(origin)
    title = example_titles().get(origin)
    return i18n.t("{title} (edited)").format(title=i18n.t(title)) if title else i18n.t(state.YOUR_SETUP)


def _picked(titles: dict) -> None:
    label = st.session_state.get("example_picker")
    for key, title in titles.items():
        if title == label:
            opening.open_over_edits(state.load_example, key)


def undo_ui(current: this_run.Current) -> None:
    """After a deliberate opening over edits: what replaced what, and Undo to bring the edits back."""
    undo = st.session_state.get(opening.UNDO)
    if undo is not None and current.edited:
        # the opened setup is being edited now: Undo would lose those edits
        del st.session_state[opening.UNDO]
    if undo is None or current.edited or following():
        return
    _, replaced = undo
    with st.container(border=True, horizontal=True, vertical_alignment="center"):
        st.markdown(md(i18n.t("Opened **{}** over your edited setup ({})."), shown_label(current), replaced))
        st.button(i18n.t("Undo: bring my edits back"), key="undo_opening", icon=":material/undo:",
                  on_click=opening.undo_opening)


def save_load_ui(current: this_run.Current) -> None:
    """Download the current setup as JSON; upload one back."""
    with st.sidebar.expander(i18n.t("Save or load this setup"), key=SAVE_LOAD_OPEN, on_change="rerun") as box:
        if box.open:  # its contents run only while it is open
            _save_load_contents(current)


def _save_load_contents(current: this_run.Current) -> None:
    setup = current.setup  # the downloads' callables keep this, never the result (app/result_cache.py)
    problem = save_problem(setup)
    title = state.label_of(st.session_state[state.ORIGIN])
    title = i18n.t("{title} (edited)").format(title=title) if current.edited else title
    language = i18n.language()  # the button's data is built later, outside this run
    st.download_button(i18n.t("Download this page (HTML, opens offline)"), icon=":material/download:",
                       data=lambda: page_export.page_for_download(setup, title, language),
                       file_name="attention-step-by-step.html", mime="text/html", key="page_download",
                       on_click="ignore", disabled=current.result is None,
                       help=i18n.t("Every step for these inputs in one file: the charts (interactive), "
                                   "the formulas, the text and each chart's numbers as a table. Opens in "
                                   "a browser with no network, for a learning platform or a student at "
                                   "home."))
    st.download_button(i18n.t("Download as JSON"), icon=":material/download:",
                       data=lambda: setup_to_json(setup),
                       file_name="attention-setup.json", mime="application/json", key="setup_download",
                       on_click="ignore", disabled=problem is not None)
    if problem:
        st.caption(i18n.t("Cannot save now: {problem}.").format(problem=lit(problem)))
    recipe = getattr(current.base, "recipe", "") if not current.edited else ""
    # The data is made on click, outside this run: it may use only what it is given here.
    st.download_button(i18n.t("Download as Python (NumPy only)"), icon=":material/download:",
                       data=lambda: setup_to_script(setup, title=title, recipe=recipe, language=language),
                       file_name="attention_step_by_step.py", mime="text/x-python", key="script_download",
                       on_click="ignore", disabled=problem is not None and not recipe,
                       help=i18n.t("A short script that rebuilds these exact inputs and computes every "
                                   "step with plain NumPy, printing the weights and the output."))
    st.download_button(i18n.t("Download all numbers (CSV files, ZIP)"), icon=":material/download:",
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
