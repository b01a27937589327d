"""What the Learn page says about each task of the tiny decoder (mha_core/tasks.py): its name and the
solution a trained model finds, marked for the catalogues (translated where shown)."""

from __future__ import annotations

from course.i18n import N_, localized_number_text, translator
from course.quiz import Question

TASK_NAMES = {
    "induction": N_("Induction: a sequence, then its repeat"),
    "copy": N_("Copy"),
    "reverse": N_("Reverse"),
    "sort": N_("Sort"),
    "nearest_key": N_("Nearest key: look up a key's value"),
}
TASK_SOLUTIONS = {
    "induction": N_("To predict the repeat, one head of layer 1 learns to look at the previous token, and "
                    "one head of layer 2 uses it to find where the current token appeared before and copy "
                    "the token that followed it: an induction head."),
    "copy": N_("After the separator, each position attends to the given token n + 1 places back and copies "
               "it."),
    "reverse": N_("After the separator, each position attends to the given token mirrored around the "
                  "separator."),
    "sort": N_("After the separator, each position attends to the smallest given token not yet written."),
    "nearest_key": N_("A head of layer 1 writes each key into the position of its value; a head of the last "
                      "layer matches the query to that key and copies the value."),
}
ROLE_PREVIOUS = N_("previous-token head")
ROLE_INDUCTION = N_("induction head")
ROLE_NONE = N_("no clear role yet")
ROLE_AT = 0.4  # a head whose mean score passes this has taken the role
INDUCTION_KIND = "induction_head"  # the room question's kind: pages hide the heads while it is open

INDUCTION_FORECAST = N_("Before the heads are shown: which head will become the induction head, the one "
                        "that finds where the current token appeared before and copies the token that "
                        "followed it?")
HEAD_CHOICE = N_("layer {layer} · head {head}")
NO_HEAD = N_("none of them")
INDUCTION_FOUND = N_("After {steps} steps, layer {layer}'s head {head} is the induction head: its induction "
                     "score is {score} (a role from 0.4 up). Read from the trained model's attention, not "
                     "fixed in advance: another seed may pick another head.")
INDUCTION_NONE = N_("After {steps} steps no head has an induction score of 0.4 or more: none has taken the "
                    "role yet.")


def role_of(previous: float, induction: float) -> str:
    """A head's role from its two mean scores: induction, previous-token, or none yet (a message id)."""
    if induction >= max(previous, ROLE_AT):
        return ROLE_INDUCTION
    return ROLE_PREVIOUS if previous >= ROLE_AT else ROLE_NONE


def induction_question(steps: int, scores, language: str = "en") -> Question | None:
    """The room's forecast before a trained induction model's heads are shown: which head becomes the
    induction head, answered by the final scores [layers, heads, 2] (None for a one-layer model, where no
    head can)."""
    layers, heads = scores.shape[:2]
    if layers < 2:
        return None
    _ = translator(language)
    choices = [_(HEAD_CHOICE).format(layer=layer + 1, head=head + 1)
               for layer in range(layers) for head in range(heads)]
    induction = [(score, index) for index, score in enumerate(scores[..., 1].ravel())
                 if role_of(scores.flat[2 * index], score) == ROLE_INDUCTION]
    if induction:
        score, index = max(induction)
        layer, head = divmod(index, heads)
        answer = choices[index]
        why = _(INDUCTION_FOUND).format(steps=steps, layer=layer + 1, head=head + 1,
                                        score=localized_number_text(f"{score:.2f}", language))
    else:
        answer, why = _(NO_HEAD), _(INDUCTION_NONE).format(steps=steps)
    return Question(kind=INDUCTION_KIND, prompt=_(INDUCTION_FORECAST), answer=answer, step="projections",
                    explanation=why, choices=(*choices, _(NO_HEAD)))
