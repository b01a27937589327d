"""Outside text shown literally in Markdown and in plotly's labels: the one implementation.

``app/safe.py`` is how the pages reach these; ``course.quiz`` uses them directly for the
Markdown of its explanations (the core imports no UI, and these are plain string functions).
"""

from __future__ import annotations

import html
import re

WORD_JOINER = "\u2060"  # invisible, and not a character a URL or an e-mail address may contain
# Where GitHub-flavoured Markdown would turn plain text into a link: "http://", "https://", "www."
# and "name@host". Streamlit's renderer finds them in the text after backslash escapes are undone.
_AUTOLINK = re.compile(r"(?i)(?<=https:)(?=//)|(?<=http:)(?=//)|(?<=\bwww)(?=\.)|(?<=[\w.+-])(?=@)")


def markdown_literal(value) -> str:
    """``value`` as Markdown that shows it literally: every ASCII punctuation mark backslash-escaped
    (so no emphasis, link, image, HTML tag, table cell, ``$`` formula or ``:material:`` icon), and
    an invisible word joiner where a bare URL or e-mail address would become a link."""
    text = _AUTOLINK.sub(WORD_JOINER, str(value))
    return "".join("\\" + c if c.isascii() and not c.isalnum() and not c.isspace() else c for c in text)


def chart_literal(value) -> str:
    """``value`` as plotly text (a title, tick, hover or annotation) that shows it literally: plotly
    reads a few HTML tags (<b>, <br>, <a href>...) and entities, and $...$ as LaTeX."""
    return html.escape(str(value), quote=False).replace("$", "&#36;")
