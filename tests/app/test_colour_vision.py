"""Colour scales and palettes stay distinguishable under simulated colour-vision deficiency.

colorspacious (Machado et al. 2009 at full severity: protanopia, deuteranopia, tritanopia) simulates
what a reader without one kind of cone sees; distances are CAM02-UCS ΔE, where about 1 is a just
noticeable difference between two large patches and heatmap cells need several. The thresholds below
are stated, with today's smallest values beside them.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.charts import forecast_figures, lab_figures
from app.charts.figure_spec import INK
from app.charts.figure_style import HEAD_COLOURS, SIGNED_SCALE, WEIGHT_SCALE
from tests.wcag import BLACK, contrast_on_white, contrast_ratio, srgb

colorspacious = pytest.importorskip("colorspacious")  # requirements-dev.txt
from plotly.colors import sample_colorscale  # noqa: E402

DEFICIENCIES = ("protanomaly", "deuteranomaly", "tritanomaly")  # at severity 100: -anopia
SEEN_BY = (None, *DEFICIENCIES)  # None: typical colour vision

WEIGHTS_APART = 7.0  # ΔE between weights 0.25 and 0.33 (smallest today 7.2, deuteranopia)
TENTH_APART = 4.0  # ΔE between any two values a tenth of a scale apart (smallest 4.6: protanopia, 0.88/0.98)
SIGNED_APART = 5.0  # ΔE between scores 0.25 and 0.33 (or negatives) of a scale bounded at 1 (smallest 5.1)
SIGN_APART = 20.0  # ΔE between -0.5 and +0.5 on the signed scale: the sign of a score is never a guess


def seen(colour: np.ndarray, deficiency: str | None) -> np.ndarray:
    if deficiency is None:
        return colour
    space = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
    return np.clip(colorspacious.cspace_convert(colour, space, "sRGB1"), 0, 1)


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    return float(colorspacious.deltaE(a, b, input_space="sRGB1"))


def on_scale(scale, position: float) -> np.ndarray:
    return srgb(sample_colorscale(scale, [position])[0])


def apart(scale, a: float, b: float, deficiency: str | None) -> float:
    """ΔE between two positions (0..1) of a colour scale, as a reader with `deficiency` sees them."""
    return delta_e(seen(on_scale(scale, a), deficiency), seen(on_scale(scale, b), deficiency))


@pytest.mark.parametrize("deficiency", SEEN_BY)
def test_weights_a_quarter_and_a_third_stay_apart(deficiency):
    """The weights colour scale is fixed at 0..1: 0.25 and 0.33 are two cells a lesson compares."""
    assert apart(WEIGHT_SCALE, 0.25, 0.33, deficiency) >= WEIGHTS_APART


@pytest.mark.parametrize("scale_name", ["weights", "signed"])
@pytest.mark.parametrize("deficiency", SEEN_BY)
def test_any_two_values_a_tenth_apart_stay_apart(scale_name, deficiency):
    scale = {"weights": WEIGHT_SCALE, "signed": SIGNED_SCALE}[scale_name]
    positions = np.round(np.linspace(0, 0.9, 91), 2)
    closest = min((apart(scale, p, p + 0.1, deficiency), p) for p in positions)
    assert closest[0] >= TENTH_APART, closest


@pytest.mark.parametrize("deficiency", SEEN_BY)
def test_signed_scores_keep_their_size_and_their_sign(deficiency):
    """Scores on the signed scale run from -bound (0) to +bound (1); 0 sits at 0.5."""
    position = lambda score: 0.5 + score / 2  # noqa: E731  a score of a scale bounded at 1
    assert apart(SIGNED_SCALE, position(0.25), position(0.33), deficiency) >= SIGNED_APART
    assert apart(SIGNED_SCALE, position(-0.25), position(-0.33), deficiency) >= SIGNED_APART
    assert apart(SIGNED_SCALE, position(-0.5), position(0.5), deficiency) >= SIGN_APART


PALETTES = {  # name: colours, smallest ΔE between any two of them (today's smallest)
    "heads": (HEAD_COLOURS, 11.0),  # 11.7
    "forecast bars": ((forecast_figures.BLUE, forecast_figures.GREEN, forecast_figures.GREY,
                       forecast_figures.ORANGE), 6.0),  # 6.8, deuteranopia (right and wrong also carry ✓ / ✗)
    "labs": ((lab_figures.BLUE, lab_figures.VERMILLION, lab_figures.MARKER), 10.0),  # 14.0, protanopia
}


@pytest.mark.parametrize("palette", sorted(PALETTES))
@pytest.mark.parametrize("deficiency", SEEN_BY)
def test_every_two_colours_of_a_palette_stay_apart(palette, deficiency):
    colours, least = PALETTES[palette]
    closest = min((delta_e(seen(srgb(a), deficiency), seen(srgb(b), deficiency)), a, b)
                  for a, b in itertools.combinations(colours, 2))
    assert closest[0] >= least, (palette, closest)


def test_chart_text_is_dark_enough_on_white():
    """Ticks, titles and legends of every chart are INK: 4.5:1 or more on white (WCAG 1.4.3)."""
    assert contrast_on_white(INK) >= 4.5


@pytest.mark.parametrize("colour", [*HEAD_COLOURS, forecast_figures.ORANGE, forecast_figures.BLUE,
                                    forecast_figures.GREEN, forecast_figures.GREY])
def test_every_head_and_forecast_bar_colour_stands_3_to_1_on_white(colour):
    """A head's bars, band outlines and lines, and a forecast's bars, are marks a reader needs: 3:1
    or more on white (WCAG 1.4.11)."""
    assert contrast_on_white(colour) >= 3.0


PLOTLY_DARK_TEXT_FROM = 128  # plotly writes a cell's number dark when the cell's brightness is at least this


@pytest.mark.parametrize("scale_name", ["weights", "signed"])
def test_black_numbers_stand_out_on_every_cell_plotly_writes_dark(scale_name):
    """app/style.py turns plotly's #444 cell numbers black; on each colour plotly gives dark text
    (YIQ brightness >= 128) black is 4.5:1 or more (#444 falls to 2.6:1 on the signed scale's light red)."""
    scale = {"weights": WEIGHT_SCALE, "signed": SIGNED_SCALE}[scale_name]
    worst = []
    for position in np.linspace(0, 1, 201):
        cell = on_scale(scale, position)
        if cell @ [299, 587, 114] * 255 / 1000 >= PLOTLY_DARK_TEXT_FROM:
            worst.append((contrast_ratio(cell, BLACK), round(position, 3)))
    assert worst and min(worst)[0] >= 4.5, min(worst)


def test_revealed_answers_say_right_and_wrong_by_a_sign_as_well_as_by_colour():
    fig = forecast_figures.answer_bars(["a", "b", "c"], [2, 1, 0], right=[True, False, None])
    ticks = fig["layout"]["yaxis"]["ticktext"]
    assert ticks == [forecast_figures.RIGHT_SIGN + "a", forecast_figures.WRONG_SIGN + "b", "c"]
    hidden = forecast_figures.answer_bars(["a", "b"], [1, 1])
    assert hidden["layout"]["yaxis"]["ticktext"] == ["a", "b"]  # nothing marked before the reveal


def test_grouped_head_bars_name_each_head_by_a_pattern_as_well_as_by_colour():
    """Step 6's bars: one bar per head and key, told apart by colour and by fill pattern (the legend
    shows both), so a reader who cannot tell two colours apart still can tell the heads."""
    from app.charts.bar_figures import query_bars

    weights = np.full((8, 2, 3), 1 / 3)  # [h, n_q, n_k]
    bars = query_bars(weights, 0, ["a", "b", "c"])["data"]
    shapes = [trace["marker"].get("pattern", {}).get("shape") for trace in bars]
    assert len(set(shapes)) == 8, shapes
