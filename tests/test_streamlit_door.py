"""Streamlit's internals behind one door (issue 28, 4): app/adapter/streamlit_door.py is the only module that
reads or patches a private name of Streamlit, each name it lists still exists in the installed
Streamlit, and another version is said, in the log and on the Class page, never silently."""

from __future__ import annotations

import ast
import importlib
import inspect
import logging
import re
from pathlib import Path

import pytest
import streamlit

from app.adapter import streamlit_door
from tests.apptest_util import goto, open_address, shown

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "classroom", "course", "mha_core")
DOOR = ROOT / "app" / "adapter" / "streamlit_door.py"
PUBLIC = ("streamlit.proto", "streamlit.testing")  # the wire format and AppTest


def owner_of(path: str):
    """A module, or a class inside one, by its dotted path."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


def has_name(owner, name: str) -> bool:
    """A class or module attribute, a dataclass field, or an attribute its own code sets on self."""
    if hasattr(owner, name) or name in getattr(owner, "__dataclass_fields__", {}):
        return True
    return inspect.isclass(owner) and re.search(rf"\bself\.{re.escape(name)}\s*[:=]",
                                                inspect.getsource(owner)) is not None


@pytest.mark.parametrize(("where", "name", "used_by"), streamlit_door.PRIVATE_NAMES)
def test_every_private_name_the_door_lists_still_exists(where, name, used_by):
    assert has_name(owner_of(where), name), \
        f"{where}.{name} is gone ({used_by}): read app/adapter/streamlit_door.py"


def test_the_check_finds_a_missing_name():
    from streamlit.runtime.app_session import AppSession

    assert has_name(AppSession, "_scriptrunner") and not has_name(AppSession, "_scriptrunners")


def private_uses(path: Path) -> list[str]:
    """Imports from streamlit's internals (anything under streamlit. but the public proto and
    testing packages) in one source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
        found += [f"{path.relative_to(ROOT)}: {name}" for name in names
                  if name.startswith("streamlit.") and not name.startswith(PUBLIC)]
    return found


def test_nothing_but_the_door_imports_streamlits_internals():
    sources = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if p != DOOR]
    assert len(sources) > 50
    assert [use for path in sources for use in private_uses(path)] == []
    assert private_uses(DOOR)  # the check sees the door's own imports


def test_the_pin_is_requirements_txts():
    pin = re.search(r"^streamlit==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert streamlit_door.PINNED == pin == streamlit.__version__
    assert streamlit_door.version_note() is None


def test_another_version_is_said_in_the_log_and_on_the_class_page(monkeypatch, caplog):
    monkeypatch.setattr(streamlit, "__version__", "9.9.9")
    monkeypatch.delattr(streamlit_door.announce_version, "said", raising=False)
    with caplog.at_level(logging.WARNING, logger=streamlit_door.__name__):
        streamlit_door.announce_version()
        streamlit_door.announce_version()
    said = [r.getMessage() for r in caplog.records if r.name == streamlit_door.__name__]
    assert len(said) == 1 and "9.9.9" in said[0] and streamlit_door.PINNED in said[0]
    at = open_address({})
    goto(at, "class")
    warnings = " ".join(shown(at.warning))
    assert "9.9.9" in warnings and streamlit_door.PINNED in warnings, warnings
    monkeypatch.undo()
    goto(at, "class")
    assert "9.9.9" not in " ".join(shown(at.warning))


# --- the frontend's element names (data-testid) the stylesheets select ------------------------------

TEST_ID = re.compile(r"""data-testid=["']?([A-Za-z]+)""")


def selected_test_ids() -> dict[str, set[str]]:
    """Every data-testid the app's sources select -> the files that select it."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "app").rglob("*.py"):
        for test_id in TEST_ID.findall(path.read_text()):
            found.setdefault(test_id, set()).add(str(path.relative_to(ROOT)))
    return found


def frontend_source() -> str:
    """The installed Streamlit's frontend bundle (its JavaScript), as one text."""
    static = Path(streamlit.__file__).parent / "static" / "static" / "js"
    return "".join(path.read_text(errors="replace") for path in sorted(static.glob("*.js")))


def in_frontend(test_id: str, source: str) -> bool:
    return re.search(rf"""["'`]{re.escape(test_id)}["'`]""", source) is not None  # a quoted string


def test_every_element_name_the_stylesheets_select_is_listed_at_the_door():
    selected = selected_test_ids()
    assert len(selected) > 20 and "stMain" in selected  # the scan sees the stylesheets
    listed = {test_id for test_id, _ in streamlit_door.FRONTEND_TEST_IDS}
    assert set(selected) - listed == set(), "select it through the door's FRONTEND_TEST_IDS"
    assert listed - set(selected) == set(), "no longer selected: drop it from FRONTEND_TEST_IDS"


def test_every_listed_element_name_is_still_in_the_installed_frontend():
    source = frontend_source()
    missing = [test_id for test_id, _ in streamlit_door.FRONTEND_TEST_IDS if not in_frontend(test_id, source)]
    assert missing == [], f"Streamlit {streamlit.__version__}'s frontend no longer has {missing}"
    assert not in_frontend("stNoSuchElement", source)  # the check can fail
