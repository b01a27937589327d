"""Issue 16: "Download this page" writes one self-contained HTML file of every step (app/page_export.py)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from app import page_export
from app.safe import chart_text
from course.examples import all_examples
from course.steps import STEPS
from mha_core import LIMITS
from mha_core.setup import Setup

EXAMPLES = all_examples()
HOSTILE = ("</script><script>window.pwned=1</script>", "<img src=x onerror=window.pwned=2>", "a\u2028b")


class Elements(HTMLParser):
    """The start tags of a page, with their attributes."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


def charts_of(page: str) -> dict:
    (packed,) = re.findall(r'<script type="application/json" id="charts">(.*?)</script>', page, re.S)
    return json.loads(packed)


def hostile_setup() -> Setup:
    base = EXAMPLES["the_cat_sat_two_heads"]
    return Setup(tokens=HOSTILE, x=base.x, w_q=base.w_q, w_k=base.w_k, w_v=base.w_v, w_o=base.w_o)


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_chapter_example_fits_in_one_file_under_5_mb_with_every_step(key):
    example = EXAMPLES[key]
    page = page_export.page_html(example, title=example.title)
    assert len(page.encode()) < page_export.BUDGET_BYTES
    tags = elements(page)
    sections = [a["id"] for t, a in tags if t == "section"]
    assert sections == [f"step-{n}" for n in range(1, len(STEPS) + 1)]  # numbered in the registry's order
    assert sum(t == "math" for t, _ in tags) == len(STEPS)  # every formula, as MathML
    drawn = [a["id"] for t, a in tags if t == "div" and a.get("class") == "chart"]
    charts = charts_of(page)
    assert drawn == list(charts) and len(charts) >= 9
    assert all(spec["data"] and "layout" in spec for spec in charts.values())
    fetching = [a for t, a in tags if t in ("link", "img") or (t == "script" and "src" in a)]
    assert not fetching  # nothing is fetched


def test_the_weights_in_the_file_are_the_results():
    example = EXAMPLES["the_cat_sat_two_heads"]
    charts = charts_of(page_export.page_html(example, title="x"))
    result = example.run()
    weights = [spec for spec in charts.values()
               if any(str(t.get("name", "")).startswith("A") for t in spec["data"])
               or "A₁" in json.dumps(spec["layout"], ensure_ascii=False)]
    assert weights  # the softmax grid is in the file
    texts = json.dumps(weights)
    for value in result.weights[0, 1]:
        assert f"{value:.2f}" in texts


def test_grouped_heads_name_their_shared_keys_in_the_file():
    """The decoder example's 4 query heads read 2 key/value heads: head 2's K and V are K₁ and V₁."""
    example = EXAMPLES["decoder_gqa"]
    figures = page_export.step_figures(example, example.run(), list(example.tokens), list(example.tokens))
    titles = [[a["text"] for a in fig["layout"]["annotations"]]
              for fig in figures["projections"]]  # [Q, K, V] per head
    assert [t[1].split(" [")[0] for t in titles] == ["K₁", "K₁", "K₂", "K₂"]
    assert [t[0].split(" [")[0] for t in titles] == ["Q₁", "Q₂", "Q₃", "Q₄"]


def test_outside_text_stays_text_in_the_file():
    page = page_export.page_html(hostile_setup(), title="<b>title</b> </script>")
    tags = elements(page)
    assert [t for t, _ in tags].count("script") == 3  # the charts, Plotly, the loader: nothing injected
    assert not [t for t, _ in tags if t in ("img", "b")]
    assert "\u2028" not in page.split('id="charts">', 1)[1].split("</script>", 1)[0]
    shown = json.dumps(charts_of(page), ensure_ascii=False)
    assert chart_text(HOSTILE[0]) in shown and HOSTILE[0] not in shown  # kept as the app shows it: text


def test_the_longest_sequence_the_app_takes_still_fits_in_5_mb():
    """Grids beyond figure_layout.IMAGE_FROM_CELLS travel as pictures and the tables are cut, so the file
    stays under the budget whatever the setup: no setup is refused."""
    n = LIMITS.tokens
    rng = np.random.default_rng(0)
    w = {name: rng.normal(size=(4, 16, 4)) for name in ("w_q", "w_k", "w_v")}  # [h, d_model, d_k]
    long = Setup(tokens=tuple(f"t{i}" for i in range(n)), x=rng.normal(size=(n, 16)), **w,
                 w_o=rng.normal(size=(16, 16)))
    page = page_export.page_for_download(long, "long")
    assert len(page) < page_export.BUDGET_BYTES
    assert page_export.page_for_download(long, "long") is page  # the class's second click builds nothing
