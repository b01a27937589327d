"""What every figure builder shares: the heads' colours and bar patterns, the colour scales, the
words more than one kind of chart writes, the heads' names, tick labels and titles, a colour range
centred at 0, and the language a figure records in its layout (numpy + plotly only).
"""

from __future__ import annotations

import numpy as np
from plotly.colors import get_colorscale

from app.safe import chart_text
from course.i18n import ENGLISH, N_, translator

# One colour a head, every one 3:1 or more on white (a mark a reader needs, WCAG 1.4.11) and every two
# 11.7 or more apart (CAM02-UCS) as typical, protanopic, deuteranopic and tritanopic eyes see them:
# the five Okabe-Ito colours that stand 3:1, then three found by a search under those two rules
# (Okabe-Ito's orange, sky blue and yellow are 2.0, 2.3 and 1.2:1).
HEAD_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#962D69", "#695A3C", "#A578FF")
# Perceptually uniform and colour-blind safe; unlike cividis, whose middle is a flat grey, it
# changes hue as well as lightness, so 0.25 and 0.33 (CIELAB distance 17.7, cividis 10.4) differ.
WEIGHT_SCALE = get_colorscale("viridis")
SIGNED_SCALE = get_colorscale("RdBu_r")  # blue < 0 < red

# --- Words -------------------------------------------------------------------------------------
# Every word a builder writes on a chart, marked for the catalogues. A builder takes ``language`` (part
# of app/charts/figure_cache.py's key, which gives it the reader's) and writes its words in it; the hover
# templates are the same messages with plotly's %{...} in the places of the values.
# Here the words more than one kind of chart writes; each builder's module has its own.
HEAD = N_("head {number}")
QUERY_AXIS, KEY_AXIS = N_("query"), N_("key")
WEIGHT = N_("weight {number}")


def head_names_in(language: str, h: int) -> list[str]:
    """'head 1', 'head 2', ... in ``language``: the heads' names when the caller gives none."""
    return [translator(language)(HEAD).format(number=i + 1) for i in range(h)]


# --- Numbers ---------------------------------------------------------------------------------
def shape_title(name: str, shape: tuple[int, ...]) -> str:
    """A matrix's name and shape for a title: shape_title("Q₁", (3, 64)) -> "Q₁ [3 × 64]"."""
    return f"{name} [{' × '.join(str(int(n)) for n in shape)}]"


SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def head_titles(symbol: str, values) -> list[str]:
    """Each head's panel title for values [h, rows, cols]: 'A₁ [3 × 3]', 'A₂ [3 × 3]', ..."""
    return [shape_title(f"{symbol}{str(head + 1).translate(SUBSCRIPTS)}", values.shape[1:])
            for head in range(values.shape[0])]


# --- Labels ----------------------------------------------------------------------------------


plain = chart_text  # the name this module used; app.safe.chart_text is the one escaper


def head_colour(head: int) -> str:
    """The colour of head `head` (0-based), repeating after eight heads."""
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


HEAD_PATTERNS = ("", "/", ".", "x", "\\", "-", "+", "|")  # head 1 solid; with the colour, never colour alone


def head_pattern(head: int) -> dict:
    """A bar's fill pattern for head `head` (0-based): grouped bars name their heads by it as well as by
    colour (the legend shows both); drawn over the colour in black or white, whichever stands out."""
    return dict(shape=HEAD_PATTERNS[head % len(HEAD_PATTERNS)], fillmode="overlay", solidity=0.3)


def position_labels(tokens) -> list[str]:
    """Tick text for each position: the escaped token (integer positions keep repeats apart)."""
    return [chart_text(t) for t in tokens]


def dims(prefix: str, n: int) -> list[str]:
    """Column labels for a width-n axis: q1, q2, ..."""
    return [f"{prefix}{j + 1}" for j in range(n)]


def symmetric_range(values) -> float:
    """Half-width of a colour range centred at 0 that covers every finite value; 1 for all zeros
    (B − A of equal setups: a range of ±1e-9 labelled its colour bar "−1n … 1n")."""
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype(float)
    # One row of the first axis at a time, in the array's own dtype: a long sequence's float32 scores
    # [12, 1024, 1024] are 48 MiB, and a float64 copy of them, then of the finite ones, were 204 MiB more.
    rows = values.reshape(len(values), -1) if values.ndim > 1 and values.size else values.reshape(1, -1)
    largest = max(float(np.max(np.abs(row), where=np.isfinite(row), initial=0.0)) for row in rows)
    return largest if largest > 0 else 1.0


def hover_labels(labels: list[str]) -> list[str]:
    """Labels for hover text: a repeated label gets its position, "the (5)"."""
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [f"{label} ({i + 1})" if seen[label] > 1 else label for i, label in enumerate(labels)]


def figure_language(fig) -> str:
    """The language a figure's words are written in (a builder given one records it in the layout's
    ``meta``; English figures carry none, as before)."""
    meta = fig["layout"].get("meta") if hasattr(fig, "__getitem__") else None
    return meta.get("language", ENGLISH) if isinstance(meta, dict) else ENGLISH


def recorded(layout: dict, language: str) -> dict:
    """The layout with the language of its words in ``meta`` (read by numbers_note); English: as it was."""
    return layout if language == ENGLISH else {**layout, "meta": {"language": language}}
