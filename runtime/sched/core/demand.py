"""The order in which real-time work will next need each module: what Belady replacement,
prefetch and the warm-up look ahead over.

A module's place is set by the first frame that needs it: first the frames a decision names (in
the order given), then every pipeline's next release, by its deadline. Modules no pipeline will
need again come last, all alike. Only the first need counts, so a pipeline's later releases add
nothing; and since a release moves only its own pipeline's next need, the order is kept up to
date one pipeline at a time rather than rebuilt for every decision.

A chain that uses a module k times in one pass needs k copies resident at once, so the k-th copy
is an item of its own (``copy_key``): it is needed first by the first frame whose pass uses the
module k times, not by the first that uses it at all. Replacement and prefetch that rank a second
copy by the module's first need evict, for a copy needed late, a module needed sooner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from fpgashare.catalogue.workload import PipelineSpec

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
        #: (module, k) -> pipelines one of whose passes uses the module more than k times (k >= 1)
        self._copy_users: dict[tuple[str, int], list[tuple[PipelineSpec, int]]] = {}
        self._copy_key: dict[tuple[str, int], tuple] = {}

    def reset(self, pipelines: Iterable[PipelineSpec]) -> None:
        """Start over with ``pipelines`` (the set changed)."""
        self._users, self._due, self._key, self._order = {}, {}, {}, None
        self._copy_users, self._copy_key = {}, {}
        for p in pipelines:
            self._due[p.name] = self._need_time(p)
            for offset, module in enumerate(p.modules):
                users = self._users.setdefault(module, [])
                if all(q is not p for q, _ in users):      # a module twice in a chain: its first stage
                    users.append((p, offset))
            for module, count in _most_copies(p).items():
                for k in range(1, count):
                    self._copy_users.setdefault((module, k), []).append((p, p.modules.index(module)))
        for module in self._users:
            self._rekey(module)
        for item in self._copy_users:
            self._rekey_copy(item)

    def moved(self, pipeline: PipelineSpec) -> None:
        """``pipeline``'s next release changed (one of its frames was released)."""
        self._due[pipeline.name] = self._need_time(pipeline)
        for module in dict.fromkeys(pipeline.modules):
            self._rekey(module)
        if self._copy_users:
            for module, count in _most_copies(pipeline).items():
                for k in range(1, count):
                    self._rekey_copy((module, k))
        self._order = None

    def _rekey(self, module: str) -> None:
        self._key[module] = self._best(self._users[module])

    def _rekey_copy(self, item: tuple[str, int]) -> None:
        self._copy_key[item] = self._best(self._copy_users[item])

    def _best(self, users: list[tuple[PipelineSpec, int]]) -> tuple:
        due = [(self._due[p.name], p.name, offset) for p, offset in users]
        best = min(due) if due else None
        return UNNEEDED if best is None or best[0] == float("inf") else (1, *best)

    def key(self, module: str) -> tuple:
        return self._key.get(module, UNNEEDED)

    def copy_key(self, module: str, k: int) -> tuple:
        """Sort key of the next need of a (k+1)-th copy of ``module`` (k = 0: ``key``)."""
        if k <= 0:
            return self._key.get(module, UNNEEDED)
        return self._copy_key.get((module, k), UNNEEDED)

    def modules(self):
        """Every module a pipeline of the set uses (``order`` names some of them, never another)."""
        return self._users.keys()

    def order(self) -> list[str]:
        """Needed modules, soonest first."""
        if self._order is None:
            self._order = sorted((m for m, k in self._key.items() if k is not UNNEEDED), key=self._key.__getitem__)
        return self._order


class NeedOrder:
    """Modules in order of first need: the modules of ``chains`` (the frames a decision names, in
    order), then ``demand``'s; with ``copies``, a module's copies are ranked apart (``copy_key``).
    Iterating gives each needed module once. The chains are read only as far as a question needs
    (a prefetch looks at a few modules, not at every pending frame's)."""

    def __init__(self, chains: Sequence[Sequence[str]] = (), demand: Demand | None = None,
                 copies: bool = False) -> None:
        self._chains = chains
        #: replacement ranks a module's copies as items of their own (``copy_key``); without it a
        #: slot's copy ranks by the module's first need, as the baselines' replacement does
        self.copies = copies
        self._read = 0                       # chains read into _first so far
        self._first: dict[str, int] = {}
        self._ends: list[int] = []           # per chain read: how many modules were placed by its end
        self._demand = demand

    @property
    def chains(self) -> Sequence[Sequence[str]]:
        """The chains this order was made from, in order (the frames a decision names)."""
        return self._chains

    def _read_chain(self) -> bool:
        """Read the next chain's new modules; False when every chain has been read."""
        if self._read >= len(self._chains):
            return False
        first = self._first
        for module in self._chains[self._read]:
            if module not in first:
                first[module] = len(first)
        self._ends.append(len(first))
        self._read += 1
        return True

    def key(self, module: str) -> tuple:
        """Sort key of ``module``'s next need: smaller is sooner."""
        while module not in self._first and self._read_chain():
            pass
        place = self._first.get(module)
        if place is not None:
            return (0, place)
        return self._demand.key(module) if self._demand is not None else UNNEEDED

    def copy_key(self, module: str, k: int) -> tuple:
        """Sort key of the next need of a (k+1)-th copy of ``module`` (k = 0: ``key``): the first
        chain that uses it more than k times, else the first pipeline whose pass does."""
        if k <= 0:
            return self.key(module)
        for i, chain in enumerate(self._chains):
            if chain.count(module) > k:
                while self._read <= i and self._read_chain():
                    pass
                return (0, self._ends[i] - 0.5)      # after the modules this chain names first
        return self._demand.copy_key(module, k) if self._demand is not None else UNNEEDED

    def head(self, count: int) -> list[str]:
        """The first ``count`` modules of the order (fewer if fewer are needed)."""
        first = self._first
        if len(first) < count:
            # ``_read_chain`` inlined: a prefetch asks at every decision, over every waiting frame
            chains, ends, read = self._chains, self._ends, self._read
            while len(first) < count and read < len(chains):
                for module in chains[read]:
                    if module not in first:
                        first[module] = len(first)
                ends.append(len(first))
                read += 1
            self._read = read
        out = list(first)[:count]
        if len(out) < count and self._demand is not None:
            for module in self._demand.order():
                if module not in self._first:
                    out.append(module)
                    if len(out) == count:
                        break
        return out

    def __iter__(self) -> Iterator[str]:
        while self._read_chain():
            pass
        yield from self._first
        if self._demand is not None:
            yield from (m for m in self._demand.order() if m not in self._first)


def _most_copies(p: PipelineSpec) -> dict[str, int]:
    """Modules one of ``p``'s passes uses more than once, with the most copies a pass uses."""
    out: dict[str, int] = {}
    for counts in p.pass_module_counts:
        for module, count in counts.items():
            if count > 1:
                out[module] = max(out.get(module, 0), count)
    return out
