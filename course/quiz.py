"""Quiz questions drawn from one Setup and its MHAResult, and the chapters' Recall set (NumPy only).

``generate(setup, result, seed)`` draws a mix of questions whose answers are read off the live
numbers; ``forecast(setup, result, step, seed)`` one question a class can predict before a step's
result is shown; ``RECALL`` the chapters' own questions. The same (setup, seed) always gives the
same questions, so one link gives a class the same quiz.

Every sentence is written in the reader's language: the functions that build one take
``language`` (keyword, English by default); the drawing does not depend on it, so the same
(setup, seed) asks the same questions in every language. ``RECALL`` is English; ``recall(language)``
is the same set translated.

How answers are checked (``Question.check``; it never raises, junk is simply wrong), by the kind's
entry in course/answers.py (the registry the room's store marks with too):

* choices: the text must equal one of them exactly (after trimming spaces);
* shapes: "3 × 5", "3x5", "3 X 5", "3*5", "3 by 5", "3, 5", "(3, 5)" and "[3, 5]";
* numbers: as mha_core/typed_number.py reads them (decimal or scientific notation in ASCII digits,
  a typographic minus), with a decimal comma ("0,67" is 0.67) except in the parameter count, where
  commas, spaces, apostrophes, underscores and points between groups of three digits are thousands
  separators ("1,048,576", "1.048.576" as German writes it); a weight may be typed as a percentage
  ("67%"). There is no upper bound (a grid's cell stops at 1e6, below example I's 1,048,576
  parameters); inf and NaN are refused.
* tolerances (absolute): a weight asked to two decimals, 0.005 (plus 1e-6 for rounding in
  float); a score or a head-output cell, 0.005 or 0.5% of its magnitude, whichever is larger
  (plus the same hair), so two decimals or three significant figures are right; the parameter
  count, exact.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from course import answers
from course.i18n import N_, localized_number_text, localized_tex, number, translator
from course.steps import seed_of
from mha_core.analysis import (
    FLAT_AT,
    count_parameters,
    most_disagreeing_pair,
    normalised_entropy,
    pairwise_disagreement,
)
from mha_core.markup import markdown_literal

FLAT_MARGIN = 0.01  # an entropy this close to FLAT_AT is not asked about: the bar would not show it
TOP_MARGIN = 0.01  # a "most" question needs the winner ahead of the runner-up by this much
HAIR = 1e-6  # float rounding on top of a stated tolerance: 0.665 typed as 0.67 stays right
WEIGHT_TOLERANCE = 0.005 + HAIR  # a weight asked to two decimals
PAIR_CHOICES = 6  # a "which pair" question lists the right pair and up to five others
TERMS_SHOWN = 8  # terms of a sum written out in an explanation
KINDS = ("top_key", "weight", "score", "head_output", "shape", "parameters", "flat_head", "disagreeing_pair")
# "strongest_head" is asked by the presenter's forecasts only (IDEAS), not drawn for the Quiz page.
YES, NO = N_("yes"), N_("no")
TWO_DECIMALS, THREE_FIGURES = N_("two decimals"), N_("three significant figures")


def relative_tolerance(value: float) -> float:
    """0.005 or 0.5% of |value|, whichever is larger (plus a hair): two decimals or 3 significant figures."""
    return max(0.005, 0.005 * abs(value)) + HAIR * max(1.0, abs(value))


@dataclass(frozen=True)
class Question:
    kind: str  # one of KINDS, or "recall"
    prompt: str  # plain text; tokens as the setup names them, keys and queries as "3 · sat"
    answer: str | float  # the right choice's label, a number, or a shape text like "3 × 5"
    step: str  # the name of the step where the answer can be read (course/steps.py)
    explanation: str  # why / the worked arithmetic, markdown (LaTeX in $...$)
    choices: tuple[str, ...] = ()  # non-empty for multiple choice (answer is one of them)
    tolerance: float = 0.0  # absolute, for numeric answers
    cell: tuple[int, int, int] | None = None  # (head, query, key) the question is about, for the drill-down

    def check(self, given) -> bool:
        """Whether what a person typed or chose is right; False for anything unreadable."""
        return self.problem(given) is None and self._right(given)

    def problem(self, given, *, language: str = "en") -> str | None:
        """Why ``given`` cannot be read as an answer to this question (in ``language``), or None if it can."""
        if not isinstance(given, str):
            return translator(language)(answers.NO_ANSWER)
        return answers.kind_of(self.kind).problem(given, self.choices, language=language)

    def _right(self, given: str) -> bool:
        kind = answers.kind_of(self.kind)
        correct = self.answer if isinstance(self.answer, str) else repr(float(self.answer))
        return kind.right(kind.stored(given, self.choices), correct, self.tolerance, self.choices)

    @property
    def answer_text(self) -> str:
        """The right answer as the page shows it (and as a person may type it)."""
        if isinstance(self.answer, str):
            return self.answer
        kind = answers.kind_of(self.kind)
        if kind.whole:
            return f"{int(self.answer):,}"
        if kind.percent:
            return f"{self.answer:.2f}"
        return _figures(self.answer)

    def answer_in(self, language: str = "en") -> str:
        """answer_text as the language writes numbers (0,67; 1.048.576), as it may be typed back."""
        if language == "en" or isinstance(self.answer, str):
            return self.answer_text
        if answers.kind_of(self.kind).whole:
            return number(int(self.answer), language, 0)
        return localized_number_text(self.answer_text, language)


# ---------------------------------------------------------------------------------------------
# What the questions are read from


@dataclass(frozen=True)
class _Facts:
    """One setup's numbers and names, computed once for all the questions drawn from it."""

    r: object  # MHAResult
    sizes: object  # Sizes
    q_labels: tuple[str, ...]
    k_labels: tuple[str, ...]
    allowed: np.ndarray  # [n_q, n_k] bool
    live_rows: np.ndarray  # [n_q] bool: at least two keys allowed (a row with a choice to make)
    entropy: np.ndarray  # [h, n_q] normalised entropy of each row
    language: str = "en"  # of the sentences written (course.i18n)

    @property
    def h(self) -> int:
        return self.sizes.n_heads

    def fixed(self, value: float, decimals: int = 2) -> str:
        """A number to fixed decimals as the language writes it (0.67, 0,67)."""
        return _fixed(value, self.language, decimals)

    def figures(self, value: float) -> str:
        """_figures as the language writes it."""
        return localized_number_text(_figures(value), self.language)

    def tex(self, formula: str) -> str:
        """A formula's numbers (written by _tex, never a label) as the language writes them: 0{,}67."""
        return localized_tex(formula, self.language)


def _facts(setup, result, language: str = "en") -> _Facts:
    sizes = setup.sizes
    allowed = np.ones((sizes.n_q, sizes.n_k), bool) if result.mask is None else np.asarray(result.mask, bool)
    return _Facts(r=result, sizes=sizes, q_labels=_labels(setup.tokens), k_labels=_labels(setup.key_tokens),
                  allowed=allowed, live_rows=allowed.sum(axis=1) >= 2,
                  entropy=normalised_entropy(result.weights), language=language)


def _labels(tokens) -> tuple[str, ...]:
    """'1 · the', '5 · the': unique whatever the tokens (the workbench's row labels)."""
    return tuple(f"{i + 1} · {token}" for i, token in enumerate(tokens))


def _md(text: str) -> str:
    """User text for markdown, shown literally (mha_core.markup, the app's one escaper)."""
    return markdown_literal(text)


def _quoted(label: str) -> str:
    return f"“{label}”"


def _figures(value: float) -> str:
    """A number to four significant figures (whole numbers exactly), for explanations."""
    value = float(value)
    if value == int(value) and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4g}"


def _fixed(value: float, language: str, decimals: int = 2) -> str:
    """A number to fixed decimals (0.67); in another language course.i18n.number's (0,67)."""
    return f"{value:.{decimals}f}" if language == "en" else number(value, language, decimals)


def _tex(value: float) -> str:
    text = _figures(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa} \times 10^{{{int(exponent)}}}"
    return text


def _head(h: int, _: Callable[[str], str] = str) -> str:
    return _("head {number}").format(number=h + 1)


def _pick(rng: np.random.Generator, candidates):
    """One of a non-empty sequence (of tuples or arrays of indices), uniformly."""
    return candidates[int(rng.integers(len(candidates)))]


# ---------------------------------------------------------------------------------------------
# One drawer per kind: (facts, rng, a step's name or None for the kind's own) -> Question or None


def _row_listing(f: _Facts, values: np.ndarray, q: int, fmt: Callable[[float], str]) -> str:
    """'1 · the 0.67, 2 · cat 0.09, …' for the allowed keys of row q (the largest first, capped)."""
    keys = [k for k in np.argsort(-values, kind="stable") if f.allowed[q, k]][:TERMS_SHOWN]
    listed = ", ".join(f"{_md(_quoted(f.k_labels[k]))} {fmt(values[k])}" for k in keys)
    more = int(f.allowed[q].sum()) - len(keys)
    if more <= 0:
        return listed
    _ = translator(f.language)
    return _("{listing} and {more} more, all smaller").format(listing=listed, more=more)


def _top_key(f: _Facts, rng, step: str | None = None) -> Question | None:
    """Which key gets the most: weight (softmax), the value copied most (head_outputs) or the raw score
    (raw_scores)."""
    step = step or "softmax"
    values = f.r.scores if step == "raw_scores" else f.r.weights  # [h, n_q, n_k]
    if f.sizes.n_k < 2:
        return None
    ranked = np.sort(np.where(f.allowed, values, -np.inf), axis=-1)  # masked keys at the front
    with np.errstate(invalid="ignore"):  # a fully masked row: -inf - -inf (not live, left out below)
        margin = ranked[..., -1] - ranked[..., -2]
    candidates = np.argwhere((margin >= TOP_MARGIN) & f.live_rows[None, :])  # [(h, q)]
    if not len(candidates):
        return None
    h, q = (int(i) for i in _pick(rng, candidates))
    row = np.where(f.allowed[q], values[h, q], -np.inf)
    top = int(np.argmax(row))
    choices = tuple(f.k_labels[k] for k in range(f.sizes.n_k) if f.allowed[q, k])
    _ = translator(f.language)
    names = {"head": _head(h, _), "query": _quoted(f.q_labels[q]), "row": _md(_quoted(f.q_labels[q]))}
    if step == "raw_scores":
        prompt = _("In {head}, which key gets the largest raw score q · k from query {query}?").format(
            **names)
        listing = _row_listing(f, values[h, q], q, f.figures)
        why = _("Row {row} of {head}'s raw scores $Q K^\\top$: {listing}.").format(**names, listing=listing)
    elif step == "head_outputs":
        prompt = _("In {head}, the output of query {query} is a blend of the value rows. "
                   "Whose value does it copy most?").format(**names)
        listing = _row_listing(f, values[h, q], q, f.fixed)
        why = _("The blend's shares are the attention weights of row {row}: {listing}. "
                "The largest weight is the value copied most.").format(**names, listing=listing)
    else:
        prompt = _("In {head}, which key does query {query} attend to most?").format(**names)
        listing = _row_listing(f, values[h, q], q, f.fixed)
        why = _("Row {row} of {head}'s weights: {listing}. Softmax keeps the order of the scaled scores, "
                "so the largest score gets the largest weight.").format(**names, listing=listing)
    masked = "" if f.allowed[q].all() else " " + _("Masked keys get weight 0 and are not among the choices.")
    return Question("top_key", prompt, f.k_labels[top], step, why + masked, choices=choices, cell=(h, q, top))


def _allowed_cell(f: _Facts, rng, live: bool = True) -> tuple[int, int, int] | None:
    """A random (head, query, key) that takes part, preferring rows with a choice to make."""
    rows = f.allowed & (f.live_rows[:, None] if live and f.live_rows.any() else True)
    cells = np.argwhere(rows)
    if not len(cells):
        return None
    q, k = (int(i) for i in _pick(rng, cells))
    return int(rng.integers(f.h)), q, k


def _weight(f: _Facts, rng, step: str | None = None) -> Question | None:
    cell = _allowed_cell(f, rng)
    if cell is None:
        return None
    h, q, k = cell
    w = float(f.r.weights[h, q, k])
    _ = translator(f.language)
    prompt = _("In {head}, what weight does query {query} give key {key}? (two decimals)").format(
        head=_head(h, _), query=_quoted(f.q_labels[q]), key=_quoted(f.k_labels[k]))
    row = f.r.scaled[h, q]
    terms = " + ".join(rf"e^{{{_tex(s)}}}" for s in row[np.isfinite(row)][:TERMS_SHOWN])
    terms += r" + \dots" if np.isfinite(row).sum() > TERMS_SHOWN else ""
    formula = f.tex(rf"$a = \dfrac{{e^{{{_tex(row[k])}}}}}{{{terms}}} \approx {w:.4f}$")
    why = _("Softmax of row {row}'s scaled scores: {formula}. “Show the arithmetic” writes out every "
            "term.").format(row=_md(_quoted(f.q_labels[q])), formula=formula)
    return Question("weight", prompt, w, step or "softmax", why, tolerance=WEIGHT_TOLERANCE, cell=(h, q, k))


def _precision(value: float, _: Callable[[str], str]) -> str:
    return _(TWO_DECIMALS) if abs(value) < 100 else _(THREE_FIGURES)


def _score(f: _Facts, rng, step: str | None = None) -> Question | None:
    """A raw score q · k (raw_scores) or a scaled one (softmax); step None draws which."""
    cell = _allowed_cell(f, rng)
    if cell is None:
        return None
    step = step or ("raw_scores", "softmax")[int(rng.choice([0, 0, 1]))]
    h, q, k = cell
    raw = float(f.r.scores[h, q, k])
    value = raw if step == "raw_scores" else float(f.r.scaled[h, q, k])
    _ = translator(f.language)
    names = {"head": _head(h, _), "query": _quoted(f.q_labels[q]), "key": _quoted(f.k_labels[k]),
             "precision": _precision(value, _)}
    qv, kv = f.r.q[h, q], f.r.k[h, k]
    pairs = zip(qv[:TERMS_SHOWN], kv[:TERMS_SHOWN], strict=True)
    terms = " + ".join(f"({_tex(a)})({_tex(b)})" for a, b in pairs)
    terms += r" + \dots" if qv.size > TERMS_SHOWN else ""
    why = f.tex(rf"$q \cdot k = {terms} = {_tex(raw)}$")
    if step == "raw_scores":
        prompt = _("In {head}, what is the raw score q · k of query {query} with key {key}? "
                   "({precision})").format(**names)
        why += "."
    else:
        prompt = _("In {head}, what is the scaled score of query {query} with key {key}, the raw score times "
                   "the scale {scale}? ({precision})").format(**names, scale=f.figures(f.r.scale))
        why = _("{formula}, times the scale {scale} gives {scaled}.").format(
            formula=why, scale=f.tex(f"${_tex(f.r.scale)}$"), scaled=f.tex(f"${_tex(value)}$"))
    return Question("score", prompt, value, step, why, tolerance=relative_tolerance(value), cell=(h, q, k))


def _head_output(f: _Facts, rng, step: str | None = None) -> Question | None:
    rows = np.flatnonzero(f.allowed.any(axis=1))  # a fully masked row's output is 0 by fiat
    if not len(rows):
        return None
    h, q, j = int(rng.integers(f.h)), int(_pick(rng, rows)), int(rng.integers(f.sizes.d_v))
    value = float(f.r.head_outputs[h, q, j])
    _ = translator(f.language)
    prompt = _("In {head}, what is column {column} of the output of query {query}, the weighted sum of the "
               "values? ({precision})").format(head=_head(h, _), column=j + 1, query=_quoted(f.q_labels[q]),
                                                precision=_precision(value, _))
    keys = np.flatnonzero(f.allowed[q])
    terms = " + ".join(rf"{f.r.weights[h, q, k]:.4f} \times ({_tex(f.r.v[h, k, j])})"
                       for k in keys[:TERMS_SHOWN])
    terms += r" + \dots" if len(keys) > TERMS_SHOWN else ""
    formula = f.tex(rf"$\sum_k a_k v_{{k,{j + 1}}} = {terms} = {_tex(value)}$")
    why = _("Row {row}'s weights times column {column} of V, added up: {formula}.").format(
        row=_md(_quoted(f.q_labels[q])), column=j + 1, formula=formula)
    return Question("head_output", prompt, value, step or "head_outputs", why,
                    tolerance=relative_tolerance(value))


def _shapes(f: _Facts, h: int) -> list[tuple[str, tuple[int, int], str, str]]:
    """(what, shape, step, why) of every matrix a shape question may name, in the facts' language."""
    s = f.sizes
    _ = translator(f.language)
    side = _("the key/value tokens' embeddings X_kv") if s.cross else "X"
    head = _head(h, _)
    out = [(_("the embeddings X (one row per query token)"), (s.n_q, s.d_model), "embeddings",
            _("One row per token, one column per feature: $n_q \\times d_{model}$."))]
    if s.cross:
        out.append((_("X_kv, the key/value side's embeddings"), (s.n_k, s.d_model), "embeddings",
                    _("Cross-attention: one row per key/value token, $n_k \\times d_{model}$.")))
    out += [
        (_("Q of {head}").format(head=head), (s.n_q, s.d_k), "projections",
         "$Q_i = X W_i^Q$: $(n_q \\times d_{model})(d_{model} \\times d_k)$."),
        (_("K of {head}").format(head=head), (s.n_k, s.d_k), "projections",
         _("{formula}: one row per key, $n_k \\times d_k$.").format(
             formula=f"$K_i = {'X_{kv}' if s.cross else 'X'} W_i^K$")),
        (_("V of {head}").format(head=head), (s.n_k, s.d_v), "projections",
         _("$V_i$ = {side} times $W_i^V$: $n_k \\times d_v$.").format(side=_md(side))),
        (_("W_Q of {head}").format(head=head), (s.d_model, s.d_k), "projections",
         _("Each head's $W_i^Q$ maps $d_{model}$ features to $d_k$.")),
        (_("the raw scores Q Kᵀ of {head}").format(head=head), (s.n_q, s.n_k), "raw_scores",
         _("One row per query, one column per key: $(n_q \\times d_k)(d_k \\times n_k)$.")),
        (_("the attention weights of {head}").format(head=head), (s.n_q, s.n_k), "softmax",
         _("Softmax keeps the scores' shape: $n_q \\times n_k$, each row adding up to 1.")),
        (_("the output of {head} (weights times V)").format(head=head), (s.n_q, s.d_v), "head_outputs",
         _("$(n_q \\times n_k)(n_k \\times d_v)$: the inner $n_k$ cancels.")),
        (_("the concatenation of all heads' outputs"), (s.n_q, s.n_heads * s.d_v), "concatenation",
         _("The heads side by side: $n_q \\times h\\,d_v$ = {product}.").format(
             product=f"{s.n_q} × {s.n_heads}·{s.d_v}")),
        ("W_O", (s.n_heads * s.d_v, s.d_model), "concatenation",
         _("$W^O$ maps the $h\\,d_v$ concatenated columns back to $d_{model}$.")),
        (_("the output of the attention block"), (s.n_q, s.d_model), "output",
         _("Concat $(n_q \\times h\\,d_v)$ times $W^O$ $(h\\,d_v \\times d_{model})$: the input's width "
           "again.")),
    ]
    return out


def _shape(f: _Facts, rng, step: str | None = None) -> Question | None:
    h = int(rng.integers(f.h))
    options = [item for item in _shapes(f, h) if step is None or item[2] == step]
    if not options:
        return None
    what, (rows, cols), at, why = _pick(rng, options)
    sizes = (f"n_q = {f.sizes.n_q}, n_k = {f.sizes.n_k}, d_model = {f.sizes.d_model}, h = {f.h}, "
             f"d_k = {f.sizes.d_k}, d_v = {f.sizes.d_v}")
    _ = translator(f.language)
    shape = f"{rows} × {cols}"
    return Question("shape", _("What is the shape of {what}? (rows × columns)").format(what=what), shape, at,
                    _("{why} Here {sizes}: **{shape}**.").format(why=why, sizes=sizes, shape=shape))


def _parameters(f: _Facts, rng, step: str | None = None) -> Question | None:
    s = f.sizes
    if s.groups < s.n_heads:
        return _grouped_parameters(f, step)
    total = count_parameters(s.d_model, s.n_heads, s.d_k, s.d_v, bias=s.bias)
    _ = translator(f.language)
    sizes = {"heads": s.n_heads, "width": s.d_model, "dk": s.d_k, "dv": s.d_v}
    if s.bias and s.n_heads > 1:
        prompt = _("How many learnable numbers does this block hold: W_Q, W_K and W_V of all {heads} heads, "
                   "W_O, the biases b_Q, b_K, b_V and b_O? (d_model = {width}, d_k = {dk}, d_v = {dv})")
    elif s.bias:
        prompt = _("How many learnable numbers does this block hold: W_Q, W_K and W_V of all {heads} head, "
                   "W_O, the biases b_Q, b_K, b_V and b_O? (d_model = {width}, d_k = {dk}, d_v = {dv})")
    elif s.n_heads > 1:
        prompt = _("How many learnable numbers does this block hold: W_Q, W_K and W_V of all {heads} heads, "
                   "W_O? (d_model = {width}, d_k = {dk}, d_v = {dv})")
    else:
        prompt = _("How many learnable numbers does this block hold: W_Q, W_K and W_V of all {heads} head, "
                   "W_O? (d_model = {width}, d_k = {dk}, d_v = {dv})")
    formula = (rf"$h\,(2\,d_{{model}}\,d_k + d_{{model}}\,d_v) + h\,d_v\,d_{{model}} = {s.n_heads}\,(2 \cdot "
               rf"{s.d_model} \cdot {s.d_k} + {s.d_model} \cdot {s.d_v}) + {s.n_heads} \cdot {s.d_v} \cdot "
               rf"{s.d_model}$")
    return _count_question(f, prompt.format(**sizes), total, formula, r"$h\,(2 d_k + d_v) + d_{model}$", step)


def _grouped_parameters(f: _Facts, step: str | None) -> Question:
    """The parameter count of a block whose W_K and W_V hold g key/value heads (grouped-query attention)."""
    s = f.sizes
    h, g = s.n_heads, s.groups
    total = count_parameters(s.d_model, h, s.d_k, s.d_v, bias=s.bias, kv_heads=g)
    _ = translator(f.language)
    if s.bias:
        prompt = _("How many learnable numbers does this block hold: W_Q of its {heads} query heads, W_K and "
                   "W_V of its {groups} key/value heads, W_O and the biases b_Q, b_K, b_V and b_O? "
                   "(d_model = {width}, d_k = {dk}, d_v = {dv})")
    else:
        prompt = _("How many learnable numbers does this block hold: W_Q of its {heads} query heads, W_K and "
                   "W_V of its {groups} key/value heads, and W_O? (d_model = {width}, d_k = {dk}, "
                   "d_v = {dv})")
    formula = (rf"$h\,d_{{model}}\,d_k + g\,d_{{model}}\,(d_k + d_v) + h\,d_v\,d_{{model}} = {h} \cdot "
               rf"{s.d_model} \cdot {s.d_k} + {g} \cdot {s.d_model} \cdot ({s.d_k} + {s.d_v}) + {h} \cdot "
               rf"{s.d_v} \cdot {s.d_model}$")
    sizes = {"heads": h, "groups": g, "width": s.d_model, "dk": s.d_k, "dv": s.d_v}
    biases = r"$h\,d_k + g\,(d_k + d_v) + d_{model}$"
    return _count_question(f, prompt.format(**sizes), total, formula, biases, step)


def _count_question(f: _Facts, prompt: str, total: int, formula: str, biases: str,
                    step: str | None) -> Question:
    """A parameter-count question: the worked formula, the biases' term when the block has them, the total."""
    _ = translator(f.language)
    shown = f"{total:,}" if f.language == "en" else number(total, f.language, 0)
    if f.sizes.bias:
        why = _("{formula} plus the biases {biases} = **{total}**.").format(formula=formula, biases=biases,
                                                                           total=shown)
    else:
        why = f"{formula} = **{shown}**."
    return Question("parameters", prompt, float(total), step or "concatenation", why)


def _flat_head(f: _Facts, rng, step: str | None = None) -> Question | None:
    clear = np.abs(f.entropy - FLAT_AT) >= FLAT_MARGIN  # [h, n_q]
    candidates = clear & f.live_rows[None, :]
    flat = np.argwhere(candidates & (f.entropy >= FLAT_AT))
    sharp = np.argwhere(candidates & (f.entropy < FLAT_AT))
    if not len(flat) and not len(sharp):
        return None
    pool = flat if len(flat) and (not len(sharp) or rng.random() < 0.5) else sharp
    h, q = (int(i) for i in _pick(rng, pool))
    entropy = float(f.entropy[h, q])
    answer = YES if entropy >= FLAT_AT else NO
    _ = translator(f.language)
    names = {"head": _head(h, _), "query": _quoted(f.q_labels[q]), "row": _md(_quoted(f.q_labels[q])),
             "flat": f.figures(FLAT_AT), "entropy": f.fixed(entropy, 3)}
    prompt = _("Is {head} flat for query {query}: its weights nearly uniform (normalised entropy at least "
               "{flat})?").format(**names)
    listing = _row_listing(f, f.r.weights[h, q], q, f.fixed)
    if answer == YES:
        why = _("Row {row}: {listing}. Its entropy divided by $\\log n_k$ is **{entropy}**, at least {flat}: "
                "the head has nothing to say for this query.").format(**names, listing=listing)
    else:
        why = _("Row {row}: {listing}. Its entropy divided by $\\log n_k$ is **{entropy}**, below {flat}: "
                "the head has an opinion.").format(**names, listing=listing)
    return Question("flat_head", prompt, _(answer), step or "heads_compared", why, choices=(_(YES), _(NO)),
                    cell=(h, q, int(np.argmax(np.where(f.allowed[q], f.r.weights[h, q], -1.0)))))


def _disagreeing_pair(f: _Facts, rng, step: str | None = None) -> Question | None:
    """With three heads or more: which pair disagrees most for a query. With two: for which query."""
    if f.h < 2 or not f.live_rows.any():
        return None
    queries = np.flatnonzero(f.live_rows)
    distances = [pairwise_disagreement(f.r.weights, int(q), "l2") for q in queries]  # [h, h] each
    if f.h == 2:
        return _disagreeing_query(f, queries, np.array([d[0, 1] for d in distances]), step)
    upper = np.triu_indices(f.h, k=1)
    candidates = []
    for q, d in zip(queries, distances, strict=True):
        ranked = np.sort(d[upper])
        if ranked[-1] - ranked[-2] >= TOP_MARGIN:
            candidates.append((int(q), d))
    if not candidates:
        return None
    q, d = _pick(rng, candidates)
    a, b, value = most_disagreeing_pair(d)
    pairs = [(int(i), int(j)) for i, j in zip(*upper, strict=True)]
    others = [p for p in pairs if p != (a, b)]
    shown = sorted([(a, b), *(others[i] for i in rng.permutation(len(others))[:PAIR_CHOICES - 1])])
    _ = translator(f.language)
    choices = tuple(f"{_head(i, _)} & {_head(j, _)}" for i, j in shown)
    prompt = _("For query {query}, which two heads disagree most (the largest L2 distance between their "
               "attention rows)?").format(query=_quoted(f.q_labels[q]))
    why = _("The L2 distance between the two heads' rows for {row}, {formula}, is largest for {a} and {b}: "
            "**{value}**.").format(row=_md(_quoted(f.q_labels[q])), a=_head(a, _), b=_head(b, _),
                                   formula=r"$\lVert A_a[j,:] - A_b[j,:] \rVert_2$", value=f.fixed(value, 3))
    return Question("disagreeing_pair", prompt, f"{_head(a, _)} & {_head(b, _)}", step or "heads_compared",
                    why, choices=choices)


def _disagreeing_query(f: _Facts, queries: np.ndarray, distance: np.ndarray, step) -> Question | None:
    if len(queries) < 2:
        return None
    order = np.argsort(-distance, kind="stable")
    if distance[order[0]] - distance[order[1]] < TOP_MARGIN:
        return None
    best = int(queries[order[0]])
    choices = tuple(f.q_labels[int(q)] for q in queries)
    _ = translator(f.language)
    prompt = _("For which query do head 1 and head 2 disagree most (the largest L2 distance between their "
               "attention rows)?")
    listing = ", ".join(f"{_md(_quoted(f.q_labels[int(queries[i])]))} {f.fixed(distance[i], 3)}"
                        for i in order[:TERMS_SHOWN])
    why = _("L2 distance between the two heads' rows, per query: {listing}.").format(listing=listing)
    return Question("disagreeing_pair", prompt, f.q_labels[best], step or "heads_compared", why,
                    choices=choices)


def _strongest_head(f: _Facts, rng, step: str | None = None) -> Question | None:
    """Which head gives key k the most weight from query q: each head's own W_Q and W_K, its own view."""
    if f.h < 2:
        return None
    weights = np.where(f.allowed[None], f.r.weights, -np.inf)  # [h, n_q, n_k], masked keys never win
    ranked = np.sort(weights, axis=0)
    with np.errstate(invalid="ignore"):  # a masked cell: -inf - -inf (not a candidate below)
        margin = ranked[-1] - ranked[-2]  # [n_q, n_k]
    candidates = np.argwhere((margin >= TOP_MARGIN) & f.allowed & f.live_rows[:, None])  # [(q, k)]
    if not len(candidates):
        return None
    q, k = (int(i) for i in _pick(rng, candidates))
    order = np.argsort(-weights[:, q, k], kind="stable")
    best = int(order[0])
    _ = translator(f.language)
    prompt = _("Each head has its own W_Q and W_K. Which head gives key {key} the most weight from query "
               "{query}?").format(key=_quoted(f.k_labels[k]), query=_quoted(f.q_labels[q]))
    listing = ", ".join(f"{_head(int(i), _)} {f.fixed(f.r.weights[i, q, k])}" for i in order[:TERMS_SHOWN])
    why = _("Key {key} in row {row}, head by head: {listing}. Same tokens, different projections: each head "
            "attends its own way.").format(key=_md(_quoted(f.k_labels[k])), row=_md(_quoted(f.q_labels[q])),
                                           listing=listing)
    return Question("strongest_head", prompt, _head(best, _), step or "softmax", why,
                    choices=tuple(_head(i, _) for i in range(f.h)), cell=(best, q, k))


DRAWERS: dict[str, Callable] = {
    "top_key": _top_key, "weight": _weight, "score": _score, "head_output": _head_output, "shape": _shape,
    "parameters": _parameters, "flat_head": _flat_head, "disagreeing_pair": _disagreeing_pair,
}


def _rng(seed: int, salt: int, sizes) -> np.random.Generator:
    """The draw for (seed, purpose); the sizes take part so that examples do not all open alike."""
    shape = (sizes.n_q, sizes.n_k, sizes.d_model, sizes.n_heads, sizes.d_k, sizes.d_v)
    return np.random.default_rng([int(seed) % 2**63, salt, *shape])


def generate(setup, result, seed: int, count: int = 10, *, language: str = "en") -> list[Question]:
    """Up to ``count`` different questions about this setup, the kinds mixed in a shuffled rotation.

    Deterministic for (setup, seed), and a longer quiz begins with the shorter one's questions.
    Kinds that make no sense here are left out (one head: no disagreeing pair; one key: no top
    key; no clear winner: no "most" question); masked cells are never asked. Fewer than ``count``
    questions come back only when the setup has fewer different ones (a one-token setup).
    The questions are written in ``language``; which are drawn does not depend on it.
    """
    f = _facts(setup, result, language)
    rng = _rng(seed, 1, f.sizes)
    kinds, rotation, questions, prompts = list(KINDS), [], [], set()
    for _ in range(max(8 * count, 80)):
        if len(questions) >= count or not kinds:
            break
        if not rotation:
            rotation = [kinds[i] for i in rng.permutation(len(kinds))]
        kind = rotation.pop()
        if kind not in kinds:
            continue
        question = DRAWERS[kind](f, rng)
        if question is None:
            kinds.remove(kind)  # nothing of this kind here: never again
        elif question.prompt not in prompts:
            prompts.add(question.prompt)
            questions.append(question)
    return questions


# What each step's forecast asks: alternatives (one drawn by the seed, the others tried next),
# then fallbacks for when none of them makes sense here.
FORECASTS: dict[str, tuple[tuple[Callable, ...], tuple[Callable, ...]]] = {
    "embeddings": ((_shape,), ()), "projections": ((_shape,), ()), "raw_scores": ((_top_key, _score), ()),
    "softmax": ((_top_key, _flat_head), ()), "head_outputs": ((_head_output, _top_key), ()),
    "heads_compared": ((_disagreeing_pair,), (_flat_head,)), "concatenation": ((_shape,), ()),
    "output": ((_shape,), ()),
}
# The presenter's screens about an idea rather than one step: idea -> (the step where the answer is
# read, alternatives, fallbacks). "heads": each head's own pattern; "cost": the parameter count.
IDEAS: dict[str, tuple[str, tuple[Callable, ...], tuple[Callable, ...]]] = {
    "heads": ("softmax", (_strongest_head,), ()),
    "cost": ("concatenation", (_parameters,), ()),
}


def forecast(setup, result, step: str, seed: int, *, idea: str | None = None,
             language: str = "en") -> Question | None:
    """A question a class can answer before step ``step``'s result is shown, answerable from that step
    (a step's name, course/steps.py).

    embeddings, projections: a shape (X; Q, K, V); raw_scores: the key with the largest raw score, or
    a score cell; softmax: the key a query attends to most, or "is this row flat?"; head_outputs: a
    head-output cell, or the value copied most; heads_compared: which heads disagree most (a flat row
    when no pair stands out, e.g. one head); concatenation: the shape of the concatenation or W_O;
    output: the output's shape. With ``idea`` (see IDEAS) the question is about
    that idea instead, read at its own step: "heads", which head gives a key the most weight (two
    heads or more); "cost", the parameter count. None if nothing sensible. Written in ``language``.
    """
    if idea is not None:
        step, alternatives, fallbacks = IDEAS[idea]
    elif step not in FORECASTS:
        return None
    else:
        alternatives, fallbacks = FORECASTS[step]
    f = _facts(setup, result, language)
    rng = _rng(seed, seed_of(step), f.sizes)  # by the step's name: a step added in front changes nothing
    first = int(rng.integers(len(alternatives)))
    for drawer in alternatives[first:] + alternatives[:first] + fallbacks:
        question = drawer(f, rng, step)
        if question is not None:
            return question
    return None


# ---------------------------------------------------------------------------------------------
# The chapters' own questions

RECALL: tuple[Question, ...] = (  # every choice a claim with its reason, of comparable length
    Question(
        "recall", N_("Equal scores for all tokens produce what attention weights?"),
        N_("Uniform, 1/n each: the output is the values' plain average"), "softmax",
        N_("Chapter 001, *Reveal after guessing*: uniform, $\\frac{1}{n}$ each — the plain average of the "
           "values."),
        choices=(N_("All on the first key: a tie goes to the earliest token"),
                 N_("Uniform, 1/n each: the output is the values' plain average"),
                 N_("All zero: when no score stands out, no key is attended to at all"),
                 N_("Proportional to the values: larger values draw more weight"))),
    Question(
        "recall", N_("As one score goes to +∞ while the others stay fixed, what does the softmax approach?"),
        N_("A one-hot vector: all the weight on that one token"), "softmax",
        N_("Chapter 001, *Reveal after guessing*: a one-hot vector — hard attention onto the single dominant "
           "token."),
        choices=(N_("Uniform weights: the huge score is clipped to the others"),
                 N_("A weight above 1 on that token, negative on the rest"),
                 N_("A one-hot vector: all the weight on that one token"),
                 N_("Nothing usable: e^s overflows and the whole row is lost"))),
    Question(
        "recall", N_("Can a softmax weight ever be negative?"),
        N_("No: e^s > 0 for every s, so every weight is positive"), "softmax",
        N_("Chapter 001, *Reveal after guessing*: no — $e^{s} > 0$ for every real $s$, so all weights are "
           "strictly positive and sum to 1."),
        choices=(N_("No: e^s > 0 for every s, so every weight is positive"),
                 N_("Yes: a negative score gives its key a negative weight"),
                 N_("Yes, when the scale is below 1 and shrinks the whole row"),
                 N_("Only for a masked key, whose score is set to −∞"))),
    Question(
        "recall", N_("Why divide the scores by √d_k?"),
        N_("Long rows give large dot products; scaling keeps softmax soft"), "softmax",
        N_("Chapter 004, *Check yourself*: long rows make dot products grow large; dividing by $\\sqrt{d_k}$ "
           "rescales them so softmax stays sensitive and gradients survive."),
        choices=(N_("So that each row of weights adds up to 1, as softmax needs"),
                 N_("To make every score positive: e^s needs a positive input"),
                 N_("To save multiplications: smaller numbers are cheaper to multiply"),
                 N_("Long rows give large dot products; scaling keeps softmax soft"))),
    Question(
        "recall", N_("Why concatenate the heads instead of averaging them?"),
        N_("To keep each head's own pattern; W_O then mixes them on purpose"), "concatenation",
        N_("Chapter 004, *Check yourself*: to keep each head's distinct pattern; $W^O$ then mixes them "
           "deliberately."),
        choices=(N_("Averaging is slower: it needs one division for every cell"),
                 N_("So that the heads learn one shared pattern, not h different ones"),
                 N_("To keep each head's own pattern; W_O then mixes them on purpose"),
                 N_("Concatenating makes the heads agree: W_O needs one opinion"))),
    Question(
        "recall", N_("What is d_k when d_model = 512 and h = 8?"), "64", "projections",
        N_("Chapter 004, *Check yourself*: $512 / 8 = 64$."),
        choices=("8", "64", "512", "4096")),
    Question(
        "recall", N_("What happens to multi-head attention when h = 1?"),
        N_("It is ordinary single-head attention, with d_k = d_model"), "heads_compared",
        N_("Chapter 004, *Check yourself*: it reduces to ordinary single-head self-attention "
           "(and $d_k = d_{model}$)."),
        choices=(N_("It is ordinary single-head attention, with d_k = d_model"),
                 N_("It cannot be computed: the formula needs at least two heads"),
                 N_("Its output is all zeros: there is nothing to concatenate"),
                 N_("Every weight becomes 1/n: a lone head has no opinion"))),
)


def recall(language: str = "en") -> tuple[Question, ...]:
    """RECALL in ``language``: prompts, choices, answers and explanations translated alike, so that
    a chosen (translated) choice is checked against the translated answer."""
    if language == "en":
        return RECALL
    _ = translator(language)

    def text(value):
        return _(value) if isinstance(value, str) and not value.isdigit() else value

    return tuple(replace(q, prompt=_(q.prompt), answer=text(q.answer), explanation=_(q.explanation),
                         choices=tuple(text(c) for c in q.choices)) for q in RECALL)


# ---------------------------------------------------------------------------------------------
# Drawn forecasts: the class shares out one head's attention, then meets the real softmax

FORECAST_CELLS = 36  # a whole head's grid can be drawn up to this many cells (6 × 6)
FORECAST_KEYS = 16  # keys a row can be drawn over: one thumb-sized button each on a phone


@dataclass(frozen=True)
class DrawnForecast:
    """A question answered by drawing: one head's attention rows as the class expects them.

    ``weights`` [n_rows, n_k] is the real softmax of the rows asked, ``allowed`` [n_rows, n_k]
    the keys that take part (a masked key gets weight 0 and cannot be drawn on).
    """

    prompt: str
    head: int
    rows: tuple[int, ...]  # the query positions asked, in order
    query_labels: tuple[str, ...]  # '2 · cat', one per row asked
    key_labels: tuple[str, ...]  # '1 · the', one per key
    weights: np.ndarray  # [n_rows, n_k]
    allowed: np.ndarray  # [n_rows, n_k] bool
    kind: str = "forecast"
    choices: tuple[str, ...] = ()
    tolerance: float = 0.0
    explanation: str = ""
    cell: tuple[int, int, int] | None = None

    @property
    def grid(self) -> tuple[int, int]:
        return self.weights.shape

    @property
    def answer_text(self) -> str:
        """The real rows as the store keeps a forecast: JSON [[w, ...], ...], 4 decimals."""
        return grid_json(self.weights)

    def check(self, given) -> bool | None:
        """A drawing is not right or wrong: it is near or far (see forecast_distance)."""
        return None


def drawn_forecast(setup, result, head: int, query: int | None = None, *,
                   language: str = "en") -> DrawnForecast | None:
    """The forecast of head ``head``'s row for ``query``, or of its whole grid (query None).

    None when it cannot be drawn: a row asked attends to nothing (every key masked), the head or
    query does not exist, there are more than FORECAST_KEYS keys, or the whole grid has more than
    FORECAST_CELLS cells. The prompt is written in ``language``.
    """
    f = _facts(setup, result, language)
    if not 0 <= head < f.h:
        return None
    rows = tuple(range(f.sizes.n_q)) if query is None else (query,)
    if query is not None and not 0 <= query < f.sizes.n_q:
        return None
    if f.sizes.n_k > FORECAST_KEYS or (query is None and f.sizes.n_q * f.sizes.n_k > FORECAST_CELLS):
        return None
    allowed = f.allowed[list(rows)]  # [n_rows, n_k]
    if not allowed.any(axis=1).all():
        return None
    weights = np.where(allowed, f.r.weights[head][list(rows)], 0.0)  # [n_rows, n_k]
    _ = translator(language)
    if query is None:
        prompt = _("Draw {head}'s attention: for every query, share out 1.0 over the keys you expect it to "
                   "look at.").format(head=_head(head, _))
    else:
        prompt = _("Draw {head}'s attention for query {query}: share out 1.0 over the keys you expect it to "
                   "look at.").format(head=_head(head, _), query=_quoted(f.q_labels[query]))
    why = _("The real softmax of the scaled scores, row by row; masked keys get 0.")
    return DrawnForecast(prompt, head, rows, tuple(f.q_labels[q] for q in rows), f.k_labels, weights,
                         allowed.copy(), explanation=why, cell=(head, rows[0], int(np.argmax(weights[0]))))


def grid_json(weights) -> str:
    """[[w, ...], ...] to 6 decimals, so a row of 256 still sums to 1 within 1e-3."""
    rows = np.asarray(weights, dtype=float).reshape(-1, np.shape(weights)[-1])  # [n_rows, n_k]
    return "[" + ", ".join("[" + ", ".join(_short(w) for w in row) + "]" for row in rows) + "]"


def _short(weight: float) -> str:
    """0.25 -> '0.25', 1.0 -> '1', 1/3 -> '0.333333'."""
    return f"{weight:.6f}".rstrip("0").rstrip(".") or "0"


def read_grid(text: str, grid: tuple[int, int]) -> np.ndarray | None:  # -> [rows, cols] or None
    """A forecast's JSON grid back as numbers; None if it is not a grid of that shape."""
    try:
        values = np.array(json.loads(text), dtype=float)
    except (ValueError, TypeError):
        return None
    return values if values.shape == tuple(grid) and np.isfinite(values).all() else None


def chips_to_weights(chips) -> np.ndarray:  # [n_rows, n_k] counts -> [n_rows, n_k] shares
    """Chips placed on keys as shares of 1.0 per row (a row with no chip stays all 0)."""
    chips = np.asarray(chips, dtype=float)
    totals = chips.sum(axis=-1, keepdims=True)
    return np.divide(chips, totals, out=np.zeros_like(chips), where=totals > 0)


def forecast_distance(forecast, real) -> float:  # [n_rows, n_k], [n_rows, n_k] -> in [0, 1]
    """Total variation distance (half the L1 distance) per row, averaged over the rows: 0 is the
    real softmax exactly, 1 is all weight where the head puts none."""
    forecast, real = np.asarray(forecast, dtype=float), np.asarray(real, dtype=float)
    return float(np.mean(0.5 * np.abs(forecast - real).sum(axis=-1)))


def most_wrong_cell(forecast, real) -> tuple[int, int, float]:  # [n_rows, n_k] x 2 -> (row, key, gap)
    """Where the forecast is furthest from the real weights: (row, key, forecast - real); the first
    such cell on a tie."""
    gap = np.asarray(forecast, dtype=float) - np.asarray(real, dtype=float)  # [n_rows, n_k]
    row, key = np.unravel_index(int(np.argmax(np.abs(gap))), gap.shape)
    return int(row), int(key), float(gap[row, key])


def distance_words(distance: float, *, language: str = "en") -> str:
    """A total variation distance in words a class understands (in ``language``)."""
    _ = translator(language)
    if distance < 0.1:
        return _("very close")
    if distance < 0.25:
        return _("close")
    if distance < 0.5:
        return _("partly right")
    return _("far off")


# ---------------------------------------------------------------------------------------------
# Answers to the room: one form the room's store compares (classroom.store.is_right)

def room_answer(kind: str, text, choices: tuple[str, ...] = (), *, language: str = "en") -> str:
    """What a student typed, in the one form the store marks as Question.check would
    (course/answers.py, ``AnswerKind.stored``); ValueError says why it cannot be read (in ``language``)."""
    return answers.kind_of(kind).stored(text, choices, language=language)


def room_correct(question: Question) -> str:
    """The right answer as the store keeps it: full precision for numbers (answer_text rounds)."""
    if isinstance(question.answer, str):
        return room_answer(question.kind, question.answer, question.choices)
    return repr(float(question.answer))
