"""Outside text (tokens, nicknames, answers, example and file text) reaches the page only through
app/safe.py.

Two kinds of test: a source check that reads every app/ module and refuses any Markdown call or
widget label that is not built from literals, numbers and ``safe`` calls, so escaping is the
default path rather than a habit; and hostile text sent along every route (a ``?s=`` link, a JSON
file, the figures, the worksheet, the downloads), whose markup must show literally wherever it
lands.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.browser_env import settle

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"

# --- The source check ---------------------------------------------------------------------------

# Methods whose first argument Streamlit renders as Markdown (st.latex: as LaTeX), on any object:
# st, st.sidebar, a column, a container, a sidebar_inputs.Unseen.
MARKDOWN_METHODS = {"markdown", "caption", "success", "info", "warning", "error", "toast", "latex", "title",
                    "header", "subheader", "write", "exception", "spinner", "status", "dialog"}
# Widgets whose label (first argument or label=) Streamlit renders as Markdown; help= too.
LABELLED = {"selectbox", "radio", "segmented_control", "pills", "button", "checkbox", "toggle",
            "text_input", "text_area", "number_input", "slider", "select_slider", "download_button",
            "expander", "popover", "multiselect", "file_uploader", "form_submit_button", "link_button",
            "metric", "color_picker", "date_input", "time_input", "camera_input", "chat_input",
            "page_link", "progress"}
# Widgets whose options are drawn as Markdown (a selectbox's are plain text): the options must be
# the app's own, or shown through format_func=safe.lit.
MARKDOWN_OPTIONS = {"radio", "segmented_control", "pills"}
# The escapers of app/safe.py, under every name the app calls them by, for Markdown; LaTeX takes
# numbers only; HTML inside st.markdown(..., unsafe_allow_html=True) takes safe.html_text (an HTML
# block keeps backslashes, so lit would not protect it).
ESCAPERS = {"lit", "md"}
ESCAPERS_FOR = {False: ESCAPERS, "latex": set(), "html": {"html_text"}}
# Functions that return Markdown (or LaTeX) the app writes itself from escaped parts, and why each
# may be trusted. Each is checked like any other code: its own Markdown-bearing strings pass the
# same rules where they are built.
APP_MARKDOWN = {
    "sizes_line": "step_text: sizes and parameter counts, numbers only",
    "parameter_terms": "step_text: the parameter count as LaTeX products, numbers only",
    "chip_label": "questions: a forecast key's button, the key's label through lit, dots and a share",
    "read_only_grid": "editor_widgets: a follower's grid, labels through lit and cells as numbers",
    "drill_lines": "step_text: LaTeX of one cell, positions and numbers only, never tokens",
    "step_markdown": "workbench: a step's heading, formula, what and why from course/steps.py (the course's "
                     "own Markdown); a formula or what given instead is checked at each call",
    "shown_label": "setup_ui: an example's title (app text) or 'your setup'",
    "screen_heading": "present: a screen's number and its title (course/steps.py, translated)",
    "format_number": "figures: a float as text (digits, a sign, '.', 'e', '−'), for cells and captions",
    "hover_number": "figures: a float as text with more digits, for hover and tables",
    "latex_int": "numbers: an int as LaTeX, 12{,}345",
    "forecast_words": "questions: the class's forecast in words, built with safe.md",
    "tex_number": "app/steps/head_outputs.py: a float as LaTeX (digits, a sign, \\times 10^{n})",
    "latex": "mha_core.Scaling.latex(d_k): the scaling as LaTeX from its kind and numbers",
    "describe": "mha_core.Scaling.describe(d_k): the scaling in words from its kind and numbers",
    "table_html": "chart_text: a chart's numbers as HTML tables, every label and cell through html_text",
    "number": "i18n: a number as the reader's language writes it (digits, its marks, a sign)",
}
# Attributes that hold Markdown (or LaTeX) the app writes itself.
APP_MARKDOWN_ATTRIBUTES = {
    "explanation": "course.quiz.Question.explanation: its tokens go through mha_core.markup.literal",
    "solution": "classroom Question.solution as app/room/questions.py sends it: a quiz question's "
                "explanation (course.quiz, tokens through mha_core.markup.literal); a forecast's is JSON, "
                "never shown",
    "formula": "course.steps.Step.formula: the course's LaTeX, a literal in course/steps.py",
}
# Tables of the course's own text, whose entries' attributes are the app's Markdown.
APP_TEXT_TABLES = {
    "STEPS": "course/steps.py: each step's title, formula, what and why",
    "SCREENS": "course/steps.py: each presenter screen's title, step and why",
}
# Calls whose result's attributes are the course's own text in the reader's language: the registry's
# texts through the committed catalogues (tests/course/test_languages.py keeps their Markdown as the English).
APP_TEXT_CALLS = {
    "step": "app.i18n.step(n): step n of course/steps.py, translated",
    "screen": "app.i18n.screen(i): presenter screen i of course/steps.py, translated",
    "kind_of": "course.answers.kind_of(name): an answer kind of the registry, every text a literal there",
}
# Translations of a message: as safe as the message translated, which is checked like any value.
TRANSLATORS = {"t": "app.i18n.t(message): the app's own message in the reader's language",
               "tex": "app.i18n.tex(latex): the formula with its numbers' marks written the reader's way",
               "N_": "course.i18n.N_(message): marks a message for the catalogues, returns it unchanged"}
# Functions whose parameter is shown as Markdown: the parameter is checked at every call instead.
WRAPPERS = {
    "choice_ui": {"label": 1},  # (where, label, labels, name)
    "_tokens_ui": {"label": 1},  # (sb, label, key, errors)
    "step_header": {"formula": 1, "what": 2},  # (number, formula, what)
    "_numbers_ui": {"label": 0, "help": 3},  # labs: (label, key, what, help)
    "_size_input": {"label": 1, "help": 3},  # labs: (where, label, key, help)
    "_ask": {"prompt": 2},  # quiz: (question, ident, prompt)
    "step_markdown": {"formula": 1, "what": 2},
}
# Objects whose methods share a name with Streamlit's but return text: mha_core.Scaling.latex(d_k).
NOT_STREAMLIT = {"scaling"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    call: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.call}: {self.why}"


def _name(func: ast.expr) -> str:
    """The called name: 'md' for md(...), safe.md(...) and widgets.md(...)."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _module_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound once to a literal (a str, a tuple/list/dict of literals)."""
    counts: dict[str, int] = {}
    literal: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Name):
                counts[target.id] = counts.get(target.id, 0) + 1
                if _is_literal(node.value):
                    literal.add(target.id)
    return {name for name in literal if counts[name] == 1}


class _Unmarked(ast.NodeTransformer):
    """N_("text") as "text": a message marked for the catalogues is still a literal."""

    def visit_Call(self, node: ast.Call):  # noqa: N802 (ast's name)
        if _name(node.func) == "N_" and len(node.args) == 1 and not node.keywords:
            return self.visit(node.args[0])
        return self.generic_visit(node)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(_Unmarked().visit(copy.deepcopy(node)))
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module):
        self.path, self.findings = path, []
        self.constants = _module_constants(tree)
        self.scopes: list[ast.AST] = [tree]

    # Scopes: a name is resolved in the innermost function that binds it.
    def visit_FunctionDef(self, node):
        self.scopes.append(node)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_Call(self, node: ast.Call):
        name = _name(node.func)
        if isinstance(node.func, ast.Attribute) and _name(node.func.value) in NOT_STREAMLIT:
            name = ""
        if isinstance(node.func, ast.Attribute) and name in MARKDOWN_METHODS:
            self._markdown_call(node, name)
        if isinstance(node.func, ast.Attribute) and name in LABELLED:
            self._widget_call(node, name)
        if isinstance(node.func, ast.Attribute) and name == "tabs" and node.args and \
                isinstance(node.args[0], (ast.List, ast.Tuple)):
            self._check(node, node.args[0].elts, "tabs(labels)")
        self._check(node, _keyword(node, "help"), f"{name}(help)")  # a tooltip is Markdown, on any call
        self._check(node, _keyword(node, "caption"), f"{name}(caption)")  # st.image(caption=...) too
        if name in WRAPPERS:
            for parameter, position in WRAPPERS[name].items():
                self._check(node, _argument(node, position, parameter), f"{name}({parameter})")
        self.generic_visit(node)

    def _markdown_call(self, node: ast.Call, name: str):
        values = node.args if name == "write" else _argument(node, 0, "body")
        raw_html = any(isinstance(v, ast.Constant) and v.value is True
                       for v in _keyword(node, "unsafe_allow_html"))
        if name == "write":
            for value in values:
                self._check(node, [value], "write")
        else:
            mode = "html" if raw_html else "latex" if name == "latex" else False
            self._check(node, values, name, mode=mode)

    def _widget_call(self, node: ast.Call, name: str):
        if name == "progress":
            self._check(node, _keyword(node, "text"), "progress(text)")
            return
        label = _keyword(node, "label") if name == "page_link" else _argument(node, 0, "label")
        self._check(node, label, f"{name}(label)")  # page_link(page, label=...)
        self._check(node, _keyword(node, "placeholder"), f"{name}(placeholder)")
        if name in MARKDOWN_OPTIONS:
            self._options(node, name)

    def _options(self, node: ast.Call, name: str):
        captions = _keyword(node, "captions")
        self._check(node, captions, f"{name}(captions)")
        format_func = _keyword(node, "format_func")
        if format_func:
            if not self._trusted_format(format_func[0]):
                self._find(node, f"{name}(format_func)", "options shown through a function the check "
                                                            "cannot read: use format_func=safe.lit")
            return
        options = _argument(node, 1, "options")
        if options and not self._constant(options[0]):
            self._find(node, f"{name}(options)", "options from a variable are Markdown: pass "
                                                 "format_func=safe.lit")

    def _trusted_format(self, node: ast.expr) -> bool:
        """safe.lit, str.upper, CONSTANT_DICT.get (the app's own labels) or i18n.labels(CONSTANT_DICT)
        (those labels in the reader's language)."""
        if _name(node) in ESCAPERS | {"upper", "lower", "title"}:
            return True
        if isinstance(node, ast.Call) and _name(node.func) == "labels" and len(node.args) == 1:
            return isinstance(node.args[0], ast.Name) and node.args[0].id in self.constants
        return (isinstance(node, ast.Attribute) and node.attr == "get" and isinstance(node.value, ast.Name)
                and node.value.id in self.constants)

    def _constant(self, node: ast.expr) -> bool:
        if _is_literal(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.constants
        if isinstance(node, ast.Call) and _name(node.func) in {"list", "tuple"} and node.args:
            return self._constant(node.args[0])
        return False

    def _check(self, call: ast.Call, values: list[ast.expr], what: str, *, mode: str | bool = False):
        for value in values:
            why = self._unsafe(value, mode=mode, seen=set())
            if why:
                self._find(call, what, why)

    def _find(self, node: ast.AST, what: str, why: str):
        self.findings.append(Finding(self.path, node.lineno, what, why))

    # The rules: why a value may carry outside text unescaped, or None when it cannot.
    def _unsafe(self, node: ast.expr, *, mode: str | bool, seen: set) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, type(None))):
            return None
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    why = self._interpolated(part, mode)
                    if why:
                        return why
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return (self._unsafe(node.left, mode=mode, seen=seen)
                    or self._unsafe(node.right, mode=mode, seen=seen))
        if isinstance(node, ast.IfExp):
            return (self._unsafe(node.body, mode=mode, seen=seen)
                    or self._unsafe(node.orelse, mode=mode, seen=seen))
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if _evidently_number(node):
                return None
            if name in ESCAPERS_FOR[mode]:
                return None
            if name in APP_MARKDOWN:
                return None
            if name in TRANSLATORS and len(node.args) == 1:
                return self._unsafe(node.args[0], mode=mode, seen=seen)
            if name == "format" and isinstance(node.func, ast.Attribute):  # t("… {n} …").format(n=…)
                parts = [node.func.value, *node.args, *(keyword.value for keyword in node.keywords)]
                return next(filter(None, (self._unsafe(part, mode=mode, seen=seen) for part in parts)), None)
            if name == "replace" and isinstance(node.func, ast.Attribute) and \
                    all(self._unsafe(a, mode=mode, seen=seen) is None for a in node.args):
                return self._unsafe(node.func.value, mode=mode, seen=seen)  # safe text, safe parts
            if name == "get" and isinstance(node.func, ast.Attribute) and self._constant(node.func.value):
                return None  # the app's own labels: {"causal": "..."}.get(kind)
            if name == "join" and isinstance(node.func, ast.Attribute) and isinstance(node.func.value,
                                                                                      ast.Constant):
                return self._joined(node, mode, seen)
            return f"a call of {ast.unparse(node.func)}(): pass its text through safe.md or safe.lit"
        if isinstance(node, ast.Name):
            return self._bound(node, mode, seen)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._unsafe(node.elt, mode=mode, seen=seen)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                node.value.id in self.constants:
            return None
        if isinstance(node, ast.Attribute) and node.attr in APP_MARKDOWN_ATTRIBUTES:
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Subscript) and \
                _name(node.value.value) in APP_TEXT_TABLES:
            return None  # STEPS[n].why
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and \
                _name(node.value.func) in APP_TEXT_CALLS:
            return None  # i18n.step(n).why
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and \
                _name(node.value.func) in APP_MARKDOWN:
            return None  # drill_lines(...)[0]
        return f"{ast.unparse(node)[:60]!r} may hold outside text: pass it through safe.md or safe.lit"

    def _interpolated(self, part: ast.FormattedValue, mode: str | bool) -> str | None:
        if part.conversion != -1:
            return f"f-string value {{{ast.unparse(part.value)[:50]}!...}}: a conversion shows any text"
        if _numeric_spec(part.format_spec):
            return None  # {n:d}, {x:.3f}, {n:,}: a number, or a ValueError for a string
        value = part.value
        if _evidently_number(value):
            return None
        readable = (ast.Call, ast.Name, ast.IfExp, ast.Subscript, ast.Attribute, ast.Constant)
        if isinstance(value, readable) and self._unsafe(value, mode=mode, seen=set()) is None:
            return None
        escaper = {"html": "html_text(...)", "latex": "nothing (numbers only)"}.get(mode, "lit(...)")
        return (f"f-string value {{{ast.unparse(value)[:50]}}}: wrap it in {escaper} or give a number a "
                "format spec ({n:d}, {x:.3f})")

    def _joined(self, node: ast.Call, mode: str | bool, seen: set) -> str | None:
        if len(node.args) != 1:
            return "a join the check cannot read"
        items = node.args[0]
        if isinstance(items, (ast.GeneratorExp, ast.ListComp)):
            return self._unsafe(items.elt, mode=mode, seen=seen)
        if isinstance(items, (ast.List, ast.Tuple)):
            for item in items.elts:
                why = self._unsafe(item, mode=mode, seen=seen)
                if why:
                    return why
            return None
        return self._unsafe(items, mode=mode, seen=seen)

    def _bound(self, node: ast.Name, mode: str | bool, seen: set) -> str | None:
        """A name is safe when every value bound to it in its function is, or it is a wrapper's
        parameter (checked at the calls), or a module constant."""
        if node.id in seen:
            return None
        seen = seen | {node.id}
        for scope in reversed(self.scopes):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.id in WRAPPERS.get(scope.name, {}):
                return None
            bound = list(_bindings(scope, node.id))
            if bound:
                for value in bound:
                    if value is None:
                        return f"{node.id!r} is a parameter or loop variable: escape it where it is shown"
                    why = self._unsafe(value, mode=mode, seen=seen)
                    if why:
                        return f"{node.id!r} = {why}"
                return None
        if node.id in self.constants:
            return None
        return f"{node.id!r} may hold outside text: pass it through safe.md or safe.lit"


def _numeric_spec(spec: ast.JoinedStr | None) -> bool:
    """A format spec only a number takes: a type of b d e f g n o x % or a ',' / '_' grouping."""
    if spec is None or not all(isinstance(p, ast.Constant) for p in spec.values):
        return False
    text = "".join(str(p.value) for p in spec.values)
    return bool(re.search(r"[,_]|[bdeEfFgGnoxX%]$", text))


def _evidently_number(node: ast.expr) -> bool:
    """len(...), int(...), float(...), round(...), or such a value (or a name) plus or minus a number."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        return _name(node.func) in {"len", "int", "float", "round"} and isinstance(node.func, ast.Name)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _evidently_number(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        # str + int raises, so a number on either side makes it a number
        return _evidently_number(node.left) or _evidently_number(node.right)
    return False


def _bindings(scope: ast.AST, name: str):
    """Values bound to ``name`` directly in ``scope`` (None for a parameter or a loop target whose
    items cannot be read); a for loop over a trusted call's items yields that call."""
    args = getattr(scope, "args", None)
    if args is not None and name in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}:
        yield None
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    yield node.value
                elif isinstance(target, ast.Tuple) and any(isinstance(t, ast.Name) and t.id == name
                                                           for t in target.elts):
                    yield None
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name) and \
                node.target.id == name and node.value is not None:
            yield node.value
        elif isinstance(node, (ast.For, ast.comprehension)) and any(
                isinstance(t, ast.Name) and t.id == name for t in ast.walk(node.target)):
            items = node.iter
            yield items if isinstance(items, ast.Call) and _name(items.func) in APP_MARKDOWN else None
        elif isinstance(node, ast.NamedExpr) and node.target.id == name:
            yield node.value


def _own_nodes(scope: ast.AST):
    """Nodes of a function body (or a module), not those of the functions nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _argument(node: ast.Call, position: int, keyword: str) -> list[ast.expr]:
    if len(node.args) > position and not any(isinstance(a, ast.Starred) for a in node.args[:position + 1]):
        return [node.args[position]]
    return _keyword(node, keyword)


def _keyword(node: ast.Call, keyword: str) -> list[ast.expr]:
    return [k.value for k in node.keywords if k.arg == keyword]


def findings_in(source: str, path: str = "snippet.py") -> list[Finding]:
    tree = ast.parse(source, filename=path)
    checker = _Checker(path, tree)
    checker.visit(tree)
    return checker.findings


def source_findings(paths=None) -> list[Finding]:
    """Every Markdown call or label in app/ that could show outside text unescaped."""
    findings = []
    paths = sorted(paths or APP.rglob("*.py"))
    assert len(paths) > 10, f"app/ not found at {APP}"
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        checker = _Checker(str(path.relative_to(ROOT)), tree)
        checker.visit(tree)
        findings += checker.findings
    return findings


# Modules another part of issue 15 is rewriting; their owners convert them (listed by the test below).


REFUSED = [
    'st.markdown(f"**{token}**")',
    'st.caption(f"{n} rows")',
    'def f(message):\n    st.sidebar.error(message)',
    'left.warning("Row " + token)',
    'st.radio("pick", tokens)',
    'st.segmented_control("head", labels, format_func=str)',
    'st.selectbox(f"of {token}", [1])',
    'st.button("go", help=example.title)',
    'st.markdown(f"<b>{lit(token)}</b>", unsafe_allow_html=True)',
    'st.latex(rf"\\text{{{lit(token)}}}")',
    'x = f"{token}"\nst.info(x)',
    'st.markdown(f"{token!r}")',
    'st.caption(f"{token:>10}")',
    'st.write(token)',
    'st.tabs([token, "b"])',
    'st.markdown("\\n".join(f"| {t} |" for t in tokens))',
]
ACCEPTED = [
    'st.markdown(f"**{lit(token)}**")',
    'st.caption(f"{n:d} rows, {x:.3f}, {big:,}")',
    'st.caption(f"{len(tokens)} tokens, row {i + 1}")',
    'st.info(md("Row {} is {}", token, word))',
    'st.radio("pick", tokens, format_func=lit)',
    'st.radio("pick", ("a", "b"))',
    'st.markdown(f"<b>{html_text(token)}</b>", unsafe_allow_html=True)',
    'st.latex(rf"d_k = {d_k:d}")',
    'x = f"{lit(token)}" if flag else "none"\nst.info(x)',
    'st.markdown("\\n".join(f"| {lit(t)} |" for t in tokens))',
    'st.markdown(sizes_line(sizes))',
]


@pytest.mark.parametrize("source", REFUSED)
def test_the_source_check_refuses_outside_text_reaching_markdown(source):
    assert findings_in(source), source


@pytest.mark.parametrize("source", ACCEPTED)
def test_the_source_check_accepts_escaped_parts_and_numbers(source):
    assert not findings_in(source), findings_in(source)


def test_every_markdown_call_and_label_in_app_is_built_from_escaped_parts():
    findings = list(source_findings())
    assert not findings, "\n" + "\n".join(map(str, findings))


def test_one_escaper_under_one_name():
    """app/safe.py is the only place Markdown, plotly or HTML escaping is written; no other name for
    it (widgets.md_literal was one) and no html.escape of its own in a view."""
    for path in sorted(APP.rglob("*.py")):
        text = path.read_text()
        assert "md_literal" not in text, path
        if path.name != "safe.py":
            assert "html.escape(" not in text and "isalnum() and not" not in text, path


# --- Hostile text along every route --------------------------------------------------------------

# Each would do something if rendered: fetch an image, embolden, inject a tag, typeset, colour, link.
HOSTILE = ["![i](http://127.0.0.1:9/p.png)", "**BOLD**", "<b>x</b>", "$x$", ":red[x]",
           "[link](javascript:alert(1))"]
HOSTILE_TEXT = " ".join(HOSTILE)


def _strings_of(value):
    """Every string inside a figure spec, except the base64 of arrays and images."""
    if isinstance(value, str):
        if not value.startswith("data:image/"):
            yield value
    elif isinstance(value, dict):
        if "bdata" in value:
            return
        for item in value.values():
            yield from _strings_of(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings_of(item)


def _plotly_markup(spec) -> list[str]:
    """Strings of a figure that plotly would read as markup: a tag other than its own <br> and
    <extra>, or a $ (LaTeX)."""
    found = []
    for text in _strings_of(spec):
        bare = text.replace("<br>", "").replace("<extra></extra>", "")
        if "<" in bare or "$" in bare:
            found.append(text)
    return found


def _every_figure(tokens: list[str], title: str):
    """Every figure builder of app/, given outside text wherever it takes text."""
    import numpy as np

    from app.charts import bar_figures, figures, lab_figures, model_figures

    rng = np.random.default_rng(0)
    n, h = len(tokens), 2
    weights = rng.dirichlet(np.ones(n), size=(h, n))  # [h, n, n]
    names = [f"{title} {i}" for i in range(h)]
    yield figures.matrix_heatmap(rng.normal(size=(n, 3)), tokens, tokens[:3], title=title)
    for kind in figures.KINDS:
        yield figures.head_grids(weights, tokens, tokens, kind=kind, head_names=names, title=title)
    yield figures.qkv_panels(*(rng.normal(size=(n, 2)) for _ in range(3)), tokens, tokens[::-1],
                             titles=[title] * 3)
    yield figures.side_by_side(rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), tokens, left_title=title,
                               right_title=title)
    yield figures.concat_bands(rng.normal(size=(n, 4)), tokens, 2, 2, title=title)
    yield bar_figures.query_bars(weights, 0, tokens, head_names=names)
    yield figures.disagreement_heatmap(rng.random((h, h)), metric="l2", head_names=names)
    yield bar_figures.entropy_bars(rng.random(h), head_names=names, flat_at=0.9)
    yield lab_figures.weight_bars(weights[0, 0], tokens, rng.normal(size=n), rng.normal(size=n), title=title)
    yield model_figures.model_view([weights], [[f"{title}\n{title}"] * h])
    yield model_figures.head_view(weights, [0, 1], tokens, query=0)


def test_outside_text_in_every_chart_title_label_and_hover_shows_literally():
    """Tokens, head names and titles with markup: plotly must see every one of them escaped."""
    for fig in _every_figure(HOSTILE, HOSTILE_TEXT):
        spec = fig.to_dict() if hasattr(fig, "to_dict") else fig
        assert not _plotly_markup(spec), _plotly_markup(spec)[:3]
        assert any("&lt;b&gt;x&lt;/b&gt;" in text for text in _strings_of(spec))  # shown, as text


def hostile_setup():
    """The default example's numbers over six tokens that are each a piece of markup."""
    import numpy as np

    from course.examples import DEFAULT_EXAMPLE, all_examples
    from mha_core.codec import setup_from_document, setup_to_document

    document = setup_to_document(all_examples()[DEFAULT_EXAMPLE])
    document.pop("origin", None)
    document["tokens"] = list(HOSTILE)
    document["x"] = np.random.default_rng(0).normal(size=(len(HOSTILE), 2)).round(3).tolist()
    return setup_from_document(document)


# What each hostile token looks like when it reaches Markdown unescaped.
UNESCAPED = ("![", "**BOLD**", "<b>", ":red[", "$x$", "](javascript")
# Proto fields Streamlit renders as Markdown: bodies, labels, help, placeholders, radio captions and
# the options of radios and segmented controls (a selectbox's options are plain text).
MARKDOWN_FIELDS = {"body", "label", "help", "placeholder", "captions"}
MARKDOWN_OPTION_TYPES = {"Radio", "ButtonGroup"}


def _markdown_strings(message, markdown_options: bool = False):
    """Every string of a Streamlit proto message that is drawn as Markdown."""
    from collections.abc import Sequence

    from google.protobuf.message import Message

    options = markdown_options or type(message).__name__ in MARKDOWN_OPTION_TYPES
    for field, value in message.ListFields():
        values = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
        for item in values:
            if isinstance(item, Message):
                yield from _markdown_strings(item, options)
            elif isinstance(item, str) and (field.name in MARKDOWN_FIELDS or options and field.name in {
                    "options", "content"}):
                yield item


def _page_markdown(at) -> list[str]:
    found = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None:
            found.extend(_markdown_strings(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found


def _unescaped(strings: list[str]) -> list[str]:
    return [text for text in strings if any(raw in text for raw in UNESCAPED)]


PAGES = ["workbench", "present", "labs", "learn", "quiz", "model", "class", "examples"]


def _open_link(params):
    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import ENTRY

    at = AppTest.from_file(str(ENTRY), default_timeout=120)
    at.query_params.update(params)
    at.run()
    assert not at.exception
    return at


ESCAPED_BOLD = "\\*\\*BOLD\\*\\*"  # **BOLD** as lit writes it: shown, not rendered


def test_hostile_tokens_from_a_state_link_show_literally_on_every_page():
    """Every page of the navigation, then the routes that put a token into a sentence: the quiz's
    questions, a masked row's warning, the compare bar, the drill-down."""
    from mha_core.codec import setup_to_link
    from tests.apptest_util import edit_cell, goto, key_of

    params, whole = setup_to_link(hostile_setup(), None)
    assert whole and "s" in params
    at = _open_link(params)
    assert at.session_state["tokens_text"] == HOSTILE_TEXT
    strings = []
    for page in PAGES:
        goto(at, page)
        assert not at.exception, page
        strings += _page_markdown(at)
    goto(at, "quiz")
    for _ in range(10):
        strings += _page_markdown(at)
        at.button(key="quiz_next").click().run()
    goto(at, "workbench")
    at.button(key="compare_pin").click().run()
    at.run()
    edit_cell(at, "x", row=0, col=0, value="9")
    at.selectbox(key="mask_kind").set_value("custom").run()
    at.session_state[key_of(at, "mask")] = {
        "edited_rows": {1: {f"c{j}": False for j in range(len(HOSTILE))}}, "added_rows": [],
        "deleted_rows": []}
    edit_cell(at, "x", row=0, col=0, value="8")
    at.toggle(key="drill_open").set_value(True).run()
    assert not at.exception
    strings += _page_markdown(at)
    assert not _unescaped(strings), _unescaped(strings)[:5]
    assert sum(ESCAPED_BOLD in text for text in strings) >= 3, [t for t in strings if "BOLD" in t]


def test_the_worksheet_shows_hostile_tokens_and_title_as_text():
    """The printable worksheet is HTML: every token and the title html-escaped, so the sheet has no
    tag but its own."""
    import re

    from course.worksheet import worksheet_html

    setup = hostile_setup()
    sheet = worksheet_html(setup, setup.run(), title=HOSTILE_TEXT, seed=3)
    assert "&lt;b&gt;x&lt;/b&gt;" in sheet and "<b>x</b>" not in sheet
    tags = set(re.findall(r"<\s*([a-zA-Z][a-zA-Z0-9]*)", sheet))
    own = {"html", "head", "meta", "title", "style", "body", "section", "div", "h1", "h2", "p", "b", "span",
           "small", "br", "table", "colgroup", "col", "thead", "tbody", "tr", "th", "td"}
    assert tags <= own, tags - own
    assert "javascript:" not in sheet.replace("javascript:alert(1))", "")  # only as text, in a token


FORMULA_TOKENS = ["=1+1", "@SUM(A1)", "+1", "-1+1", "=HYPERLINK(\"http://127.0.0.1:9\")"]


def test_the_numbers_zip_never_starts_a_cell_with_a_formula():
    """A spreadsheet opening the CSV files reads '=', '+', '-', '@' as the start of a formula: every
    label cell starts with its position ('1 =1+1'), and every other cell is a number."""
    import csv
    import io
    import zipfile

    import numpy as np

    from course.export import setup_to_csv_zip
    from mha_core.codec import setup_from_document, setup_to_document

    document = setup_to_document(hostile_setup())
    document["tokens"] = FORMULA_TOKENS
    document["x"] = np.random.default_rng(1).normal(size=(len(FORMULA_TOKENS), 2)).round(3).tolist()
    archive = zipfile.ZipFile(io.BytesIO(setup_to_csv_zip(setup_from_document(document))))
    cells = 0
    for name in archive.namelist():
        for row in csv.reader(io.StringIO(archive.read(name).decode())):
            for cell in row:
                cells += 1
                if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                    float(cell)  # a negative number is a number; anything else would be a formula
    assert cells > 100
    assert any("=HYPERLINK" in archive.read(name).decode() for name in archive.namelist())  # kept, inert


# --- In Chromium: what a student's browser would fetch or render -----------------------------------

BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
RENDERED = """() => ({
    images: Array.from(document.querySelectorAll("img")).map(i => i.getAttribute("src") || ""),
    strong: Array.from(document.querySelectorAll("strong, b")).map(e => e.textContent),
    links: Array.from(document.querySelectorAll("a")).map(a => a.getAttribute("href") || ""),
    coloured: Array.from(document.querySelectorAll("span")).filter(
        e => e.textContent === "x" && (e.getAttribute("style") || "").includes("color")).length,
    formulas: Array.from(document.querySelectorAll(".katex annotation")).filter(
        e => e.textContent === "x").length,
    text: document.body.innerText,
})"""


def _browser():
    import shutil

    import pytest

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("no Chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    return chromium, sync_api


def _nothing_rendered(page, where: str) -> dict:
    seen = page.evaluate(RENDERED)
    assert not [src for src in seen["images"] if "127.0.0.1:9/" in src], where
    assert "BOLD" not in seen["strong"] and "x" not in seen["strong"], (where, seen["strong"])
    links = [href for href in seen["links"] if href.lower().startswith("javascript") or ":9/" in href]
    assert not links, (where, links)  # nor a bare URL turned into a link
    assert seen["coloured"] == 0 and seen["formulas"] == 0, (where, seen["coloured"], seen["formulas"])
    assert page.locator("[data-testid='stException']").count() == 0, where
    return seen


@pytest.mark.browser
def test_hostile_tokens_in_chromium_from_a_link_and_a_file_fetch_and_render_nothing(tmp_path):
    """Every page opened from a ?s= link with markup tokens, then the same setup loaded from a JSON
    file (and a bad file with markup in its name): no image from 127.0.0.1:9 requested, nothing
    bold, no javascript: link; the tokens show as text."""
    import json
    import urllib.parse
    from xml.etree import ElementTree

    from mha_core.codec import setup_to_json, setup_to_link
    from tests.live_server import streamlit_server

    chromium, sync_api = _browser()
    params, _ = setup_to_link(hostile_setup(), None)
    query = urllib.parse.urlencode(params)
    requested: list[str] = []
    with streamlit_server() as (url, _), sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=BROWSER_FLAGS)
        context = browser.new_context(viewport={"width": 1400, "height": 4000})
        context.on("request", lambda request: requested.append(request.url))
        page = context.new_page()
        for name in PAGES:
            page.goto(f"{url}/{'' if name == 'workbench' else name}?{query}")
            settle(page, "[data-testid='stSidebarNav']", attached=True)
            if name == "quiz":
                for _ in range(4):
                    page.locator(".st-key-quiz_next button").click()
                    page.wait_for_timeout(300)
                    page.wait_for_selector(IDLE, timeout=30_000)
                    _nothing_rendered(page, "quiz")
            seen = _nothing_rendered(page, name)
            if name == "quiz":
                assert "**BOLD**" in seen["text"] or "![i](" in seen["text"], "a token shown as text"
        page.goto(url)
        settle(page, "[data-testid='stSidebarNav']", attached=True)
        page.get_by_text("Save or load this setup").click()
        bad = {**json.loads(setup_to_json(hostile_setup())), "tokens": ["w"] * 30}
        for file_name, text in (("**BOLD** <b>x</b> $x$ :red[x] ![i](p.png).json", json.dumps(bad)),
                                ("hostile.json", setup_to_json(hostile_setup()))):
            page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
                files=[{"name": file_name, "mimeType": "application/json", "buffer": text.encode()}])
            page.wait_for_timeout(600)
            page.wait_for_selector(IDLE, timeout=30_000)
            seen = _nothing_rendered(page, file_name)
        assert "Could not load **BOLD** <b>x</b>" in page.evaluate(RENDERED)["text"] or \
            page.locator("input[aria-label*='Tokens (queries)' i]").input_value() == HOSTILE_TEXT
        assert page.locator("input[aria-label*='Tokens (queries)' i]").input_value() == HOSTILE_TEXT
        svg = ElementTree.fromstring(_chart_as_svg(page, tmp_path))
        texts = {"".join(node.itertext()) for node in svg.iter("{http://www.w3.org/2000/svg}text")}
        assert {"<b>x</b>", "**BOLD**", "$x$"} <= texts, texts  # the ticks show the tokens as text
        assert not [node for node in svg.iter() if "bold" in (node.get("style") or "").replace(" ", "")]
        browser.close()
    assert not [r for r in requested if "127.0.0.1:9/" in r], "the image was fetched"


def _chart_as_svg(page, folder: Path) -> str:
    """The weights chart as the modebar's camera downloads it, in SVG (chosen in the sidebar)."""
    page.locator("label:has-text('SVG')").click()
    page.wait_for_function("""() => {
        const gd = document.querySelector('.st-key-chart_weights .js-plotly-plot');
        return gd && gd._context && gd._context.toImageButtonOptions.format === 'svg'; }""", timeout=30_000)
    page.wait_for_selector(IDLE, timeout=30_000)
    chart = page.locator(".st-key-chart_weights .js-plotly-plot")
    chart.hover()
    with page.expect_download(timeout=30_000) as started:
        chart.locator(".modebar-btn[data-title^='Download plot']").click()
    path = folder / started.value.suggested_filename
    started.value.save_as(path)
    return path.read_text()


# --- The escapers themselves -------------------------------------------------------------------

def test_lit_escapes_every_ascii_punctuation_mark_and_nothing_else():
    import string

    from app.safe import lit

    assert lit(string.punctuation) == "".join("\\" + c for c in string.punctuation)
    assert lit("sat 3 · naïve 猫\n") == "sat 3 · naïve 猫\n"  # letters, digits, spaces, non-ASCII kept
    assert lit(0.67) == "0\\.67" and lit(None) == "None"


def test_lit_keeps_bare_urls_and_addresses_from_becoming_links():
    """GitHub-flavoured Markdown links 'http://', 'www.' and 'name@host' found in the text after the
    escapes are undone: a word joiner (invisible) breaks each of them."""
    import re

    from app.safe import lit
    from mha_core.markup import WORD_JOINER

    for text in ("http://127.0.0.1:9/p.png", "HTTPS://x.io", "www.example.org", "me@example.org"):
        shown = re.sub(r"\\(.)", r"\1", lit(text))
        assert shown.replace(WORD_JOINER, "") == text
        assert not re.search(r"(?i)https?://|www\.|\w@", shown), shown


def test_md_escapes_the_values_and_keeps_the_template():
    from app.safe import md

    assert md("**{}** of {who}", "**x**", who="$y$") == "**\\*\\*x\\*\\*** of \\$y\\$"


def test_chart_text_and_html_text_disarm_tags_entities_and_formulas():
    from app.safe import chart_text, html_text

    assert chart_text("<b>x</b> &amp; $x$") == "&lt;b&gt;x&lt;/b&gt; &amp;amp; &#36;x&#36;"
    assert html_text("<img src=x onerror='a'>") == "&lt;img src=x onerror=&#x27;a&#x27;&gt;"
