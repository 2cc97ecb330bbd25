"""Policies see the engine through one narrow interface (runtime/sched/core/view.py): every
``engine.<name>`` in the policies and their helpers is a member of ``EngineView``, and the engine
implements all of it."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import load_workload
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.core.view import EngineView
from fpgashare.sched.policies.edf import EdfPolicy

SCHED = Path(inspect.getfile(EngineView)).parent
POLICY_MODULES = ("edf", "policy", "baselines", "fred", "backfill", "guard", "lookahead", "pin_move")


def _view_names() -> set[str]:
    names = set(getattr(EngineView, "__annotations__", {}))
    names |= {n for n, v in vars(EngineView).items() if callable(v) and not n.startswith("_")}
    return names


@pytest.mark.parametrize("module", POLICY_MODULES)
def test_a_policy_module_uses_only_the_view(module):
    tree = ast.parse((SCHED / f"{module}.py").read_text())
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "engine"}
    assert used, f"{module}.py never touches the engine: the check would be empty"
    assert used <= _view_names(), f"{module}.py reaches past the view: {sorted(used - _view_names())}"


def test_the_engine_implements_the_whole_view():
    workload = load_workload("camera_mix_zcu104")
    engine = Engine(workload, ModelBackend(workload.platform), EdfPolicy())
    missing = [n for n in sorted(_view_names()) if not hasattr(engine, n)]
    assert not missing, f"Engine lacks {missing}"
