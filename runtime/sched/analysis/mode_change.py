"""Mode changes of a running partition: a pipeline joins or leaves without any admitted frame
missing its deadline.

A partition runs under one *contract* at a time (runtime/sched/analysis/schedulability.py): the pins its
admission analysis chose and the blocking it can afford. A registration or a departure asks for
another contract; the change from the contract in force, C, to the new one, C', is made in
steps, one change at a time per partition (a synchronous protocol in the sense of Real & Crespo,
Real-Time Systems 26(2), 2004):

1. *Analysed when asked.* C' is the analysis of the set after every change already queued, with
   their pins kept where they are; the newcomer is refused if it fails, or if the set in force
   cannot also afford one pin load of blocking per busy period while C' pins are loaded
   (``transition_check``). A departure never fails: fewer frames need no more time.
2. *Old contract until the switch.* Until the switch the pipelines of C release frames under C;
   the newcomer releases none (its registration completes at the switch) and a pipeline that left
   releases none either. Best-effort DNN batches, lends and pin moves are paused, so nothing but
   real-time work and one pin load at a time uses the stream and the port.
3. *Pins while the partition is idle.* Each new pin is loaded only while the partition is idle
   (no real-time frame waiting or on the stream, no DNN batch, the port free): such a load can
   only delay the busy period that starts during it, by at most one load — the extra blocking the
   transition check counted. A loaded pin is pinned at once (no frame evicts it); the slot-fit
   argument: if every chain's unpinned stages fit beside C' pins, they fit beside C pins plus
   any subset of the new pins that is resident (a chain's need shrinks by the new pins it uses
   and the free pool by the new pins loaded, so the margin never goes below C''s).
4. *Switch at an idle instant.* Once C' pins are resident and the partition is idle, C' takes
   over. Nothing started under C is still running then (no frame, batch or load), so every busy
   period from then on is one C''s analysis covers, and the newcomer's frames start on pins it
   counted.

Holds (runtime/sched/analysis/holds.py): the new contract carries the new set's hold budgets when
its verdict brings them (a registration's, computed with its trial off the daemon's loop, since
they re-run the test several times per pipeline; a departure's or a change analysed on the loop
brings none: a contract that holds nothing is the admitted one), and edf holds no frame while a
change is under way (runtime/sched/policies/hold.py). Frames held under C before the change was
asked were held within C's budgets, and no pin load starts before an idle instant (a held frame is
pending: the partition is not idle while one waits), so a busy period with held frames has no pin
load in it: C's analysis covers it. Every busy period that starts during a pin load starts after
an idle instant of the change, when no frame is held: the transition check, which counts no holds,
covers it. From the switch, an idle instant, C' and its budgets do.

Progress: the partition's real-time utilisation is below one, so idle instants recur within the
longest busy period; the pause bounds a DNN batch in flight to the one started before the change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.schedulability import AdmissionContract, Verdict
from fpgashare.sched.core.slots import SlotState

log = logging.getLogger(__name__)


@dataclass
class Change:
    """One step from the contract in force to ``contract``: ``joining`` enters the set at the
    switch (None for a departure or a re-plan)."""

    contract: AdmissionContract
    loads: dict[str, int]                      #: per pipeline of the new set: loads a frame needs
    pipelines: list[PipelineSpec]              #: the real-time set after it
    joining: PipelineSpec | None = None
    on_ready: Callable[[], None] | None = None
    cancelled: bool = False                    #: its app left before the switch
    asked_at: float = 0.0
    pending_pins: dict[int, str] = field(default_factory=dict)   #: slot -> module still to load


class ModeChanges:
    """The queue of a partition's mode changes and the steps of the one at its head.

    ``engine`` is the partition (an ``Engine`` fed by submits): what it reads is the slot states,
    whether work is in flight, and ``placement.set_contract``; at a joining pipeline's switch it
    calls ``joined(spec, cancelled)`` (the registrations part, runtime/sched/board/registrations.py).
    """

    def __init__(self, engine, joined: Callable[[PipelineSpec, bool], None]) -> None:
        self.engine = engine
        self.joined = joined
        self.queue: list[Change] = []
        self.loads: dict[str, int] = {}         #: loads a frame needs under the contract in force
        self.version = 0                        #: bumped whenever the target changes
        self.switches = 0
        self.longest_s = 0.0                    #: the longest change, from asked to switch

    @property
    def active(self) -> bool:
        """Whether a change is under way (best-effort work and pin moves pause meanwhile)."""
        return bool(self.queue)

    # ---- what a new admission is analysed against: the state after every queued change
    @property
    def target_pipelines(self) -> list[PipelineSpec]:
        return list(self.queue[-1].pipelines) if self.queue else list(self.engine.pipelines)

    @property
    def target_contract(self) -> AdmissionContract:
        return self.queue[-1].contract if self.queue else self.engine.contract

    @property
    def target_loads(self) -> dict[str, int]:
        return self.queue[-1].loads if self.queue else self.loads

    def joining(self) -> list[PipelineSpec]:
        """Pipelines admitted whose switch has not come yet."""
        return [c.joining for c in self.queue if c.joining is not None and not c.cancelled]

    def ask(self, verdict: Verdict, pipelines: list[PipelineSpec], joining: PipelineSpec | None,
            on_ready: Callable[[], None] | None) -> None:
        """Queue the change to ``verdict``'s contract for the set ``pipelines`` (the target set
        after it)."""
        loads = dict(verdict.plan.loads) if verdict.plan is not None else {p.name: 0 for p in pipelines}
        # The new set's hold budgets (holds.py) come with ``verdict``, made where its analysis was
        # (a registration's trial, off the daemon's loop: never here, on it); edf holds no frame
        # while a change is under way (hold.py), so they count from the switch on, an idle instant.
        change = Change(verdict.contract, loads, list(pipelines), joining, on_ready, asked_at=self.engine.now)
        self.queue.append(change)
        self.version += 1
        self.step()

    def cancel(self, name: str) -> bool:
        """The app of joining pipeline ``name`` left: it will not release frames after its switch
        (its change still runs, the later ones were analysed with it). Whether it was joining."""
        for change in self.queue:
            if change.joining is not None and change.joining.name == name and not change.cancelled:
                change.cancelled = True
                return True
        return False

    # ---- the steps ------------------------------------------------------------------------
    def step(self) -> None:
        """After every event: load the head change's next pin, or switch to it."""
        while self.queue:
            change = self.queue[0]
            slots = self.engine.slots.slots
            if not change.pending_pins:
                current = self.engine.contract.pinned
                # A pin in force but not in its slot (lent to the DNN for an idle gap: pin_lend.py)
                # is loaded back like a new pin: the switch must find every pin of C' resident.
                change.pending_pins = {s: m for s, m in change.contract.pinned.items()
                                       if current.get(s) != m or slots[s].module != m}
            for slot, module in list(change.pending_pins.items()):
                s = slots[slot]
                if s.module == module and s.state in (SlotState.READY, SlotState.BUSY):
                    self._pin_now(slot, module)        # in already: pinned, so nothing evicts it
                    del change.pending_pins[slot]
                elif s.state is SlotState.FAILED:
                    del change.pending_pins[slot]      # a fault voids the pin, not the switch
            if not self.engine.idle():
                return
            if change.pending_pins:
                slot, module = min(change.pending_pins.items())
                if slots[slot].state in (SlotState.BLANK, SlotState.READY) \
                        and self.engine.slots.can_request(slot, module):   # a fused pin: its whole region idle
                    self._pin_now(slot, module)
                    self.engine.slots.request(slot, module, "pin")
                return
            self._switch(change)

    def _pin_now(self, slot: int, module: str) -> None:
        """Pin ``module`` at ``slot`` under the contract in force (no frame evicts it from now on)."""
        e = self.engine
        pinned = {s: m for s, m in e.contract.pinned.items() if s != slot}
        pinned[slot] = module
        e.placement.set_contract(replace(e.contract, pinned=pinned))

    def _switch(self, change: Change) -> None:
        e = self.engine
        self.queue.pop(0)
        e.placement.set_contract(change.contract)
        self.loads = change.loads
        took = e.now - change.asked_at
        self.longest_s = max(self.longest_s, took)
        self.switches += 1
        if change.joining is not None:
            self.joined(change.joining, change.cancelled)
        if change.on_ready is not None and not change.cancelled:
            change.on_ready()
        log.debug("mode change to %s pins after %.3f ms", len(change.contract.pinned), took * 1e3)

