"""The copies of modules real-time work needs, in the order the stream would first need them.

A chain using a module twice needs two copies in two slots, so each copy is an item of its own
(``NeedOrder.copy_key``: the k-th copy is needed first by the first frame whose pass uses the
module k times), ranked over ``Foresight.played_order`` (the next releases in the order the
stream would start them). Three decisions read this one order, so they cannot drift apart:

- edf's warm-up (``edf_loads.warm_up``) loads the blank slots in it before the first release;
- the cold lend (``cold_lend.warm_up_items``) plans the registration window round that warm-up;
- a lend's cost (``backfill.lend_loads``): the copies among the first P of the order (P the slots
  no pin holds) are the ones a lend's victim must not hold, or its reload is a load the lend adds.
"""

from __future__ import annotations

from collections import Counter

from fpgashare.sched.core.demand import UNNEEDED
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


def first_needed(engine: EngineView, count: int) -> Counter:
    """How many copies of each module are among the first ``count`` copies of ``ordered_copies``
    that real-time work needs and no pin holds (module -> copies)."""
    pins = Counter(engine.contract.pinned.values())
    items = [m for key, m, k in _keyed(engine) if k >= pins[m] and key != UNNEEDED]
    return Counter(items[:count])
