"""Entry point, a picture frame: page config, state initialised once, one Setup per run, navigation."""

import sys
from pathlib import Path

# `streamlit run app/streamlit_app.py` puts app/ on the path, not the repository: its packages (app,
# mha_core, course, classroom) are found from here however the app is started, PYTHONPATH or not.
ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st

from app import frame, i18n, phone_css, result_cache, setup_ui, sidebar_inputs, style
from app.adapter import page_scripts, streamlit_door
from app.grids import editor_widgets
from app.room import door, following, live, questions, room_box
from app.session import address, state, this_run
from app.views import classroom, examples, labs, learn, model, present, quiz, workbench

result_cache.tune_collector()  # once: the imports' objects out of every later collection
streamlit_door.announce_version()  # once, in the log, when Streamlit is not the version read against
streamlit_door.install_race_fixes()  # a tap or a tick must not lose the run just finished
streamlit_door.install_widget_guard()  # a value Streamlit cannot read (NaN to d_model) is refused
streamlit_door.install_event_batching()  # one wake-up of the event loop per batch of messages
st.set_page_config(page_title="Multi-head attention, step by step", page_icon="🔭", layout="wide")
language_notes = i18n.init_language()  # the reader's own, whatever a room shares
style.apply(i18n.language())  # contrast, focus ring, reduced motion, skip links, lang (app/style.py)
phone_css.phone_ui()  # a phone's stylesheet, and figures planned for its column (app/phone_css.py)
address.open_session()  # once: the default example, then what the link says
st.session_state[state.LINK_NOTES] += language_notes
address.follow_history()  # Back or Forward brought an earlier address: open it
door.join_from_link()  # ?room=CODE
following.follow_before_build()  # a follower takes the teacher's newest state first
# A whole class reruns at once when the teacher changes something (follower_turn); what this run
# computes and draws is held within the server's budget for runs in flight until it ends (run_scope).
with live.follower_turn(), this_run.run_scope():
    unseen = following.unseen_sidebar()  # a following student's inputs are the teacher's, not drawn
    i18n.language_ui(st.sidebar)  # every reader's own, a following student's too
    room_slot = st.sidebar.container()  # the live class's box, first in the sidebar
    picker_slot = st.sidebar.container()  # filled last: its label says whether the page is edited
    inputs = sidebar_inputs.sidebar_ui(unseen)  # shared by every page, so its state survives navigation
    current = this_run.build(inputs)
    if unseen is None:
        setup_ui.picker_ui(picker_slot, current)
        if inputs.sizes is not None:
            editor_widgets.fill_ui(inputs.sizes, inputs.seed)
        setup_ui.save_load_ui(current)
    room_box.sidebar_ui(room_slot, current)

    # Material icons come with Streamlit (emoji need a font the machine may lack).
    workbench_page = st.Page(lambda: workbench.render(current, inputs), title=i18n.t("Workbench"),
                             icon=":material/calculate:", url_path=workbench.PATH, default=True)
    present_page = st.Page(lambda: present.render(current, inputs), title=i18n.t("Present"),
                           icon=":material/slideshow:", url_path="present")
    labs_page = st.Page(labs.render, title=i18n.t("Labs"), icon=":material/science:", url_path="labs")
    quiz_page = st.Page(lambda: quiz.render(current, workbench_page), title=i18n.t("Quiz"),
                        icon=":material/quiz:", url_path="quiz")
    model_page = st.Page(lambda: model.render(workbench_page), title=i18n.t("Real model"),
                         icon=":material/psychology:", url_path="model")
    class_page = st.Page(classroom.render, title=i18n.t("Class"), icon=":material/groups:", url_path="class")
    examples_page = st.Page(lambda: examples.render(workbench_page), title=i18n.t("Worked examples"),
                            icon=":material/menu_book:", url_path="examples")
    learn_page = st.Page(lambda: learn.render(workbench_page), title=i18n.t("Learn"),
                         icon=":material/model_training:", url_path="learn")
    pages = [workbench_page, present_page, labs_page, learn_page, quiz_page, model_page, class_page,
             examples_page]
    page = st.navigation(pages)
    following.go_to_room_page({p.url_path: p for p in pages}, page.url_path)
    if st.session_state.get(frame.LAST_PAGE) not in (None, page.url_path):
        page_scripts.scroll_to_top("page_to_the_top")
    st.session_state[frame.LAST_PAGE] = page.url_path
    questions.student_question_ui(current)
    setup_ui.undo_ui(current)
    page.run()
    questions.student_result_ui(current)  # a past question's result: below the teacher's screen
    frame.finish(current, page.url_path)
    current = None  # the pages keep this run's globals: its result stays only in the shared cache
