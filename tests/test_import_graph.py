"""The package's modules import each other without cycles: every import under runtime/, at the
top, under ``TYPE_CHECKING`` or inside a function (tests/import_graph.py reads them all).

A cycle means two modules cannot be understood, tested or changed one without the other, and it
hides a missing seam (a part typed by the class that holds it, a mixin typed ``self: Engine``).
Function-level and ``TYPE_CHECKING`` imports count: they break the cycle for the interpreter,
not for the reader.
"""

from __future__ import annotations

from tests.import_graph import a_cycle, graph, modules, strongly_connected


def _cycles() -> list[list[str]]:
    return strongly_connected(graph())


def test_the_graph_is_read_from_every_module():
    names = modules()
    assert "fpgashare.sched.core.engine" in names and "fpgashare.daemon.server" in names
    assert "fpgashare.sched.core.jobs" in graph()["fpgashare.sched.core.engine"]
    # a TYPE_CHECKING-only import is an edge too
    assert "fpgashare.sched.core.engine_state" in graph()["fpgashare.sched.core.port_use"]


def test_a_cycle_is_found_and_printed():
    g = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert strongly_connected(g) == [["a", "b", "c"]]
    assert a_cycle(g, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_no_import_cycle():
    g = graph()
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(a_cycle(g, c)) for c in cycles)
