"""The daemon's operations, one method per op (``_op_<name>``, gathered once into ``handlers``):
each checks every field first (checks.py), then the client's quotas (limits.py), and only then
changes state. A registration
that fails at any point after that is undone entirely: engine, ring, names, quota counts."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.workload import DNN_MODELS, PipelineSpec, realtime_spec
from fpgashare.daemon import checks
from fpgashare.daemon.admission import Admission
from fpgashare.daemon.limits import refuse
from fpgashare.daemon.sessions import Client, PipelineState
from fpgashare.daemon.turns import TurnsByUser
from fpgashare.errors import FpgashareError, FrameError
from fpgashare.sched.core.slots import SlotState
from fpgashare.sched.host.cpu_work import chain_shape
from fpgashare.sched.host.host_cost import FREE, HostBudget, HostWatch
from fpgashare.wire.protocol import VERSION, ProtocolError, reply
from fpgashare.wire.shm import FrameRing, check_layout

if TYPE_CHECKING:
    from fpgashare.backends.base import Backend
    from fpgashare.daemon.control_lane import ControlLane
    from fpgashare.daemon.driver import Driver
    from fpgashare.daemon.limits import Limits
    from fpgashare.daemon.off_loop import OffLoop
    from fpgashare.daemon.sessions import Sessions
    from fpgashare.daemon.tenants import Tenants
    from fpgashare.sched.host.cpu_work import CpuCost

log = logging.getLogger("fpgashare.daemon")

RING_SLOTS = 4            #: frames a client may have in flight per pipeline
#: Longest wait, in board seconds, for an admitted pipeline's mode change (its pins loading
#: while the partition is idle: runtime/sched/analysis/mode_change.py) before registration gives up.
READY_LIMIT_S = 30.0


class Ops:
    """The requests' handlers (``handlers``: op name -> coroutine), handed what they act on: the
    board (``backend``), the engine through its ``driver``, the clients' ``sessions``, the
    ``tenants`` and their ``limits``, the worker for slow work (``off_loop``), the host's stage
    costs (``cpu_cost``) and ``await status(client, own)``, the status answer."""

    def __init__(self, backend: Backend, driver: Driver, sessions: Sessions, tenants: Tenants, limits: Limits,
                 off_loop: OffLoop, cpu_cost: CpuCost, status: Callable[[Client, bool], Awaitable[dict]],
                 host_watch: HostWatch | None = None, host_spent: dict | None = None, streams: int = 1,
                 lane: ControlLane | None = None) -> None:
        self.backend, self.platform = backend, backend.platform
        self.driver, self.engine, self.clock = driver, driver.engine, driver.clock
        self.sessions, self.tenants, self.limits = sessions, tenants, limits
        self.off_loop, self.cpu_cost, self.status = off_loop, cpu_cost, status
        #: the host as a resource (runtime/sched/host/host_cost.py): admission's host check, the
        #: fabric's share of each deadline, and the host time each frame's submit took
        self.host_watch = host_watch or HostWatch(HostBudget(FREE, driver.dilation, None))
        self.host_spent = host_spent if host_spent is not None else {}
        self.streams = streams
        self.lane = lane          #: control work's turns (control_lane.py): a request resumes at one
        #: whether a registration is admitted: the host, the fabric's trial on a worker (admission.py)
        self.admission = Admission(self.engine, self.platform, self.host_watch, off_loop, cpu_cost)
        #: one registration at a time (each trial sees the set it joins), given in turns by user
        self._registering = TurnsByUser()
        self._networks_pending: dict[str, int] = {}   # client networks of registrations under way
        self.handlers = {name[len("_op_"):]: getattr(self, name) for name in dir(self) if name.startswith("_op_")}

    async def _op_hello(self, client: Client, message: dict) -> dict:
        return {"server": "fpgashare", "version": VERSION, "platform": self.platform.name,
                "backend": self.backend.name, "dilation": self.driver.dilation, "now": self.clock.now(),
                "client": client.id, "streams": self.streams}

    async def _op_clock(self, client: Client, message: dict) -> dict:
        return {"now": self.clock.now(), "dilation": self.driver.dilation}

    async def _op_status(self, client: Client, message: dict) -> dict:
        scope = message.get("scope", "all")
        if scope not in ("all", "own"):
            raise ProtocolError("bad_request", f"status: scope must be 'all' or 'own', got {checks.show(scope)}")
        return await self.status(client, scope == "own")

    async def _op_pipeline(self, client: Client, message: dict) -> None:
        request = checks.pipeline_request(message)
        name, stages, params, fallback = request.name, request.stages, request.params, request.fallback
        period_ms, deadline_ms, jitter_ms = request.period_ms, request.deadline_ms, request.jitter_ms
        rows, cols = request.rows, request.cols
        self.sessions.check_name_free(client, name)
        count = sum(1 for s in client.pipelines.values() if s.ring.spec.out_shape != (1,))
        if count >= self.limits.pipelines_per_client:
            raise refuse("pipelines_per_client", self.limits.pipelines_per_client,
                         f"pipeline {name!r}: this client has {count} real-time pipelines")
        key = self.sessions.engine_name(client, name)
        try:
            chain = resolve_chain(stages, params)
        except FpgashareError as exc:
            raise ProtocolError("bad_request", f"pipeline {name!r}: stages: {exc}") from None
        try:
            spec = realtime_spec(key, stages, period_ms / 1e3, deadline_ms / 1e3, [rows, cols], self.platform, params,
                                 jitter_s=jitter_ms / 1e3)
        except FpgashareError as exc:
            if not _capacity(exc):
                raise ProtocolError("bad_request", f"pipeline {name!r}{exc}") from None
            if fallback is None:        # a valid request the fabric cannot take
                raise ProtocolError("admission", f"pipeline {name!r} not admitted{exc}") from None
            spec = None                 # the fabric cannot take it whole: placements below
        in_shape = chain[0].kind.input_shape(rows, cols)
        out_shape = chain_shape(chain, rows, cols)
        async with self._registering.hold(client.uid):
            await self._turn()                                   # the lock may have been waited for
            self.sessions.check_name_free(client, name)          # the same client may have raced itself
            # The key again, under the lock: another client may have taken the name meanwhile.
            key = self.sessions.engine_name(client, name)
            if spec is not None and spec.name != key:
                spec = dataclasses.replace(spec, name=key)
            self._check_shm(client, name, RING_SLOTS * _ring_bytes(in_shape, out_shape))
            deadline = self.off_loop.deadline()
            try:
                if fallback is None:
                    spec = self.admission.on_host(name, spec)
                    reason = await self.admission.admit(spec, deadline)
                    if reason:
                        raise ProtocolError("admission", f"pipeline {name!r} not admitted: {reason}")
                else:
                    spec = await self.admission.place(key, chain, period_ms / 1e3, deadline_ms / 1e3, (rows, cols),
                                                      params, deadline)
                    if isinstance(spec, str):
                        raise ProtocolError("admission", f"pipeline {name!r} not admitted: {spec}")
                ready = asyncio.get_running_loop().create_future()
                ring = self._register(client, name, spec, in_shape, tuple(out_shape),
                                      on_ready=lambda: ready.done() or ready.set_result(None),
                                      on_refused=lambda why: ready.done() or ready.set_exception(
                                          ProtocolError("admission", f"pipeline {name!r} not admitted: {why}")))
            finally:
                # What its trials left and add_pipeline did not take (a refusal, a quota after the
                # trial): nothing of a registration outlives it (sched/board/trials.py).
                self.engine.forget_trials(key)
            # One registration at a time until it can run: the next is analysed against the set
            # its change leaves (runtime/sched/analysis/mode_change.py, relayout.py).
            await self._until_ready(client, name, ready)
        log.info("client %d: pipeline %s admitted as %s (%s)", client.id, name, key,
                 ", ".join(f"{stage} on {where}" for stage, where in spec.placement))
        due_s = self._app_due_s(spec)
        answer = {"ring": ring.spec.to_wire(), "deadline_ms": due_s * 1e3, "exec_ms": spec.exec_s * 1e3,
                  "placement": [list(p) for p in spec.placement]}
        await self._answer_with_ring(client, message["id"], answer, ring)

    async def _until_ready(self, client: Client, name: str, ready: asyncio.Future) -> None:
        """Registration returns once the pipeline's frames can run under the guarantee (its
        mode change switched); a change that never completes ends the pipeline instead. On a
        virtual clock nothing else moves time meanwhile: the registration takes the board time
        its change needs, event by event."""
        if self.driver.virtual:
            self.driver.advance_events(self.clock.now() + READY_LIMIT_S, until=ready.done)
        try:
            await asyncio.wait_for(asyncio.shield(ready), READY_LIMIT_S * self.driver.dilation)
        except ProtocolError:
            await self._turn()
            if name in client.pipelines:
                self.sessions.end_pipeline(client, name, "its partitions could not change in time")
            raise
        except TimeoutError:
            await self._turn()
            if name in client.pipelines:
                self.sessions.end_pipeline(client, name, "its mode change did not complete")
            raise ProtocolError("admission", f"pipeline {name!r}: its modules could not be made ready "
                                             f"within {READY_LIMIT_S:g} s") from None
        await self._turn()

    async def _turn(self) -> None:
        """Resume at a turn of the control lane (after waiting for something else)."""
        if self.lane is not None:
            await self.lane.turn()

    async def _op_dnn(self, client: Client, message: dict) -> None:
        """A best-effort DNN pipeline: images go into its ring, outputs come back in the reply."""
        name = checks.name(message, "name")
        model = checks.name(message, "model")
        fallback = checks.fallback(message)
        if "network" not in message:
            if model not in DNN_MODELS:
                from fpgashare.dnn.onnx_shipped import known_models

                raise ProtocolError("bad_request", f"dnn {name!r}: unknown model {model!r}; known: "
                                                   f"{known_models(network_files=False)}")
            return await self._dnn(client, message, name, model, fallback)
        # The client converted its model (e.g. ONNX): checked, kept by content, and needed until
        # this registration ends (then only while a pipeline uses it: network_wire.Registry).
        from fpgashare.dnn.network_wire import REGISTERED, network_from_wire
        from fpgashare.dnn.planning import forget
        from fpgashare.errors import NetworkError

        # Read on a worker: a file of a few hundred members takes milliseconds here (tens on a
        # board's CPU), many times what a registration is charged of its user's rate (tenants.py).
        deadline = self.off_loop.deadline()
        data = message["network"]
        try:
            net = await self.off_loop.run(f"dnn {name!r}: reading its network", deadline, network_from_wire,
                                          data, f"network for {model!r}")
            model = REGISTERED.keep(net, data, model, self._network_in_use, dropped=forget)
        except NetworkError as exc:
            raise ProtocolError("bad_request", f"dnn {name!r}: {exc}") from None
        self._networks_pending[model] = self._networks_pending.get(model, 0) + 1
        try:
            return await self._dnn(client, message, name, model, fallback, deadline)
        finally:
            self._networks_pending[model] -= 1
            if not self._networks_pending[model]:
                del self._networks_pending[model]

    def _network_in_use(self, model: str) -> bool:
        """Whether a registration under way or a pipeline uses the client network ``model``."""
        every = (*self.engine.dnn_pipelines, *self.engine.pipelines, *self.engine.cpu_pipelines)
        return model in self._networks_pending or any(getattr(p, "model", None) == model for p in every)

    async def _dnn(self, client: Client, message: dict, name: str, model: str, fallback: str | None,
                   deadline: float | None = None) -> None:
        from fpgashare.dnn.planning import misfit, network

        self.sessions.check_name_free(client, name)
        count = sum(1 for s in client.pipelines.values() if s.ring.spec.out_shape == (1,))
        if count >= self.limits.dnn_per_client:
            raise refuse("dnn_per_client", self.limits.dnn_per_client,
                         f"dnn {name!r}: this client has {count} DNN pipelines")
        states = [s.state for s in self.engine.slots.slots]
        tiles = [s for s in self.platform.slots_for("dnn_tile") if states[s.index] is not SlotState.FAILED] \
            if "dnn_tile" in self.platform.modules else []
        key = self.sessions.engine_name(client, name)
        spec = PipelineSpec(key, "besteffort", model=model)
        deadline = self.off_loop.deadline() if deadline is None else deadline     # the request's one limit
        # A model the platform's tile variant cannot hold is as good as no tile.
        too_big = misfit(self.platform, model) if tiles else None
        if not tiles or too_big:
            if fallback is None:
                why = "no dnn_tile slots" if "dnn_tile" not in self.platform.modules else \
                    "all its dnn_tile slots quarantined"
                raise ProtocolError("admission", f"dnn {name!r} not admitted: {too_big}" if too_big else
                                    f"dnn {name!r} not admitted: {self.platform.name} has {why} for {model}")
            # Best effort on the host: one image at a time on a worker, bounded by its measured cost.
            seconds = await self.off_loop.run(f"dnn {name!r}: measuring {model} on the host", deadline,
                                              self.cpu_cost.infer_seconds, model)
            spec = PipelineSpec(key, "besteffort", model=model, host=True, cpu_before_s=seconds)
        shape = (await self.off_loop.run(f"dnn {name!r}: building {model}", deadline, network, model)).input_shape
        in_shape = shape[:2] if shape[2] == 1 else shape
        async with self._registering.hold(client.uid):
            await self._turn()
            self.sessions.check_name_free(client, name)
            spec = dataclasses.replace(spec, name=self.sessions.engine_name(client, name))   # as above
            self._check_shm(client, name, RING_SLOTS * _ring_bytes(in_shape, (1,)))
            ring = self._register(client, name, spec, in_shape, (1,))
        answer = {"ring": ring.spec.to_wire(), "model": model, "placement": [list(p) for p in spec.placement]}
        await self._answer_with_ring(client, message["id"], answer, ring)

    def _check_shm(self, client: Client, name: str, nbytes: int) -> None:
        limits = self.limits
        self.tenants.check_pipeline(client, name, nbytes)
        if client.shm_bytes + nbytes > limits.shm_bytes_per_client:
            raise refuse("shm_bytes_per_client", limits.shm_bytes_per_client,
                         f"{name!r}: its ring of {nbytes} bytes on top of this client's {client.shm_bytes}")
        if self.sessions.shm_bytes + nbytes > limits.shm_bytes_total:
            raise refuse("shm_bytes_total", limits.shm_bytes_total,
                         f"{name!r}: its ring of {nbytes} bytes on top of every client's {self.sessions.shm_bytes}")

    def _app_due_s(self, spec: PipelineSpec) -> float:
        """The deadline the app asked for: the fabric's ``spec`` plus the host's R each way and more."""
        return spec.due_s + self.host_watch.budget.taken.get(spec.name, 0.0)

    def _register(self, client: Client, name: str, spec: PipelineSpec, in_shape, out_shape,
                  on_ready=None, on_refused=None) -> FrameRing:
        """Ring, engine, names and counts, all or nothing; ``on_ready``: the engine's word that
        the pipeline can run (``Board.add_pipeline``)."""
        engine = self.engine
        self.tenants.check_share(client, name, spec, {p.name: p for p in (*engine.pipelines, *engine.cpu_pipelines)},
                                 len(self.platform.slots))
        ring = FrameRing.create_private(RING_SLOTS, tuple(in_shape), tuple(out_shape), tag=f"c{client.id}")
        state = PipelineState(name, spec.name, ring, set(range(RING_SLOTS)), due_s=self._app_due_s(spec))
        added = False
        # Undo only what this request made: a pipeline of that name already in the engine is not ours.
        existed = any(p.name == spec.name for p in (*engine.pipelines, *engine.dnn_pipelines, *engine.cpu_pipelines))
        try:
            if existed or spec.name in self.sessions.states:
                raise ProtocolError("bad_request", f"{name!r}: its engine name {spec.name!r} is taken")
            self.driver.step(self.engine.add_pipeline, spec, spec.realtime, on_ready, on_refused)
            added = True
            client.pipelines[name] = state
            self.sessions.states[spec.name] = (client, state)
            self.sessions.begun(spec.name)
            client.shm_bytes += ring.nbytes
            self.sessions.shm_bytes += ring.nbytes
        except BaseException as exc:
            if client.pipelines.get(name) is state:
                del client.pipelines[name]
                client.shm_bytes -= ring.nbytes
                self.sessions.shm_bytes -= ring.nbytes
            if self.sessions.states.get(spec.name, (None, None))[1] is state:
                del self.sessions.states[spec.name]
            every = (*engine.pipelines, *engine.dnn_pipelines, *engine.cpu_pipelines)
            if not existed and (added or any(p.name == spec.name for p in every)):
                self.driver.step(engine.remove_pipeline, spec.name, "registration failed")
            ring.close()
            if isinstance(exc, FpgashareError) and not isinstance(exc, ProtocolError):
                raise ProtocolError("admission", f"{name!r} not admitted: {exc}") from None
            raise
        return ring

    async def _answer_with_ring(self, client: Client, rid: int, answer: dict, ring: FrameRing) -> None:
        """The registration's reply with the ring's descriptor; the daemon keeps only the mapping."""
        fd = ring.take_fd()
        try:
            await client.send_with_fd(reply(rid, ring_fd=True, **answer), fd)
        except (ConnectionError, OSError) as exc:
            log.warning("client %d: the ring of a new pipeline could not be handed over (%s)", client.id, exc)
            client.writer.close()          # its task ends and takes its pipelines with it

    async def _op_submit(self, client: Client, message: dict) -> None:
        return self._hand_in(client, message, "submit")

    async def _op_infer(self, client: Client, message: dict) -> None:
        return self._hand_in(client, message, "infer")

    def _hand_in(self, client: Client, message: dict, kind: str) -> None:
        """Give the engine the frame (``kind`` "submit") or DNN image ("infer") in a ring slot;
        answered when it ends."""
        started = time.perf_counter()
        name = checks.name(message, "pipeline")
        slot = checks.integer(message, "slot", -(1 << 63), (1 << 64) - 1)
        shape = checks.int_list(message, "shape", 1, 4, 0, checks.MAX_SIDE)
        dtype = checks.short_string(message, "dtype")
        state = client.pipelines.get(name)
        if state is None or state.closing or (kind == "infer") != (state.ring.spec.out_shape == (1,)):
            what = "DNN pipeline" if kind == "infer" else "real-time pipeline"
            raise ProtocolError("bad_request", f"{kind}: no {what} {name!r} of this client")
        if slot not in state.free:
            raise ProtocolError("frame", f"ring slot {slot} of {name!r} is not free (in flight or outside "
                                f"0..{state.ring.spec.slots - 1})")
        if client.in_flight() >= self.limits.outstanding_per_client:
            raise refuse("outstanding_per_client", self.limits.outstanding_per_client,
                         f"{kind} to {name!r}: this client has {client.in_flight()} frames in flight")
        self.tenants.check_submit(client, f"{kind} to {name!r}")
        # The client says what it wrote; a frame of another layout would be read as garbage.
        try:
            check_layout(tuple(shape), dtype, state.ring.spec.in_shape, state.ring.spec.dtype)
        except FrameError as exc:
            raise ProtocolError("frame", f"{name!r}: {exc}") from None
        submit = self.engine.submit if kind == "submit" else self.engine.submit_dnn
        item = submit(state.key, state.ring.input(slot))     # queued, not yet decided: it cannot have ended
        state.free.discard(slot)
        state.in_flight[id(item)] = (item, slot, message["id"])
        self.driver.advance()
        # The host's own time for this frame so far (the daemon adds its end's), unless the frame
        # ended in that step: it was answered already, and an entry would never be taken.
        if kind == "submit" and state.in_flight.get(id(item), (None,))[0] is item:
            self.host_spent[(state.key, item.seq)] = time.perf_counter() - started

    async def _op_close(self, client: Client, message: dict) -> dict:
        name = checks.name(message, "pipeline")
        state = client.pipelines.get(name)
        if state is None or state.closing:
            raise ProtocolError("bad_request", f"close: no pipeline {name!r} of this client")
        self.sessions.end_pipeline(client, name, "pipeline closed")
        await self._until_retired(client, name, state)
        return {"closed": name}

    async def _until_retired(self, client: Client, name: str, state: PipelineState) -> None:
        """A close answers once its pipeline has ended: each of its frames on the fabric answered
        (their replies precede this one on the socket) and its ring and name given back. Answered
        at once, the client saw the close done while the name was still held, and registering it
        again was refused as "already registered" whenever a frame had been on the fabric. The
        wait is the frames' own time on the fabric; bounded like a registration's mode change."""
        if client.pipelines.get(name) is not state:
            return                                  # nothing was on the fabric: retired already
        retired = asyncio.get_running_loop().create_future()
        state.on_retired = lambda: retired.done() or retired.set_result(None)
        if self.driver.virtual:
            self.driver.advance_events(self.clock.now() + READY_LIMIT_S, until=retired.done)
        try:
            await asyncio.wait_for(retired, READY_LIMIT_S * self.driver.dilation)
        except TimeoutError:
            log.warning("client %d: pipeline %s still closing after %g s", client.id, name, READY_LIMIT_S)
        await self._turn()


def _capacity(exc: FpgashareError) -> bool:
    """Whether a refusal of the whole chain is about what the fabric can do (a module it lacks, a
    frame too slow for the deadline) rather than a bad request (the frame's size)."""
    text = str(exc)
    return text.startswith(".stages") or text.startswith(": one ")


def _ring_bytes(in_shape, out_shape) -> int:
    from math import prod

    return prod(in_shape) + prod(out_shape)
