"""One path for outside text onto the page: tokens, nicknames, answers, file names, preset and link
text are shown literally, never as Markdown, LaTeX or HTML.

``md(template, *values)`` is how a page writes Markdown that holds such text: the template is this
app's own Markdown (a string literal), every value is escaped. ``lit(value)`` escapes one value.
"""

from __future__ import annotations


def lit(value) -> str:
    """``value`` as Markdown that shows it literally: every ASCII punctuation mark backslash-escaped
    (so no emphasis, link, image, HTML tag, ``$`` formula or ``:material:`` icon)."""
    return "".join("\\" + c if c.isascii() and not c.isalnum() and not c.isspace() else c for c in str(value))


def md(template: str, *values, **named) -> str:
    """``template.format(...)`` with every value shown literally (numbers too: '0.67' stays '0.67')."""
    return template.format(*(lit(v) for v in values), **{k: lit(v) for k, v in named.items()})
