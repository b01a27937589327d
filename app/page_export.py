"""'Download this page': every step of the workbench for one setup, as one HTML file that opens with
no network (a learning platform, a student without the server).

The charts are the workbench's own figures, drawn by the Plotly code that ships with the plotly
package, gzipped into the file and unpacked by the browser (DecompressionStream); the formulas are
MathML, which browsers draw themselves; each chart carries its summary and its numbers as a table.
Pure: a Setup and its MHAResult in, a string out.
"""

from __future__ import annotations

import base64
import gzip
import threading
from dataclasses import replace
from functools import cache
from importlib import resources

from latex2mathml.converter import convert

from app.charts import chart_tables, chart_text
from app.result_cache import BytesLRU, setup_key
from app.safe import html_text, script_json
from app.steps.drawing import drawing_of
from app.steps.view import StepView
from course.i18n import ENGLISH, translator
from course.steps import STEPS, in_language
from mha_core.attention import MHAResult
from mha_core.setup import Setup

BUDGET_BYTES = 5 * 10**6  # the ceiling for a chapter example's page (1,024 tokens: 4.6 MB)
PAGES_BUDGET_BYTES = 24 * 2**20  # about ten built pages, shared by every session
PAGE_CSS = """
body { font: 17px/1.5 system-ui, sans-serif; color: #1f2430; max-width: 60rem; margin: 0 auto;
       padding: 1rem; }
h1 { font-size: 1.7rem; }
h2 { font-size: 1.35rem; margin-top: 2.2rem; border-top: 1px solid #c9ccd6; padding-top: 1rem; }
math[display="block"] { font-size: 1.3rem; margin: .6rem 0; }
figure { margin: 1rem 0; } figcaption { font-size: .95rem; }
.chart { width: 100%; min-height: 12rem; }
table { border-collapse: collapse; font-size: .9rem; margin: .4rem 0; }
th, td { border: 1px solid #c9ccd6; padding: .15rem .45rem; text-align: right; }
th { background: #f0f2f6; }
a:focus, summary:focus { outline: 3px solid #1f4fbf; outline-offset: 2px; }
.note { background: #fff4d6; padding: .5rem .8rem; }
@media (prefers-reduced-motion: reduce) { * { transition: none !important; animation: none !important; } }
"""
# Unpacks Plotly, then draws every chart; a browser without DecompressionStream keeps the tables.
LOADER = """
(async () => {
  const note = document.getElementById('charts-note');
  if (!('DecompressionStream' in window)) { note.hidden = false; return; }
  const text = document.getElementById('plotly-gz').textContent;
  const packed = Uint8Array.from(atob(text), c => c.charCodeAt(0));
  const unpacked = new Blob([packed]).stream().pipeThrough(new DecompressionStream('gzip'));
  const code = await new Response(unpacked).text();
  (0, eval)(code);
  const charts = JSON.parse(document.getElementById('charts').textContent);
  for (const [id, spec] of Object.entries(charts)) {
    await Plotly.newPlot(id, spec.data, spec.layout, {displaylogo: false, responsive: true});
  }
  document.body.dataset.chartsDrawn = String(Object.keys(charts).length);
})();
"""


@cache
def plotly_packed() -> str:
    """plotly.min.js of the installed plotly package, gzipped and base64-encoded (about 2 MB)."""
    code = resources.files("plotly").joinpath("package_data/plotly.min.js").read_bytes()
    return base64.b64encode(gzip.compress(code, compresslevel=9, mtime=0)).decode("ascii")


def mathml(latex: str) -> str:
    return convert(latex, display="block")


def step_figures(setup: Setup, result: MHAResult, q_tokens, k_tokens, *, query: int = 0,
                 language: str = ENGLISH) -> dict[str, list]:
    """Every step's charts by its name, as the workbench draws them (the step's own ``charts``,
    app/steps/<step>.py), for the given query, with each head's where the workbench shows one head
    at a time."""
    view = StepView(setup, result, q_tokens, k_tokens, query=query, language=language)
    drawn = {}
    for name in STEPS:  # the course's registry is the only list of steps
        drawing = drawing_of(name)
        heads = range(result.n_heads) if drawing.one_head_at_a_time else (0,)
        charts = drawing.charts or (lambda _: {})  # a step may have words only
        drawn[name] = [fig for head in heads for fig in charts(replace(view, head=head)).values()]
    return drawn


def chart_html(chart_id: str, fig, language: str = ENGLISH) -> str:
    """One chart: the figure named by its summary (its caption), and its numbers
    as tables on request (the same text alternative as on the page: app/charts/chart_text.py)."""
    about = chart_text.of_figure(fig, language)
    summary = html_text(about.summary)
    return (f'<figure aria-labelledby="{chart_id}-summary"><div class="chart" id="{chart_id}"></div>'
            f'<figcaption><p id="{chart_id}-summary">{summary}</p>'
            f"<details><summary>{html_text(translator(language)(chart_tables.TABLE_LABEL))}</summary>"
            f"{chart_tables.table_html(about.tables())}</details></figcaption></figure>")


def page_html(setup: Setup, *, title: str, query: int = 0, language: str = ENGLISH) -> str:
    """The whole page: a title, the sizes, and for each step its formula, what and why and charts
    (the course's texts in ``language``)."""
    result = setup.run()
    q_tokens = list(setup.tokens)
    k_tokens = list(setup.key_tokens)
    charts, sections = {}, []
    figures_of = step_figures(setup, result, q_tokens, k_tokens, query=query, language=language)
    steps, _ = in_language(language)
    _ = translator(language)
    what_word, why_word = html_text(_("What.")), html_text(_("Why."))
    for number, (name, step) in enumerate(steps.items(), start=1):  # the registry's order
        drawn = []
        for fig in figures_of.get(name, []):
            chart_id = f"chart-{len(charts) + 1}"
            charts[chart_id] = fig.to_dict()
            drawn.append(chart_html(chart_id, fig, language))
        sections.append(f'<section id="step-{number}" aria-labelledby="step-{number}-title">'
                        f'<h2 id="step-{number}-title">{number}. {html_text(step.title)}</h2>'
                        f"{mathml(step.formula)}<p><strong>{what_word}</strong> {html_text(step.what)}</p>"
                        f"<p><strong>{why_word}</strong> {html_text(step.why)}</p>{''.join(drawn)}</section>")
    sizes = setup.sizes
    page_title = html_text(_("{title}: multi-head attention, step by step")).format(title=html_text(title))
    # The course's own sentence (its catalogues' plain text, no markup), as the English literal was.
    no_charts = _("This browser cannot unpack the charts; every chart's numbers are in its table.")
    steps_label = html_text(_("Steps"))
    skip = " · ".join(f'<a href="#step-{number}">{number}. {html_text(step.title)}</a>'
                      for number, step in enumerate(steps.values(), start=1))
    return (f'<!DOCTYPE html><html lang="{language.replace("_", "-")}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{page_title}</title>"
            f"<style>{PAGE_CSS}</style></head>"
            f"<body><header><h1>{html_text(title)}</h1>"
            f"<p>{html_text(' '.join(q_tokens))} · {sizes.n_q} × {sizes.n_k}, d_model = {sizes.d_model}, "
            f"h = {sizes.n_heads}, d_k = {sizes.d_k}, d_v = {sizes.d_v}</p>"
            f'<nav aria-label="{steps_label}">{skip}</nav>'
            f'<p id="charts-note" class="note" hidden>{no_charts}</p></header><main>'
            f"{''.join(sections)}</main>"
            f'<script type="application/json" id="charts">{script_json(charts)}</script>'
            f'<script type="text/plain" id="plotly-gz">{plotly_packed()}</script>'
            f"<script>{LOADER}</script></body></html>")




_building = threading.Lock()  # one page at a time for the whole server: a click costs up to ~4 s of CPU
PAGES = BytesLRU(PAGES_BUDGET_BYTES)  # the pages built last, shared: the class clicking the same example


def page_for_download(setup: Setup, title: str, language: str = ENGLISH) -> bytes:
    """The page as the download button's deferred data: built once per setup, title and language,
    one build at a time across the server."""
    key = setup_key(setup) + f"{language}\n{title}".encode()
    with _building:
        page = PAGES.get(key)
        if page is None:
            page = page_html(setup, title=title, language=language).encode()
            PAGES.put(key, page, len(page))
    return page
