"""What the default page sends per run over Streamlit's websocket protocol: elements, containers,
messages and bytes, for the workbench (a plain rerun, the first edit, which runs the whole page, and
the next, which runs its steps alone) and one presenter screen.

tests/app/test_budget.py holds these under a budget; bench/sent.py prints them (for a checkout
before a change too). Counted as a browser tab receives them (tests/st_protocol.py): a large
element the tab already holds comes as a reference, and its bytes are the reference's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from streamlit.util import calc_hash

from app.grids.editors import editor_key
from tests.st_protocol import SAT, Run, Session

SOFTMAX_SCREEN = "softmax"  # the presenter's screen of the softmax step, by its name in links


# The elements that cost most per run, by kind: an editor converts its frame to Arrow every run (about a
# millisecond), a chart serialises its figure, and these inputs each walk the whole session state.
EDITORS, CHARTS = ("dataframe",), ("plotly_chart",)  # a data_editor is a dataframe element
INPUTS = ("selectbox", "number_input", "text_input", "radio")


@dataclass(frozen=True)
class Sent:
    elements: int
    blocks: int
    editors: int
    charts: int
    inputs: int
    messages: int
    bytes: int

    @classmethod
    def of(cls, run: Run, status: str = "ok") -> Sent:
        """What ``run`` sent; it ended as ``status`` says (a whole run, or a fragment's alone)."""
        assert run.status == status and not run.errors, (run.status, run.errors)

        def count(kinds: tuple[str, ...]) -> int:
            return sum(run.kinds.get(kind, 0) for kind in kinds)

        return cls(run.elements, run.blocks, count(EDITORS), count(CHARTS), count(INPUTS), run.messages,
                   run.bytes)


async def workbench(url: str) -> dict[str, Sent]:
    """A fresh tab on the default example: its first run, a plain rerun, an edit of one cell."""
    session = Session(url)
    try:
        opened = await session.open()
        rerun = await session.rerun()
        edit = await session.edit_cell(editor_key("x", 1), SAT, 0, "1.5")  # edited: the whole page runs
        again = await session.edit_cell(editor_key("x", 1), SAT, 0, "1.25")  # the steps alone
        return {"workbench, first run": Sent.of(opened), "workbench, rerun": Sent.of(rerun),
                "workbench, edit": Sent.of(edit), "workbench, next edit": Sent.of(again, "fragment ok")}
    finally:
        await session.close()


async def presenter(url: str) -> dict[str, Sent]:
    """A fresh tab on the presenter's softmax screen (its link: the forecast), Reveal (its charts),
    then a plain rerun."""
    session = Session(url)
    session.page_hash = calc_hash("present")
    try:
        opened = await session.open(f"step={SOFTMAX_SCREEN}")
        revealed = await session.press("present_reveal")
        rerun = await session.rerun()
        return {"presenter, first run": Sent.of(opened), "presenter, revealed": Sent.of(revealed),
                "presenter, rerun": Sent.of(rerun)}
    finally:
        await session.close()


async def measure(url: str) -> dict[str, dict]:
    return {name: asdict(sent) for name, sent in {**await workbench(url), **await presenter(url)}.items()}
