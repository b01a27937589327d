"""The course's steps, in one place: what each is called, its formula, its what and why (chapter
004's walkthrough), the presenter screens that show it, and what it derives from a setup.

This registry is the only list of steps, and its order is the course's. A step is named
(``softmax``); its number is its position (``number_of``), counted when it is shown and never stored,
so a step added in front renumbers every page at once. The workbench draws one section per Step, the
presenter one screen per Screen (SCREENS, in this order), the downloadable page and the exported
script one section per Step (the script with its title and formula), and the Quiz names a question's
step by it. Nothing else follows a position: a forecast is drawn by its step's or screen's name
(seed_of), and an old numbered link (?step=4) opens the screen NUMBERED_LINKS recorded for it. Adding
a step: one Step here (its screens with it) and its drawing in app/steps/<its name>.py (its charts,
its workbench section, its presenter screens); tests/course/test_registry.py adds one and finds it on
every layout, and tests/course/test_step_in_front.py finds nothing after it changed but its number.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from course.i18n import N_, translator
from mha_core.attention import MHAResult
from mha_core.derive import compare_heads, contributions_of, cost_of
from mha_core.setup import Setup

Derive = Callable[[Setup, MHAResult, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Screen:
    """One presenter screen: a step's idea, sized for a projector (app/views/present.py)."""

    key: str  # its name in links (?step=softmax) and its drawing's (app/steps/<step>.py SCREENS)
    title: str
    idea: str | None = None  # the forecast asks about this idea instead of the step (course.quiz.IDEAS)
    why: str | None = None  # instead of the step's why
    step: str = ""  # the name of the step it belongs to: set by the registry


@dataclass(frozen=True)
class Step:
    title: str
    formula: str  # LaTeX
    what: str
    why: str
    screens: tuple[Screen, ...] = ()
    # Everything the step shows that is computed from the setup: (setup, result, selections) -> a frozen
    # dataclass of mha_core.derive, or None when the step only draws the result's own arrays.
    derive: Derive | None = field(default=None, compare=False)
    name: str = ""  # its key in STEPS (and its drawing's module, app/steps/<name>.py): set by the registry


def _comparison(setup: Setup, result: MHAResult, selections: Mapping[str, Any]):
    query = min(int(selections.get("focus_query", 0)), result.weights.shape[1] - 1)
    return compare_heads(result.weights, query, selections.get("metric", "l2"))


SPLIT_WHY = (N_("Attention's cost grows like n² · d: h thin heads of width d_k cost what one head of width "
                "h · d_k costs, but give h viewpoints. Different W_i per head force different questions."))
COST_WHY = (N_("Each head has its own W_Q, W_K and W_V of d_model × d_k numbers; W_O maps the concatenation "
                  "back to d_model. With h · d_k = d_model, that is 4 · d_model² whatever h is."))

_STEPS = {
    "embeddings": Step(N_("A sentence is a grid: the embeddings X"), r"X \in \mathbb{R}^{n \times d_{model}}",
            N_("Each token is already a row of d_model numbers; stacked, they make a grid: rows = tokens, "
               "columns = features."),
            N_("Attention never sees letters. It sees this grid: everything downstream is reshaping it."),
            screens=(Screen("arrows", N_("A sentence is a stack of arrows")),)),
    "projections": Step(N_("Three questions: Query, Key, Value (per head)"),
            r"Q_i = X W_i^Q,\quad K_i = X_{kv} W_i^K,\quad V_i = X_{kv} W_i^V",
            N_("Each head multiplies the grid by its own three learned matrices (in self-attention "
               "X_kv = X)."),
            N_("Each token has three jobs: ask 'what am I looking for?' (Q), advertise 'what do I offer?' "
               "(K), carry its content (V). Different W_i per head force different questions."),
            screens=(Screen("qkv", N_("Three questions: Query, Key, Value")),)),
    "raw_scores": Step(N_("One dot product per pair: raw scores"),
                       r"S_i = Q_i K_i^{\top},\quad s_{jk} = q_j \cdot k_k",
            N_("Compare every query row with every key row: multiply matching entries and add them up."),
            N_("The dot product is large when two arrows point the same way and small or negative when they "
               "point apart: the cheapest 'does this key answer this query?' meter."),
            screens=(Screen("dot_product", N_("One head, one dot product: how much do I care?")),),
            derive=lambda setup, result, selections: cost_of(setup.sizes)),
    "softmax": Step(N_("Scale, then softmax: a fair split of attention"),
            r"A_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^{\top}}{\sqrt{d_k}}\right)",
            N_("Divide every score by √d_k, then turn each row into positive weights that add up to 1."),
            N_("Long rows make dot products large, and huge scores make softmax spike onto one token so "
               "gradients die; dividing by √d_k keeps them in a healthy range. Softmax gives a soft blend, "
               "not a hard pick, so the network can learn through it."),
            screens=(Screen("softmax", N_("Scale, then softmax: a fair split of attention")),)),
    "head_outputs": Step(N_("Weighted sum of values: each head's answer"), r"\text{head}_i = A_i V_i",
            N_("Row j of a head's output is a blend of all value rows, weighted by how much token j "
               "attended to each."),
            N_("Keys were only for matching; once we know how much to listen, we gather the content, which "
               "lives in V. Splitting 'who to listen to' from 'what you hear' lets them be tuned apart."),
            screens=(Screen("weighted_sum", N_("Weighted sum of values: the head's answer")),
                     Screen("split", N_("Split into h heads: the same trick on narrow slices"), idea="heads",
                            why=SPLIT_WHY))),
    "heads_compared": Step(N_("Heads side by side: do they disagree?"),
            r"D_{ab} = \lVert A_a[j,:] - A_b[j,:] \rVert_2",
            N_("Pick a query token and lay every head's attention row next to the others; a number says how "
               "far apart they are, and the entropy says whether a head has an opinion at all."),
            N_("Each head learns its own view, so no single head does all the work. A flat (uniform) head "
               "has nothing to say; that is not a disagreement."),
            screens=(Screen("disagreement", N_("Do the heads disagree?")),), derive=_comparison),
    "concatenation": Step(N_("Concatenate, then one final mix W_O"),
            r"\text{MultiHead} = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\, W^O "
            r"= \textstyle\sum_i \text{head}_i\, W^O_{[i]}",
            N_("Lay the h head outputs side by side, then multiply by one last learned matrix."),
            N_("Averaging would blend the viewpoints into mush; concatenation keeps every head's answer "
               "intact. W_O is the mixer that lets the lanes talk, and it snaps the width back to d_model."),
            screens=(Screen("concatenate", N_("Concatenate, then one final mix W_O")),
                     Screen("cost", N_("What it costs: parameters and work"), idea="cost", why=COST_WHY)),
            derive=lambda setup, result, selections: contributions_of(setup, result)),
    "output": Step(N_("The output next to the input"), r"\text{output} \in \mathbb{R}^{n \times d_{model}}",
            N_("A grid the same shape as the one we started with."),
            N_("Every token's row now carries what it gathered from the tokens it attended to.")),
}

def registry(steps: Mapping[str, Step]) -> tuple[dict[str, Step], tuple[Screen, ...]]:
    """Steps by name, in order, each told its name and each screen its step's; and the screens in
    that order."""
    named = {name: replace(step, name=name, screens=tuple(replace(screen, step=name)
                                                           for screen in step.screens))
             for name, step in steps.items()}
    return named, tuple(screen for step in named.values() for screen in step.screens)


# Every step by its name, in the course's order; the presenter's screens in that order (screen i of the
# presenter is SCREENS[i]).
STEPS, SCREENS = registry(_STEPS)


# The presenter's screens as links numbered them before links named them (?step=4 is ?step=softmax): an
# old link keeps opening the screen it opened, wherever a new step puts that screen now. Never changed.
NUMBERED_LINKS = ("arrows", "qkv", "dot_product", "softmax", "weighted_sum", "split", "disagreement",
                  "concatenate", "cost")


def number_of(name: str) -> int:
    """A step's number as the page shows it: its position in the course, from 1."""
    return list(STEPS).index(name) + 1


def seed_of(name: str) -> int:
    """A step's or a screen's own number for drawing its questions: a stable hash of its name (CRC-32,
    the same in every process, unlike hash()), so that a step added in front changes no other step's
    forecast."""
    return zlib.crc32(name.encode())


def numbered(number: int) -> str:
    """The name of the step a page shows as ``number`` (from 1)."""
    return list(STEPS)[number - 1]


def screen_name(position: int) -> str:
    """A screen's name in a link (its key: ``softmax``), by its position in SCREENS."""
    return SCREENS[position].key


def screen_position(text: str) -> int | None:
    """The position in SCREENS of a link's ``step``: a screen's name, or a number as old links wrote it
    (counted from 1, meaning the screen NUMBERED_LINKS names; a number past those stays as far past the
    last screen, for the presenter to say it has no such screen).
    None when it is neither."""
    names = [screen.key for screen in SCREENS]
    if text in names:
        return names.index(text)
    if not (text.isascii() and text.isdigit() and 0 < len(text) < 4) or int(text) == 0:
        return None
    number = int(text)
    if number <= len(NUMBERED_LINKS) and NUMBERED_LINKS[number - 1] in names:
        return names.index(NUMBERED_LINKS[number - 1])
    return len(names) + number - len(NUMBERED_LINKS) - 1  # past the last then: past the last now too


def in_language(language: str) -> tuple[Mapping[str, Step], tuple[Screen, ...]]:
    """STEPS and SCREENS with their titles, what and why in ``language`` (formulas are LaTeX); built
    once per language and registry (a test may add a step), not on every call of every run."""
    return _in_language(language, tuple(STEPS.items()), SCREENS)


@lru_cache(maxsize=32)
def _in_language(language: str, steps: tuple[tuple[str, Step], ...], screens: tuple[Screen, ...]):
    _ = translator(language)

    def screen_in(screen: Screen) -> Screen:
        return replace(screen, title=_(screen.title), why=_(screen.why) if screen.why else None)

    translated = {name: replace(step, title=_(step.title), what=_(step.what), why=_(step.why),
                                screens=tuple(map(screen_in, step.screens)))
                  for name, step in steps}
    return MappingProxyType(translated), tuple(map(screen_in, screens))  # shared: read-only
