"""The Learn page (issue 18): a tiny decoder-only transformer (mha_core/train.py) trained on this
server while the class watches, every head drawn with the workbench's own charts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from app import i18n, training
from app.adapter.fragments import fragment
from app.charts import figures, learn_figures
from app.charts.figure_cache import figure
from app.room import live, questions
from app.room.live import in_room, is_teacher
from app.safe import lit
from app.session import address, opening, session_keys, state
from app.widgets import chart
from course.i18n import N_, translator
from course.learn import INDUCTION_KIND, TASK_NAMES, TASK_SOLUTIONS, induction_question, role_of
from mha_core.attention import softmax
from mha_core.checkpoints import EXAMPLE_F
from mha_core.train import Config, History, Model, probe, probes, token_names

LAYERS, HEADS, WIDTHS, STEPS = (1, 2, 3, 4), (1, 2, 4), (16, 32, 64), (200, 400, 600, 1000, 2000)
SCALINGS = {"sqrt": N_("scaled by 1/√d_k"), "none": N_("not scaled")}
PROMPT_CHARS = 96  # 24 letters and their spaces, and some
# The settings, the checkpoint shown and the letters typed: a class follows its teacher's
# (app/room/following.py).
SAVED = "learn_saved"  # the settings, kept while another page is open (widgets forget theirs)
TASK_KEY, LAYERS_KEY, HEADS_KEY, WIDTH_KEY, STEPS_KEY = "learn_task", "learn_layers", "learn_heads", \
    "learn_width", "learn_steps"
SCALING_KEY, MLP_KEY, PROMPT_KEY = "learn_scaling", "learn_mlp", "learn_prompt"
SETTINGS = session_keys.register(*(session_keys.Key(name, __name__, default, followed=True)
                                   for name, default in {

    TASK_KEY: "induction", LAYERS_KEY: 2, HEADS_KEY: 2, WIDTH_KEY: 32, STEPS_KEY: 600,
    SCALING_KEY: "sqrt", MLP_KEY: False, PROMPT_KEY: ""}.items()))
DEFAULTS = session_keys.defaults(SETTINGS)
ALLOWED = {TASK_KEY: tuple(TASK_NAMES), LAYERS_KEY: LAYERS, HEADS_KEY: HEADS,
           WIDTH_KEY: WIDTHS, STEPS_KEY: STEPS, SCALING_KEY: tuple(SCALINGS),
           MLP_KEY: (False, True)}
RUN = "learn_run"  # this session's last run: (Config, History), finished or stopped
STOPPED_SCORES = "learn_stopped_scores"  # a stopped run and its checkpoints' head scores
SHOWN = "learn_shown"  # the Config whose run the page showed last: Train with it unchanged trains again
# The button's own key: it keeps its identity (and its click) when its label changes to "Train again,
# live" or into another language.
TRAIN_KEY = "learn_train"
CHECKPOINT_KEY = "learn_checkpoint"  # the checkpoint shown
session_keys.register(session_keys.Key(SAVED, __name__), session_keys.Key(RUN, __name__),
                      session_keys.Key(STOPPED_SCORES, __name__), session_keys.Key(SHOWN, __name__),
                      session_keys.Key(CHECKPOINT_KEY, __name__, followed=True))
LEARN_SCREEN = "learn"  # where the room's forecast was asked from (app/questions.asked_here)
REVEALED = "learn_revealed"  # the id of the room's forecast the teacher revealed here
session_keys.register(session_keys.Key(REVEALED, __name__))
PROGRESS_EVERY = 10  # steps between two updates of the bar (each is a message to the browser)
CURVE_EVERY = 100  # steps between two redraws of the live loss curve
WATCH_SECONDS = 1.0  # how often a page watching another session's run redraws its curve
GENERATED = 8  # tokens the model adds to a prompt
EXAMPLE_F_SCORES = np.array([40.0, 8.0])  # the chapter's two scores; divided by √64 = 8: (5, 1)
EARLIER = N_("Shown at once: a run trained earlier on this server with the same settings and seed. "
             "Training again, live, repeats it while you watch.")


def render(workbench_page) -> None:
    _restore()
    st.title(i18n.t("Learn: watch heads learn"))
    st.caption(i18n.t("A tiny decoder-only transformer, trained here in seconds: the matrices the other "
                      "pages ask you to type are learned, and every head is drawn as on the workbench."))
    config, submitted = settings_ui()
    st.markdown(lit(i18n.t(TASK_SOLUTIONS[config.task])))
    again = submitted and st.session_state.get(SHOWN) == config  # "Train again, live" on the run shown
    run = train_ui(config, again=again) if submitted else shown_run(config)
    st.session_state[SHOWN] = config if run is not None else None
    if again and run is not None and not training.runs().earlier(config):
        st.rerun()  # trained again: the button above still says "Train again, live"
    if run is None and training.runs().training_now(config) is not None:
        watch_ui(config)
    elif run is None:
        st.info(i18n.t("Press **Train** to train this model; a finished run stays on this server for "
                       "everyone."))
    else:
        if training.runs().earlier(config) and run is training.runs().finished(config):
            st.caption(i18n.t(EARLIER))
        if not forecast_ui(config, *run):
            results_ui(config, *run, workbench_page)
    example_f_ui()
    _save()


def _restore() -> None:
    """The settings kept, and any value a room or a crafted session sent that the page does not offer
    back to its default (True is 1 to Python: a type must match too)."""
    ss = st.session_state
    session_keys.restore(ss, SAVED, DEFAULTS)
    for key, allowed in ALLOWED.items():
        if not any(type(ss[key]) is type(value) and ss[key] == value for value in allowed):
            ss[key] = DEFAULTS[key]
    if not isinstance(ss.learn_prompt, str) or len(ss.learn_prompt) > PROMPT_CHARS:
        ss.learn_prompt = ""


def _save() -> None:
    session_keys.save(st.session_state, SAVED, DEFAULTS)


def settings_ui() -> tuple[Config, bool]:
    with st.form("learn_settings", border=True):
        task, layers, heads = st.columns(3)
        task.selectbox(i18n.t("task"), list(TASK_NAMES), key=TASK_KEY,
                       format_func=i18n.labels(TASK_NAMES))
        layers.selectbox(i18n.t("layers"), LAYERS, key=LAYERS_KEY)
        heads.selectbox(i18n.t("heads per layer"), HEADS, key=HEADS_KEY)
        width, steps, scaling = st.columns(3)
        width.selectbox(i18n.t("width d_model"), WIDTHS, key=WIDTH_KEY)
        steps.selectbox(i18n.t("training steps"), STEPS, key=STEPS_KEY)
        scaling.radio(i18n.t("scores"), list(SCALINGS), key=SCALING_KEY,
                      format_func=i18n.labels(SCALINGS), horizontal=True)
        st.checkbox(i18n.t("an MLP after each attention layer"), key=MLP_KEY)
        config = chosen()
        # A run from the cache is shown at once: the button then trains the same settings again, live.
        earlier = training.runs().finished(config) is not None and training.runs().earlier(config)
        submitted = st.form_submit_button(i18n.t("Train again, live") if earlier else i18n.t("Train"),
                                          type="primary", key=TRAIN_KEY)
    return config, submitted


def chosen() -> Config:
    """The settings as last submitted (a form's widgets change the session state only on Train)."""
    ss = st.session_state
    return Config(task=ss.learn_task, layers=ss.learn_layers, heads=ss.learn_heads, d_model=ss.learn_width,
                  steps=ss.learn_steps, scaling=ss.learn_scaling, mlp=ss.learn_mlp)


def shown_run(config: Config) -> tuple[History, np.ndarray] | None:
    """This config's finished run on the server, or this session's own stopped one."""
    finished = training.runs().finished(config)
    if finished is not None:
        return finished
    mine = st.session_state.get(RUN)
    if mine is None or mine[0] != config or not mine[1].checkpoints:
        return None
    history = mine[1]
    history.stopped = True  # its run ended without finishing: Stop, or the page was left
    kept = st.session_state.get(STOPPED_SCORES)
    if kept is None or kept[0] is not history:  # scored once, not on every drag of the slider
        kept = st.session_state[STOPPED_SCORES] = (history, training.checkpoint_scores(config, history))
    return kept


def train_ui(config: Config, key: str = "learn_stop",
             again: bool = False) -> tuple[History, np.ndarray] | None:
    """Train with a progress bar and a live loss curve; Stop (any click) ends the run and keeps it.
    A finished run is shown as it is, unless ``again`` asks to train anew one trained earlier."""
    finished = training.runs().finished(config)
    if finished is not None and not (again and training.runs().earlier(config)):
        return finished
    wait = training.runs().wait_before_training()
    if wait:
        st.warning(i18n.t("This server has trained a lot in the last minutes; a new model can start in "
                          "{seconds} s.").format(seconds=f"{wait:.0f}"))
        return finished
    stop = st.empty()
    stop.button(i18n.t("Stop"), key=key)  # a click reruns the page, which stops this run
    bar = st.progress(0.0, text=i18n.t("Waiting for the server (one model trains at a time)…"))
    curve = st.empty()
    history = History()
    st.session_state[RUN] = (config, history)
    st.session_state.pop(CHECKPOINT_KEY, None)

    def on_step(step: int, loss: float, model: Model) -> None:
        if step % PROGRESS_EVERY == 0 or step == config.steps:
            bar.progress(step / config.steps, text=i18n.t("Step {step} of {steps}: loss {loss}").format(
                step=f"{step:d}", steps=f"{config.steps:d}", loss=i18n.number(loss, 3)))
        if step % CURVE_EVERY == 0:
            curve.plotly_chart(learn_figures.runs_figure([(i18n.t("loss"), history.losses)],
                                                         language=i18n.language()))

    run = training.runs().run(config, on_step, history, again=again)
    for slot in (stop, bar, curve):
        slot.empty()
    if run is None:
        st.warning(i18n.t("The server is busy training other models; try again in a minute."))
    return run or finished


@fragment(run_every=WATCH_SECONDS)
def watch_ui(config: Config) -> None:
    """Another session (the teacher, whom this page follows) trains these settings now: its progress and
    loss curve, redrawn every WATCH_SECONDS; the whole page once the run ends."""
    history = training.runs().training_now(config)
    if history is None:  # finished (or stopped): the page draws the run, or says Train
        st.rerun(scope="app")
    losses = list(history.losses)  # a copy: the training thread appends to it
    st.progress(len(losses) / config.steps, text=i18n.t(
        "Training on this server now (your teacher, or another session): step {step} of {steps}").format(
        step=f"{len(losses):d}", steps=f"{config.steps:d}"))
    if losses:
        chart(learn_figures.runs_figure([(i18n.t("loss"), losses)], language=i18n.language()),
              key="learn_watch_curve")


def results_ui(config: Config, history: History, scores: np.ndarray, workbench_page) -> None:
    steps = [step for step, _ in history.checkpoints]
    if history.stopped:
        st.warning(i18n.t("Stopped at step {step} of {steps}.").format(step=f"{len(history.losses):d}",
                                                                     steps=f"{config.steps:d}"))
    st.session_state.setdefault(CHECKPOINT_KEY, steps[-1])
    if st.session_state.learn_checkpoint not in steps:
        st.session_state.learn_checkpoint = steps[-1]
    shown = st.select_slider(i18n.t("checkpoint: the model after this many steps"), steps,
                             key=CHECKPOINT_KEY)

    at = steps.index(shown)
    chart(figure(learn_figures.training_figure, history.losses, steps, scores, shown), key="learn_training")
    roles_ui(scores[at])
    model = history.checkpoints[at][1]
    tokens = prompt_ui(config, model)
    heads_ui(model, tokens)
    open_ui(model, tokens, workbench_page)


def forecast_ui(config: Config, history: History, scores: np.ndarray) -> bool:
    """The room's forecast of the induction head, asked before the heads are shown; whether the heads are
    hidden now (the teacher asked and has not revealed; a student while the room's forecast is open)."""
    if not in_room() or config.task != "induction" or history.stopped:
        return False
    ss = st.session_state
    if not is_teacher():
        question, status, _ = questions.room_question()
        hidden = question is not None and question.kind == INDUCTION_KIND and status != "revealed"
        if hidden:
            st.info(i18n.t("The heads appear after your teacher's **Reveal**: first, forecast."),
                    icon=":material/psychology_alt:")
        return hidden
    question = induction_question(config.steps, scores[-1], i18n.language())
    if question is None:
        return False
    asked = questions.asked_here(LEARN_SCREEN)
    if not asked or ss.get(REVEALED) == ss[live.ASKED][0]:
        questions.ask_button(question, key="learn_ask", screen=LEARN_SCREEN)
        return False
    st.markdown(f"**{i18n.t('Forecast.')}** {lit(ss[live.ASKED][1].prompt)}")  # as the presenter's box
    questions.presenter_panel(lambda: ss.__setitem__(REVEALED, ss[live.ASKED][0]))
    st.info(i18n.t("The heads appear here after **Reveal**: first, let the room forecast."),
            icon=":material/psychology_alt:")
    return True


def roles_ui(scores: np.ndarray) -> None:
    """What each head became, read from its scores [layers, heads, 2] (never from a fixed answer)."""
    st.markdown(i18n.t("**What each head became** at this checkpoint (mean scores over 16 sequences of the "
                       "task; a role from 0.4 up):"))
    rows = []
    for layer, heads in enumerate(scores):
        for head, (previous, induction) in enumerate(heads):
            role = role_of(previous, induction)
            rows.append({i18n.t("layer"): layer + 1, i18n.t("head"): head + 1, i18n.t("role"): i18n.t(role),
                         i18n.t("previous-token score"): i18n.number(previous, 2),
                         i18n.t("induction score"): i18n.number(induction, 2)})
    st.table(pd.DataFrame(rows).set_index(i18n.t("layer")))


def prompt_ui(config: Config, model: Model) -> np.ndarray:
    """The sequence the heads are drawn on: the task's probe, or the reader's own letters."""
    names = token_names(config.vocab)
    text = st.text_input(i18n.t("Your own sequence: letters {first} to {last}, separated by spaces (empty: a "
                                "sequence of the task)").format(first=lit(names[0]), last=lit(names[-1])),
                         key=PROMPT_KEY, max_chars=PROMPT_CHARS)
    words = text.upper().split()
    if not words:
        return probe(config)
    unknown = [word for word in words if word not in names]
    if unknown or len(words) > config.seq_len:
        st.error(i18n.t("Use at most {count} letters from {first} to {last}; not {word}.").format(
            count=f"{config.seq_len:d}", first=lit(names[0]), last=lit(names[-1]),
            word=lit(" ".join(unknown[:3]) or str(len(words)))))
        return probe(config)
    tokens = np.array([names.index(word) for word in words])
    continued = model.generate(tokens, min(GENERATED, config.seq_len - len(tokens)) or 1)
    st.markdown(i18n.t("The model continues: {tokens}").format(
        tokens=lit(" ".join(names[t] for t in continued[len(tokens):]))))
    return tokens


def heads_ui(model: Model, tokens: np.ndarray) -> None:
    names = [f"{i + 1}·{token}" for i, token in enumerate(token_names(model.config.vocab)[t] for t in tokens)]
    causal = np.tril(np.ones((len(tokens), len(tokens)), dtype=bool))
    for layer, result in enumerate(model.trace(tokens)):
        title = i18n.t("Layer {layer}: each head's attention weights (causal)").format(layer=layer + 1)
        chart(figure(figures.head_grids, result.weights, names, names, kind="weights", mask=causal,
                     title=title), key=f"learn_layer_{layer}")


def open_ui(model: Model, tokens: np.ndarray, workbench_page) -> None:
    translate = translator(i18n.language())  # format_funcs are also called outside the run (AppTest)
    layer = st.selectbox(i18n.t("layer to open"), range(model.config.layers), key="learn_open_layer",
                         format_func=lambda n: translate("layer {n}").format(n=n + 1))
    if st.button(i18n.t("Open this layer in the workbench"), key="learn_open", on_click=open_layer,
                 args=(model, tokens, layer)):
        address.switch_page(workbench_page)


def open_layer(model: Model, tokens: np.ndarray, layer: int) -> None:
    opening.open_over_edits(state.load_setup, model.layer_setup(tokens, layer).with_origin("learned"))


def example_f_ui() -> None:
    st.subheader(i18n.t("Example F, live: why the scores are divided by √d_k"))
    scaled = softmax(EXAMPLE_F_SCORES / 8.0)[1]
    unscaled = softmax(EXAMPLE_F_SCORES)[1]
    st.markdown(i18n.t("The chapter's scores (40, 8) with d_k = 64: scaled, the runner-up keeps **{scaled}** "
                       "of the attention and its gradient w(1 − w) is {grad}; unscaled it keeps {unscaled}, "
                       "and learning through it freezes. Here the same model (one head, d_k = 64) learns the "
                       "induction task both ways.").format(scaled=i18n.number(scaled, 3),
                                                            grad=i18n.number(scaled * (1 - scaled), 4),
                                                            unscaled=lit(i18n.numbers_in(f"{unscaled:.1e}"))))
    configs = {"sqrt": EXAMPLE_F, "none": replace(EXAMPLE_F, scaling="none")}
    runs = {kind: training.runs().finished(config) for kind, config in configs.items()}
    if any(run is None for run in runs.values()):
        if not st.button(i18n.t("Train both"), key="learn_example_f"):
            return
        for kind, config in configs.items():
            if runs[kind] is None:
                runs[kind] = train_ui(config, key=f"learn_stop_{kind}")
        if any(run is None for run in runs.values()):
            return
    elif any(training.runs().earlier(config) for config in configs.values()):
        st.caption(i18n.t(EARLIER))
        if st.button(i18n.t("Train both again, live"), key="learn_example_f_again"):
            runs = {kind: train_ui(config, key=f"learn_stop_{kind}", again=True)
                    for kind, config in configs.items()}
            if not any(training.runs().earlier(config) for config in configs.values()):
                st.rerun()  # the caption and the button above are of the runs trained earlier
    names = {kind: i18n.t(SCALINGS[kind]) for kind in configs}
    chart(figure(learn_figures.runs_figure, [(names[kind], runs[kind][0].losses) for kind in configs]),
          key="learn_example_f_losses")
    st.table(gradient_table(configs, runs, names))


def gradient_table(configs, runs, names) -> pd.DataFrame:
    """At the end of training, what reaches each row's runner-up score: the second-largest weight w
    and its gradient w(1 − w), averaged over the rows of every layer on 8 sequences of the task."""
    rows = []
    for kind, config in configs.items():
        history = runs[kind][0]
        model = history.checkpoints[-1][1]
        runner_up = np.concatenate([np.sort(result.weights[0][2:], axis=1)[:, -2]  # [T-2] per layer
                                    for tokens in probes(config, 8) for result in model.trace(tokens)])
        gradient = float((runner_up * (1 - runner_up)).mean())
        rows.append({i18n.t("scores"): names[kind],
                     i18n.t("runner-up weight at the end"): i18n.number(float(runner_up.mean()), 3),
                     i18n.t("its gradient w(1 − w)"): i18n.number(gradient, 3),
                     i18n.t("loss at the end"): i18n.number(history.losses[-1], 3)})
    return pd.DataFrame(rows).set_index(i18n.t("scores"))
