"""Every session key is declared once, by the module that owns it (issue 28, 2): a key the app reads or
writes in session state (``st.session_state.x``, ``ss["x"]``, ``.get("x")``, ``"x" in ss``, or through a
module's constant) is in app/session/session_keys.py's REGISTRY, or is a widget's own key (``key="x"``: the
widget declares it where it is drawn). Keys made at run time (``f"pick_{name}"``) are their makers'."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

from app.session import session_keys

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
ENTRY = APP / "streamlit_app.py"  # a script: importing it would run the page
NOT_KEYS = {"get", "pop", "setdefault", "keys", "items", "values", "update", "to_dict", "clear",
            "__setitem__"}


def _is_state(node: ast.AST, aliases: set[str]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "session_state") or (
        isinstance(node, ast.Name) and node.id in aliases)


def _constant(node: ast.AST, module) -> str | None:
    """A key given as a literal, as a name of the module's, or as another module's attribute."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
        return value if isinstance(value, str) else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = getattr(module, node.value.id, None)
        value = getattr(owner, node.attr, None)
        return value if isinstance(value, str) else None
    return None


def module_of(path: Path):
    """The module (which registers its keys on import), or None for the entry script."""
    if path == ENTRY:
        return None
    return importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))


def keys_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    module = module_of(path)
    aliases = {"ss"} | {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                        and _is_state(node.value, set()) for t in node.targets if isinstance(t, ast.Name)}
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_state(node.value, aliases) and node.attr not in NOT_KEYS:
            found.add(node.attr)
        elif isinstance(node, ast.Subscript) and _is_state(node.value, aliases):
            found.add(_constant(node.slice, module))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop", "setdefault") and _is_state(node.func.value, aliases)
              and node.args):
            found.add(_constant(node.args[0], module))
        elif (isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn))
              and _is_state(node.comparators[0], aliases)):
            found.add(_constant(node.left, module))
    return {key for key in found if key}


def widget_keys() -> set[str]:
    """Keys given to widgets as constants anywhere in app/ (``key="x"`` or ``key=CONSTANT``)."""
    found = set()
    for path in APP.rglob("*.py"):
        module = module_of(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                found |= {_constant(k.value, module) for k in node.keywords if k.arg == "key"} - {None}
    return found


def test_every_session_key_is_declared():
    used = {key: path for path in sorted(APP.rglob("*.py")) for key in keys_used(path)}
    assert len(used) > 80  # the scan sees the app's keys
    declared = set(session_keys.REGISTRY) | widget_keys()
    undeclared = sorted(f"{key} ({used[key].relative_to(ROOT)})" for key in set(used) - declared)
    assert undeclared == [], \
        "register these in their owners (app/session/session_keys.py):\n" + "\n".join(undeclared)


def test_the_scan_finds_a_key_by_each_route(tmp_path, monkeypatch):
    source = tmp_path / "probe_keys.py"
    source.write_text("import streamlit as st\nK = 'by_constant'\n"
                      "def f():\n    ss = st.session_state\n    ss.by_attribute\n    ss['by_item']\n"
                      "    ss.get('by_get')\n    'by_in' in ss\n    ss[K]\n"
                      "    st.session_state.pop('by_pop')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert keys_used(source) == {"by_attribute", "by_item", "by_get", "by_in", "by_constant", "by_pop"}


# --- Every key named by its owner's constant (issue 40, 9) ----------------------------------------------
# A registered key's string is written once, in its owner (Key.owner, the module that registers it, as a
# module-level constant); every other module reads and writes it through that constant, so a key renamed
# or moved is one edit, and a typo is an AttributeError on import instead of a silent second key.


def literal_keys(path: Path) -> list[tuple[int, str]]:
    """(line, key) for each registered key this file names by its string on a session-state route (item,
    get/pop/setdefault, in, attribute: ``ss.room`` is ``ss["room"]``) or as a widget's ``key=``."""
    tree = ast.parse(path.read_text())
    aliases = {"ss"} | {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                        and _is_state(node.value, set()) for t in node.targets if isinstance(t, ast.Name)}
    found = []

    def literal(node: ast.AST) -> None:
        if isinstance(node, ast.Constant) and node.value in session_keys.REGISTRY:
            found.append((node.lineno, node.value))

    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _is_state(node.value, aliases)
                and node.attr in session_keys.REGISTRY):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Subscript) and _is_state(node.value, aliases):
            literal(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and (
                node.func.attr in ("get", "pop", "setdefault") and _is_state(node.func.value, aliases)):
            literal(node.args[0])
        elif (isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn))
              and _is_state(node.comparators[0], aliases)):
            literal(node.left)
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "key":
                    literal(keyword.value)
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def literal_uses_outside_owners(paths) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {key!r} (owner {session_keys.REGISTRY[key].owner})"
            for path in paths for line, key in sorted(literal_keys(path))
            if session_keys.REGISTRY[key].owner != module_name(path)]


def test_every_registered_key_has_a_constant_in_its_owner():
    for path in APP.rglob("*.py"):
        module_of(path)  # every owner registers its keys on import
    missing = []
    for name, key in session_keys.REGISTRY.items():
        owner = sys.modules.get(key.owner)  # Key.owner is its module's __name__
        if owner is None or name not in {value for constant, value in vars(owner).items()
                                         if constant.isupper() and isinstance(value, str)}:
            missing.append(f"{name} ({key.owner})")
    assert len(session_keys.REGISTRY) > 100
    assert missing == [], "give these keys a module-level constant in their owner:\n" + "\n".join(missing)


def test_no_registered_key_is_named_by_its_string_outside_its_owner():
    for path in APP.rglob("*.py"):
        module_of(path)
    wrong = literal_uses_outside_owners(sorted(APP.rglob("*.py")))
    assert wrong == [], "use the owner's constant (owner.CONSTANT) for these:\n" + "\n".join(wrong)


def test_the_literal_scan_finds_each_route(tmp_path, monkeypatch):
    session_keys.register(session_keys.Key("probe_owned", "probe_owner"))
    try:
        source = tmp_path / "probe_user.py"
        source.write_text("import streamlit as st\nK = 'probe_owned'\n"
                          "def f(state):\n    ss = st.session_state\n    ss.probe_owned\n"
                          "    ss['probe_owned']\n    ss.get('probe_owned')\n    'probe_owned' in ss\n"
                          "    ss[K]\n    st.session_state.pop('probe_owned')\n"
                          "    st.text_input('x', key='probe_owned')\n"
                          "    ss[f'probe_owned{1}']\n    ss['not_registered']\n")
        monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
        assert sorted(line for line, _ in literal_keys(source)) == [5, 6, 7, 8, 10, 11]  # not by a constant
        assert len(literal_uses_outside_owners([source])) == 6
        owner = tmp_path / "probe_owner.py"
        owner.write_text(source.read_text())
        assert literal_uses_outside_owners([owner]) == []  # its owner may
    finally:
        del session_keys.REGISTRY["probe_owned"]
