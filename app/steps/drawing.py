"""How a step is drawn, and where each step's drawing lives.

A step of the course (course/steps.py: its name, title, formula, what and why, its screens) is drawn
by ``DRAWING`` in ``app/steps/<its name>.py``: its charts, its section on the workbench and its
screens on the presenter, in one file. The course's registry is the only list of steps and its
order is the pages' order; a step whose module does not exist is drawn plainly (its heading and
words on the workbench, its screen's title, formula and why on the presenter).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from app.steps.view import Charts, StepView

# The modules of app/steps/ that draw no step: the kit every step's drawing is made with.
KIT = frozenset({"drawing", "projector", "section", "step_text", "view"})


@dataclass(frozen=True)
class ScreenDrawing:
    """One presenter screen's charts and words, and its formula when it is not its step's."""

    draw: Callable[[Any], None]  # (app.steps.projector.Projector) -> None
    # Draws the screen's own formula across the page (or nothing); None: its step's (course/steps.py).
    formula: Callable[[Any], None] | None = None


@dataclass(frozen=True)
class StepDrawing:
    """A step's charts, its workbench section and its presenter screens (by their keys)."""

    name: str  # the step's name in course/steps.py, and this module's
    charts: Callable[[StepView], Charts] | None = None
    # (app.steps.section.Section) -> None; None: its heading and its charts. (The kit's pages are not
    # imported here: the downloadable page, which widgets import, reads this module.)
    section: Callable[[Any], None] | None = None
    screens: Mapping[str, ScreenDrawing] = field(default_factory=lambda: MappingProxyType({}))
    # Its charts show one head at a time (the workbench's head picker): the downloaded page, which has
    # no picker, writes them once per head.
    one_head_at_a_time: bool = False


def drawing_of(name: str) -> StepDrawing:
    """Step ``name``'s drawing: ``DRAWING`` of app/steps/<name>.py, or a plain one if there is none."""
    if name in KIT or not name.isidentifier():
        raise ValueError(f"{name!r} cannot name a step's drawing")
    try:
        module = importlib.import_module(f"app.steps.{name}")
    except ModuleNotFoundError as missing:
        if missing.name != f"app.steps.{name}":
            raise  # the module exists and fails to import something of its own
        return StepDrawing(name)
    drawing = module.DRAWING
    if drawing.name != name:
        raise ValueError(f"app/steps/{name}.py draws {drawing.name!r}")
    return drawing
