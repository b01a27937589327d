"""Outside text shown literally in Markdown and in plotly's labels: the one implementation.

``app/safe.py`` is how the pages reach these; ``mha_core.quiz`` uses them directly for the
Markdown of its explanations (the core imports no UI, and these are plain string functions).
"""

from __future__ import annotations

import html


def markdown_literal(value) -> str:
    """``value`` as Markdown that shows it literally: every ASCII punctuation mark backslash-escaped
    (so no emphasis, link, image, HTML tag, table cell, ``$`` formula or ``:material:`` icon)."""
    return "".join("\\" + c if c.isascii() and not c.isalnum() and not c.isspace() else c for c in str(value))


def chart_literal(value) -> str:
    """``value`` as plotly text (a title, tick, hover or annotation) that shows it literally: plotly
    reads a few HTML tags (<b>, <br>, <a href>...) and entities, and $...$ as LaTeX."""
    return html.escape(str(value), quote=False).replace("$", "&#36;")
