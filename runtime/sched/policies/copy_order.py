"""The copies of modules real-time work needs, in the order the stream would first need them.

A chain using a module twice needs two copies in two slots, so each copy is an item of its own
(``NeedOrder.copy_key``: the k-th copy is needed first by the first frame whose pass uses the
module k times), ranked over ``Foresight.played_order`` (the next releases in the order the
stream would start them). Three decisions read this one order, so they cannot drift apart:

- edf's warm-up (``edf_loads.warm_up``) loads the blank slots in it before the first release;
- the cold lend (``cold_lend.warm_up_items``) plans the registration window round that warm-up;
- a lend's cost (``backfill.lend_loads``): Belady's MIN over the copies the played order's chains
  use (``future_items``, ``kept_until_used``) says whether the lent slot's copy would be kept
  until its next use, so that its reload is a load the lend adds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from fpgashare.sched.core.view import EngineView


def _keyed(engine: EngineView) -> list[tuple[tuple, str, int]]:
    future = engine.foresight.played_order()
    copies = engine.placement.copies_needed()
    return sorted(((future.copy_key(m, k), m, k) for m in future for k in range(copies.get(m, 1))),
                  key=lambda item: item[0])


def ordered_copies(engine: EngineView) -> list[tuple[str, int]]:
    """Every copy the placement may need, as (module, k) for its (k+1)-th copy, by when the stream
    would first need it (ties in the order of first need; copies nothing needs last)."""
    return [(m, k) for _, m, k in _keyed(engine)]


def future_items(engine: EngineView) -> list[tuple[str, int]]:
    """The copies the next passes and releases use, in the order the stream would use them
    (``Foresight.played_order``'s chains; the k-th use of a module in one chain is its k-th copy),
    leaving out the copies pins hold (always resident)."""
    pins = Counter(engine.contract.pinned.values())
    out = []
    for chain in engine.foresight.played_order().chains:
        seen: Counter = Counter()
        for m in chain:
            if seen[m] >= pins[m]:
                out.append((m, seen[m]))
            seen[m] += 1
    return out


def kept_until_used(cache: Sequence[tuple[str, int] | None], item: tuple[str, int],
                    accesses: Sequence[tuple[str, int]]) -> bool:
    """Whether Belady's MIN, serving ``accesses`` from the slots' ``cache`` (one item or None per
    slot no pin holds), keeps ``item`` until its next use: only then does losing it now add a
    load to an optimal replacement. If MIN evicts it first (at a load before its next use), the
    same choices with an item nobody needs in its place (a DNN tile) load exactly as often."""
    cache = list(cache)
    for i, access in enumerate(accesses):
        if access == item:
            return True
        if access in cache:
            continue
        rest = accesses[i:]

        def next_use(x: tuple[str, int] | None, rest: Sequence = rest) -> int:
            return rest.index(x) if x is not None and x in rest else len(rest)
        victim = max(range(len(cache)), key=lambda j: (next_use(cache[j]), cache[j] is None))
        if cache[victim] == item:
            return False
        cache[victim] = access
    return False
