"""The registration window lent to the DNN: its tiles load first, the setup's other loads after.

Pipelines register before their first frame, and edf's setup fills every slot once then: the
pins, then what the first frames need (the warm-up). Done at once, the slots then sit idle until
the earliest release r, and a DNN gets them only through lends that each cost a tile's load and
a reload. A *cold lend* orders the setup round the DNN when DNN work is present: the tiles are
queued first, then the setup's loads into every other slot. A tile takes

- an unpinned slot the warm-up leaves blank: the tile's load is that slot's one setup load;
- a pinned slot: its pin (with the other lent pins, p in all) is loaded back to back from
  ``setup_at`` = r - (p + SLACK_LOADS) x (the longest load) on, which must be >= t0; DNN batches
  end by then (less the overrun their register traffic may add);
- a slot the warm-up would fill: the warm-up drops its last item, which loads later like any
  prefetch (just in time, as edf's loads do with DNN work present). Only where the port has time
  for every setup load and every tile before that module is first needed (a heuristic: the
  analysis never assumes what a swap slot holds).

Why the first busy period finds the state the analysis assumes (docs/guarantee.md, "Lending the
registration window"): everything queued at setup — the tiles and this partition's other setup
loads, beside the other partitions' — is at most one load per slot of the board, so it all ends
by t0 (the registration window is one load per slot of the board); a lent pin's load starts at
``setup_at`` >= t0 on a port no other partition loads through after t0 (pins are lent only where
the port is not ``shared``) and that this partition leaves alone until then (no tile is lent and
no batch runs past it), so every pin is in its slot by r - SLACK_LOADS x (the longest load); and
before r no frame exists to be delayed. A quiet partition (no load after t0) lends only slots the
warm-up leaves blank. A cold lend is made only where it pays as a lend does (backfill.py): the
DNN time it buys before the first release, less the chain's fill latency, is at least WORTH times
the port time of the tiles and of the modules they displace.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fpgashare.dnn.planning import dnn_plan, dnn_slot_count
from fpgashare.sched.core.view import EngineView, SlotState
from fpgashare.sched.policies.backfill import DNN, WORTH, refusal
from fpgashare.sched.policies.copy_order import ordered_copies

#: Kept between the setup's last load and the earliest release, as a fraction of one load.
SLACK_LOADS = 0.1


@dataclass(frozen=True)
class ColdLend:
    """A cold lend decided at setup: the slots given tiles, and when the lent pins' loads start
    (inf: no pinned slot lent)."""

    tiles: tuple[int, ...]
    setup_at: float

    @property
    def pins_away(self) -> bool:
        """Whether a pinned slot is lent: until ``setup_at`` only DNN batches run, then its pin loads."""
        return self.setup_at != float("inf")


def setup_at(engine: EngineView, pins: int) -> float:
    """When the reloads of ``pins`` pins whose slots hold tiles must start, so that the last ends
    before the earliest release (inf: none)."""
    if not pins:
        return float("inf")
    return engine.foresight.earliest_release_s() - (pins + SLACK_LOADS) * engine.port.longest_load_s()


def warm_up_items(engine: EngineView) -> list[str]:
    """The modules the setup's warm-up loads, in its order: each copy the first frames need
    (``copy_order.ordered_copies``, the order the warm-up iterates) that no pin holds (the pins
    load first, so the warm-up finds those copies held and skips them)."""
    pins = Counter(engine.contract.pinned.values())
    return [m for m, k in ordered_copies(engine) if k >= pins[m]]


def plan(engine: EngineView) -> ColdLend | None:
    """The cold lend to make at setup, or None (module docstring): DNN work present, every slot
    blank, and a chain whose tiles' loads and first image fit before the first release and before
    ``setup_at`` (>= t0). The chain size and slots are those that finish the most images by then.
    On a port another partition loads through after t0, no pinned slot takes a tile (its pin's
    reload could wait behind theirs); in a quiet partition, which loads nothing after t0, only
    slots the warm-up leaves blank do."""
    if not engine.dnn_pipelines or not engine.runs_dnn or engine.changing or engine.pending \
            or engine.committed is not None or refusal(engine.platform, [p.model for p in engine.dnn_pipelines]):
        return None
    slots = engine.slots
    if any(s.state is not SlotState.BLANK for s in slots.slots):
        return None
    pinned = engine.contract.pinned
    fits = [i for i in range(len(slots.slots)) if slots.compatible(i, DNN) and slots.can_take(i, DNN)]
    # Tiles go into the unpinned slots the warm-up leaves blank (it takes the first blank ones),
    # into pinned slots (their pins go back by ``setup_at``), and into slots the warm-up would fill:
    # the module displaced so (the warm-up's last) loads after t0, just in time, so only where the
    # port has time for every load of the setup and the tiles before it is first needed.
    unpinned = [i for i in fits if i not in pinned]
    items = warm_up_items(engine)
    warm = min(len(unpinned), len(items))
    spare, taken, pins = unpinned[warm:][::-1], unpinned[:warm][::-1], [i for i in fits if i in pinned]
    if engine.port.shared() or not engine.loads_after_t0:
        pins = []
    if not engine.loads_after_t0:
        taken = []
    needs = engine.foresight.module_needs(set()) if warm else {}
    setup_loads = len(pinned) + warm
    model = min(engine.dnn_pipelines, key=lambda p: p.name).model
    first = engine.foresight.earliest_release_s()
    load_s = engine.port.longest_load_s()
    longest = dnn_slot_count(engine.platform)
    best: tuple[float, tuple[int, ...], float] | None = None
    for p in range(len(pins) + 1):
        start = setup_at(engine, p)
        if start < engine.t0:
            break
        for d in range(len(taken) + 1):
            tiles = (*spare, *pins[:p], *taken[:d])[:longest]
            if not tiles or len(tiles) < len(spare[:longest]) + p + d:
                continue       # (a chain no longer than the fastest; spare slots first)
            # The warm-up drops its last d items; each must be back, just in time, when first needed.
            due = min((needs.get(m, first) for m in items[warm - d:warm]), default=first)
            if d and engine.now + engine.port.backlog_s() + (len(tiles) + setup_loads + SLACK_LOADS) * load_s > due:
                continue
            images = _images(engine, model, tiles, min(start, first), d)
            if images is not None and (best is None or images > best[0]):
                best = (images, tiles, start)
    return None if best is None else ColdLend(best[1], best[2])


def _images(engine: EngineView, model: str, tiles: tuple[int, ...], until: float, displaced: int) -> float | None:
    """Images a chain on ``tiles`` finishes by ``until`` once they are loaded, or None if it does
    not pay as a lend must (backfill.py): WORTH times the port time of the tiles' loads and of the
    displaced modules' reloads, in DNN time past the chain's fill latency."""
    ready = engine.now + engine.port.backlog_s() + sum(engine.port.load_seconds(i) for i in tiles)
    chain = dnn_plan(engine.platform, model, len(tiles))
    fill = chain.latency_cycles / chain.clock_hz
    room = until - engine.dnn.overrun_s() - ready
    if room == float("inf") or room - fill < WORTH * (len(tiles) + displaced) * engine.port.longest_load_s():
        return None
    return 1 + (room - fill) * chain.clock_hz / chain.bottleneck_cycles


def begin(engine: EngineView, lend: ColdLend) -> None:
    """Queue the tiles' loads (before the setup's other loads) and wake the engine when the lent
    pins' loads are due."""
    for slot in lend.tiles:
        engine.load(slot, DNN, "dnn")
    if lend.pins_away:
        engine.wake(lend.setup_at)


def over(engine: EngineView, lend: ColdLend) -> bool:
    """Whether the cold lend must end now: the lent pins' loads are due, or real-time work (a frame,
    a mode change) came before them."""
    return engine.now >= lend.setup_at or bool(engine.pending) or engine.committed is not None \
        or engine.changing
