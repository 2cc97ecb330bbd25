"""Whether the daemon admits a real-time registration: the host first, then the fabric's trial on
a worker, tried again if a departure changed the set meanwhile; for a chain with a host fallback,
the first placement of its stages that both accept.

The fabric's trial runs off the loop on a snapshot taken on it (``Board.admission_test``), so
frames keep flowing; its answer stands only for the set it was made for (``Board.trial_current``),
hence the re-trial. What a trial leaves for ``add_pipeline`` is kept per spec object
(runtime/sched/board/trials.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.core.slots import SlotState
from fpgashare.sched.host.cpu_fallback import cpu_share, fallback_candidates
from fpgashare.wire.protocol import ProtocolError

if TYPE_CHECKING:
    from fpgashare.catalogue.platform import Platform
    from fpgashare.daemon.off_loop import OffLoop
    from fpgashare.sched.board.board import Board
    from fpgashare.sched.host.cpu_work import CpuCost
    from fpgashare.sched.host.host_cost import HostWatch


class Admission:
    """A registration's admission, handed the daemon's ``engine`` (the board), its ``platform``,
    the host as a resource (``host_watch``), the worker for slow work (``off_loop``) and the
    host's stage costs (``cpu_cost``)."""

    def __init__(self, engine: Board, platform: Platform, host_watch: HostWatch, off_loop: OffLoop,
                 cpu_cost: CpuCost) -> None:
        self.engine, self.platform, self.host_watch = engine, platform, host_watch
        self.off_loop, self.cpu_cost = off_loop, cpu_cost

    def on_host(self, name: str, spec: PipelineSpec) -> PipelineSpec:
        """``spec`` as the fabric must meet it, the host's reserve taken from its deadline
        (runtime/sched/host/host_cost.py), or refused naming the host."""
        fabric = self.host_watch.budget.fabric_spec(spec, [*self.engine.pipelines, *self.engine.cpu_pipelines])
        if isinstance(fabric, str):
            raise ProtocolError("admission", f"pipeline {name!r} not admitted: {fabric}")
        return fabric

    async def admit(self, spec: PipelineSpec, deadline: float) -> str | None:
        """Why ``spec`` is not admitted (None: it is): the host first (its own work for the whole
        set, runtime/sched/host/host_cost.py), then the fabric. The fabric's trial runs on a worker
        thread, on a snapshot taken here: frames keep flowing."""
        if spec.realtime:
            budget, every = self.host_watch.budget, [*self.engine.pipelines, *self.engine.cpu_pipelines, spec]
            host = budget.check(every)
            if host:
                return host
            # Each fabric operation may start up to the loop's busy period after its event: the
            # fabric's analysis counts it with every pass and load (guarantee.md, the host), and the
            # board re-checks the contracts in force if the newcomer makes it longer.
            test = self.engine.admission_test(spec, op_delay_s=budget.op_delay_s(every))
        else:
            test = self.engine.admission_test(spec)
        why = await self.off_loop.run(f"admission of {spec.name!r}", deadline, test)
        if why is None and not self.engine.trial_current(spec):
            # A departure changed the set during the trial: tried again here, on a worker (the
            # engine would test it on the loop); the caller registers it before awaiting anything.
            return await self.admit(spec, deadline)
        return why

    async def place(self, key: str, chain, period_s: float, deadline_s: float, frame: tuple[int, int],
                    params: dict, deadline: float) -> PipelineSpec | str:
        """The first placement of ``chain`` admission accepts (runtime/sched/host/cpu_fallback.py), or
        why none is: the whole chain's reason and the last placement's. Candidates are made on a
        worker (each may measure host stages), one at a time; admission snapshots on the loop."""
        engine = self.engine
        states = [s.state for s in engine.slots.slots]     # one read (on several streams: a snapshot)
        failed = frozenset(m for m in self.platform.modules
                           if all(states[s.index] is SlotState.FAILED
                                  for s in self.platform.slots_for(m)))
        used = cpu_share([*engine.pipelines, *engine.cpu_pipelines])
        reasons = []
        candidates = fallback_candidates(key, chain, period_s, deadline_s, frame, self.platform, params,
                                         self.cpu_cost, failed, used)
        what = f"placement of {key!r}"
        while (step := await self.off_loop.run(what, deadline, next, candidates, None)) is not None:
            spec, why = step
            if spec is not None:
                fabric = self.host_watch.budget.fabric_spec(spec, [*engine.pipelines, *engine.cpu_pipelines])
                spec, why = (None, fabric) if isinstance(fabric, str) else (fabric, why)
            if spec is not None:
                why = await self.admit(spec, deadline)
                if not why:
                    return spec
            reasons.append(why)
        return f"{reasons[0]}; no placement with stages on the host fits either ({reasons[-1]})"
