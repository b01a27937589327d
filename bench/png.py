"""The pictures a long sequence's grids travel as (app/charts/figures.py ``png_bytes``): the hand-written
encoder (zlib level 1, no filter) against Pillow's (already installed with Streamlit), on the sizes
the page sends (block means, at most IMAGE_BLOCKS a side).

Run: PYTHONPATH=. .venv/bin/python bench/png.py [--repeats 200]
Prints, per size: milliseconds per picture (best of the repeats' medians) and bytes, for each encoder.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np
from PIL import Image

from app.charts import figure_layout, figure_style, pictures


def pillow_png(rgba: np.ndarray, compress_level: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(out, format="PNG", compress_level=compress_level)
    return out.getvalue()


def timed(encode, rgba: np.ndarray, repeats: int) -> tuple[float, int]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        data = encode(rgba)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    encoders = {"hand-written (zlib 1)": pictures.png_bytes,
                "Pillow, compress_level=1": lambda a: pillow_png(a, 1),
                "Pillow, default (6)": lambda a: pillow_png(a, 6)}
    print(f"{'side':>5} | " + " | ".join(f"{name:>28}" for name in encoders))
    for side in (65, 128, figure_layout.IMAGE_BLOCKS):
        weights = rng.dirichlet(np.ones(side), size=side)  # [side, side], rows summing to 1
        rgba = pictures.colour_mapped(weights, 0.0, 1.0, figure_style.WEIGHT_SCALE)
        cells = [timed(encode, rgba, args.repeats) for encode in encoders.values()]
        print(f"{side:>5} | " + " | ".join(f"{ms:>10.3f} ms {size:>10,d} B" for ms, size in cells))


if __name__ == "__main__":
    main()
