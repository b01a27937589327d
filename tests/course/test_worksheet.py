"""The printable worksheet: its answer key is mha_core's numbers, tokens are escaped, it is A4 and
the key is on a page of its own, and no table is wider than the printable 180 mm."""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.examples import all_examples, generated_setup
from course.worksheet import DECIMALS, HAND_DOT_MAX, MAX_COLUMNS, number, worksheet_html
from mha_core import Setup
from tests.course.test_quiz import setups

EXAMPLES = all_examples()
ANSWER = re.compile(r'data-cell="(\w+) ([\d ]+)">([^<]+)<')
PRINTABLE_MM = 180  # A4 210 mm less two 15 mm margins


def answers(html: str) -> list[tuple[str, tuple[int, ...], float]]:
    """Every number of the answer key, parsed back from the HTML as printed."""
    out = []
    for what, where, text in ANSWER.findall(html):
        out.append((what, tuple(int(i) for i in where.split()), float(unescape(text).replace("\u2212", "-"))))
    return out


def expected(result, what: str, where: tuple[int, ...]) -> float:
    if what == "score":
        return result.scores[where]
    if what == "weight":
        return result.weights[where]
    if what == "output":
        return result.head_outputs[where]
    h, q = where[:2]
    scaled = result.scaled[h, q]
    live = np.isfinite(scaled)
    if not live.any():  # a row that blocks every key: nothing to exponentiate
        return 0.0
    exps = np.exp(np.where(live, scaled - scaled[live].max(), -np.inf))  # masked keys: e^-inf = 0
    return exps[where[2]] if what == "exp" else exps.sum()


def assert_key_is_the_cores(html: str, setup: Setup) -> None:
    result = setup.run()
    found = answers(html)
    kinds = {what for what, _, _ in found}
    assert {"weight", "output"} <= kinds
    assert ("score" in kinds) == (setup.sizes.d_k <= HAND_DOT_MAX)
    for what, where, value in found:
        exact = expected(result, what, where)
        printed = 0.5 * 10.0**-DECIMALS * (1 if abs(exact) < 1e6 else abs(exact) * 1e-2)
        assert abs(value - exact) <= printed + 1e-12, (what, where, value, exact)
    weights = [value for what, where, value in found if what == "weight"]
    assert abs(sum(weights) - 1) <= len(weights) * 0.5 * 10.0**-DECIMALS or not any(weights)


def assert_prints_on_a4(html: str) -> None:
    assert "@page { size: A4; margin: 15mm; }" in html
    sheet, key = html.split('<section class="key">')
    assert ".key { break-before: page; page-break-before: always; }" in html
    assert 'class="answer"' not in sheet  # the sheet itself gives nothing away
    assert 'class="answer"' in key
    widths = [int(w) for w in re.findall(r'<table class="[^"]*" style="width:(\d+)mm"', html)]
    assert widths and max(widths) <= PRINTABLE_MM


@pytest.mark.parametrize("key", list(EXAMPLES))
def test_every_examples_answer_key_is_the_cores(key):
    html = worksheet_html(EXAMPLES[key], EXAMPLES[key].run(), title=EXAMPLES[key].title, seed=0)
    assert_key_is_the_cores(html, EXAMPLES[key])
    assert_prints_on_a4(html)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


@settings(max_examples=40, deadline=None)
@given(setups(), st.integers(0, 998))
def test_a_random_setups_answer_key_is_the_cores(setup, seed):
    html = worksheet_html(setup, setup.run(), title="random", seed=seed)
    assert_key_is_the_cores(html, setup)
    assert_prints_on_a4(html)


def test_the_sheet_has_blanks_and_the_setups_numbers():
    setup = generated_setup("random", 3)
    result = setup.run()
    html = worksheet_html(setup, result, title="t", seed=1)
    sheet = html.split('<section class="key">')[0]
    assert sheet.count('class="blank"') >= 3 + 2 * 2  # dot products, a softmax row, and more
    assert "Answer:" in sheet  # the output cell
    head = int(re.search(r"Work in head (\d+)", sheet)[1]) - 1
    q_table = sheet.split(f"Q of head {head + 1}")[1].split("</table>")[0]
    printed = [float(t.replace("\u2212", "-")) for t in re.findall(r'class="given">([^<]+)<', q_table)]
    np.testing.assert_allclose(printed, result.q[head].ravel(), atol=0.5e-4)


def test_tokens_are_escaped():
    tokens = ("<script>alert(1)</script>", "a&b", '"q"', "<b>x</b>")
    n = len(tokens)
    setup = Setup(tokens=tokens, x=np.eye(n), w_q=np.eye(n)[None], w_k=np.eye(n)[None], w_v=np.eye(n)[None],
                  w_o=np.eye(n))
    html = worksheet_html(setup, setup.run(), title="<script>title</script>", seed=0)
    assert "<script>" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "a&amp;b" in html
    assert "&lt;script&gt;title" in html


def test_a_large_d_k_gives_the_scores_instead_of_dot_products():
    setup = EXAMPLES["ex_h_cross_attention"]  # d_k = 64
    html = worksheet_html(setup, setup.run(), title="H", seed=2)
    assert "Raw scores q · k</h2>" not in html and "raw score q · k" in html
    assert "Q of head" not in html and "V of head" in html
    assert f"columns {MAX_COLUMNS + 1} to 64 are not needed" in html
    small = EXAMPLES["visual_walkthrough"]  # d_k = 2: dot products by hand
    assert "Raw scores q · k</h2>" in worksheet_html(small, small.run(), title="V", seed=2)


def test_masked_keys_are_marked_and_weigh_nothing():
    setup = Setup(tokens=("a", "b", "c"), x=np.eye(3), w_q=np.eye(3)[None], w_k=np.eye(3)[None],
                  w_v=np.eye(3)[None], w_o=np.eye(3), mask="causal")
    html = worksheet_html(setup, setup.run(), title="causal", seed=0)
    assert "Causal mask" in html and ">masked<" in html
    assert_key_is_the_cores(html, setup)


def test_the_seed_picks_the_head():
    setup = EXAMPLES["ex_i_parameter_count"]
    heads = {re.search(r"Work in head (\d+)", worksheet_html(setup, setup.run(), title="I", seed=s))[1]
             for s in range(12)}
    assert len(heads) >= 3
    one = worksheet_html(setup, setup.run(), title="I", seed=5)
    assert one == worksheet_html(setup, setup.run(), title="I", seed=5)


def test_numbers_print_with_four_decimals_and_a_true_minus():
    assert number(0.66524) == "0.6652" and number(-1.5) == "\u22121.5000" and number(-0.00001) == "0.0000"
    assert number(-np.inf) == "masked" and "e" in number(2.5e7)


# ---------------------------------------------------------------------------------------------
# In a real browser: printed to an A4 PDF, nothing reaches past the right edge

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.browser
def test_a_long_token_worksheet_fits_the_a4_width_in_chromium(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    words = tuple("w" * 40 if i % 2 else f"token{i}" for i in range(24))
    rng = np.random.default_rng(0)
    d = 8
    setup = Setup(tokens=words, x=rng.normal(size=(24, d)) * 123.456, w_q=rng.normal(size=(2, d, d)),
                  w_k=rng.normal(size=(2, d, d)), w_v=rng.normal(size=(2, d, d)) * 100, w_o=np.eye(2 * d, d),
                  mask="causal")
    html = worksheet_html(setup, setup.run(), title="A long one " + "x" * 80, seed=3)
    path = tmp_path / "sheet.html"
    path.write_text(html, encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking"]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
        page = browser.new_page(viewport={"width": 680, "height": 1009})  # A4's printable 180 mm at 96 dpi
        page.goto(path.as_uri())
        page.emulate_media(media="print")
        overflow = page.evaluate("""() => {
            const right = window.innerWidth;  // a long label is cut with an ellipsis inside its cell
            const past = Array.from(document.querySelectorAll('table, td, th, p, h1, h2'))
              .filter(e => e.getBoundingClientRect().right > right + 1)
              .map(e => e.tagName + ': ' + e.textContent.slice(0, 40));
            return document.documentElement.scrollWidth > right ? ['the page', ...past] : past;
        }""")
        numbers = page.evaluate("""() => Array.from(document.querySelectorAll('table.matrix td.given'))
            .filter(e => e.scrollWidth > e.clientWidth + 1).length""")
        pdf = page.pdf(format="A4")
        browser.close()
    assert overflow == []
    assert numbers == 0  # every given number fits its cell on one line
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages") >= 2


# --- Issue 16, finding 5: one number for the seed, and two sheets per student -------------------


def test_the_sheet_page_and_file_name_count_the_seed_alike():
    from app.views.quiz import worksheet_file_name

    setup = EXAMPLES["the_cat_sat_two_heads"]
    for seed in (0, 4):
        html = worksheet_html(setup, setup.run(), title="t", seed=seed)
        shown = seed + 1  # the Quiz page says "Quiz seed {seed + 1}"; the link's quiz= is the same
        assert html.count(f"Quiz seed {shown}") == 2  # the sheet and its answer key
        assert f"seed {seed}:" not in html and f"seed {seed};" not in html
        assert worksheet_file_name(seed) == f"attention-worksheet-{shown}.html"


def pdf_pages(pdf: bytes) -> int:
    return pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")


@pytest.mark.browser
def test_every_examples_sheet_prints_on_one_page_and_its_key_on_another():
    """Printed by Chromium: the student's part is one A4 page and the whole file two (the random example
    and example G printed task 3 alone on a second page: three sheets per student)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    setups = {**EXAMPLES, "random": generated_setup("random", 0), "blank": generated_setup("blank", 0)}
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking"]
    pages = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=flags)
        page = browser.new_page()
        for key, setup in setups.items():
            for seed in (0, 1):
                html = worksheet_html(setup, setup.run(), title=f"Multi-head attention by hand: {key}",
                                      seed=seed)
                page.set_content(html)
                page.emulate_media(media="print")
                whole = pdf_pages(page.pdf(format="A4"))
                page.add_style_tag(content=".key { display: none !important; }")
                pages[key, seed] = (pdf_pages(page.pdf(format="A4")), whole)
        browser.close()
    assert {where: counted for where, counted in pages.items() if counted != (1, 2)} == {}
