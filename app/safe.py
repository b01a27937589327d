"""One path for outside text onto the page: tokens, nicknames, answers, file names, example and link
text are shown literally, never as Markdown, LaTeX or HTML.

Every Markdown call of the app (st.markdown, caption, success/info/warning/error, toast, a widget's
label, help and Markdown options) takes a string literal, a number with a format spec, or what one
of these returns; tests/app/test_escaping.py reads app/ and refuses anything else.

- ``md(template, *values)``: the app's own Markdown (a string literal) with every value escaped.
- ``lit(value)``: one value escaped for Markdown (also ``format_func=lit`` for a radio's or a
  segmented control's options, which Streamlit draws as Markdown).
- ``chart_text(value)``: one value escaped for a plotly title, tick, hover or annotation.
- ``html_text(value)``: one value escaped for HTML inside ``st.markdown(..., unsafe_allow_html=True)``
  (an HTML block keeps backslashes, so ``lit`` does not protect it).
"""

from __future__ import annotations

import html
import json

from mha_core.markup import chart_literal, markdown_literal

lit = markdown_literal
chart_text = chart_literal


def html_text(value) -> str:
    """``value`` as HTML text: <, >, & and quotes as entities."""
    return html.escape(str(value))


def md(template: str, *values, **named) -> str:
    """``template.format(...)`` with every value shown literally (numbers too: '0.67' stays '0.67')."""
    return template.format(*(lit(v) for v in values), **{k: lit(v) for k, v in named.items()})


def script_json(value) -> str:
    """``value`` as JSON that cannot end the <script> element it is written into: '<', '>', '&' and
    the line separators U+2028/U+2029 as \\u escapes (JSON.parse reads them back unchanged)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for character in "<>&\u2028\u2029":
        text = text.replace(character, f"\\u{ord(character):04x}")
    return text
