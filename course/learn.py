"""What the Learn page says about each task of the tiny decoder (mha_core/tasks.py): its name and the
solution a trained model finds, marked for the catalogues (translated where shown)."""

from __future__ import annotations

from course.i18n import N_

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
