"""The engine on the daemon's loop: every request that changes it is followed by taking every
event due by the clock's now; a timer wakes the loop for the next event (none on a virtual clock:
the test moves time with ``run_until``). Items that end are answered at once: a frame's output
goes into its client's ring and the reply onto its socket."""

from __future__ import annotations

import asyncio
import logging
import time

import numpy as np
from fpgashare.errors import FpgashareError
from fpgashare.protocol import reply
from fpgashare.sched.engine import DnnRequest, Frame
from fpgashare.shm import FrameRing

log = logging.getLogger("fpgashare.daemon")


class Driver:
    """The engine on the loop and frames ending (a mixin of ``Daemon``)."""

    def _step(self, fn, *args):
        """``fn(*args)`` on the engine, then every event now due (see ``_advance``)."""
        try:
            return fn(*args)
        finally:
            self._advance()

    def _advance(self) -> None:
        """Take every event due by the clock's now, answer what ended, then set the timer for
        the next event. An exception here is a bug: the daemon stops (see the module's doc)."""
        if self._stopped.is_set() and self.failure is not None:
            return
        try:
            self.engine.advance_to(self.clock.now())
        except Exception as exc:
            log.critical("engine step failed; stopping the daemon", exc_info=True)
            self.failure = exc
            self._stopping = asyncio.ensure_future(self.stop())
            return
        while self._ended:
            self._frame_done(self._ended.popleft())
        due = self.engine.next_event_s()
        if due == self._timer_due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_due = None, due
        if due is not None and not self.virtual:
            wall_due = self._loop.time() + max(0.0, (due - self.clock.now()) * self.dilation)
            self._timer = self._loop.call_at(wall_due, self._timer_fired, wall_due)

    def run_until(self, t: float) -> None:
        """A virtual clock's daemon: move time to ``t`` (on the loop) and take every event due."""
        if not self.virtual:
            raise FpgashareError("run_until drives a daemon on a virtual clock only")

        def go():
            # Event by event: each is taken at its own time, not at t.
            while (due := self.engine.next_event_s()) is not None and due <= t:
                self.clock.wait_until(max(due, self.clock.now()))
                self._advance()
            self.clock.wait_until(max(t, self.clock.now()))
            self._advance()

        if self._loop is not None and self._loop.is_running():
            asyncio.run_coroutine_threadsafe(_call(go), self._loop).result(30)
        else:
            go()

    def _timer_fired(self, wall_due: float) -> None:
        self.loop_latency.record(self._loop.time() - wall_due)
        self._timer, self._timer_due = None, None
        self._advance()

    def _frame_done(self, frame: Frame | DnnRequest) -> None:
        started = time.perf_counter()
        self._answer(frame)
        spent = self.host_spent.pop((frame.pipeline.name, frame.seq), None)
        if spent is not None and not self.virtual:    # the re-check of the host's cost (host_cost.py)
            self.host_watch.record(frame.pipeline, spent + time.perf_counter() - started)

    def _answer(self, frame: Frame | DnnRequest) -> None:
        owner = self.states.get(frame.pipeline.name)
        if owner is None or frame.seq not in owner[1].in_flight:
            return                          # already answered
        client, state = owner
        outcome, reason = frame.outcome, frame.reason
        if state.closing and outcome in ("on_time", "late", "done"):
            # Its ring is going away: the output is not written, so it must not pass for a result.
            outcome, reason = "dropped", f"{state.closing} while the frame was on the fabric"
        elif outcome in ("on_time", "late", "done"):
            garbage = bad_output(frame, state.ring)
            if garbage:                     # the board's DMA returned something else: not a result
                outcome, reason = "error", garbage
        # From when the app's frame came (a DNN image: its submission; a frame with CPU stages
        # first: its release, not the fabric's).
        came = frame.release if isinstance(frame, DnnRequest) else frame.origin
        latency = None if frame.end is None else (frame.end - came) * 1e3
        self.stats.ended(frame.pipeline.name, frame.pipeline.klass, outcome, latency)
        slot = state.in_flight.pop(frame.seq)
        rid = client.submits.pop(frame.seq, -1)
        if isinstance(frame, DnnRequest):   # outputs are a few int8 values: they ride in the reply
            output = frame.output if outcome == "done" else None
            extra = {"output": None if output is None else [int(v) for v in output]}
            metric_latency = None
            frame.image = None
        else:                               # a frame's output goes next to its input in the ring
            if frame.output is not None and outcome in ("on_time", "late"):
                state.ring.output(slot)[...] = frame.output
            extra = {"latency_ms": latency}
            if frame.results and outcome in ("on_time", "late"):
                extra["results"] = frame.results      # registers the modules left (moments, template_match)
            metric_latency = None if latency is None else latency / 1e3
            frame.pixels = frame.output = None      # the ring's views: let it close
        if self.metrics is not None:
            self.metrics.frame_ended(frame.pipeline.name, outcome, metric_latency)
        self._send(client, reply(rid, outcome=outcome, reason=reason, slot=slot, **extra))
        state.free.add(slot)
        if state.closing and not state.in_flight:
            self._retire(client, state)


def bad_output(item: Frame | DnnRequest, ring: FrameRing) -> str | None:
    """Why the output the board returned cannot be a result (None if it can)."""
    out = item.output
    if isinstance(item, DnnRequest):
        if isinstance(out, np.ndarray) and out.ndim == 1 and out.dtype.kind in "iu" and out.size \
                and int(out.min()) >= -128 and int(out.max()) <= 127:
            return None
        what = f"shape {getattr(out, 'shape', None)}, dtype {getattr(out, 'dtype', type(out).__name__)}"
        return f"the board returned a DNN output of {what}, not int8 values"
    if isinstance(out, np.ndarray) and out.shape == ring.spec.out_shape and out.dtype == ring.spec.np_dtype:
        return None
    what = f"shape {getattr(out, 'shape', None)}, dtype {getattr(out, 'dtype', type(out).__name__)}"
    return f"the board returned a frame of {what}; the pipeline's output is {ring.spec.out_shape} {ring.spec.dtype}"


async def _call(fn) -> None:
    fn()
