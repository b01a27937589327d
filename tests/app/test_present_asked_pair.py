"""The dot-product screen's revealed working is the pair its forecast asked about (issue 40, 8): the
forecast asked about cat · the while the working showed cat · cat, the head's highest score."""

from __future__ import annotations

import re

from course.examples import all_examples
from tests.apptest_util import fresh_app, goto, texts, to_screen


def test_the_revealed_working_is_the_pair_the_forecast_asked_about():
    at = fresh_app()
    goto(at, "present")
    to_screen(at, "dot_product")
    prompt = next(text for text in texts(at.markdown) if text.startswith("**Forecast.**"))
    at.button(key="present_reveal").click().run()
    assert not at.exception
    said = " ".join(texts(at.caption))
    found = re.search(r"Query (\d+) · (\S+) against key (\d+) · (\S+) in head (\d+): the pair the "
                      r"forecast asked about", said)
    assert found, said
    tokens = all_examples()["the_cat_sat_two_heads"].tokens
    query, key = int(found[1]) - 1, int(found[3]) - 1
    assert (found[2], found[4]) == (tokens[query], tokens[key])
    assert tokens[key] in prompt and tokens[query] in prompt  # the forecast's own pair
