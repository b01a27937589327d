"""WCAG 2's contrast maths, for every test that measures a colour against another (issue 40, 9: it was
written three times): a colour's relative luminance and the contrast ratio of two colours, the way
https://www.w3.org/TR/WCAG21/#dfn-relative-luminance defines them.

A colour is '#0072B2', 'rgb(33, 145, 140)', 'rgba(33, 145, 140, 0.5)' (its alpha laid on white, as a
page shows it) or three sRGB channels in [0, 1].
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

WHITE = (1.0, 1.0, 1.0)
BLACK = (0.0, 0.0, 0.0)
Colour = str | Sequence[float] | np.ndarray


def srgb(colour: Colour, opacity: float = 1.0) -> np.ndarray:
    """A colour as sRGB channels in [0, 1]; its alpha (an rgba's fourth number, times ``opacity``)
    blended onto white."""
    if isinstance(colour, str):
        if colour.startswith("#"):
            channels, alpha = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)], 1.0
        else:
            parts = [float(x) for x in re.findall(r"[\d.]+", colour)]
            channels, alpha = [c / 255 for c in parts[:3]], parts[3] if len(parts) > 3 else 1.0
    else:
        channels, alpha = list(colour), 1.0
    alpha *= opacity
    return alpha * np.asarray(channels, dtype=float) + (1 - alpha) * np.asarray(WHITE)


def relative_luminance(colour: Colour) -> float:
    channel = srgb(colour)
    linear = np.where(channel <= 0.04045, channel / 12.92, ((channel + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast_ratio(a: Colour, b: Colour) -> float:
    """From 1 (the same) to 21 (black on white), whichever of the two is lighter."""
    lighter, darker = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def contrast_on_white(colour: Colour, opacity: float = 1.0) -> float:
    """A colour's contrast against white, as a mark of ``opacity`` (and its own alpha) shows on it."""
    return contrast_ratio(srgb(colour, opacity), WHITE)
