"""What the default page sends per run (elements, containers, messages, bytes): tests/page_budget.py.

Run: PYTHONPATH=. .venv/bin/python bench/sent.py
Starts one server (tests/live_server.py) and prints a Markdown table; tests/app/test_budget.py
fails when a count passes its budget.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

# `python bench/sent.py` puts bench/ first on sys.path, where a file named like a package would shadow it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from tests.live_server import streamlit_server  # noqa: E402
from tests.page_budget import measure  # noqa: E402


def main() -> None:
    with streamlit_server() as (url, _process):
        counts = asyncio.run(measure(url))
    print("| run | elements | containers | editors | charts | inputs | messages | kB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, sent in counts.items():
        print(f"| {name} | {sent['elements']} | {sent['blocks']} | {sent['editors']} | {sent['charts']} | "
              f"{sent['inputs']} | {sent['messages']} | {sent['bytes'] / 1e3:.1f} |")


if __name__ == "__main__":
    main()
