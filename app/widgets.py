"""The widgets every page shares: a chart with its download and its numbers, whether this session
follows a room, and choices kept by position (``choice_ui``). *_ui() functions (here and in
app/sidebar_inputs.py, app/grids/editor_widgets.py, app/setup_ui.py): draw widgets, return plain values.
No maths here beyond checking inputs.

Selections that name a token, a head or a cell use ``choice_ui``: a browser sends a
selectbox's value back as its label text, which goes stale when the labels change (new
tokens, another h), so the position is kept in ``selections`` and the widget only shows it.
"""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.charts import chart_tables, chart_text
from app.safe import lit
from app.session import session_keys, state
from course.i18n import N_

IMAGE_FORMATS = ("png", "svg")  # what the camera button of every chart's modebar downloads
IMAGE_FORMAT = "image_format"  # the format chosen, kept while the radio that chose it is not drawn
# A student shows the teacher's page (app/room/door.py sets it, app/room/following.py drops it); here,
# below app/room/live.py, because every part of the page asks following().
FOLLOWING = "following"
session_keys.register(session_keys.Key(IMAGE_FORMAT, __name__, "png"), session_keys.Key(FOLLOWING, __name__))


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
    return bool(st.session_state.get(FOLLOWING))


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
    position = ss[state.SELECTIONS].get(name, default)
    if chosen in labels:
        position = labels.index(chosen)
    elif not 0 <= position < len(labels):
        if name in ss[state.SELECTIONS]:
            where.caption(i18n.t("{label}: the earlier choice is gone with the new inputs; showing {shown}.")
                          .format(label=lit(label), shown=lit(labels[default])))
        position = default
    ss[state.SELECTIONS][name] = position
    ss[key] = labels[position]
    if segmented:
        where.segmented_control(label, labels, key=key, required=True, format_func=lit, **kwargs)
    else:
        where.selectbox(label, labels, key=key, **kwargs)
    return position
