"""The order in which real-time work will next need each module: what Belady replacement,
prefetch and the warm-up look ahead over.

A module's place is set by the first frame that needs it: first the frames a decision names (in
the order given), then every pipeline's next release, by its deadline. Modules no pipeline will
need again come last, all alike. Only the first need counts, so a pipeline's later releases add
nothing; and since a release moves only its own pipeline's next need, the order is kept up to
date one pipeline at a time rather than rebuilt for every decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from runtime.workload import PipelineSpec

#: Sort key of a module nobody will need: after every needed one, equal to each other.
UNNEEDED: tuple = (2,)


class Demand:
    """Per module, when the next release of a pipeline will need it, as a sort key
    ``(1, need time, pipeline name, stage position)``; smaller is sooner."""

    def __init__(self, need_time: Callable[[PipelineSpec], float]) -> None:
        self._need_time = need_time          # a pipeline's next release's deadline (inf: no more)
        self._users: dict[str, list[tuple[PipelineSpec, int]]] = {}
        self._due: dict[str, float] = {}
        self._key: dict[str, tuple] = {}
        self._order: list[str] | None = None

    def reset(self, pipelines: Iterable[PipelineSpec]) -> None:
        """Start over with ``pipelines`` (the set changed)."""
        self._users, self._due, self._key, self._order = {}, {}, {}, None
        for p in pipelines:
            self._due[p.name] = self._need_time(p)
            for offset, module in enumerate(p.modules):
                users = self._users.setdefault(module, [])
                if all(q is not p for q, _ in users):      # a module twice in a chain: its first stage
                    users.append((p, offset))
        for module in self._users:
            self._rekey(module)

    def moved(self, pipeline: PipelineSpec) -> None:
        """``pipeline``'s next release changed (one of its frames was released)."""
        self._due[pipeline.name] = self._need_time(pipeline)
        for module in dict.fromkeys(pipeline.modules):
            self._rekey(module)
        self._order = None

    def _rekey(self, module: str) -> None:
        due = [(self._due[p.name], p.name, offset) for p, offset in self._users[module]]
        best = min(due) if due else None
        self._key[module] = UNNEEDED if best is None or best[0] == float("inf") else (1, *best)

    def key(self, module: str) -> tuple:
        return self._key.get(module, UNNEEDED)

    def order(self) -> list[str]:
        """Needed modules, soonest first."""
        if self._order is None:
            self._order = sorted((m for m, k in self._key.items() if k is not UNNEEDED), key=self._key.__getitem__)
        return self._order


class NeedOrder:
    """Modules in order of first need: ``first`` (modules of frames a decision names, in order),
    then ``demand``'s. Iterating gives each needed module once. ``first`` is read only as far as
    a question needs (a prefetch looks at a few modules, not at every pending frame's)."""

    def __init__(self, first: Iterable[str] = (), demand: Demand | None = None) -> None:
        self._first: dict[str, int] = {}
        self._rest: Iterator[str] | None = iter(first)     # not read yet
        self._demand = demand

    def _read(self) -> Iterator[str]:
        """``first``'s modules not seen before, read on as they are asked for."""
        while self._rest is not None:
            module = next(self._rest, None)
            if module is None:
                self._rest = None
            elif module not in self._first:
                self._first[module] = len(self._first)
                yield module

    def key(self, module: str) -> tuple:
        """Sort key of ``module``'s next need: smaller is sooner."""
        if module not in self._first:
            for seen in self._read():
                if seen == module:
                    break
        place = self._first.get(module)
        if place is not None:
            return (0, place)
        return self._demand.key(module) if self._demand is not None else UNNEEDED

    def __iter__(self) -> Iterator[str]:
        yield from list(self._first)
        yield from self._read()
        if self._demand is not None:
            yield from (m for m in self._demand.order() if m not in self._first)
