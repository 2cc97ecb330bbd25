"""Policies see the engine through one narrow interface (runtime/sched/core/view.py): every
``engine.<name>`` in the policy modules (runtime/sched/policies/ and core/policy.py) is a member of
``EngineView``, every ``engine.<part>.<name>`` a member of that part's view, and the engine
implements all of it."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import load_workload
from fpgashare.sched.core import policy as core_policy
from fpgashare.sched.core import view
from fpgashare.sched.core.view import EngineView
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import workload_engine

POLICIES = Path(inspect.getfile(EdfPolicy)).parent
POLICY_MODULES = sorted([*(p for p in POLICIES.glob("*.py") if p.name != "__init__.py"),
                         Path(inspect.getfile(core_policy))])


def _members(protocol: type) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}
    return names


def _part_views() -> dict[str, type]:
    """The view's members that are parts, each with the protocol a policy sees it through."""
    protocols = {n: v for n, v in vars(view).items() if isinstance(v, type) and v.__module__ == view.__name__}
    return {name: protocols[hint] for name, hint in EngineView.__annotations__.items() if hint in protocols}


def _is_engine_member(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "engine"


def _uses(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    """``engine.<name>`` and, per part, ``engine.<part>.<name>`` in one module; a part bound to a
    local name in a function (``slots = engine.slots``) is followed through that name there."""
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    parts: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if _is_engine_member(node):
            top.add(node.attr)
        if isinstance(node, ast.Attribute) and _is_engine_member(node.value):
            parts.setdefault(node.value.attr, set()).add(node.attr)
    for func in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        aliases = {t.id: a.value.attr for a in ast.walk(func)
                   if isinstance(a, ast.Assign) and _is_engine_member(a.value)
                   for t in a.targets if isinstance(t, ast.Name)}
        for node in ast.walk(func):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                parts.setdefault(aliases[node.value.id], set()).add(node.attr)
    return top, parts


def test_every_policy_module_is_checked():
    names = {p.stem for p in POLICY_MODULES}
    assert {"edf", "policy", "baselines", "fred", "backfill", "guard", "lookahead", "pin_move"} <= names


@pytest.mark.parametrize("path", POLICY_MODULES, ids=lambda p: p.stem)
def test_a_policy_module_uses_only_the_view(path):
    top, parts = _uses(path)
    if path.stem == "registry":
        assert not top, "the registry names policies; it does not drive an engine"
        return
    assert top, f"{path.name} never touches the engine: the check would be empty"
    assert top <= _members(EngineView), f"{path.name} reaches past the view: {sorted(top - _members(EngineView))}"
    views = _part_views()
    for part, names in parts.items():
        if part not in views:
            continue                # a data member's own attributes (a frame, a list): not a part
        allowed = _members(views[part])
        assert names <= allowed, f"{path.name} reaches past the {part} view: {sorted(names - allowed)}"


def test_the_engine_implements_the_whole_view():
    workload = load_workload("camera_mix_zcu104")
    engine = workload_engine(workload, ModelBackend(workload.platform), EdfPolicy())
    missing = [n for n in sorted(_members(EngineView)) if not hasattr(engine, n)]
    assert not missing, f"Engine lacks {missing}"
    for part, protocol in _part_views().items():
        lacking = [n for n in sorted(_members(protocol)) if not hasattr(getattr(engine, part), n)]
        assert not lacking, f"Engine.{part} lacks {lacking}"


def test_the_view_is_narrow_and_changes_nothing_but_through_its_actions():
    data = set(EngineView.__annotations__)
    actions = {n for n, v in vars(EngineView).items() if callable(v) and not n.startswith("_")}
    assert len(data) <= 21, f"the view shows {len(data)} members: {sorted(data)}"
    assert actions == {"start", "start_dnn", "load", "commit", "drop", "wake", "move_pin", "plan_reload"}
    mutators = {"acquire", "release", "request", "reset", "finish", "start_next", "set_contract", "kick", "done"}
    for part, protocol in _part_views().items():
        changes = _members(protocol) & mutators
        assert not changes, f"the {part} view lets a policy change state: {sorted(changes)}"
