"""A printable worksheet: one head of the live setup, cells to compute by hand, and an answer key.

``worksheet_html(setup, result, title=..., seed=...)`` builds a complete HTML document (A4, 15 mm
margins, black on white) with three tasks in one head chosen by the seed:

1. a few raw scores q · k (dot products of the printed Q and K rows);
2. the softmax of one query's row, its scaled scores given (so an error in task 1 does not carry);
3. one cell of that head's output, the weighted sum of a column of V.

The answer key, on a page of its own, prints mha_core's numbers to four decimals.

The hand rule: a dot product of more than ``HAND_DOT_MAX`` terms is not a reasonable hand
computation, so when d_k is larger (e.g. 64 in examples H and I) Q and K are not printed, task 1
is left out and task 2 gives the raw scores as well as the scaled ones. Tables never need more
than 180 mm: at most ``MAX_COLUMNS`` columns of a matrix are printed (V's others are not needed),
and the softmax row is a column (one line per key), so 24 keys do not widen it.

Every token is user text and is HTML-escaped wherever it appears. The sheet's words are in
``language`` (course.i18n; English by default); its numbers are written as mha_core's, 0.1234.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

import numpy as np

from course.i18n import translator
from mha_core.analysis import FLAT_AT, normalised_entropy

HAND_DOT_MAX = 8  # d_k up to which a dot product is asked by hand (8 multiply-adds per cell)
MAX_COLUMNS = 8  # matrix columns printed: 34 mm of labels + 8 x 18 mm of numbers = 178 mm
SCORE_CELLS = 3  # dot products asked in task 1
LABEL_CHARS = 12  # of a token in a table's row label (the full tokens head the sheet)
DECIMALS = 4  # of every answer in the key
MINUS = "\u2212"

CSS = """
@page { size: A4; margin: 15mm; }
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 10pt; color: #000;
       background: #fff; margin: 0 auto; max-width: 180mm; line-height: 1.35; }
h1 { font-size: 15pt; margin: 0 0 2mm; }
h2 { font-size: 11.5pt; margin: 4mm 0 1.5mm; break-after: avoid; page-break-after: avoid; }
p { margin: 1mm 0 2mm; }
h1, h2, p { overflow-wrap: anywhere; }
.muted { color: #444; font-size: 9pt; }
table { border-collapse: collapse; table-layout: fixed; margin: 1mm 0 3mm; break-inside: avoid;
        page-break-inside: avoid; }
th, td { border: 0.3mm solid #666; padding: 0.8mm 1.5mm; text-align: right; overflow-wrap: anywhere;
         word-break: break-word; font-variant-numeric: tabular-nums; vertical-align: middle; }
th { background: #eee; font-weight: 600; }
th.row, td.row { text-align: left; }
td.row { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
td.blank { height: 6.5mm; background: #fff; }
td.given { background: #f6f6f6; }
.answer { font-weight: 600; }
.key { break-before: page; page-break-before: always; }
.task { break-inside: avoid; page-break-inside: avoid; }  /* a task is never split over two pages */
.small { font-size: 9pt; }
table.matrix { font-size: 8.5pt; line-height: 1.2; }
table.matrix td { white-space: nowrap; }
table.matrix th, table.matrix td { padding-top: 0.4mm; padding-bottom: 0.4mm; }
table.matrix .start { border-left: 0.7mm solid #000; }  /* where Q's columns end and K's begin */
@media screen {
  body { margin: 10mm auto; padding: 0 5mm; }
  .key { border-top: 0.6mm dashed #888; margin-top: 12mm; padding-top: 6mm; }
}
"""


def worksheet_html(setup, result, *, title: str, seed: int, language: str = "en") -> str:
    """The worksheet for one head of ``setup`` (chosen by ``seed``) as a complete HTML document.

    ``seed`` counts from 0; the sheet prints it from 1 ("Quiz seed 1"), as the Quiz page, its link
    and the file name (attention-worksheet-1.html) do. Its words are in ``language``."""
    plan = _Plan(setup, result, seed, language)
    _ = plan._
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html lang="{escape(language.replace("_", "-"))}"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        '<section class="sheet">',
        f"<h1>{escape(title)}</h1>",
        '<p class="muted">' + _("Quiz seed {seed}: compute the blank cells by hand; the answer key is on the "
                                "last page.").format(seed=plan.seed + 1) + "</p>",
        plan.setup_text(),
        *plan.tasks(answers=False),
        "</section>",
        '<section class="key">',
        "<h1>" + _("Answer key: {title}").format(title=escape(title)) + "</h1>",
        '<p class="muted">' + _("Quiz seed {seed}; {where}. Numbers to {decimals} decimals, computed from "
                                "the live setup; yours may differ in the last digit.").format(
            seed=plan.seed + 1, where=escape(plan.where), decimals=DECIMALS) + "</p>",
        *plan.tasks(answers=True),
        "</section>",
        "</body></html>",
    ])


def number(value: float, decimals: int = DECIMALS) -> str:
    """An answer as printed: fixed decimals (scientific from a million), a typographic minus."""
    value = float(value)
    if not math.isfinite(value):
        return "masked" if value < 0 else "∞"
    text = f"{value:.{decimals}f}" if abs(value) < 1e6 else f"{value:.{decimals + 2}e}"
    if float(text) == 0:
        text = text.lstrip("-")  # -0.0000 reads as 0
    return text.replace("-", MINUS)


def given(value: float) -> str:
    """A given number: up to four decimals and six significant digits, trailing zeros dropped
    (0.12, 1, −0.7071, 148.866), so that a matrix cell holds it on one line."""
    value = float(value)
    whole_digits = len(str(int(abs(value)))) if math.isfinite(value) and abs(value) < 1e6 else 0
    text = number(value, max(0, min(DECIMALS, 6 - whole_digits)))
    if "e" not in text and "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


class _Plan:
    """Which head, query, cells and column the sheet asks about, drawn from the seed."""

    def __init__(self, setup, result, seed: int, language: str = "en"):
        self.r, self.sizes, self.seed = result, setup.sizes, int(seed)
        self._ = translator(language)
        s = self.sizes
        rng = np.random.default_rng([self.seed % 2**63, 7])
        self.q_tokens = [f"{i + 1} · {t}" for i, t in enumerate(setup.tokens)]
        self.k_tokens = [f"{i + 1} · {t}" for i, t in enumerate(setup.key_tokens)]
        self.q_labels, self.k_labels = _short(setup.tokens), _short(setup.key_tokens)
        self.cross = s.cross
        self.scaling_text = scaling_words(setup.scaling, s.d_k, self._)
        self.mask_kind = setup.mask_kind
        self.window = setup.mask.size if setup.mask_kind == "window" else 0
        self.allowed = np.ones((s.n_q, s.n_k), bool) if result.mask is None else np.asarray(result.mask, bool)
        self.head = int(rng.integers(s.n_heads))
        counts = self.allowed.sum(axis=1)
        opinion = normalised_entropy(result.weights[self.head]) < FLAT_AT  # [n_q] the row is not flat
        rows = next(r for r in (np.flatnonzero((counts >= 2) & opinion), np.flatnonzero(counts >= 2),
                                np.flatnonzero(counts >= 1), np.arange(s.n_q)) if len(r))
        self.query = int(rows[int(rng.integers(len(rows)))])
        self.hand = s.d_k <= HAND_DOT_MAX
        self.dots: list[tuple[int, int]] = []
        if self.hand:  # from another query row when there is one: task 2 gives this row's scaled scores
            rest = [q for q in range(s.n_q) if q != self.query]
            telling = [q for q in rest if np.any(result.scores[self.head, q] != 0)]  # not a row of zeros
            others = telling or rest or [self.query]
            q = others[int(rng.integers(len(others)))]
            keys = np.flatnonzero(self.allowed[q]) if self.allowed[q].any() else np.arange(s.n_k)
            chosen = sorted(int(k) for k in rng.permutation(keys)[:SCORE_CELLS])
            self.dots = [(q, k) for k in chosen]
        self.v_columns = min(s.d_v, MAX_COLUMNS)
        self.column = int(rng.integers(self.v_columns))
        self.where = self._("head {head} of {heads}").format(head=self.head + 1, heads=s.n_heads)

    # -- page 1 ---------------------------------------------------------------------------------

    def setup_text(self) -> str:
        s, h, _ = self.sizes, self.head, self._
        side = _("Query tokens") if self.cross else _("Tokens")
        parts = [f"<p><b>{side}:</b> {_token_list(self.q_tokens)}</p>"]
        if self.cross:
            kv_side = _("Key/value tokens")
            parts.append(f"<p><b>{kv_side}:</b> {_token_list(self.k_tokens)}</p>")
        work = _("Work in head {head}.").format(head=h + 1)
        scores = _("The scores are {scaling}: scale s = {scale}.").format(
            scaling=escape(self.scaling_text), scale=given(self.r.scale))
        parts.append(
            f"<p>n_q = {s.n_q}, n_k = {s.n_k}, d_model = {s.d_model}, h = {s.n_heads}, d_k = {s.d_k}, "
            f"d_v = {s.d_v}. <b>{work}</b> {scores} {escape(self._mask_text())}</p>")
        if not self.hand:
            parts.append('<p class="muted">' + _("d_k = {size}: a dot product of {size} terms is not a hand "
                                                 "computation, so Q and K are not printed and the scores are "
                                                 "given below.").format(size=s.d_k) + "</p>")
        hidden = s.d_v - self.v_columns
        for group in self._matrix_groups():
            names = [name for name, _matrix_values in group]
            caption = self._caption(names)
            if hidden and "V" in names:
                caption = _("{caption} (columns {first} to {last} are not needed and not printed)").format(
                    caption=caption, first=self.v_columns + 1, last=s.d_v)
            labels = self.q_labels if "Q" in names else self.k_labels
            parts.append(_matrix(caption, group, labels))
        return "\n".join(parts)

    def _caption(self, names: list[str]) -> str:
        """'Q, K and V of head 2 (one row per token)': what a matrix table holds."""
        _ = self._
        joined = names[0] if len(names) == 1 else _("{names} and {last}").format(
            names=", ".join(names[:-1]), last=names[-1])
        if names == ["Q"]:
            caption = _("{names} of head {head} (one row per query)")
        elif self.cross or "Q" not in names:
            caption = _("{names} of head {head} (one row per key)")
        else:
            caption = _("{names} of head {head} (one row per token)")
        return caption.format(names=joined, head=self.head + 1)

    def _matrix_groups(self) -> list[list[tuple[str, np.ndarray]]]:
        """Q, K and V of the head, side by side in one table where they share rows and fit
        MAX_COLUMNS columns (fewer, taller tables would push task 3 onto a page of its own)."""
        h = self.head
        q, k, v = ("Q", self.r.q[h]), ("K", self.r.k[h]), ("V", self.r.v[h, :, :self.v_columns])
        d_k, d_v = self.sizes.d_k, self.v_columns
        if not self.hand:
            return [[v]]
        if not self.cross and 2 * d_k + d_v <= MAX_COLUMNS:
            return [[q, k, v]]
        if d_k + d_v <= MAX_COLUMNS:
            return [[q], [k, v]]
        if not self.cross and 2 * d_k <= MAX_COLUMNS:
            return [[q, k], [v]]
        return [[q], [k], [v]]

    def _mask_text(self) -> str:
        _ = self._
        if self.mask_kind == "causal":
            return _("Causal mask: query i may attend to keys 1 to i only; a masked key gets weight 0.")
        if self.mask_kind == "window":
            return _("Sliding-window mask: query i may attend to the last {size} keys up to i only; a masked "
                     "key gets weight 0.").format(size=self.window)
        if self.mask_kind == "custom":
            return _("A custom mask blocks some keys (marked 'masked'): they get weight 0.")
        return _("No mask.")

    # -- the tasks, blank or answered ------------------------------------------------------------

    def tasks(self, answers: bool) -> list[str]:
        """Each task as one block that stays on one page."""
        return [f'<div class="task">{task}</div>' for task in self._tasks(answers)]

    def _tasks(self, answers: bool) -> list[str]:
        out, number_of = [], 1
        if self.dots:
            out.append(self._dots(number_of, answers))
            number_of += 1
        out.append(self._softmax(number_of, answers))
        out.append(self._output(number_of + 1, answers))
        return out

    def _dots(self, n: int, answers: bool) -> str:
        h = self.head
        rows = []
        for q, k in self.dots:
            value = self.r.scores[h, q, k]
            cell = _answer(value, f"score {h} {q} {k}") if answers else '<td class="blank"></td>'
            rows.append(f'<tr><td class="row">{escape(self.q_labels[q])}</td>'
                        f'<td class="row">{escape(self.k_labels[k])}</td>{cell}</tr>')
        _ = self._
        title = _("Raw scores q · k")
        return (f"<h2>{n}. {title}</h2><p>"
                + _("Multiply the query's row of Q by the key's row of K entry by entry and add up.") + "</p>"
                + _table([_("query"), _("key"), "q · k"], [40, 40, 34], rows, left=2))

    def _softmax(self, n: int, answers: bool) -> str:
        h, q = self.head, self.query
        scaled = self.r.scaled[h, q]  # [n_k], -inf where masked
        live = np.isfinite(scaled)
        top = float(np.max(scaled[live])) if live.any() else 0.0
        exps = np.where(live, np.exp(np.where(live, scaled, top) - top), 0.0)
        _ = self._
        masked = _("masked")
        headers, widths = [_("key")], [40]
        if not self.hand:
            headers, widths = [*headers, _("raw score q · k")], [*widths, 26]
        headers += [_("scaled s (given)"), "e^(s − m)", _("weight a")]
        widths += [26, 30, 30]
        rows = []
        for k in range(self.sizes.n_k):
            cells = [f'<td class="row">{escape(self.k_labels[k])}</td>']
            if not self.hand:
                cells.append(f'<td class="given">{given(self.r.scores[h, q, k])}</td>')
            cells.append(f'<td class="given">{given(scaled[k]) if live[k] else escape(masked)}</td>')
            if not live[k]:
                cells += ['<td class="given">0</td>', _answer(0.0, f"weight {h} {q} {k}") if answers
                          else '<td class="given">0</td>']
            elif answers:
                cells += [_answer(exps[k], f"exp {h} {q} {k}"),
                          _answer(self.r.weights[h, q, k], f"weight {h} {q} {k}")]
            else:
                cells += ['<td class="blank"></td>', '<td class="blank"></td>']
            rows.append(f"<tr>{''.join(cells)}</tr>")
        the_sum = f'<span class="answer" data-cell="sum {h} {q}">{number(exps.sum())}</span>'
        total = ("<p>" + _("Sum of e^(s − m): {sum}; each weight is its e^(s − m) divided by this "
                           "sum.").format(sum=the_sum) + "</p>") if answers else ""
        if live.any():
            how = _("The scaled scores are given. With m = the largest of them = {top}, work out e^(s − m) "
                    "for each key, add them up, and divide each by the sum. The weights add up to 1.").format(
                top=given(top))
        else:
            how = _("The mask blocks every key for this query: every weight is 0.")
        title = _("Softmax of the row of query “{token}” (head {head})").format(
            token=escape(self.q_tokens[q]), head=h + 1)
        return f"<h2>{n}. {title}</h2><p>{how}</p>" + _table(headers, widths, rows, left=1) + total

    def _output(self, n: int, answers: bool) -> str:
        h, q, j, _ = self.head, self.query, self.column, self._
        value = self.r.head_outputs[h, q, j]
        if answers:
            keys = np.flatnonzero(self.allowed[q])
            terms = " + ".join(f"{number(self.r.weights[h, q, k])} × {given(self.r.v[h, k, j])}"
                               for k in keys[:MAX_COLUMNS])
            terms += " + …" if len(keys) > MAX_COLUMNS else ""
            nothing = _("no key is allowed: 0")
            body = (f'<p>{escape(terms) if terms else escape(nothing)} = '
                    f'<span class="answer" data-cell="output {h} {q} {j}">{number(value)}</span></p>')
        else:
            body = ("<p>" + _("Answer:") + ' <span style="display:inline-block;width:45mm;'
                    'border-bottom:0.3mm solid #000">&nbsp;</span></p>')
        title = _("One cell of head {head}'s output").format(head=h + 1)
        what = _("Query “{token}”, column v{column}: the weights of task {task} times column v{column} of V, "
                 "added up (a weighted sum of the values).").format(
            token=escape(self.q_tokens[q]), column=j + 1, task=n - 1)
        return f"<h2>{n}. {title}</h2><p>{what}</p>" + body


def scaling_words(scaling, d_k: int, _, number: Callable[[str], str] = str) -> str:
    """mha_core's Scaling.describe(d_k) translated by ``_`` (the same words in English), its numbers
    written by ``number`` from the English way (the sheet keeps mha_core's 0.125; a page writes 0,125)."""
    times = f"× {number(f'{scaling.multiplier(d_k):.4g}')}"
    if scaling.kind == "sqrt":
        return _("divided by √d_k = √{size} ({times})").format(size=d_k, times=times)
    if scaling.kind == "sqrt_of":
        return _("divided by √{size} ({times})").format(size=int(scaling.value), times=times)
    if scaling.kind == "none":
        return _("not scaled (× 1)")
    return _("multiplied by {factor}").format(factor=number(f"{scaling.value:g}"))


def _short(tokens) -> list[str]:
    """Row labels '5 · the', a long token cut to LABEL_CHARS characters and '…'."""
    return [f"{i + 1} · {t if len(t) <= LABEL_CHARS else t[:LABEL_CHARS - 1] + '…'}"
            for i, t in enumerate(tokens)]


def _token_list(labels: list[str]) -> str:
    return ", ".join(f"<span>{escape(label)}</span>" for label in labels)


def _answer(value: float, cell: str) -> str:
    return f'<td class="answer" data-cell="{cell}">{number(value)}</td>'


def _table(headers: list[str], widths_mm: list[int], rows: list[str], left: int = 1,
           css_class: str = "", starts: set[int] = frozenset()) -> str:
    """A table of fixed column widths (mm), so that its width is known before printing. ``starts``:
    data columns (counted after the row label) that begin a new matrix."""
    cols = "".join(f'<col style="width:{w}mm">' for w in widths_mm)
    head = "".join(f'<th class="{"row" if i < left else "start" if i - 1 in starts else ""}">{escape(h)}</th>'
                   for i, h in enumerate(headers))
    return (f'<table class="{css_class}" style="width:{sum(widths_mm)}mm"><colgroup>{cols}</colgroup>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _matrix(caption: str, parts: list[tuple[str, np.ndarray]], row_labels: list[str]) -> str:
    """Matrices [rows, <= MAX_COLUMNS in all] side by side, with their tokens as row labels; columns
    headed q1, q2, ..., k1, ... and a heavier line where one matrix ends."""
    values = np.hstack([m for _, m in parts])  # [rows, columns]
    names = [f"{name.lower()}{j + 1}" for name, m in parts for j in range(m.shape[1])]
    starts = {int(i) for i in np.cumsum([m.shape[1] for _, m in parts])[:-1]}  # columns that begin a matrix
    rows = [f'<tr><td class="row">{escape(label)}</td>'
            + "".join(f'<td class="given{" start" if j in starts else ""}">{given(x)}</td>'
                      for j, x in enumerate(row)) + "</tr>"
            for label, row in zip(row_labels, values, strict=True)]
    table = _table(["", *names], [34] + [18] * len(names), rows, css_class="matrix", starts=starts)
    return f"<h2 class=\"small\">{escape(caption)}</h2>" + table
