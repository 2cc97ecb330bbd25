"""SlotManager: what each slot holds and is doing, the shared configuration port, the resident
cache (never reload what is there), replacement (Belady lookahead over known demand, or LRU),
and quarantine of a slot whose load failed twice."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from fpgashare.backends.base import Backend, LoadReport, Pending
from fpgashare.catalogue.fused_slots import load_takes, members
from fpgashare.catalogue.platform import Platform
from fpgashare.sched.core.port import ConfigPort, LoadRequest

if TYPE_CHECKING:
    from fpgashare.sched.core.demand import NeedOrder

log = logging.getLogger(__name__)

REPLACEMENT = ("belady", "lru")


class SlotState(Enum):
    BLANK = "blank"
    LOADING = "loading"     #: reserved for a load that is queued or on the port
    READY = "ready"
    BUSY = "busy"
    FAILED = "failed"       #: quarantined after a failed retry


@dataclass
class Slot:
    index: int
    state: SlotState = SlotState.BLANK
    module: str | None = None       #: resident module (READY/BUSY) or the one being loaded
    last_used: float = -1.0
    owner: str | None = None
    #: a member of the fused module this slot's host holds (module None, state the host's)
    host: int | None = None


#: States of a slot that can take a load (``victim``'s candidates).
_IDLE = (SlotState.BLANK, SlotState.READY)


class SlotManager:
    def __init__(self, backend: Backend, replacement: str = "belady") -> None:
        if replacement not in REPLACEMENT:
            raise ValueError(f"replacement must be one of {REPLACEMENT}, got {replacement!r}")
        self.backend = backend
        self.replacement = replacement
        self.slots = [Slot(s.index) for s in backend.platform.slots]
        self.port = ConfigPort()
        self._pending: Pending[LoadReport] | None = None     # the load on the port
        self._holders: tuple[dict[str, tuple[int, ...]], ...] | None = None   # ready, busy, loading; rebuilt on change
        self._idle: tuple[int, ...] | None = None                             # idle(), kept until a change
        self._compatible: dict[tuple[int, str], bool] = {}
        self._compatible_slots: dict[str, tuple[int, ...]] = {}
        #: Slots whose module stays for good (the admission's residency plan): never a victim.
        self.pinned: frozenset[int] = frozenset()
        self.pin_modules: dict[int, str] = {}      #: the module each pinned slot is for
        self.quarantined = 0           #: slots FAILED (never loaded or used again)
        #: the platform has fused regions: loads may take several slots (runtime/catalogue/fused_slots.py)
        self._fused = bool(backend.platform.fused)

    def _changed(self) -> None:
        self._holders = None
        self._idle = None

    def _index(self) -> tuple[dict[str, tuple[int, ...]], ...]:
        # Queried many times per scheduling decision, changed a few times per event: index once.
        if self._holders is None:
            ready: dict[str, list[int]] = {}
            busy: dict[str, list[int]] = {}
            loading: dict[str, list[int]] = {}
            for s in self.slots:
                if s.module is None:
                    continue
                state = s.state
                table = ready if state is SlotState.READY else busy if state is SlotState.BUSY else \
                    loading if state is SlotState.LOADING else None
                if table is not None:
                    table.setdefault(s.module, []).append(s.index)
            self._holders = tuple({m: tuple(v) for m, v in t.items()} for t in (ready, busy, loading))
        return self._holders

    # ---- queries
    def compatible(self, slot: int, module: str) -> bool:
        key = (slot, module)
        if key not in self._compatible:
            platform = self.backend.platform
            self._compatible[key] = module in platform.modules and \
                platform.slots[slot].name in platform.module(module).slots
        return self._compatible[key]

    def compatible_slots(self, module: str) -> tuple[int, ...]:
        """Slots whose partition has a partial bitstream of ``module``."""
        slots = self._compatible_slots.get(module)
        if slots is None:
            slots = self._compatible_slots[module] = tuple(s.index for s in self.slots
                                                           if self.compatible(s.index, module))
        return slots

    def ready_by_module(self) -> dict[str, tuple[int, ...]]:
        """Module -> slots holding it ready, in slot order (the index ``ready_with`` reads)."""
        return (self._holders or self._index())[0]

    def ready_with(self, module: str) -> tuple[int, ...]:
        return (self._holders or self._index())[0].get(module, ())

    def busy_with(self, module: str) -> tuple[int, ...]:
        return (self._holders or self._index())[1].get(module, ())

    def held_modules(self, excluding: int | None = None) -> set[str]:
        """Modules some slot (other than ``excluding``) holds ready, runs or is receiving."""
        return {s.module for s in self.slots if s.module is not None and s.index != excluding
                and s.state in (SlotState.READY, SlotState.BUSY, SlotState.LOADING)}

    def holds(self, module: str) -> bool:
        """Whether some slot holds ``module``, is running it or is being loaded with it."""
        ready, busy, loading = self._holders or self._index()
        return module in ready or module in busy or module in loading

    def coming_with(self, module: str) -> tuple[int, ...]:
        """Slots being loaded with ``module``."""
        return (self._holders or self._index())[2].get(module, ())

    def idle(self, exclude: set[int] = frozenset()) -> list[int]:
        """Slots that could start a job or take a load now (ready or blank), less ``exclude``."""
        idle = self._idle
        if idle is None:
            idle = self._idle = tuple(s.index for s in self.slots
                                      if s.state is SlotState.READY or s.state is SlotState.BLANK)
        return [i for i in idle if i not in exclude] if exclude else list(idle)

    def busy_count(self) -> int:
        return sum(s.state == SlotState.BUSY for s in self.slots)

    def victim(self, module: str, future: NeedOrder, keep: set[int] = frozenset(),
               planned: set[int] = frozenset()) -> int | None:
        """A slot to load ``module`` into: one pinned for it that does not hold it yet, a blank one,
        else the idle resident whose module is needed farthest in ``future`` (Belady) or was used
        longest ago (LRU); None if every compatible slot is busy, loading, failed, pinned (for
        another module) or in ``keep``. ``planned``: the slots (in ``keep``) of loads the caller has
        planned before this one; a fused module one of them evicts does not hold its members back."""
        pinned, slots, compatible = self.pinned, self.slots, self.compatible_slots(module)
        # A slot pinned for this very module that does not hold it yet (a new admission's pin not
        # loaded): loading it there serves the frame and the contract at once. Without this, a
        # frame committed before the pin's idle load could start waited for a slot forever.
        pin_modules = self.pin_modules
        for i in compatible if pin_modules else ():
            s = slots[i]
            if pin_modules.get(i) == module and i not in keep and s.module != module \
                    and (s.state is SlotState.BLANK or s.state is SlotState.READY) \
                    and (not self._fused or self._can_take(i, module, keep, planned)):
                return i
        candidates = [slots[i] for i in compatible if i not in keep and i not in pinned
                      and slots[i].state in _IDLE]
        if self._fused:
            return self._fused_victim(module, future, keep, candidates, planned)
        if not candidates:
            return None
        for s in candidates:
            if s.state is SlotState.BLANK:
                return s.index               # the first blank one
        if self.replacement == "lru":
            return min(candidates, key=lambda s: (s.last_used, s.index)).index
        if not future.copies:
            return max(candidates, key=lambda s: (future.key(s.module), -s.last_used, -s.index)).index
        ready, busy, loading = self._holders or self._index()

        def rank(s: Slot) -> tuple:          # evict_key, inlined: victims are on the decision path
            m = s.module
            held = len(ready.get(m, ())) + len(busy.get(m, ())) + len(loading.get(m, ()))
            return (future.key(m) if held <= 1 else future.copy_key(m, held - 1), -s.last_used, -s.index)
        return max(candidates, key=rank).index

    def evict_key(self, module: str, future: NeedOrder) -> tuple:
        """When evicting one slot's copy of ``module`` would first be felt: with n copies held
        (ready, running or on their way), the next need of an n-th copy. A surplus copy (no chain
        uses that many) is then needed never, and a copy only a rare chain needs is kept no longer
        than that chain's next frame (Belady over copies as items: a module used twice is two).
        Only where ``future`` ranks copies (``NeedOrder.copies``); else the module's first need."""
        if not future.copies:
            return future.key(module)
        ready, busy, loading = self._holders or self._index()
        held = len(ready.get(module, ())) + len(busy.get(module, ())) + len(loading.get(module, ()))
        return future.key(module) if held <= 1 else future.copy_key(module, held - 1)

    # ---- fused regions: a load may take several slots
    @property
    def platform(self) -> Platform:
        """The platform of these slots (a partition's view on several streams)."""
        return self.backend.platform

    @property
    def fused(self) -> bool:
        """Whether the platform has fused regions (a load may then take several slots)."""
        return self._fused

    def can_take(self, slot: int, module: str, keep: set[int] = frozenset()) -> bool:
        """Whether a load of ``module`` into ``slot`` would take only idle, unpinned slots besides
        ``slot`` (always, without fused regions)."""
        return not self._fused or self._can_take(slot, module, keep)

    def can_request(self, slot: int, module: str) -> bool:
        """Whether ``request(slot, module)`` would be accepted: every slot it takes idle."""
        return all(self.slots[i].state in (SlotState.BLANK, SlotState.READY)
                   for i in (load_takes(self.backend.platform, self.slots, slot, module) if self._fused else (slot,)))

    def taken_by(self, slot: int, module: str) -> tuple[int, ...]:
        """Slots ``module`` will occupy once loaded into ``slot`` (its footprint; ``(slot,)`` without
        fused regions): a plan of several loads keeps them out of its later victims. A fused module
        it evicts frees its other members, which later loads of the plan may take."""
        return self.backend.platform.footprint(slot, module) if self._fused else (slot,)

    def _can_take(self, slot: int, module: str, keep: set[int], planned: set[int] = frozenset()) -> bool:
        """Whether every other slot a load of ``module`` into ``slot`` takes is idle and unpinned, and
        unkept: its own footprint's always; an evicted fused module's unless a planned load evicts
        that module anyway (then its members are free, and only the planned slots are spoken for)."""
        platform = self.backend.platform
        own = platform.footprint(slot, module)
        for i in load_takes(platform, self.slots, slot, module):
            s = self.slots[i]
            if i == slot:
                continue
            if i in self.pinned or not (s.state is SlotState.BLANK or s.state is SlotState.READY):
                return False
            if i in keep:
                if i in own:
                    return False
                host = i if s.host is None else s.host
                held = self.slots[host].module
                if held is None or planned.isdisjoint(platform.footprint(host, held)):
                    return False
        return True

    def _fused_victim(self, module: str, future: NeedOrder, keep: set[int], candidates: list[Slot],
                      planned: set[int]) -> int | None:
        """``victim`` where loads may take several slots: among candidates whose whole take is free,
        one that evicts nothing, else the one whose soonest-needed evicted module is needed latest."""
        platform, best, best_key = self.backend.platform, None, None
        for s in candidates:
            if not self._can_take(s.index, module, keep, planned):
                continue
            takes = [self.slots[i] for i in load_takes(platform, self.slots, s.index, module)]
            evicted = [t for t in takes if t.module is not None]
            if not evicted:
                return s.index
            if self.replacement == "lru":
                key = (-max(t.last_used for t in evicted), -s.index)
            else:
                key = (min(self.evict_key(t.module, future) for t in evicted),
                       -max(t.last_used for t in evicted), -s.index)
            if best_key is None or key > best_key:
                best, best_key = s.index, key
        return best

    def _take(self, slot: int, module: str) -> None:
        """Clear every other slot a load of ``module`` into ``slot`` takes; its members follow it."""
        platform = self.backend.platform
        takes = load_takes(platform, self.slots, slot, module)
        for i in takes:
            s = self.slots[i]
            if not (s.state is SlotState.BLANK or s.state is SlotState.READY):
                raise RuntimeError(f"slot {i} is {s.state.value}; a load of {module} into slot {slot} "
                                   f"would take it")
        for i in takes:
            s = self.slots[i]
            if i != slot:
                s.state, s.module, s.owner = SlotState.BLANK, None, None
            s.host = None
        for i in members(platform, slot, module):
            self.slots[i].state, self.slots[i].host = SlotState.LOADING, slot

    def _mirror(self, slot: Slot, state: SlotState, now: float | None = None) -> None:
        """Members of ``slot``'s fused module take its state (BLANK frees them)."""
        if not self._fused:
            return
        for i in members(self.backend.platform, slot.index, slot.module):
            m = self.slots[i]
            if m.host != slot.index:
                continue
            m.state, m.owner = state, slot.owner
            if now is not None:
                m.last_used = now
            if state is SlotState.BLANK:
                m.host = None

    # ---- loads
    def request(self, slot: int, module: str, reason: str = "demand", stamp: float = 0.0) -> None:
        s = self.slots[slot]
        if s.state not in (SlotState.BLANK, SlotState.READY):
            raise RuntimeError(f"slot {slot} is {s.state.value}; it cannot take a load now")
        if self._fused:
            self._take(slot, module)
        s.state, s.module = SlotState.LOADING, module
        self._changed()
        self.port.queue.append(LoadRequest(slot, module, reason, stamp=stamp))

    @property
    def in_flight(self) -> Pending[LoadReport] | None:
        """The backend's handle on the load on the port, if any."""
        return self._pending

    def start_next(self, now: float) -> float | None:
        """If the port is idle and a load waits, run it on the backend; return when it ends."""
        if self.port.current is not None or not self.port.queue:
            return None
        request = self.port.queue.popleft()
        request.attempts += 1
        try:
            self._pending = self.backend.start_load(request.slot, request.module)
        except Exception as exc:        # a hardware fault (errors.HardwareError's contract): a failed attempt
            log.error("slot %d: load of %s could not start: %s: %s", request.slot, request.module,
                      type(exc).__name__, exc)
            self._failed(request)
            return self.start_next(now)     # the retry (or the next load, once the slot is quarantined)
        self.port.start(request, now, self._pending.seconds)
        return self.port.busy_until

    def finish(self, now: float) -> tuple[LoadRequest, bool]:
        """The load on the port ended: (request, ok). A first failure is retried at the head of the
        queue; a second quarantines the slot."""
        request, pending = self.port.finish(), self._pending
        self._pending = None
        try:
            report = pending.report() if pending is not None else None    # waits if the hardware is not done
        except Exception as exc:        # a hardware fault: the load failed
            log.error("slot %d: load of %s failed: %s: %s", request.slot, request.module, type(exc).__name__, exc)
            report = None
        if report is not None:
            self.port.busy_s += report.seconds - pending.seconds        # as measured, where it differs
        slot = self.slots[request.slot]
        self._changed()
        if report is not None and report.ok:
            slot.state, slot.last_used = SlotState.READY, now
            self._mirror(slot, SlotState.READY, now)
            return request, True
        self._failed(request, report.error.name if report else "fault")
        return request, False

    def _failed(self, request: LoadRequest, why: str = "fault") -> None:
        """A load attempt failed: the first is retried at the head of the queue, a second
        quarantines the slot (FAILED: never loaded or used again)."""
        slot = self.slots[request.slot]
        self._changed()
        self.backend.reset_slot(request.slot)
        if request.attempts < 2:
            log.warning("slot %d: load of %s failed (%s); retrying once", request.slot, request.module, why)
            self.port.queue.appendleft(request)
            return
        log.error("slot %d: load of %s failed twice; slot quarantined", request.slot, request.module)
        self._mirror(slot, SlotState.BLANK)
        slot.state, slot.module = SlotState.FAILED, None
        self.quarantined += 1

    def reset(self, slots: Sequence[int], now: float) -> None:
        """Slots whose job the watchdog ended: reset on the board and BLANK (reloaded when needed)."""
        for i in slots:
            s = self.slots[i]
            self.backend.reset_slot(i)
            self._mirror(s, SlotState.BLANK)
            s.state, s.owner, s.module, s.last_used = SlotState.BLANK, None, None, now
        self._changed()

    # ---- jobs
    def acquire(self, slots: Sequence[int], owner: str) -> None:
        for i in slots:
            s = self.slots[i]
            if s.state != SlotState.READY:
                raise RuntimeError(f"slot {i} is {s.state.value}, not ready")
            s.state, s.owner = SlotState.BUSY, owner
            self._mirror(s, SlotState.BUSY)
            self._shift(s, 0, 1)

    def release(self, slots: Sequence[int], now: float) -> None:
        for i in slots:
            s = self.slots[i]
            was_busy = s.state is SlotState.BUSY
            s.state, s.owner, s.last_used = SlotState.READY, None, now
            self._mirror(s, SlotState.READY, now)
            if was_busy:
                self._shift(s, 1, 0)
            else:
                self._changed()

    def _shift(self, slot: Slot, source: int, target: int) -> None:
        """Move ``slot`` between two tables of the index (0 ready, 1 busy) in place: a frame's
        start and end change nothing else, and rebuilding costs a decision several microseconds."""
        self._idle = None
        if self._holders is None:
            return
        src, dst, module, index = self._holders[source], self._holders[target], slot.module, slot.index
        held = src[module]
        if len(held) == 1:
            del src[module]
        else:
            src[module] = tuple(i for i in held if i != index)
        held = dst.get(module)
        dst[module] = (index,) if held is None else tuple(sorted((*held, index)))
