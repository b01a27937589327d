"""A guard on the page's weight that is not a timing: what one run sends to a browser tab.

Every element a run draws costs server time on every rerun of every session (a class of 100 edits at
once), and every byte goes to a phone. tests/page_budget.py counts, over Streamlit's own websocket
protocol against a real server, the elements (new_element deltas), containers (add_block), messages
and bytes of the default workbench (its first run, a plain rerun, an edit of one cell) and of the
presenter's softmax screen. The budgets are today's page (docs/performance.md, "What a run sends"):
a change that draws more fails here and must either draw less elsewhere or raise the budget in
the same commit, saying in docs/performance.md what the new elements are for and what they cost
(bench/page.py and bench/load.py before and after).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.live_server import streamlit_server
from tests.page_budget import measure

# run -> (elements, containers, messages, kB). Elements and containers are exact counts of today's page;
# bytes have 10 % of room (the numbers' digits change them).
BUDGET = {
    "workbench, first run": (66, 41, 116, 96),
    "workbench, rerun": (66, 41, 115, 26),
    "workbench, edit": (68, 41, 117, 73),
    "presenter, first run": (31, 17, 55, 28),
    "presenter, rerun": (31, 17, 56, 13),
}
FIELDS = ("elements", "blocks", "messages", "bytes")


@pytest.fixture(scope="module")
def sent() -> dict[str, dict]:
    with streamlit_server() as (url, _process):
        return asyncio.run(measure(url))


@pytest.mark.parametrize("run", BUDGET)
def test_a_run_sends_no_more_than_its_budget(sent, run):
    budget = dict(zip(FIELDS, BUDGET[run], strict=True))
    budget["bytes"] *= 1000
    over = {field: (sent[run][field], budget[field]) for field in FIELDS if sent[run][field] > budget[field]}
    assert not over, f"{run}: (sent, budget) {over}; see this module's docstring before raising a budget"


def test_a_rerun_sends_the_unchanged_elements_as_references(sent):
    """An unchanged chart or editor goes as its hash (global.minCachedMessageSize in .streamlit/
    config.toml): a plain rerun sends under a third of the first run's bytes."""
    assert sent["workbench, rerun"]["bytes"] < sent["workbench, first run"]["bytes"] / 3
    assert sent["presenter, rerun"]["bytes"] < sent["presenter, first run"]["bytes"] / 2
