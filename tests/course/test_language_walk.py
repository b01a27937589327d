"""A walk through every page of the navigation and every presenter screen in each language, in Chromium
(one server, one browser, one context per language), reading what a reader reads.

Issue 17: no English sentence is left on a page of another language (Markdown, captions, buttons,
labels, headings, tabs, alerts, table headers and the charts' titles; tests/page_walk.py's
``english_sentences`` says what counts as English).

Issue 40, 4: no Markdown mark is left unrendered in any language: the text Chromium shows in the main
column and the sidebar (formulas, code and typed inputs left out) holds no literal ``**`` (a bold that
CommonMark's flanking rule refused, as a full-width colon before the closing ``**`` does) and no
backslash escape (``d\\_k``: text escaped twice). The checks are tested on made-up text.

Skips without Chromium or Playwright unless REQUIRE_BROWSER=1 (CI).
"""

from __future__ import annotations

import re

import pytest

from course.steps import SCREENS
from tests.browser_env import PROJECTOR, presenter_screens, require_browser, settle
from tests.page_walk import english_sentences

require_browser()
pytestmark = pytest.mark.browser

LOADED = 90_000  # ms
PAGES = ["workbench", "present", "labs", "learn", "quiz", "model", "class", "examples"]
LANGUAGES = ["en", "de", "fr", "es", "pt_BR", "zh_CN"]
READ = """() => {
  const read = "[data-testid='stMarkdownContainer'], [data-testid='stCaptionContainer'], button, label, "
    + "summary, [role='tab'], h1, h2, h3, th, .gtitle, .g-xtitle, .g-ytitle, [data-testid='stMetricLabel']";
  const texts = [];
  for (const root of document.querySelectorAll("[data-testid='stMain'], [data-testid='stSidebar']"))
    for (const element of root.querySelectorAll(read))
      if (element.getClientRects().length)
        texts.push((element.innerText || element.textContent || "").trim());
  return texts;
}"""
# What a reader sees of the main column and the sidebar, as innerText, without formulas (KaTeX keeps
# its TeX source in the page), code blocks and typed inputs (outside text, the reader's own).
SEEN = """() => {
  const seen = [];
  for (const root of document.querySelectorAll("[data-testid='stMain'], [data-testid='stSidebar']")) {
    const copy = root.cloneNode(true);
    copy.querySelectorAll(".katex, code, pre, input, textarea").forEach(element => element.remove());
    const box = document.createElement("div");
    box.style.cssText = "position:absolute;left:-20000px;top:0;width:1280px";
    box.appendChild(copy);
    document.body.appendChild(box);
    seen.push(copy.innerText);
    box.remove();
  }
  return seen.join("\\n");
}"""
# A Markdown mark shown as text: two asterisks, or a backslash before ASCII punctuation.
LITERAL_MARK = re.compile(r"\*\*|\\[!-/:-@\[-`{-~]")


def literal_marks(text: str) -> list[str]:
    """Each Markdown mark shown as text, with the words around it."""
    return sorted({text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")
                   for m in LITERAL_MARK.finditer(text)})


def test_the_checks_find_english_and_marks_and_pass_the_rest():
    assert english_sentences(["Every example of the course, ready to replay.", "the cat sat on the mat"]) == [
        "Every example of the course, ready to replay."]
    assert english_sentences(["Jedes Beispiel des Kurses, bereit zum Abspielen.", "Kopf 1 · 0.67"]) == []
    assert literal_marks("**老师提问：**谁最大？") and literal_marks(r"geteilt durch √d\_k \= √1")
    assert literal_marks("老师提问：谁最大？ · 2 × 3 = 6 · a/b · C:\\ · 5 * 4") == []


def open_page(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("[data-testid='stMain'] h1, [data-testid='stMain'] h3", timeout=LOADED)
    settle(page, timeout=LOADED)


def walk(browser, url: str, language: str):
    """Every page, then every presenter screen, in one context: (where, sentences read, text seen)."""
    page = browser.new_context(viewport=PROJECTOR).new_page()
    try:
        for name in PAGES:
            open_page(page, f"{url}/{'' if name == 'workbench' else name}?lang={language}")
            yield name, page.evaluate(READ), page.evaluate(SEEN)
        open_page(page, f"{url}/present?lang={language}")
        for position in presenter_screens(page, timeout=LOADED):
            yield f"present · screen {position + 1}", page.evaluate(READ), page.evaluate(SEEN)
    finally:
        page.context.close()


@pytest.fixture(scope="module")
def walked(live) -> dict[str, list[tuple[str, list[str], str]]]:
    """Every language's walk, once for both checks."""
    url, browser = live
    return {language: list(walk(browser, url, language)) for language in LANGUAGES}


def test_the_english_walk_is_found_english(walked):
    examples = next(texts for where, texts, _ in walked["en"] if where == "examples")
    assert len(english_sentences(examples)) > 10


@pytest.mark.parametrize("language", [code for code in LANGUAGES if code != "en"])
def test_every_page_in_a_language_has_no_english_sentence_left(walked, language):
    left = {where: found for where, texts, _ in walked[language] if (found := english_sentences(texts))}
    assert not left, left


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_markdown_mark_is_shown_as_text(walked, language):
    """Issue 40, 4: every page and every presenter screen of the walk."""
    assert len(walked[language]) == len(PAGES) + len(SCREENS)
    left = {where: found for where, _, seen in walked[language] if (found := literal_marks(seen))}
    assert not left, left
