"""Pipelines that come and go: the part of a daemon partition's engine that registers and ends
them (``Registrations``), each real-time change a mode change analysed step by step.

Admission for a new real-time pipeline is the one ``edf`` uses for workload files, run against the
pipelines already admitted (runtime/sched/analysis/join.py); a pipeline admitted joins through a
mode change (runtime/sched/analysis/mode_change.py) whose every step keeps the guarantee of the
pipelines admitted before it; one that leaves is given its pins back through another. Frames its
app sends before its switch wait for it in the release source (runtime/sched/sources/submitted.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.holds import SEARCH_S, with_holds
from fpgashare.sched.analysis.join import join_verdict
from fpgashare.sched.analysis.mode_change import ModeChanges
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.board.trials import Store, recall, remember
from fpgashare.sched.core.engine import Engine
from fpgashare.sched.core.jobs import DnnRequest, Frame
from fpgashare.sched.host.cpu_work import host_inference
from fpgashare.sched.sources.submitted import Submissions


class Registrations:
    """Registers and ends pipelines of ``engine``, a partition fed by ``source``."""

    def __init__(self, engine: Engine, source: Submissions) -> None:
        self.engine, self.source = engine, source
        #: pipeline -> (target version, its analysis, the pins-given-back step before it or None,
        #: the set it joins), per spec object (trials.py)
        self.verdicts: Store = {}
        self.pins_given_back = 0           #: joins that gave pins back first (analysis/join.py)
        #: Registrations and departures, each a mode change analysed step by step (mode_change.py).
        self.changes = ModeChanges(engine, self.joined)
        source.joining = self.changes.joining
        self.held_by_board = False          #: set by the board while a re-layout waits (relayout.py)
        #: Extra arguments of every analysis: a partition of the board counts the port shared with
        #: the others, the board's register traffic, and leaves DDR to the board.
        self.analysis_kw: dict = {}
        #: the most partitions the board may re-partition into: admissions keep slack for a pin
        #: load with the port shared that many ways (analyse's ``afford_share``)
        self.afford_share: int | None = None

    @property
    def changing(self) -> bool:
        """Whether a mode change is under way here or a board-wide re-layout waits."""
        return self.changes.active or self.held_by_board

    # ---- admission
    def admission_test(self, spec: PipelineSpec, control_s: float | None = None) -> Callable[[], str | None]:
        """A callable that says why ``spec`` cannot join the pipelines registered now, or None if
        it can (edf's schedulability analysis; policies without it admit everything). It works on
        a snapshot, so it may run off the engine's thread. The pins already in force stay where
        they are. ``control_s``: each operation's cost beyond its cycles, if not the board's now
        (the host's delay with the newcomer)."""
        e = self.engine
        taken = self.name_taken(spec.name)
        if taken:
            return lambda: taken
        if not spec.realtime or not e.policy.admission or spec.on_cpu_only:
            return lambda: None
        changes = self.changes
        version, before, loads = changes.version, changes.target_pipelines, dict(changes.target_loads)
        platform = e.working_platform()
        working = {s.index for s in platform.slots}
        pinned = {s: m for s, m in changes.target_contract.pinned.items() if s in working}
        lost = [m for m in spec.modules if not platform.slots_for(m)]
        if lost:
            return lambda: f"every slot that can hold {lost[0]} is quarantined"
        afford = self.afford_share
        kw = dict(self.analysis_kw) if control_s is None else {**self.analysis_kw, "control_s": control_s}

        def test() -> str | None:
            verdict, give_back, why = join_verdict(before, loads, spec, platform, pinned, kw, afford)
            remember(self.verdicts, spec, (version, verdict, give_back, before))
            return why

        return test

    def budget(self, spec: PipelineSpec) -> None:
        """Give the verdict ``admission_test``'s trial left for ``spec`` the new set's hold budgets
        (runtime/sched/analysis/holds.py): a part of the trial, made where the trial runs (off the
        daemon's loop: the budgets re-run the test up to a few times per pipeline), for at most
        ``holds.SEARCH_S``. A change whose verdict got none holds no frame (always sound)."""
        entry = recall(self.verdicts, spec)
        if entry is None or not entry[1].ok:
            return
        version, verdict, give_back, before = entry
        verdict = with_holds(verdict, [*before, spec], dnn=bool(self.engine.dnn_pipelines),
                             until=time.monotonic() + SEARCH_S)
        remember(self.verdicts, spec, (version, verdict, give_back, before))

    def name_taken(self, name: str) -> str | None:
        e = self.engine
        every = (*e.pipelines, *self.changes.joining(), *e.dnn_pipelines, *e.cpu_pipelines)
        if name in {p.name for p in every}:
            return f"a pipeline named {name!r} is already registered"
        return None

    def recheck(self, control_s: float) -> Callable[[], tuple[str | None, object]]:
        """A callable that analyses the set this partition is going to (its pipelines after every
        queued change) with every operation costing ``control_s`` beyond its cycles, its pins kept:
        ``(why not, None)`` or ``(None, verdict)``. A snapshot, as admission's."""
        changes = self.changes
        platform, pipelines = self.engine.working_platform(), changes.target_pipelines
        pinned = dict(changes.target_contract.pinned)
        kw = {**self.analysis_kw, "control_s": control_s}
        dnn = bool(self.engine.dnn_pipelines)

        def test() -> tuple[str | None, object]:
            verdict = analyse(pipelines, platform, keep_pinned=pinned, **kw)
            if not verdict.ok:
                return verdict.reason, None
            return None, with_holds(verdict, pipelines, dnn=dnn, until=time.monotonic() + SEARCH_S)

        return test

    # ---- registration
    def add_pipeline(self, spec: PipelineSpec, admitted: bool = False,
                     on_ready: Callable[[], None] | None = None) -> None:
        """Register ``spec``; ``admitted``: the caller ran ``admission_test`` against the current set.
        A real-time pipeline joins through a mode change: ``on_ready`` is called once its frames
        can run under the guarantee (at once for other pipelines); frames submitted before then
        wait for it, their deadlines counting from their arrival. Once admitted, a partition's
        change always completes."""
        e = self.engine
        reason = self.name_taken(spec.name) or (None if admitted else self.admission_test(spec)())
        if reason:
            raise FpgashareError(reason)
        if spec.on_cpu_only:                # the host's alone: nothing on the fabric changes
            e.cpu_pipelines.append(spec)
            if not spec.realtime:
                e.dnn_images[spec.name] = 0
                self.source.host_nets[spec.name] = host_inference(spec.model)
            if on_ready is not None:
                on_ready()
            return
        if not spec.realtime and "dnn_tile" not in e.backend.platform.modules:
            raise FpgashareError(f"{e.backend.platform.name} has no dnn_tile slots for {spec.model}")
        if spec.realtime and e.policy.admission:
            version, verdict, give_back, _ = recall(self.verdicts, spec, (None,) * 4, take=True)
            if verdict is None or not verdict.ok or version != self.changes.version:
                # Against the set as it is now, here (a daemon's loop: no hold budgets computed).
                why = self.admission_test(spec)()
                if why:
                    raise FpgashareError(why)
                _, verdict, give_back, _ = recall(self.verdicts, spec, take=True)
            if give_back is not None:               # pins given back first (analysis/join.py)
                self.changes.ask(give_back, self.changes.target_pipelines, None, None)
                self.pins_given_back += 1
            self.changes.ask(verdict, [*self.changes.target_pipelines, spec], spec, on_ready)
            e.decide()
            return
        if spec.realtime:                   # a policy without admission: no contract to change
            self.joined(spec)
            if on_ready is not None:
                on_ready()
            return
        e.dnn_images[spec.name] = 0
        e.dnn.queue[spec.name] = []
        self._join_set("dnn_pipelines", spec)
        e.decide()
        if on_ready is not None:
            on_ready()

    def joined(self, spec: PipelineSpec, cancelled: bool = False) -> None:
        """``spec``'s switch came (or, without admission, its registration): its frames are
        released from now on; those that came before it are released now, their deadlines still
        counting from their arrival. ``cancelled``: its app left meanwhile."""
        e = self.engine
        held = self.source.take_held(spec.name)
        if cancelled:
            for frame in held:
                e.finish(frame, "dropped", "the pipeline was closed before it could run")
            return
        self._join_set("pipelines", spec)
        for frame in held:
            self.source.arrive(frame)

    def _join_set(self, kind: str, spec: PipelineSpec) -> None:
        """``spec`` into the engine's ``kind`` list (``pipelines`` or ``dnn_pipelines``), all or
        nothing: if the engine cannot take the new set, the set is as it was."""
        e = self.engine
        getattr(e, kind).append(spec)
        try:
            e.pipelines_changed()
        except BaseException:
            setattr(e, kind, [p for p in getattr(e, kind) if p is not spec])
            e.pipelines_changed()
            raise

    def pipeline_state(self, name: str) -> tuple:
        """What moves with real-time pipeline ``name`` to another partition (relayout.py): its
        arrival curve so far."""
        return self.source.arrivals.state(name)

    def adopt(self, spec: PipelineSpec, state: tuple) -> None:
        """Take real-time pipeline ``spec`` from another partition, with ``pipeline_state``'s
        ``state`` (its contract comes with the partition's next mode change)."""
        self.source.arrivals.restore(spec.name, state)
        self.engine.pipelines.append(spec)

    # ---- departure
    def remove_pipeline(self, name: str, reason: str) -> list[Frame]:
        """End a pipeline: its waiting frames are dropped with ``reason`` (returned); frames
        already running finish on the fabric and are reported as usual. The contract it was
        admitted under stays in force until the partition's next idle instant (mode_change.py)."""
        e = self.engine
        dropped = [f for f in e.pending if f.pipeline.name == name]
        for frame in dropped:
            e.drop(frame, reason)
        for frame in self.source.take_held(name):
            dropped.append(frame)
            e.finish(frame, "dropped", reason)
        for request in e.dnn.queue.pop(name, []):
            e.finish_dnn(request, "dropped", reason)
        for request, _, _ in [w for w in e.cpu_jobs.running.values() if isinstance(w[0], DnnRequest)]:
            if request.pipeline.name == name and request.outcome is None:
                e.finish_dnn(request, "dropped", reason)
        self.source.host_nets.pop(name, None)
        was_realtime = any(p.name == name for p in e.pipelines)
        joining = self.changes.cancel(name)
        e.pipelines = [p for p in e.pipelines if p.name != name]
        e.dnn_pipelines = [p for p in e.dnn_pipelines if p.name != name]
        e.cpu_pipelines = [p for p in e.cpu_pipelines if p.name != name]
        if e.policy.admission and (was_realtime or joining):
            self._ask_departure(name)
        held = [f for f in e.frames if f.pipeline.name == name and f.outcome is None
                and f.start is None and f not in e.pending]
        for frame in held:                  # released later (an arrival held to its curve)
            e.finish(frame, "dropped", reason)
        self.source.arrivals.forget(name)
        e.pipelines_changed()
        e.decide()
        return dropped

    def _ask_departure(self, name: str) -> None:
        """A mode change to the set without ``name``: pins of modules no pipeline left uses are
        given back, the rest keep their slots. Fewer frames need no more time than the set
        admitted, so the contract in force stays valid until the switch."""
        changes = self.changes
        left = [p for p in changes.target_pipelines if p.name != name]
        used = {m for p in left for m in p.modules}
        kept = {s: m for s, m in changes.target_contract.pinned.items() if m in used}
        verdict = analyse(left, self.engine.working_platform(), keep_pinned=kept, few_pins=True, **self.analysis_kw)
        if not verdict.ok or set(verdict.contract.pinned.items()) - set(kept.items()):
            return                          # keep the contract in force (valid for any subset)
        changes.ask(verdict, left, None, None)
