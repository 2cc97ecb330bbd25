"""The backend interface: load a module into a slot, run a frame through a chain of slots.

Times are reported in the hardware's own units (configuration-port cycles, fabric cycles) and in
seconds at the platform's clocks; a backend never reports wall time as hardware time.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
from fpgashare.bitstream.packets import PortError
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.errors import FpgashareError


@dataclass(frozen=True)
class LoadReport:
    """One partial reconfiguration: the port's verdict and how long the port was busy."""

    slot: int
    module: str
    error: PortError
    port_cycles: int
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error == PortError.OK


@dataclass(frozen=True)
class FrameReport:
    """One frame through a chain of slots."""

    output: np.ndarray | None   #: None when the caller asked for timing only (model backend)
    cycles: int           #: fabric cycles from the first input pixel to the last output pixel
    seconds: float
    #: Result registers the stages leave (moments, template_match), by stage name, read after the frame.
    results: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class DnnReport:
    """A batch of images through a chain of dnn_tile slots."""

    images: int
    cycles: int           #: fabric cycles from the first input word to the last output word
    seconds: float
    outputs: np.ndarray | None = None   #: int8 [images, outputs] when the caller gave the images


Report = TypeVar("Report", LoadReport, FrameReport, DnnReport)


@dataclass
class Pending(Generic[Report]):
    """Hardware work under way: a load on the port or a frame on the stream. ``seconds`` is the
    hardware time it is expected to take from its start; ``report()`` is its report, waiting for
    the hardware if it is not done yet."""

    seconds: float
    _result: Callable[[], Report]
    _report: Report | None = None
    _ready: Callable[[], bool] | None = None     #: whether report() would return at once (None: always)
    #: False: the work ends ``seconds`` after its start; True (HardwarePending): the backend reports it
    timed_by_hardware = False

    def ready(self) -> bool:
        """Whether the hardware is done (``report()`` would not wait); never blocks."""
        return self._report is not None or self._ready is None or self._ready()

    def report(self) -> Report:
        if self._report is None:
            self._report = self._result()
        return self._report


class HardwarePending(Pending[Report]):
    """Work whose end the hardware reports as an event: the backend calls ``ended`` from
    ``Backend.run_hardware`` at the board time it ended (the co-simulated board), and whoever waits
    for it (the engine) registers with ``when_done`` instead of assuming start + ``seconds``
    (``seconds`` is then the twin's estimate)."""

    timed_by_hardware = True

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds, self._outcome, _ready=lambda: self.ended_at is not None)
        self.ended_at: float | None = None
        self._error: BaseException | None = None
        self._on_end: list[Callable[[float], None]] = []

    def _outcome(self) -> Report:
        if self.ended_at is None:
            raise RuntimeError("the hardware has not reported this work's end yet")
        if self._error is not None:
            raise self._error
        return self._report

    def ended(self, t: float, report: Report | None, error: BaseException | None) -> None:
        """The hardware finished at board time ``t`` (the backend calls this)."""
        self.ended_at, self._error = t, error
        if error is None:
            self._report = report
        for callback in self._on_end:
            callback(t)

    def when_done(self, callback: Callable[[float], None]) -> None:
        """Call ``callback(t)`` when the hardware reports the end (at once if it has); callbacks
        run in the order they were given."""
        self._on_end.append(callback)
        if self.ended_at is not None:
            callback(self.ended_at)


def done(report: Report) -> Pending[Report]:
    """Work that ended before its start returned (the simulated boards: their time is modelled)."""
    return Pending(report.seconds, lambda: report)


class Backend(ABC):
    """What the slot manager and the schedulers may ask of the hardware."""

    name: str
    runs_dnn: bool = False      #: whether run_dnn is implemented (schedulers skip DNN backfill otherwise)
    #: Whether an operation takes its hardware time in wall time (a real board), so the wall clock
    #: is board time as it is. False: a simulated board, whose wall time is the host computing it,
    #: slower than the hardware or not at all (a daemon then dilates its clock and holds it while
    #: an operation runs: runner.calibrate_dilation, held_clock). Every backend says which it is.
    runs_in_real_time: bool
    #: Video streams this backend can carry at once (frames or DNN batches on disjoint slots):
    #: ``streams_carried(platform)``, set at construction.
    concurrent_streams: int = 1

    @classmethod
    def streams_carried(cls, platform: Platform) -> int:
        """Streams of ``platform`` this kind of backend can carry at once: the pynq DMA drives stream
        0 only so far (the twin and the co-simulated board override this)."""
        return 1
    #: A clock with hold() / release(host s, hardware s) around every operation, so a daemon's clock
    #: stands still while a simulated board is slower than its hardware (runtime/sched/core/clock.py).
    held_clock = None

    def __init__(self, platform: Platform, streams: int | None = None) -> None:
        """``streams``: run at most this many streams at once (default: all it carries)."""
        self.platform = platform
        carried = self.streams_carried(platform)
        if streams is not None and not 1 <= streams <= platform.streams:
            raise FpgashareError(f"{platform.name} has {platform.streams} video stream(s); asked for {streams}")
        self.concurrent_streams = min(carried, streams or carried)
        self._resident: list[str | None] = [None] * len(platform.slots)
        self._programmed: dict[int, tuple[str, int, int]] = {}   # slot -> DNN segment its tile holds

    def resident(self, slot: int) -> str | None:
        """Module the slot holds, or None (blank, failed, or never loaded)."""
        return self._resident[self._check_slot(slot)]

    def load(self, slot: int, module: str) -> LoadReport:
        """Reconfigure ``slot`` with ``module`` through the configuration port."""
        self._begin_load(slot, module)
        started = self._hold()
        try:
            report = self._load(slot, module)
        except BaseException:
            self._release(started, 0.0)       # a failed load must not leave the daemon's clock held
            raise
        self._release(started, report.seconds)
        self._end_load(report)
        return report

    def start_load(self, slot: int, module: str) -> Pending[LoadReport]:
        """Start reconfiguring ``slot`` with ``module`` and return at once where the hardware
        allows it (the board: the port loads while frames stream through other slots). Here the
        load runs to its end first: a simulated board's time is its cycles, not the host's."""
        return done(self.load(slot, module))

    def _begin_load(self, slot: int, module: str) -> None:
        self._check_slot(slot)
        spec = self.platform.slots[slot]
        if spec.name not in self.platform.module(module).slots:
            raise FpgashareError(f"module {module} cannot go into slot {spec.name}")
        # The slot is blank while it is written, and a new tile starts without layers. A module of a
        # fused region writes every member; a load into a member rewrites frames of the fused
        # module its host holds, which goes too (config_port.sv does the same).
        gone = set(self.platform.footprint(slot, module))
        gone |= {host for host, held in enumerate(self._resident)
                 if held is not None and slot in self.platform.footprint(host, held)}
        for i in gone:
            self._resident[i] = None
            self._programmed.pop(i, None)

    def _end_load(self, report: LoadReport) -> None:
        if report.ok:
            self._resident[report.slot] = report.module

    def run_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                  want_output: bool = True) -> FrameReport:
        """Route input -> slots[0] -> ... -> output, program each stage, stream one frame.
        With ``want_output`` False a backend may skip producing the pixels (timing only)."""
        self._check_chain(slots, stages)
        started = self._hold()
        try:
            report = self._run_frame(list(slots), list(stages), frame, want_output)
        except Exception:
            self._release(started, 0.0)
            raise
        self._release(started, report.seconds)
        return report

    def start_frame(self, slots: Sequence[int], stages: Sequence[Stage], frame: np.ndarray,
                    want_output: bool = True, stream: int = 0) -> Pending[FrameReport]:
        """``run_frame`` on video stream ``stream``, returning at once where the hardware allows it
        (the board: the DMA streams the frame while the daemon serves requests and starts loads).
        Here the frame runs to its end first."""
        return done(self.run_frame(slots, stages, frame, want_output))

    def start_dnn(self, slots: Sequence[int], model: str, images: int | np.ndarray,
                  stream: int = 0) -> Pending[DnnReport]:
        """``run_dnn`` on video stream ``stream``, returning at once where the hardware allows it.
        Here the batch runs to its end first."""
        return done(self.run_dnn(slots, model, images))

    def run_hardware(self, until_s: float) -> None:
        """Advance hardware that keeps time with the scheduler's clock (the co-simulated board) to
        ``until_s``, or to the first end of work before it (its ``HardwarePending.ended`` runs).
        Nothing to do where work ends at its start (here) or on a board's own clock."""
        return None

    def hardware_busy(self) -> bool:
        """Whether work reported through ``run_hardware`` is under way."""
        return False

    def _check_chain(self, slots: Sequence[int], stages: Sequence[Stage]) -> None:
        if len(slots) != len(stages) or not slots:
            raise FpgashareError(f"{len(stages)} stages need as many slots, got {list(slots)}")
        for slot, stage in zip(slots, stages, strict=True):
            if self.resident(slot) != stage.kind.name:
                raise FpgashareError(f"slot {slot} holds {self.resident(slot) or 'nothing'}, "
                                     f"not {stage.kind.name} (stage {stage.name})")

    def run_dnn(self, slots: Sequence[int], model: str, images: int | np.ndarray) -> DnnReport:
        """A batch of ``model`` through dnn_tile slots ``slots`` (layer-pipelined): ``images``
        is a count (throughput only: stand-in inputs, no outputs) or uint8 images [N, H, W(, C)],
        whose int8 outputs the report then carries."""
        plan, _ = self._check_dnn(slots, model, images)
        started = self._hold()
        try:
            report = self._run_dnn(list(slots), model, plan, images)
        except Exception:
            self._release(started, 0.0)
            raise
        self._release(started, report.seconds)
        return report

    def _check_dnn(self, slots: Sequence[int], model: str, images: int | np.ndarray) -> tuple[object, int]:
        """The plan of ``model`` over ``slots`` and the image count, or FpgashareError naming the problem."""
        for slot in slots:
            if self.resident(slot) != "dnn_tile":
                raise FpgashareError(f"slot {slot} holds {self.resident(slot) or 'nothing'}, not dnn_tile")
        count = images if isinstance(images, int) else len(images)
        if count < 1:
            raise FpgashareError(f"a DNN batch needs at least one image, got {count}")
        from fpgashare.dnn.planning import dnn_plan

        plan = dnn_plan(self.platform, model, len(slots))   # the caller gives as many slots as it uses
        if len(plan.stages) != len(slots):
            raise FpgashareError(f"{model} splits over {len(plan.stages)} tile(s), not {len(slots)}")
        return plan, count

    def _hold(self) -> float:
        if self.held_clock is not None:
            self.held_clock.hold()
        return time.perf_counter()

    def _release(self, started: float, hardware_s: float) -> None:
        if self.held_clock is not None:
            self.held_clock.release(time.perf_counter() - started, hardware_s)

    def dnn_setup_s(self, slots: Sequence[int], model: str, plan) -> float:
        """Fabric time a batch of ``model`` on ``slots`` spends first giving tiles that lack their
        segment of ``plan`` their layers (one word a cycle); 0 when every tile holds it."""
        from fpgashare.dnn.planning import program_words

        words = sum(program_words(model, stage.start, stage.stop, self.platform.dnn_tile)
                    for slot, stage in zip(slots, plan.stages, strict=True)
                    if self._programmed.get(slot) != (model, stage.start, stage.stop))
        return words / self.platform.fabric_clock_hz

    def unprogrammed(self, slots: Sequence[int], model: str, plan) -> list[tuple[int, int, int]]:
        """(slot, first layer, end layer) of each tile in ``slots`` that does not hold its segment of
        ``plan`` yet; from now on they are taken to hold it (a tile keeps its layers until the
        slot is reconfigured)."""
        todo = []
        for slot, stage in zip(slots, plan.stages, strict=True):
            if self._programmed.get(slot) != (model, stage.start, stage.stop):
                todo.append((slot, stage.start, stage.stop))
                self._programmed[slot] = (model, stage.start, stage.stop)
        return todo

    def _run_dnn(self, slots: list[int], model: str, plan, images: int | np.ndarray) -> DnnReport:
        raise FpgashareError(f"the {self.name} backend does not run DNN batches yet")

    def reset_slot(self, slot: int) -> None:
        """Isolate ``slot`` (its decoupler) and forget what it held: after a fault it is reloaded
        before its next job."""
        self._resident[self._check_slot(slot)] = None
        self._programmed.pop(slot, None)

    def _check_slot(self, slot: int) -> int:
        if not 0 <= slot < len(self.platform.slots):
            raise FpgashareError(f"slot {slot} does not exist on {self.platform.name} "
                                 f"({len(self.platform.slots)} slots)")
        return slot

    @abstractmethod
    def _load(self, slot: int, module: str) -> LoadReport: ...

    @abstractmethod
    def _run_frame(self, slots: list[int], stages: list[Stage], frame: np.ndarray,
                   want_output: bool) -> FrameReport: ...
