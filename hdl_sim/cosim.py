"""Co-simulation of the simulated board: hardware work that overlaps in the schedule overlaps in the RTL.

A job (a partial load, a frame on one of the shell's video streams, a DNN batch) is a generator over
the board: it writes registers, then yields a *phase* - words for one video stream or for the
configuration port - and gets back what the RTL gave when that phase ended; it returns its report.
The harness (shell_harness.cpp, its channels) drives every armed phase in the same cycles, whatever
else happens meanwhile (another job's register accesses included), and records the cycle each one
ended. ``run_until`` advances the RTL to a time on the scheduler's clock, stopping at the first end,
so completions reach the scheduler as events at the RTL's own cycle.

Board time is harness cycles plus the cycles skipped while no job was armed: with no input moving,
an idle shell's state does not change in a way any job sees (its counters are read per job), so
fast-forwarding over it is the same as simulating it. Register accesses cost their bus cycles, as on
a board; a job starts at the cycle the scheduler's clock names, or a few cycles later if another
job's register accesses had run the RTL past it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np
from fpgashare.errors import FrameError
from fpgashare.hdl_sim.harness import PORT_CHANNEL, RunStats

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamPhase:
    """Words through one video stream's routed chain."""

    stream: int
    words: np.ndarray
    in_cols: int           #: TLAST after every in_cols words
    n_out: int
    out_cols: int
    max_cycles: int        #: a phase still running this long after it was armed has hung
    settle: int = 64       #: cycles to watch for extra output beats after the last one


@dataclass(frozen=True)
class PortPhase:
    """A partial bitstream through the configuration port, done ``tail`` cycles after its last word."""

    words: np.ndarray
    tail: int
    max_cycles: int


Phase = StreamPhase | PortPhase
#: A job: yields phases, receives (output words, RunStats relative to the phase's start), returns a report.
Job = Generator[Phase, tuple[np.ndarray, RunStats], object]


def channel_of(phase: Phase) -> int:
    return PORT_CHANNEL if isinstance(phase, PortPhase) else phase.stream


@dataclass
class _Running:
    job: Job
    on_end: Callable[[float, object, BaseException | None], None]
    phase: Phase
    deadline: int              #: absolute harness cycle by which the phase must end


class CoSim:
    """Jobs on one SimBoard sharing its cycles; times in seconds at ``hz`` (the shell's one clock)."""

    def __init__(self, board, hz: float) -> None:
        self.board, self.rtl, self.hz = board, board.rtl, hz
        self.offset = 0                         #: cycles skipped while nothing was armed
        self._running: dict[int, _Running] = {}   # by channel
        self.jobs_done = 0

    @property
    def cycle(self) -> int:
        """The board's cycle now."""
        return self.rtl.cycles + self.offset

    def busy(self) -> bool:
        """Whether a job is under way."""
        return bool(self._running)

    def start(self, job: Job, on_end: Callable[[float, object, BaseException | None], None]) -> None:
        """Begin ``job`` now: at the board time the last ``run_until`` reached (the scheduler's clock
        calls it before every event), or a few cycles later after other jobs' register accesses.
        ``on_end(t, report, error)`` gets the board time it ended (from ``run_until``, or at once if
        it never armed a phase)."""
        self._step(job, on_end, None)

    def run_until(self, t_s: float) -> None:
        """Advance the RTL to ``t_s`` or to the first job's end before it (its ``on_end`` runs)."""
        self._catch_up(t_s)

    def _cycle_at(self, t_s: float) -> int:
        return round(t_s * self.hz)

    def _catch_up(self, t_s: float) -> None:
        """Run to ``t_s`` or until a job ends (a phase ending is not a job ending: the job's next
        phase is armed and the RTL runs on)."""
        target = self._cycle_at(t_s)
        ended = self.jobs_done
        while self._running and self.jobs_done == ended:
            until = min(target - self.offset, min(r.deadline for r in self._running.values()))
            mask = self.rtl.advance(max(until, self.rtl.cycles))
            if mask:
                self._collect_done(mask)
                continue
            self._expire()
            if self.rtl.cycles + self.offset >= target:
                break
        if not self._running and self.jobs_done == ended:
            self.offset += max(0, target - self.cycle)      # quiescent: fast-forward

    def _collect(self, channel: int) -> None:
        running = self._running.pop(channel)
        out, ch = self.rtl.collect(channel)
        stats = RunStats(ch.end - ch.start, ch.sent, ch.received, ch.extra_out, ch.tlast_errors, ch.tuser_errors,
                         ch.sent if channel == PORT_CHANNEL else 0, ch.last_word - ch.start,
                         ch.last_word - ch.start)
        self._step(running.job, running.on_end, (out, stats), ch.end + self.offset)

    def _collect_done(self, mask: int) -> None:
        done = [c for c in sorted(self._running) if mask >> c & 1]
        if not done:
            raise RuntimeError(f"the harness reports channels {mask:#x} done that no job armed")
        for channel in done:
            self._collect(channel)

    def _expire(self) -> None:
        """Phases past their deadline have hung: their jobs end with an error."""
        now = self.rtl.cycles
        for channel, running in sorted(self._running.items()):
            if now >= running.deadline:
                self.rtl.abort(channel)
                del self._running[channel]
                running.job.close()         # its cleanup (a route released) runs now
                error = FrameError(f"the RTL did not finish a {type(running.phase).__name__} on channel "
                                   f"{channel} in {running.phase.max_cycles} cycles")
                self._end(running.on_end, self.cycle, None, error)

    def _step(self, job: Job, on_end, sent, end_cycle: int | None = None) -> None:
        try:
            phase = job.send(sent) if sent is not None else next(job)
        except StopIteration as stop:
            self._end(on_end, end_cycle if end_cycle is not None else self.cycle, stop.value, None)
            return
        except Exception as exc:     # the job refused its result (a fault): the scheduler handles it
            self._end(on_end, end_cycle if end_cycle is not None else self.cycle, None, exc)
            return
        channel = channel_of(phase)
        if channel in self._running:
            job.close()
            raise RuntimeError(f"channel {channel} is carrying another job's phase")
        if isinstance(phase, PortPhase):
            self.rtl.arm_port(phase.words, phase.tail)
        else:
            self.rtl.arm_stream(phase.stream, phase.words, phase.in_cols, phase.n_out, phase.out_cols, phase.settle)
        self._running[channel] = _Running(job, on_end, phase, self.rtl.cycles + phase.max_cycles)

    def _end(self, on_end, end_cycle: int, report, error) -> None:
        self.jobs_done += 1
        on_end(end_cycle / self.hz, report, error)


def run_alone(board, job: Job) -> object:
    """Run ``job`` on ``board`` by itself through the one-stream calls (``fs_run``: stream 0 and the
    port); its report. The one-stream backend's path: no channels, no co-simulation."""
    sent = None
    try:
        while True:
            phase = job.send(sent) if sent is not None else next(job)
            if isinstance(phase, PortPhase):
                out, stats = board.rtl.run(cfg=phase.words, max_cycles=phase.max_cycles)
                board.rtl.idle(phase.tail)
            else:
                if phase.stream != 0:
                    raise FrameError(f"stream {phase.stream}: the one-stream harness drives stream 0 only")
                out, stats = board.rtl.run(phase.words, phase.in_cols, phase.n_out, phase.out_cols,
                                           settle=phase.settle, max_cycles=phase.max_cycles)
            sent = (out, stats)
    except StopIteration as stop:
        return stop.value
