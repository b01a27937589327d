"""Every fragment of the app sits alone in a container of its own (app/adapter/fragments.py says why)."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_no_module_of_the_app_makes_a_fragment_but_app_fragments():
    makers = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "app").rglob("*.py"))
              if re.search(r"\b(st|streamlit)\.fragment\b|from streamlit import .*\bfragment\b",
                           path.read_text()) and path.name != "fragments.py"]
    assert makers == []


def script_with_a_fragment_between_two_lines():
    import streamlit as st

    from app.adapter.fragments import fragment

    @fragment(run_every=60)
    def ticking() -> None:
        st.caption("tick")

    st.markdown("above")
    ticking()
    st.markdown("below")


def test_a_fragment_s_block_is_the_only_child_of_its_container():
    """What the browser lays out: main holds above, a container, below; the container holds only the
    fragment's block, so losing that block moves neither line."""
    at = AppTest.from_function(script_with_a_fragment_between_two_lines).run()
    main = at.main.children
    assert [type(main[i]).__name__ for i in sorted(main)] == ["Markdown", "Block", "Markdown"]
    wrapper = main[sorted(main)[1]]
    assert len(wrapper.children) == 1
    (fragment_block,) = wrapper.children.values()
    assert [c.value for c in fragment_block.children.values()] == ["tick"]
