"""The shell's video stream one engine drives (``FrameStream``, a part of the engine): an input
and an output of the shell (hdl_sim/rtl/shell.sv), so one frame pass or one DNN batch at a time,
whatever slots are free. A frame's pass starts on its slots, and at its end the frame goes on to
its next pass, its CPU stages after the fabric, or its outcome."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from fpgashare.sched.core.jobs import JOB_DONE, Frame, TraceEvent, fault_reason
from fpgashare.sched.host.cpu_work import chain_shape

if TYPE_CHECKING:
    from fpgashare.backends.base import FrameReport, Pending
    from fpgashare.sched.core.cpu_jobs import CpuJobs
    from fpgashare.sched.core.dnn_jobs import DnnJobs
    from fpgashare.sched.core.engine_state import EngineState

#: Frames or DNN batches one engine streams at once: one video input and one output of the shell.
VIDEO_STREAMS = 1
NOT_BUSY = float("-inf")     # FrameStream._at while the stream can take work


class FrameStream:
    """The stream's work: the engine's running frames and its DNN part's batches. ``works``: by
    frame key, the backend's report of the pass on the stream, when done."""

    def __init__(self, engine: EngineState, dnn: DnnJobs, cpu_jobs: CpuJobs) -> None:
        self.engine, self.dnn, self.cpu_jobs = engine, dnn, cpu_jobs
        self.works: dict[str, Pending[FrameReport]] = {}
        self.lanes: dict[str, int] = {}   # frame key -> which of the engine's streams it takes (from stream_id)
        self._at: float | None = None     # free_at() while the stream is busy

    def free(self) -> bool:
        """Whether the shell's video stream can take a frame (or, when the DNN has no stream of
        its own, a DNN batch) now (``Engine.video_streams`` of them: one but for a table that
        plans several streams over shared slots)."""
        engine = self.engine       # asked on every decision: no list built
        batches = len(self.dnn.running) if engine.dnn_stream_id is None else 0
        return len(engine.running) + batches < engine.video_streams

    def dnn_apart(self) -> bool:
        """Whether the DNN's batches take a stream of their own (``Engine.dnn_stream_id``)."""
        return self.engine.dnn_stream_id is not None

    def dnn_free(self) -> bool:
        """Whether a DNN batch can start now: on the DNN's own stream (``Engine.dnn_stream_id``) if
        it has one, else on this one."""
        if self.engine.dnn_stream_id is None:
            # One batch at a time, on the first of the engine's streams (``start`` leaves it to
            # the batch): on an engine carrying several, a frame may be streaming there.
            return self.free() and not self.dnn.running and 0 not in self.lanes.values()
        return len(self.dnn.running) < VIDEO_STREAMS

    def _batches(self) -> list:
        """The DNN batches on this stream (none when the DNN streams on a stream of its own)."""
        return [] if self.engine.dnn_stream_id is not None else list(self.dnn.running.values())

    def free_at(self) -> float:
        """When the video stream can next take a frame or a batch (now if it can)."""
        at = self._at              # asked for every pending frame; changes only at a start or an end
        if at is None:
            at = self._at = NOT_BUSY if self.free() else min(self._job_ends())
        return self.engine.now if at is NOT_BUSY else at

    def _job_ends(self) -> list[float]:
        """When each frame and DNN batch on the stream ends."""
        return [f.expected_end for f in self.engine.running.values()] + [j.end for j in self._batches()]

    def changed(self) -> None:
        """Work started or ended on the stream: ``free_at`` is asked again."""
        self._at = None

    def trace(self, name: str, start: float, end: float, pipeline: str, lane: int = 0,
              stream: int | None = None) -> None:
        """One slice of the stream's track in the trace (``lane``: which of the engine's streams;
        ``stream``: another stream's, by id)."""
        engine = self.engine
        sid = engine.stream_id + lane if stream is None else stream
        engine.trace.append(TraceEvent(f"stream {sid}", name, start, end, {"pipeline": pipeline}))

    def free_lane(self) -> int:
        """The lowest of the engine's streams no frame takes (a DNN batch takes the first one)."""
        if not self.lanes and (self.engine.dnn_stream_id is not None or not self.dnn.running):
            return 0                 # nothing on any of them (the one stream of most engines)
        taken = {*self.lanes.values(), *((0,) if self._batches() else ())}
        return min(k for k in range(self.engine.video_streams) if k not in taken)

    def start(self, frame: Frame, slots: Sequence[int]) -> None:
        """Start ``frame``'s next pass on ``slots`` (each holding its stage's module)."""
        engine = self.engine
        if not self.free():
            raise RuntimeError(f"frame {frame.key} cannot start: the video stream is carrying other work")
        engine.pending.remove(frame)
        if engine.committed is frame:
            engine.committed = None
        key = frame.key              # (built from the pipeline's name and the frame's index)
        engine.slots.acquire(slots, key)
        started = engine.now
        if frame.step == 0:
            frame.start = started
        frame.slots = tuple(slots)
        lane = self.free_lane()
        try:
            if frame.step:
                pixels = frame.carry
            else:
                pixels = frame.pixels if frame.pixels is not None else engine.test_pixels(frame)
            # A pass before the last must hand its pixels on (a backend may skip them only at the end).
            work = engine.backend.start_frame(slots, frame.pipeline.pass_stages[frame.step], pixels,
                                              engine.want_output, stream=engine.stream_id + lane)
        except Exception as exc:     # a hardware fault by the backend's contract (errors.HardwareError)
            engine.slots.release(slots, engine.now)
            engine.finish(frame, "error", fault_reason(exc))
            return
        engine.running[key] = frame
        self.works[key] = work
        self.lanes[key] = lane
        self.changed()
        # Hardware time from the pass's start. A simulated board holds the clock while it computes
        # the pass (clock.py: the pass lasts its hardware time on the clock however long the host
        # takes), so the pass started when the call did: the host's time is under its hardware time,
        # never before it (the analysis counts none). A board's DMA starts once the call has
        # programmed it.
        start = started if engine.backend.held_clock is not None else engine.now
        frame.expected_end = start + work.seconds
        frame.streamed.append((start, frame.expected_end))
        engine.when_done(work, frame.expected_end, JOB_DONE, frame)

    def job_done(self, frame: Frame) -> None:
        """``frame``'s pass ended: its slots are free; the frame goes on or ends."""
        engine = self.engine
        failure = None
        try:
            report = self.works.pop(frame.key).report()   # on a board: waits for the DMA if need be
        except Exception as exc:     # a hardware fault by the backend's contract
            failure = fault_reason(exc)
        else:
            frame.results.update(report.results)
        engine.running.pop(frame.key)
        lane = self.lanes.pop(frame.key, 0)
        self.changed()
        end = engine.now
        engine.slots.release(frame.slots, end)
        self.trace(frame.key, frame.streamed[-1][0], end, frame.pipeline.name, lane)
        for slot in frame.slots:
            engine.trace.append(TraceEvent(f"slot {slot}", frame.key, frame.streamed[-1][0], end,
                                           {"pipeline": frame.pipeline.name}))
        if failure is None and frame.step < len(frame.pipeline.pass_stages) - 1:
            # The next pass reads this one's output from memory once the port has loaded its stages.
            frame._at_pass(frame.step + 1)
            # Timing only (the model backend without outputs): the next pass needs just the size.
            frame.carry = report.output if report.output is not None else \
                np.zeros(frame.pipeline.pass_input_shapes[frame.step], np.uint8)
            frame.expected_end = None
            engine.pending.append(frame)
            return
        if failure is None and frame.pipeline.cpu_after:
            p = frame.pipeline
            pixels = report.output if report.output is not None else np.zeros(
                p.cpu_after[0].kind.input_shape(*chain_shape(p.stages, *p.frame)), np.uint8)
            self.cpu_jobs.run(frame, "after", pixels)
            return
        if failure is None:
            frame.end = end
            frame.output = report.output if engine.want_output else None
            engine.finish(frame, "on_time" if end <= frame.due + 1e-12 else "late")
        else:
            engine.finish(frame, "error", failure)
        engine.trace.append(TraceEvent(f"pipeline {frame.pipeline.name}", frame.key, frame.release, end,
                                       {"outcome": frame.outcome}))
