"""The course's worked examples: what each teaches, and a button to replay it."""

import streamlit as st

from app import i18n
from app.safe import lit
from app.session import address, opening, state
from course.examples import choices_in


def render(workbench_page) -> None:
    st.title(i18n.t("Worked examples"))
    st.caption(i18n.t("Every example of the course, ready to replay with its exact numbers."))
    for key, example in state.examples().items():
        with st.container(border=True):
            st.subheader(lit(i18n.t(example.title)))
            st.caption(lit(i18n.t(example.source)))
            st.write(lit(i18n.t(example.story)))
            if example.choices:
                st.caption(i18n.t("Our choices where the chapter is silent: {choices}").format(
                    choices=lit(choices_in(example.choices, i18n.language()))))
            if st.button(i18n.t("Open in the workbench"), key=f"open_{key}", on_click=opening.open_over_edits,
                         args=(state.load_example, key)):
                address.switch_page(workbench_page)
