"""What a scheduling policy is: it sees the engine after every event and starts frames or loads."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from fpgashare.catalogue.fused_slots import widest_first
from fpgashare.sched.core.engine import Frame
from fpgashare.sched.core.slots import SlotState
from fpgashare.sched.core.view import EngineView


class Policy(ABC):
    name: str = "policy"
    admission: bool = False     #: True: pipelines pass runtime/sched/analysis/admission.py before they run

    def setup(self, engine: EngineView) -> None:
        """Before the first release: fill blank slots with the modules the first frames need, in
        the order they are needed (the same warm-up for every policy that does not override it)."""
        future = engine.foresight.need_order()
        for module in list(future):
            if engine.slots.ready_with(module) or engine.slots.coming_with(module):
                continue
            victim = engine.slots.victim(module, future)
            if victim is None or engine.slots.slots[victim].state != SlotState.BLANK:
                break
            engine.load(victim, module, "warm-up")

    @abstractmethod
    def dispatch(self, engine: EngineView) -> None:
        """Start what can start now; queue the loads that are needed."""

    # Shared steps -------------------------------------------------------------------------
    @staticmethod
    def start_if_resident(engine: EngineView, frame: Frame, reserved: set[int]) -> bool:
        """Start ``frame`` if every stage's module is resident in a free slot and the video stream is free."""
        chosen, missing = engine.placement.find_slots(frame, reserved)
        if missing or not engine.stream.free():
            return False
        engine.start(frame, [s for s in chosen if s is not None])
        return True

    @staticmethod
    def load_missing(engine: EngineView, frame: Frame, keep: set[int], reason: str = "demand") -> set[int]:
        """Queue the loads ``frame`` needs, if they let it start sooner than waiting would.

        Each stage's module comes from a free resident slot, a slot already being loaded with it, a
        busy slot holding it (free when its job ends), or a new load into a victim slot. The plan is
        to wait for busy copies and load only modules nobody holds; if that would make the frame (or
        one queued behind it for the same busy modules) late, a copy is loaded wherever a victim
        slot exists when that starts it sooner (with one video stream, only a busy copy that frees
        after the stream does can make it so). Nothing is loaded if some stage has no source.
        Returns the slots the frame counts on, so later decisions leave them alone."""
        chosen, _ = engine.placement.find_slots(frame, keep)
        used = set(keep)
        used.update(s for s in chosen if s is not None)
        steps: list[tuple[str, float | None]] = []   # module, when its busy copy frees (None: no copy)
        for module, slot in zip(frame.modules, chosen, strict=True):
            if slot is not None:
                continue
            coming = next((s for s in engine.slots.coming_with(module) if s not in used), None)
            if coming is not None:
                used.add(coming)
                continue
            busy = min(((engine.placement.free_at(s) or engine.now, s) for s in engine.slots.busy_with(module)
                        if s not in used), default=None)
            if busy is not None:
                used.add(busy[1])
            steps.append((module, busy[0] if busy is not None else None))
        if not steps:
            return used                    # every module is resident or on its way
        future = engine.foresight.need_order([frame])
        # Victims go first to modules nobody holds (they are needed), then to extra copies.
        plan: list[tuple[str, float | None, int | None]] = []   # module, busy copy frees at, victim
        victims: set[int] = set()
        if engine.slots.fused:      # fused modules take their victims first (runtime/catalogue/fused_slots.py)
            steps = [steps[i] for i in widest_first(engine.slots.platform, [m for m, _ in steps])]
        for module, free in steps:
            if free is None:
                victim = engine.slots.victim(module, future, keep=used | victims, planned=victims)
                if victim is None:
                    return used            # this stage has no slot to come from
                victims.update(engine.slots.taken_by(victim, module))
                plan.append((module, None, victim))
        # With a busy copy that frees only after the stream does, a new copy may start the frame sooner.
        stream_at = engine.stream.free_at()
        if any(free is not None and free > stream_at for _, free in steps):
            for module, free in steps:
                if free is not None:
                    victim = engine.slots.victim(module, future, keep=used | victims, planned=victims)
                    if victim is not None:
                        victims.update(engine.slots.taken_by(victim, module))
                    plan.append((module, free, victim))
            plan = Policy._copies_or_waits(engine, frame, plan, stream_at)
        for module, _, victim in plan:
            engine.load(victim, module, reason)
            used.add(victim)
        return used

    @staticmethod
    def _copies_or_waits(engine: EngineView, frame: Frame, plan: list[tuple[str, float | None, int | None]],
                         stream_at: float) -> list[tuple[str, float | None, int | None]]:
        """The loads of ``plan`` to queue when some stages' modules are held by busy slots (a
        step's second field: when that slot frees): a copy costs a load and evicts something, so
        copies are made only when waiting would make this frame, or a frame queued behind it for
        the same busy modules, late, and a copy would start it sooner."""
        ready_at = engine.now + engine.port.backlog_s()

        def start(loads: list[tuple[str, float | None, int | None]]) -> float:
            """When the frame could start if ``loads`` are queued and the other stages wait."""
            waits = [step[1] for step in plan if step not in loads and step[1] is not None]
            done = ready_at + sum(engine.port.load_seconds(v) for _, _, v in loads if v is not None)
            return max([*waits, done, stream_at] if loads else [*waits, stream_at])

        wait_plan = [step for step in plan if step[1] is None]
        copy_plan = [step for step in plan if step[2] is not None]
        shared = {module for module, free, _ in plan if free is not None}
        wait_start = start(wait_plan)
        t, late = wait_start, False
        for other in sorted((f for f in engine.pending if shared & set(f.modules)),
                            key=lambda f: (f is not frame, f.deadline, f.seq)):
            t += other.exec_s
            late = late or t > other.deadline
        return copy_plan if late and start(copy_plan) < wait_start else wait_plan


class PriorityPolicy(Policy):
    """Pending frames in priority order: each starts if its modules are resident in free slots;
    the first blocked one may queue loads, the rest use only what is resident, so they never put
    loads on the port ahead of it."""

    #: True: while the first blocked frame waits for its loads, a later frame that ends before
    #: that frame's latest start (deadline less its run time and one load of slack) may run on
    #: the idle resident slots it waits with (the load is then hidden under that frame's run).
    borrow: bool = False

    @abstractmethod
    def priority(self, frame: Frame) -> tuple:
        """Sort key: smaller goes first."""

    def hopeless(self, engine: EngineView, frame: Frame, missing: Sequence[str], stream_at: float) -> str | None:
        """A reason to drop ``frame`` now (``missing``: its modules not resident in a free slot;
        ``stream_at``: when the video stream can next take it), or None to keep it (the default:
        never drop)."""
        return None

    def port_idle_work(self, engine: EngineView, waiting: list[Frame]) -> Callable[[set[int]], None] | None:
        """What to do at the end of a dispatch that leaves the port idle (``waiting``: the pending
        frames in priority order), given the slots pending frames keep (``reserved``), or None
        for nothing (the default)."""
        return None

    def dispatch(self, engine: EngineView) -> None:
        reserved: set[int] = set()
        borrowable: set[int] = set()         # idle resident slots the first blocked frame waits with
        lend_until = float("-inf")           # a frame ending by then may run on them meanwhile
        blocked_seen = False
        blocked: dict[tuple[str, int], list[str]] = {}   # (pipeline, pass) -> missing; slots only get scarcer
        now = engine.now
        work, work_for = None, -1           # the port's work, once asked (and the pending count then)
        idle = set(engine.slots.idle())     # ready or blank; refreshed when a start or a load takes some
        stream_at = engine.stream.free_at()  # refreshed when a frame starts
        frames = sorted(engine.pending, key=self.priority)
        for position, frame in enumerate(frames):
            borrows = now + frame.exec_s <= lend_until
            keep = reserved - borrowable if borrows else reserved
            if blocked_seen and idle <= keep:
                if idle <= reserved - borrowable:
                    break   # nothing left to start on, borrow or load into; the rest are judged next time
                continue
            if (frame.pipeline.name, frame.step) in blocked and not borrows:
                chosen, missing = [], blocked[frame.pipeline.name, frame.step]
            else:
                chosen, missing = engine.placement.find_slots(frame, keep)
                if missing and not borrows:
                    blocked[frame.pipeline.name, frame.step] = missing
            # Once the stream is taken and the first blocked frame has its loads, a blocked frame
            # can neither start nor load: it is judged on the stream alone now, in full next time.
            settled = blocked_seen and missing and not engine.stream.free()
            reason = self.hopeless(engine, frame, () if settled else missing, stream_at)
            if reason:
                engine.drop(frame, reason)
                continue
            if not missing:
                if engine.stream.free():
                    engine.start(frame, [s for s in chosen if s is not None])
                    idle = set(engine.slots.idle())
                    stream_at = engine.stream.free_at()
                else:                           # ready, waiting for the video stream: keep its slots
                    reserved |= {s for s in chosen if s is not None}
                continue
            if not blocked_seen:
                blocked_seen = True
                resident = {s for s in chosen if s is not None}
                reserved |= self.load_missing(engine, frame, reserved)
                idle = set(engine.slots.idle())
                if self.borrow:
                    borrowable = resident
                    lend_until = frame.deadline - frame.remaining_s - engine.port.longest_load_s()
                if not engine.stream.free():
                    work = self._port_idle_work(engine, frames)
                    if work is None:
                        # The rest can neither start (the stream is taken), nor queue loads (this
                        # frame's go first), nor steer the port (nothing to do there): only a
                        # frame that cannot finish even once the stream frees is dropped now; the
                        # rest are judged in full next time, and a frame starts only after that.
                        for later in frames[position + 1:]:
                            reason = self.hopeless(engine, later, (), stream_at)
                            if reason:
                                engine.drop(later, reason)
                        return
                    work_for = len(engine.pending)     # still right unless a later frame is dropped
        if work is None or work_for != len(engine.pending):
            work = self._port_idle_work(engine, frames)
        if work is not None:
            work(reserved)

    def _port_idle_work(self, engine: EngineView, frames: list[Frame]) -> Callable[[set[int]], None] | None:
        port = engine.slots.port
        if port.queue or port.current is not None:
            return None
        return self.port_idle_work(engine, [f for f in frames if f.start is None and f.outcome is None])
