"""The engine's slots (a mixin of ``Engine``): where a frame's stages can run now, the pins the
admission contract keeps and moves, and frames no working slot can hold any more."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fpgashare.fused_slots import unblock
from fpgashare.sched.analysis import AdmissionContract
from fpgashare.slots import SlotState

if TYPE_CHECKING:
    from fpgashare.sched.engine import Engine, Frame


class SlotUse:
    def set_contract(self: Engine, contract: AdmissionContract) -> None:
        """Keep to ``contract`` from now on: its pinned slots are never evicted."""
        self.contract = contract
        self.slots.pinned = contract.pinned_slots
        self.slots.pin_modules = dict(contract.pinned)

    def move_pin(self: Engine, slot: int, to: int) -> None:
        """The module pinned at ``slot`` is pinned at ``to`` from now on (runtime/sched/pin_move.py)."""
        pinned = dict(self.contract.pinned)
        pinned[to] = pinned.pop(slot)
        self.set_contract(replace(self.contract, pinned=pinned))
        self.pin_moves += 1

    def plan_reload(self: Engine, slot: int, module: str, by: float) -> None:
        """Load ``module`` into ``slot`` as soon as it is free, if that can be by ``by`` (a lend
        moved it out of its slot: runtime/sched/pin_move.py)."""
        self.planned_reloads[slot] = (module, by)

    def _drop_unplaceable(self: Engine) -> None:
        """Frames needing more copies of a module than working (not quarantined) slots can hold
        end ``dropped`` now: no schedule can run them, and every frame must end."""
        platform = self.backend.platform
        for frame in list(self.pending):
            for module, need in frame.module_counts.items():
                working = sum(1 for s in platform.slots_for(module)
                              if self.slots.slots[s.index].state is not SlotState.FAILED)
                if working < need:
                    self.drop(frame, f"no working slot can hold {module}: its slots are quarantined")
                    break

    def copies_needed(self: Engine) -> dict[str, int]:
        """For each module, the most copies one real-time chain uses at once."""
        return self._copies

    def find_slots(self: Engine, frame: Frame, reserved: set[int]) -> tuple[list[int | None], list[str]]:
        """For each stage, a READY slot holding its module (None where there is none), and the
        modules missing."""
        taken = set(reserved)
        chosen: list[int | None] = []
        missing = []
        ready = self.slots.ready_by_module()
        pinned = self.slots.pinned
        for module in frame.modules:
            copies = ready.get(module, ())
            if pinned and len(copies) > 1:
                # Pinned copies first: a swap slot the frame leaves alone may take its other modules.
                copies = sorted(copies, key=lambda s: s not in pinned)
            for slot in copies:
                if slot not in taken:
                    taken.add(slot)
                    chosen.append(slot)
                    break
            else:
                chosen.append(None)
                missing.append(module)
        if missing and self.slots.fused:        # a fused module must not wait behind the frame's own stages
            return unblock(self.backend.platform, frame.modules, chosen, missing)
        return chosen, missing

    def free_at(self: Engine, slot: int) -> float | None:
        """When a busy slot's job ends (None if the slot is not running a job)."""
        owner = self.slots.slots[slot].owner
        frame = self.running.get(owner) if owner else None
        return frame.expected_end if frame else None
