"""The package's layers import only what lies below them (every import under runtime/, at the
top, under ``TYPE_CHECKING`` or inside a function: tests/import_graph.py).

The layers, bottom up: the catalogue (platforms, modules, workloads) and the wire format; the
backends; the scheduler's core (the engine and its parts), its analysis and host work; the
policies; the board (partitions, the daemon's engine); then the daemon, the client, the CLI and
the fleet. Each rule below says why it matters.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.import_graph import graph

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
                    "fpgashare.backends", *APPS),
         allowed=("fpgashare.sched.core.view", "fpgashare.sched.core.jobs", "fpgashare.sched.core.policy"),
         why="a policy decides from what view.py shows (read-only state, named actions); reaching "
             "the engine's modules would let it change state the analysis does not count, and "
             "every engine refactor would break policies (tests/test_policy_view.py checks the "
             "attributes, this rule the imports). A policy runs one partition's engine under bench, "
             "the daemon and the tests alike: the board's partitions, where frames come from and "
             "which backend runs are planned and chosen by whoever builds the run and handed in "
             "(a space-sharing baseline's binding is runtime/sched/board/fred_binding.py), so a "
             "policy that imported them would decide differently on the board than in the tests."),
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
