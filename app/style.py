"""The page's global CSS and keyboard helpers, injected once per run by app/streamlit_app.py.

What each rule is for (docs/accessibility.md lists them against WCAG 2.2):
- captions and other faded text at 4.5:1 or more (Streamlit's caption grey is 3.9:1 on white);
- a visible focus ring on everything that takes focus (the navigation links' own is a faint grey);
- ``prefers-reduced-motion`` honoured: no animations, transitions or smooth scrolling;
- skip links: the first Tab stops of a page that has numbered steps ("1. ...") are one link per step;
- chart and grid toolbars out of the Tab order (8 stops per chart, 6 per grid) until asked for: the
  last skip link, "Chart toolbars in the Tab order", puts them back. A mouse still finds them on hover.

Others may append rules to CSS; keep each with a comment saying what it is for.
"""

from __future__ import annotations

import json

import streamlit as st

from course.i18n import N_, translator

FOCUS = "#1A56DB"  # the focus ring: 6.1:1 on white, 3:1 or more against every panel colour it meets
CAPTION = "#5C5B58"  # faded text, 6.8:1 on white, 6.4:1 on the sidebar (Streamlit's #828180 is 3.9:1)
CHOSEN = "#A3202F"  # a chosen segment's text: 6.5:1 on its pink (Streamlit's #C53948 is 4.47:1)
HEADER_HEIGHT = "3.75rem"  # Streamlit 1.67's header bar over the page (its theme's sizes.headerHeight)

CSS = f"""
<style>
/* Text contrast: captions, widget help and other "faded" text at 4.5:1 or more. */
/* Streamlit fades captions and compact expanders' labels ("Numbers as a table") to 0.6 opacity. */
[data-testid="stCaptionContainer"], [data-testid="stExpander"] summary {{ opacity: 1 !important; }}
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
[data-testid="stWidgetLabel"] small {{ color: {CAPTION} !important; }}

/* The first card right under the app's header bar, on every page and on a phone: Streamlit pads the
   page's top 6rem (96 px) under a header of HEADER_HEIGHT (60 px), which with two hidden elements'
   gaps (below) left 68 px of white above the first card; now the header's height and one gap (1rem).
   :where() keeps this below the presenter's own padding (app/views/present.py), the div above
   Streamlit's one class. */
[data-testid="stMain"] div:where(.block-container) {{ padding-top: calc({HEADER_HEIGHT} + 1rem); }}

/* The chosen option of a segmented control or pills: Streamlit's red on pink is 4.47:1; a darker red. */
[data-testid="stButtonGroup"] [data-selected="true"] :is(p, span) {{ color: {CHOSEN} !important; }}

/* A visible focus ring everywhere (WCAG 2.4.7, 2.4.11): 3 px, offset from the element. */
:focus-visible, [data-testid="stSidebarNav"] a:focus-visible, summary:focus-visible,
button:focus-visible, a:focus-visible, [tabindex]:focus-visible {{
  outline: 3px solid {FOCUS} !important; outline-offset: 2px !important;
}}
input:focus-visible, textarea:focus-visible {{ outline-offset: 0 !important; }}

/* Heatmap cell numbers. Plotly writes #444 or white on each cell by the cell's brightness, which leaves
   some colours at 2.6:1 (#444 on light red) or 2.9:1 (white on viridis's green-teal). Dark numbers become
   black (5.6:1 or more on every cell plotly gives dark text); white ones get a 1 px black halo, which
   WCAG counts as their background. */
.js-plotly-plot .heatmap-label text[style*="fill: rgb(68, 68, 68)"] {{ fill: #000000 !important; }}
.js-plotly-plot .heatmap-label text[style*="fill: rgb(255, 255, 255)"] {{
  paint-order: stroke; stroke: #000000; stroke-width: 2px; stroke-linejoin: round;
}}

/* Plotly shows its toolbar on hover only: a toolbar button that has the keyboard's focus shows it too. */
.js-plotly-plot .modebar-container:focus-within .modebar {{ opacity: 1 !important; }}

/* Skip links (built by SCRIPT): off screen until focused, then at the top left over the page. */
#mha-skip {{ position: fixed; top: 0; left: 0; z-index: 1000002; margin: 0; padding: 0; list-style: none; }}
#mha-skip a {{ position: absolute; left: -10000px; top: 8px; white-space: nowrap; padding: 8px 12px;
  background: #FFFFFF; color: #1A1A1A; border: 2px solid {FOCUS}; border-radius: 6px;
  font: 16px/1.3 sans-serif; }}
#mha-skip a:focus {{ left: 8px; }}

/* A refused setting's fixes (app/setting_fixes.py) are buttons as wide as their column, whose labels
   Streamlit keeps on one line and cuts with an ellipsis: on a 390 px phone "remove invisible characters
   and cut tokens to 40 …". A fix is read before it is pressed, so its label wraps instead. */
.st-key-refused_setting [class*="st-key-setting_fix_"] [data-testid="stMarkdownContainer"],
.st-key-refused_setting [class*="st-key-setting_fix_"] [data-testid="stMarkdownContainer"] p {{
  white-space: normal; overflow: visible; text-overflow: clip;
}}

/* The tokens boxes' character counter ("30/41984": max_chars guards the server, not a limit anyone
   types into): hidden, "Press Enter to apply" stays. */
.st-key-tokens_text [data-testid="InputInstructions"] > span:last-child,
.st-key-kv_tokens_text [data-testid="InputInstructions"] > span:last-child {{ display: none; }}

/* The containers that carry SCRIPT take no room, nor the wrapper Streamlit puts around each (0 px tall,
   each still left a gap of 1rem above the first card), nor the navigation's scroll to the top. */
.st-key-mha_style, .st-key-mha_cell_opener_box, .st-key-page_to_the_top,
[data-testid="stLayoutWrapper"]:has(> :is(.st-key-mha_style, .st-key-mha_cell_opener_box)) {{
  display: none; }}

/* Reduced motion (WCAG 2.3.3): no animation, transition or smooth scrolling when the system asks. */
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{
    animation-duration: 0.001ms !important; animation-iteration-count: 1 !important;
    transition-duration: 0.001ms !important; transition-delay: 0s !important;
    scroll-behavior: auto !important;
  }}
}}
</style>
"""

# Runs in the page (st.html with JavaScript), once per browser tab; a MutationObserver keeps up with
# every rerun. Skip links live in a <nav> before Streamlit's root, where React never redraws them.
SCRIPT = """
<script>
(() => {
  if (window.mhaA11y) { return; }
  window.mhaA11y = true;
  const doc = window.document;
  const TOOLBAR = "[data-testid='stElementToolbar'] button, .modebar-btn, .modebar a";
  let toolbarsInTabOrder = false;
  const nav = doc.createElement("nav");
  nav.id = "mha-skip";
  doc.body.insertBefore(nav, doc.body.firstChild);

  const link = (text, href, onClick) => {
    const a = doc.createElement("a");
    a.textContent = text;
    a.href = href;
    if (onClick) { a.addEventListener("click", onClick); }
    return a;
  };
  const steps = () => Array.from(doc.querySelectorAll("[data-testid='stMain'] h3[id]"))
    .filter(h => /^\\d+\\.\\s/.test(h.textContent.trim()));
  const toggleToolbars = (event) => {
    event.preventDefault();
    toolbarsInTabOrder = !toolbarsInTabOrder;
    update();
    const first = Array.from(doc.querySelectorAll(TOOLBAR)).find(el => el.closest("[data-testid='stMain']"));
    if (toolbarsInTabOrder && first) { first.focus(); }
  };
  let drawn = "";
  const update = () => {
    const found = steps();
    const words = window.mhaSkipWords;  // the reader's language, written by apply()'s second script
    const key = found.map(h => h.id).join("|") + toolbarsInTabOrder + JSON.stringify(words);
    if (words && key !== drawn) {
      drawn = key;
      nav.setAttribute("aria-label", words.nav);
      const toStep = (h) => words.step.split("{step}").join(h.textContent.trim());
      nav.replaceChildren(...found.map(h => link(toStep(h), "#" + h.id)),
        link(toolbarsInTabOrder ? words.toolbars_out : words.toolbars_in, "#", toggleToolbars));
    }
    for (const el of doc.querySelectorAll(TOOLBAR)) {
      if (toolbarsInTabOrder) { el.removeAttribute("tabindex"); }
      else if (el.getAttribute("tabindex") !== "-1") { el.setAttribute("tabindex", "-1"); }
    }
    keyTables();
  };
  // "Numbers as a table": Tab reaches a table's first cell, the arrow keys (Home, End) move from cell
  // to cell, and each cell is named by its row, its column and its value.
  const cellsOf = (row) => Array.from(row.querySelectorAll("td"));
  const MOVES = {ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0]};
  const moveInTable = (event) => {
    const cell = event.target.closest("td");
    if (!cell || !(event.key in MOVES || event.key === "Home" || event.key === "End")) { return; }
    const rows = Array.from(event.currentTarget.querySelectorAll("tbody tr"));
    let r = rows.indexOf(cell.parentElement), c = cellsOf(cell.parentElement).indexOf(cell);
    if (event.key in MOVES) { r += MOVES[event.key][0]; c += MOVES[event.key][1]; }
    else { c = event.key === "Home" ? 0 : cellsOf(rows[r]).length - 1; }
    event.preventDefault();
    const next = rows[Math.max(0, Math.min(rows.length - 1, r))];
    const target = next && cellsOf(next)[Math.max(0, Math.min(cellsOf(next).length - 1, c))];
    if (!target || target === cell) { return; }
    cell.tabIndex = -1;
    target.tabIndex = 0;
    target.focus();
  };
  // Every update, not once per table: React keeps a table's elements across reruns and changes
  // their text (a new sentence), so the names are written again wherever they no longer match.
  const keyTables = () => {
    for (const table of doc.querySelectorAll("table.chart-numbers")) {
      if (!table.dataset.mhaKeys) {
        table.dataset.mhaKeys = "1";
        table.addEventListener("keydown", moveInTable);
      }
      const columns = Array.from(table.querySelectorAll("thead tr > *"), th => th.textContent);
      const cells = Array.from(table.querySelectorAll("tbody td"));
      const stop = cells.find(cell => cell.tabIndex === 0) || cells[0];
      for (const row of table.querySelectorAll("tbody tr")) {
        const header = row.querySelector("th[scope='row']");
        for (const cell of cellsOf(row)) {
          const want = cell === stop ? 0 : -1;
          if (cell.tabIndex !== want) { cell.tabIndex = want; }
          const column = columns[cell.cellIndex];
          const name = (header ? header.textContent + " → " : "")
            + (column !== undefined ? column + ": " : "") + cell.textContent;
          if (cell.getAttribute("aria-label") !== name) { cell.setAttribute("aria-label", name); }
        }
      }
    }
  };
  // The presenter (app/views/present.py): the arrow keys and a clicker's Page Up/Down press Back and
  // Next. Listening here, once per tab, no key is lost while a screen's elements are being replaced.
  // Keys typed into a field, or walking a table of numbers, are left alone.
  doc.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) { return; }
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(target && target.tagName);
    if (typing || (target && target.isContentEditable)) { return; }
    if (target && target.closest && target.closest("table.chart-numbers")) { return; }
    const which = {ArrowRight: "present_next", PageDown: "present_next",
                   ArrowLeft: "present_back", PageUp: "present_back"}[event.key];
    const button = which && doc.querySelector(`.st-key-${which} button`);
    if (button && !button.disabled) { event.preventDefault(); button.click(); }
  });
  let queued = false;
  // New elements, or a text React changed in place inside a table of numbers (a new value); not the
  // text Plotly rewrites on every hover.
  const matters = (m) => m.type === "childList"
    || (m.target.parentElement && m.target.parentElement.closest("table.chart-numbers"));
  // What the reader edits stays where they see it (issue 40, 8): a run that grows the page above an
  // editor (an example's card saying it is edited, a note) pushed the X grid down while they typed.
  // The element touched last (a grid, an input) is held at its place on the screen for 5 s after
  // the last key or tap; the reader's own scrolling lets it go. The browser's scroll anchoring
  // does not do it: it anchors to the card that grows.
  const EDITORS = "[data-testid='stDataFrame'], input, textarea";
  let held = null;
  const mainOf = () => doc.querySelector("[data-testid='stMain']");
  const hold = (event) => {
    const main = mainOf(), target = event.target;
    const box = target && target.closest && target.closest("[data-testid='stElementContainer']");
    if (main && box && main.contains(box) && target.closest(EDITORS)) {
      held = {box, top: box.getBoundingClientRect().top, until: Date.now() + 5000};
    } else if (held && event.type === "keydown") {
      held.until = Date.now() + 5000;  // typing in the grid's editor, drawn outside the page's main
    } else if (event.type === "pointerdown") {
      held = null;
    }
  };
  doc.addEventListener("pointerdown", hold, true);
  doc.addEventListener("keydown", hold, true);
  for (const name of ["wheel", "touchmove"]) {
    doc.addEventListener(name, () => { held = null; }, {capture: true, passive: true});
  }
  const keepHeld = () => {
    if (!held) { return; }
    if (Date.now() > held.until || !held.box.isConnected) { held = null; return; }
    const main = mainOf(), shift = held.box.getBoundingClientRect().top - held.top;
    if (main && Math.abs(shift) >= 1) { main.scrollTop += shift; }
  };
  let holding = false;
  new MutationObserver((mutations) => {
    if (held && !holding) {
      holding = true;
      requestAnimationFrame(() => { holding = false; keepHeld(); });
    }
    if (!queued && mutations.some(matters)) {
      queued = true;
      requestAnimationFrame(() => { queued = false; update(); });
    }
  }).observe(doc.body, {childList: true, subtree: true, characterData: true});
  window.mhaSkipUpdate = update;  // the words' script calls it when the language changes
  update();
})();
</script>
"""

# The skip links' words (SCRIPT draws them), in the reader's language: a German page's links were
# English. "{step}" is the step's heading ("1. Embeddings").
SKIP_WORDS = {"nav": N_("Skip links"), "step": N_("Skip to step {step}"),
              "toolbars_in": N_("Chart toolbars in the Tab order"),
              "toolbars_out": N_("Take chart toolbars out of the Tab order")}


# Large type: the page's own text grows with the charts' (the grids' canvas keeps its size).
LARGE_TYPE_CSS = """<style>
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li { font-size: 1.4rem; line-height: 1.45; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 1.15rem; }
[data-testid="stMain"] h3 { font-size: 2.1rem; }
[data-testid="stMain"] .katex { font-size: 1.5em; }
</style>"""


def compact(script: str) -> str:
    """A script as the page is sent it: no comment lines, no indentation (every page's first run carries
    it: the presenter's first run passed its budget of bytes by 1.7 kB with the editor hold)."""
    lines = (line.strip() for line in script.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//"))


SCRIPT_SENT = compact(SCRIPT)


def apply(language: str) -> None:
    """The global CSS and the keyboard helpers' script, once per run (Streamlit keeps an unchanged
    element as it is, so the script runs once per tab), and the page's language for screen readers
    and hyphenation (WCAG 3.1.1): ``language`` is one of course.i18n.LANGUAGES, never outside text."""
    with st.container(key="mha_style"):
        st.html(CSS + SCRIPT_SENT, unsafe_allow_javascript=True)
        st.html(language_script(language), unsafe_allow_javascript=True)


def language_script(language: str) -> str:
    """The page's language and the skip links' words in it; a new language's script runs again and
    redraws the links (SCRIPT itself runs once per tab)."""
    translate = translator(language)
    words = json.dumps({name: translate(message) for name, message in SKIP_WORDS.items()}, ensure_ascii=False)
    words = words.replace("<", "\\u003c")  # no "</script>" inside the script, whatever a translation says
    return (f"<script>document.documentElement.lang = {json.dumps(language.replace('_', '-'))};\n"
            f"window.mhaSkipWords = {words};\n"
            "if (window.mhaSkipUpdate) { window.mhaSkipUpdate(); }</script>")
