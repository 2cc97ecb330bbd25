"""The engine's slots (``Placement``, a part of the engine): where a frame's stages can run now,
the pins the admission contract keeps and moves, and frames no working slot can hold any more."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fpgashare.catalogue.fused_slots import unblock
from fpgashare.sched.analysis.schedulability import AdmissionContract
from fpgashare.sched.core.slots import SlotState

if TYPE_CHECKING:
    from fpgashare.sched.analysis.schedulability import AdmissionContract
    from fpgashare.sched.core.engine_state import EngineState
    from fpgashare.sched.core.jobs import Frame


class Placement:
    """Where frames run on the engine's slots, and the pins its contract holds there."""

    def __init__(self, engine: EngineState) -> None:
        self.engine = engine
        self.copies: dict[str, int] = {}    #: per module, the most copies one real-time chain uses at once
        self._repeats = False                #: some chain uses a module more than once

    def pipelines_changed(self) -> None:
        """The set of real-time pipelines changed: count the copies each module needs again."""
        self.copies = {}
        for p in self.engine.pipelines:
            for module, count in p.module_counts.items():
                self.copies[module] = max(self.copies.get(module, 0), count)
        self._repeats = any(count > 1 for count in self.copies.values())

    def set_contract(self, contract: AdmissionContract) -> None:
        """Keep to ``contract`` from now on: its pinned slots are never evicted."""
        engine = self.engine
        engine.contract = contract
        engine.slots.pinned = contract.pinned_slots
        engine.slots.pin_modules = dict(contract.pinned)

    def move_pin(self, slot: int, to: int) -> None:
        """The module pinned at ``slot`` is pinned at ``to`` from now on (runtime/sched/policies/pin_move.py)."""
        pinned = dict(self.engine.contract.pinned)
        pinned[to] = pinned.pop(slot)
        self.set_contract(replace(self.engine.contract, pinned=pinned))
        self.engine.pin_moves += 1

    def plan_reload(self, slot: int, module: str, by: float) -> None:
        """Load ``module`` into ``slot`` as soon as it is free, if that can be by ``by`` (a lend
        moved it out of its slot: runtime/sched/policies/pin_move.py)."""
        self.engine.planned_reloads[slot] = (module, by)

    def drop_unplaceable(self) -> None:
        """Frames needing more copies of a module than working (not quarantined) slots can hold
        end ``dropped`` now: no schedule can run them, and every frame must end."""
        engine = self.engine
        platform = engine.backend.platform
        for frame in list(engine.pending):
            for module, need in frame.module_counts.items():
                working = sum(1 for s in platform.slots_for(module)
                              if engine.slots.slots[s.index].state is not SlotState.FAILED)
                if working < need:
                    engine.drop(frame, f"no working slot can hold {module}: its slots are quarantined")
                    break

    def copies_needed(self) -> dict[str, int]:
        """For each module, the most copies one real-time chain uses at once."""
        return self.copies

    def copies_matter(self) -> bool:
        """Whether some real-time chain uses a module more than once: only then must copies be
        ranked apart (a second copy is loaded for nothing else)."""
        return self._repeats

    def find_slots(self, frame: Frame, reserved: set[int]) -> tuple[list[int | None], list[str]]:
        """For each stage, a READY slot holding its module (None where there is none), and the
        modules missing."""
        # A slot is taken if reserved or chosen for an earlier stage: ``chosen`` holds at most a
        # chain's few stages, so it is searched rather than copying ``reserved`` for every frame.
        chosen: list[int | None] = []
        missing = []
        slots = self.engine.slots
        ready = slots.ready_by_module()
        pinned = slots.pinned
        for module in frame.modules:
            copies = ready.get(module, ())
            if pinned and len(copies) > 1:
                # Pinned copies first: a swap slot the frame leaves alone may take its other modules.
                copies = sorted(copies, key=lambda s: s not in pinned)
            for slot in copies:
                if slot not in reserved and slot not in chosen:
                    chosen.append(slot)
                    break
            else:
                chosen.append(None)
                missing.append(module)
        if missing and slots.fused:        # a fused module must not wait behind the frame's own stages
            return unblock(slots.platform, frame.modules, chosen, missing)
        return chosen, missing

    def free_at(self, slot: int) -> float | None:
        """When a busy slot's job ends (None if the slot is not running a job)."""
        owner = self.engine.slots.slots[slot].owner
        frame = self.engine.running.get(owner) if owner else None
        return frame.expected_end if frame else None
