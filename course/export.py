"""A Setup as a short Python script that needs only NumPy and writes every step of the course's registry
(course/steps.py) in its order, each with its number, title, formula and "what", computing those that
compute (STEP_CODE) with the course's one attention formula (mha_core.attention.attention, whose source
the script carries). The CSV archive names its files by the steps' numbers in the same registry.

    python -m course.export --example ex_a_single_head     # an example
    python -m course.export attention-setup.json          # a file saved from the page

The script rebuilds the exact inputs (tokens as comments, arrays as literals, or, for the
512-wide examples, the seeded NumPy calls that drew them), then projects, scores, scales, masks,
takes the softmax, blends the values, concatenates and mixes with W_O, and prints the weights
and the output as Python lists (every digit, so that they can be compared).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
import textwrap
from pathlib import Path

import numpy as np

from course.i18n import ENGLISH, LANGUAGES, N_, translator
from course.steps import in_language, number_of
from mha_core.attention import attention, softmax_rows
from mha_core.codec import ConfigError, setup_from_json
from mha_core.setup import LIMITS, Setup

# The script's own text. Nothing from outside (a title, a file name, tokens) is ever placed in it
# except through ``_inert``: a docstring or string literal could be closed by the text, and the
# first two lines could declare the file's encoding ("# coding: unicode_escape" turns "\n" in a
# comment into a real line), so outside text appears only in comments from the third line on,
# escaped to printable ASCII. The script's own words are in the reader's language (the catalogues,
# course/locale): each is one line, written through ``_own`` (no line break, backslash or quote).
HEADER = '''"""{about}

{needs}
{shapes}
"""

'''
ABOUT = N_("Multi-head attention, step by step (exported from the multi-head attention workbench).")
NEEDS = N_("Needs only NumPy: python this_file.py")
SHAPES = N_("Shapes: {n_q} queries x {n_k} keys, d_model = {d_model}, h = {h}, d_k = {d_k}, d_v = {d_v}.")
TITLE_CHARS = 200  # a title longer than this is cut (with "...") in the script's comment

# What the script computes at a step, by the step's name (course/steps.py): NumPy lines in the names the
# lines before them made. A step with none (a new one, or one that only reads the numbers) is still
# written in its place, with its number, its title, its formula and its "what".
STEP_CODE = {
    "projections": """\
q = x @ w_q{b_q}  # [h, n_q, d_k]
k = x_kv @ w_k{b_k}  # [g, n_k, d_k]  g key/value heads: g = h unless they are grouped
v = x_kv @ w_v{b_v}  # [g, n_k, d_v]
k, v = (np.repeat(a, len(w_q) // len(a), axis=0) for a in (k, v))  # [h, n_k, ...]: each query head's own
""",
    "softmax": """\
head_outputs, weights = attention(q, k, v, scale, allowed)  # [h, n_q, d_v], [h, n_q, n_k]
""",
    "concatenation": """\
concat = head_outputs.transpose(1, 0, 2).reshape(len(x), -1)  # [n_q, h * d_v]
output = concat @ w_o{b_o}  # [n_q, d_model]
""",
}
FOOTER = """
print("weights =", weights.tolist())
print("output =", output.tolist())
"""
FORMULA = N_("The attention formula, as the course computes it everywhere (mha_core/attention.py):")
COMMENT_CHARS = 98  # a step's "what" is wrapped into comment lines of at most this many characters


def formula_source() -> str:
    """The source of the course's one attention formula (mha_core.attention), as the script defines it."""
    return "\n\n".join(inspect.getsource(function) for function in (softmax_rows, attention))


def setup_to_script(setup: Setup, title: str = "your setup", recipe: str = "",
                    language: str = ENGLISH) -> str:
    """The script's text, its comments and header in ``language``. recipe: an example's own NumPy
    statements that rebuild the arrays instead of literals (no other code is written into a script:
    see _trusted_recipe).

    Outside text (title, tokens) is inert in the script whatever its characters: each is written
    only as an escaped comment (see _inert)."""
    _ = translator(language)
    sizes = setup.sizes
    recipe = _trusted_recipe(recipe)
    if not recipe and setup.number_count() > LIMITS.save_numbers:
        raise ValueError(f"{setup.number_count():,} numbers is too many to write out as literals (limit "
                         f"{LIMITS.save_numbers:,})")
    shapes = _(SHAPES).format(n_q=sizes.n_q, n_k=sizes.n_k, d_model=sizes.d_model, h=sizes.n_heads,
                              d_k=sizes.d_k, d_v=sizes.d_v)
    parts = [HEADER.format(about=_own(_(ABOUT)), needs=_own(_(NEEDS)), shapes=_own(shapes)),
             "# " + _own(_("Setup: {title}")).format(title=_inert(_cut(title)))
             + "\n\nimport numpy as np\n\n"]
    parts.append(_tokens_comment(_("Queries, one row each:"), setup.tokens))
    if setup.kv_tokens is not None:
        parts.append(_tokens_comment(_("Keys and values, one row each:"), setup.kv_tokens))
    parts.append(recipe or "".join(f"{name} = np.array({value.tolist()!r})  # {list(value.shape)}\n"
                                   for name, value in setup.arrays().items()))
    if setup.x_kv is None:
        same = _own(_("self-attention: keys and values come from the same tokens"))
        parts.append(f"x_kv = x  # {same}\n")
    parts.append(f"scale = {setup.scaling.multiplier(sizes.d_k)!r}  # "
                 f"{_printable(setup.scaling.describe(sizes.d_k), keep='√×')}\n")
    parts.append(_mask_line(setup, _))
    biases = {name: f" + {name}[:, None, :]" if getattr(setup, name) is not None else ""
              for name in ("b_q", "b_k", "b_v")}
    biases["b_o"] = " + b_o" if setup.b_o is not None else ""
    parts.append(f"\n# {_own(_(FORMULA))}\n{formula_source()}\n")
    steps, _screens = in_language(language)  # the course's steps, in its order, in the reader's words
    for number, (name, step) in enumerate(steps.items(), start=1):
        heading = _own(_("Step {number} · {title}").format(number=number, title=step.title))
        what = textwrap.wrap(_own(step.what), COMMENT_CHARS - 2) or [""]
        parts.append(f"\n# {heading}\n#   ${_latex(step.formula)}$\n"
                     + "".join(f"# {line}\n" for line in what) + STEP_CODE.get(name, "").format(**biases))
    parts.append(FOOTER)
    return "".join(parts)


def _own(text: str) -> str:
    """The script's own words (English or a catalogue's) as they may stand in a comment or in the
    header's docstring: printable characters of any language kept, any other character (a line
    break, a control), a backslash and a double quote written as their escapes."""
    return "".join(c if c.isprintable() and c not in '\\"' else ascii(c)[1:-1] for c in text)


def _latex(formula: str) -> str:
    """A step's formula (the course's own LaTeX) as it may stand in a comment: its backslashes kept (a
    comment ends only at its line's end), any character that is not printable (a line break) escaped."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in formula)


def _inert(text) -> str:
    """Outside text as it may appear in a comment: quoted with repr's escapes, then every character
    outside printable ASCII as a \\u escape. No quote, backslash, line break (\\n, \\r, U+2028...),
    NUL or lone surrogate can end the comment or change the file."""
    return _printable(repr(str(text)))


def _printable(text: str, keep: str = "") -> str:
    """Every character outside printable ASCII (bar those in ``keep``) as its \\x, \\u or \\U escape."""
    return "".join(c if (" " <= c <= "~") or c in keep else ascii(c)[1:-1] for c in text)


def _cut(title) -> str:
    title = str(title)
    return title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS] + "..."


def _tokens_comment(heading: str, tokens) -> str:
    lines = "".join(f"#   {i + 1}: {_inert(token)}\n" for i, token in enumerate(tokens))
    return f"# {_own(heading)}\n{lines}"


def _trusted_recipe(recipe: str) -> str:
    """recipe if it is "" or an example's own (code written by this app), else ValueError: a script
    never carries code from outside."""
    if not recipe or recipe in _example_recipes():
        return recipe
    raise ValueError("recipe: only an example's own recipe can be written into a script")


@functools.cache
def _example_recipes() -> frozenset[str]:
    from course.examples import all_examples

    return frozenset(s.recipe for s in all_examples().values() if s.recipe)


def _mask_line(setup: Setup, _=str) -> str:
    n_q, n_k = setup.sizes.n_q, setup.sizes.n_k
    if setup.mask_kind == "custom":
        grid = np.asarray(setup.mask, dtype=bool).tolist()
        comment = _own(_("True: may attend"))
        return f"allowed = np.array({grid!r})  # [n_q, n_k], {comment}\n"
    if setup.mask_kind == "causal":
        comment = _own(_("causal: no peeking ahead"))
        return f"allowed = np.tril(np.ones(({n_q}, {n_k}), dtype=bool))  # {comment}\n"
    if setup.mask_kind == "window":
        comment = _own(_("a sliding window of {size}: a query sees the last {size} tokens, itself included")
                       .format(size=setup.mask.size))
        return (f"allowed = np.tri({n_q}, {n_k}, dtype=bool) & ~np.tri({n_q}, {n_k}, -{setup.mask.size}, "
                f"dtype=bool)  # {comment}\n")
    comment = _own(_("no mask: every query sees every key"))
    return f"allowed = np.ones(({n_q}, {n_k}), dtype=bool)  # {comment}\n"


def example_script(key: str, language: str = ENGLISH) -> str:
    """The script for an example of the course, by its key."""
    from course.examples import all_examples

    example = all_examples()[key]
    return setup_to_script(example, title=example.title, recipe=example.recipe, language=language)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, help="a setup saved from the page (JSON)")
    parser.add_argument("--example", "--preset", dest="example",
                        help="an example's key instead, e.g. ex_a_single_head (--preset: its older name)")
    parser.add_argument("--language", default=ENGLISH, choices=list(LANGUAGES),
                        help="the language of the script's comments (default: en)")
    args = parser.parse_args(argv)
    if (args.file is None) == (args.example is None):
        parser.error("give a saved setup file or --example NAME (one of them)")
    try:
        if args.example is not None:
            from course.examples import all_examples

            if args.example not in all_examples():
                parser.error(f"no example {args.example!r}; the examples are {', '.join(all_examples())}")
            sys.stdout.write(example_script(args.example, args.language))
        else:
            sys.stdout.write(setup_to_script(setup_from_json(args.file.read_bytes()), title=args.file.name,
                                             language=args.language))
    except (OSError, ConfigError, ValueError) as error:
        print(f"python -m course.export: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())


def setup_to_csv_zip(setup: Setup) -> bytes:
    """Every input and intermediate as CSV files in one ZIP, named by its step's number in the course's
    registry ("4_weights_head1.csv" while softmax is step 4), tokens as labels.

    Per-head arrays get one file per head ("2_w_q_head1.csv"); rows and columns are labelled by
    the tokens where an axis is tokens (queries down, keys across), d1, q1, ... otherwise.
    """
    import io
    import zipfile

    r, sizes = setup.run(), setup.sizes
    q_rows = [f"{i + 1} {t}" for i, t in enumerate(setup.tokens)]
    k_rows = [f"{i + 1} {t}" for i, t in enumerate(setup.key_tokens)]

    def dims(prefix: str, n: int) -> list[str]:
        return [f"{prefix}{j + 1}" for j in range(n)]

    d = dims("d", sizes.d_model)
    at = {name: f"{number_of(name):d}_" for name in ("embeddings", "projections", "raw_scores", "softmax",
                                                      "head_outputs", "concatenation", "output")}
    tables = {f"{at['embeddings']}x": (setup.x, q_rows, d)}
    if setup.x_kv is not None:
        tables[f"{at['embeddings']}x_kv"] = (setup.x_kv, k_rows, d)
    for head in range(sizes.n_heads):
        n = f"head{head + 1}"
        group = head // (sizes.n_heads // sizes.groups)  # the key/value head this query head reads
        tables.update({
            f"{at['projections']}w_q_{n}": (setup.w_q[head], d, dims("q", sizes.d_k)),
            f"{at['projections']}w_k_{n}": (setup.w_k[group], d, dims("k", sizes.d_k)),
            f"{at['projections']}w_v_{n}": (setup.w_v[group], d, dims("v", sizes.d_v)),
            f"{at['projections']}q_{n}": (r.q[head], q_rows, dims("q", sizes.d_k)),
            f"{at['projections']}k_{n}": (r.k[head], k_rows, dims("k", sizes.d_k)),
            f"{at['projections']}v_{n}": (r.v[head], k_rows, dims("v", sizes.d_v)),
            f"{at['raw_scores']}scores_{n}": (r.scores[head], q_rows, k_rows),
            f"{at['softmax']}scaled_{n}": (r.scaled[head], q_rows, k_rows),  # -inf where masked
            f"{at['softmax']}weights_{n}": (r.weights[head], q_rows, k_rows),
            f"{at['head_outputs']}head_output_{n}": (r.head_outputs[head], q_rows, dims("v", sizes.d_v)),
        })
    heads = [f"h{i + 1}.{j + 1}" for i in range(sizes.n_heads) for j in range(sizes.d_v)]
    tables[f"{at['concatenation']}concat"] = (r.concat, q_rows, heads)
    tables[f"{at['concatenation']}w_o"] = (setup.w_o, heads, d)
    tables[f"{at['output']}output"] = (r.output, q_rows, d)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (values, rows, columns) in tables.items():
            archive.writestr(f"{name}.csv", _csv(values, rows, columns))
    return out.getvalue()


def _csv(values: np.ndarray, rows: list[str], columns: list[str]) -> str:
    """A labelled CSV: every number in full (repr), labels quoted."""
    def cell(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    lines = [",".join(["", *map(cell, columns)])]
    for label, row in zip(rows, values.tolist(), strict=True):
        lines.append(",".join([cell(label), *(repr(float(v)) for v in row)]))
    return "\n".join(lines) + "\n"
