"""The package's layers import only what lies below them (every import under runtime/, at the
top, under ``TYPE_CHECKING`` or inside a function: tests/import_graph.py).

The layers, bottom up: the catalogue (platforms, modules, workloads) and the wire format; the
backends; the scheduler's core (the engine and its parts), its analysis and host work; the
policies; the board (partitions, the daemon's engine); then the daemon, the client, the CLI and
the fleet. Each rule below says why it matters.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import pytest

from tests.import_graph import RUNTIME, graph, modules

APPS = ("fpgashare.daemon", "fpgashare.client", "fpgashare.cli", "fpgashare.fleet")


@dataclass(frozen=True)
class Rule:
    name: str
    layer: tuple[str, ...]          #: modules (or packages) the rule is about
    forbidden: tuple[str, ...]      #: what they must not import
    allowed: tuple[str, ...] = ()   #: exceptions inside ``forbidden``
    why: str = ""


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


RULES = [
    Rule("the core runs any policy on any board",
         layer=("fpgashare.sched.core",),
         forbidden=("fpgashare.sched.policies", "fpgashare.sched.board", "fpgashare.sched.limits",
                    "fpgashare.sched.sources", "fpgashare.backends", "fpgashare.wire", *APPS),
         allowed=("fpgashare.backends.base",),
         why="the engine is the same state machine under bench, the daemon and the tests: it knows "
             "a policy only as the object it asks (view.py), a backend only by its abstract "
             "contract (backends/base.py), where frames come from only as a release source "
             "(release_source.py), and nothing of partitions, sockets or apps. An import "
             "upward would make a policy's or the daemon's change a change of the core."),
    Rule("a release source says when frames come, not how they are scheduled",
         layer=("fpgashare.sched.sources",),
         forbidden=("fpgashare.sched.policies", "fpgashare.sched.board", "fpgashare.sched.limits", *APPS),
         why="a workload's periodic releases and the daemon's submits feed the same engine under "
             "every policy and on every board; a source that reached a policy or a board would "
             "make bench and the daemon schedule differently for the same frames."),
    Rule("policies see the engine only through its view",
         layer=("fpgashare.sched.policies",),
         forbidden=("fpgashare.sched.core", "fpgashare.sched.board", "fpgashare.sched.sources",
                    "fpgashare.sched.limits", "fpgashare.backends", *APPS),
         allowed=("fpgashare.sched.core.view", "fpgashare.sched.core.jobs", "fpgashare.sched.core.policy"),
         why="a policy decides from what view.py shows (read-only state, named actions); reaching "
             "the engine's modules would let it change state the analysis does not count, and "
             "every engine refactor would break policies (tests/test_policy_view.py checks the "
             "attributes, this rule the imports). A policy runs one partition's engine under bench, "
             "the daemon and the tests alike: the board's partitions, where frames come from and "
             "which backend runs are planned and chosen by whoever builds the run and handed in "
             "(a space-sharing baseline's binding is runtime/sched/board/fred_binding.py), so a "
             "policy that imported them would decide differently on the board than in the tests. "
             "The limits are a yardstick for every scheduler: a policy that runs a precomputed "
             "table (planned) is handed it (cyclic.table_to_run) and reads it through a protocol "
             "of its own, so the solver and its time limit stay out of the policies."),
    Rule("the analysis is the engine's contract, not the daemon's",
         layer=("fpgashare.sched.analysis",),
         forbidden=("fpgashare.sched.policies", "fpgashare.sched.board", *APPS),
         why="admission and mode-change analysis must give the same verdict for bench, the daemon "
             "and the fleet; it may read the core's slot states, never a policy or a board."),
    Rule("the catalogue describes, it does not schedule",
         layer=("fpgashare.catalogue",),
         forbidden=("fpgashare.sched", *APPS),
         why="platforms, modules and workloads are loaded by every tool (build, bench, daemon, "
             "fleet, docs); a catalogue that imported the scheduler or an app would drag all of it "
             "into each of them and tie the file formats to one user."),
    Rule("nothing below the apps knows them",
         layer=("fpgashare.sched", "fpgashare.backends", "fpgashare.catalogue", "fpgashare.wire",
                "fpgashare.bitstream", "fpgashare.dnn", "fpgashare.hwtables"),
         forbidden=APPS,
         why="the daemon, client, CLI and fleet are built on the scheduler and backends; an import "
             "back up makes the library unusable without them (and was how cycles formed)."),
]


def _violations(rule: Rule) -> list[str]:
    out = []
    for module, targets in sorted(graph().items()):
        if not _within(module, rule.layer):
            continue
        for target in sorted(targets):
            if _within(target, rule.forbidden) and not _within(target, rule.allowed) \
                    and not _within(target, rule.layer):
                out.append(f"{module} imports {target}")
    return out


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_a_layer_imports_only_what_lies_below(rule):
    assert any(_within(m, rule.layer) for m in graph()), f"no module in {rule.layer}: the rule checks nothing"
    bad = _violations(rule)
    assert not bad, f"{rule.name} ({rule.why}):\n" + "\n".join(bad)


def test_a_rule_catches_an_import_upward(monkeypatch):
    g = dict(graph())
    g["fpgashare.sched.core.engine"] = g["fpgashare.sched.core.engine"] | {"fpgashare.sched.policies.edf"}
    monkeypatch.setattr("tests.test_layers.graph", lambda: g)
    assert _violations(RULES[0]) == ["fpgashare.sched.core.engine imports fpgashare.sched.policies.edf"]


# ---- nothing above the backends knows which board it has

#: Where a board's or a platform's name may be tested: the backends themselves, the command line
#: (it names a backend to build) and the Vivado flow (it builds one platform's bitstreams).
NAMED = ("fpgashare.backends", "fpgashare.cli", "fpgashare.vivado")


def _board_names() -> set[str]:
    from fpgashare.backends import BACKENDS
    from fpgashare.catalogue.platform import load_platform

    shipped = {p.stem for p in (RUNTIME.parent / "bitstreams").glob("*.toml")}
    return {*BACKENDS, *shipped, *(load_platform(name).name for name in shipped)}


#: Words naming what a board's or a platform's name belongs to (``backend.name``, ``platform.name``).
HOLDERS = ("backend", "board", "platform")


def _mentions_a_holder(node: ast.expr) -> bool:
    words = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)] + \
            [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
    return any(h in w.lower() for w in words for h in HOLDERS)


def _tests_of_a_name(source: str, names: set[str]) -> list[int]:
    """Lines where ``source`` compares a backend, a board or a platform (or its name) with a
    board's or a platform's name (another "model", an ONNX file's, is not one)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named = any(isinstance(v, ast.Constant) and v.value in names
                    for operand in operands
                    for v in (operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]))
        if named and any(_mentions_a_holder(operand) for operand in operands):
            lines.append(node.lineno)
    return lines


def test_nothing_above_the_backends_tests_which_board_it_has():
    """What differs between boards is a property of the backend contract (``runs_in_real_time``,
    ``streams_carried``, ``runs_dnn``) or of the platform manifest: a test of a name would make
    a new board, or a twin standing in for one, behave as whichever name it happens to match."""
    assert len(_board_names()) > len(("model", "sim", "pynq", "faulty")), "no platform name found"
    names = _board_names()
    bad = [f"{name}:{line}" for name, path in modules().items() if not _within(name, NAMED)
           for line in _tests_of_a_name(path.read_text(), names)]
    assert not bad, "a backend's or a platform's name tested above the backends:\n" + "\n".join(bad)


def test_the_name_rule_catches_a_test_of_a_name():
    names = _board_names()
    assert _tests_of_a_name('if backend.name == "pynq":\n    pass\n', names) == [1]
    assert _tests_of_a_name('x = platform.name in ("zcu104", "other")\n', names) == [1]
    assert _tests_of_a_name('if self.backend.name != "sim" and x:\n    pass\n', names) == [1]
    assert _tests_of_a_name('if backend.runs_in_real_time:\n    pass\n', names) == []
    assert _tests_of_a_name('label = "onnx" if where == "model" else where\n', names) == []
