"""The frames and images apps submit to the daemon: released as they arrive, held to the arrival
curve their pipeline declared.

Admission trusts a pipeline's declared period as a minimum inter-arrival time (the analysis's
sporadic model), so the source holds it to it: a frame submitted sooner than a period after the
previous release is *held* until then, and its deadline counts from that release. An app that
submits faster than it declared only delays its own frames: it cannot take the time promised to
others. (A camera's early frame after a late one waits the difference.) The daemon's own lateness
must not do the same: a frame whose CPU prefix overran its bound is released only where that holds
no later frame back, and dropped otherwise (``OVERRAN``, arrivals.py). A frame that comes before
its pipeline's mode change has switched waits for the switch (``hold``), its deadline still
counting from its arrival: that wait is the daemon's, not the app's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.arrivals import ArrivalCurves
from fpgashare.sched.core.jobs import CPU_START, RELEASE, DnnRequest, Frame

#: Why a frame whose CPU prefix overran its bound is not released (``Submissions.arrive``).
OVERRAN = ("its CPU stages overran their bound: released this late it would hold its pipeline's later frames "
           "back (the arrival curve)")

OUT_OF_ORDER = "it reached the fabric after a later frame of its pipeline (the arrival curve keeps their order)"

#: Floating point slack in the comparison with the curve's grid (sums of board seconds).
CURVE_TOL_S = 1e-12


class Submissions:
    """Frames and DNN images as apps submit them (``ReleaseSource``)."""

    warm_up = False

    def __init__(self) -> None:
        self.engine = None
        self.arrivals = ArrivalCurves()       #: the curve each pipeline declared (analysis/arrivals.py)
        self.held: dict[str, list[Frame]] = {}     #: frames submitted before their pipeline's switch
        self.curve_index: dict[str, int] = {}      #: frame key -> its index on its curve, until released
        #: Pipelines admitted whose switch has not come yet (the registrations part says).
        self.joining: Callable[[], list[PipelineSpec]] = list
        self.host_nets: dict[str, object] = {}     #: DNN pipelines on the host: their networks

    def attach(self, engine) -> None:
        self.engine = engine

    def schedule(self) -> None:
        """Nothing is known in advance: frames come with ``submit``."""

    # ---- frames
    def submit(self, name: str, pixels: np.ndarray) -> Frame:
        """A frame of pipeline ``name`` arrives now. It is released at once unless the pipeline
        sends faster than the arrival curve it declared (period and jitter: the analysis's
        model), then at the earliest time the curve allows; before the pipeline's switch it
        waits for it. Its deadline as the app sees it counts from now (``Frame.due``)."""
        e = self.engine
        spec = next((p for p in (*e.pipelines, *self.joining(), *e.cpu_pipelines) if p.name == name), None)
        if spec is None:
            raise FpgashareError(f"no real-time pipeline {name!r}")
        index = self.arrivals.next_index(name)
        e._seq += 1
        # CPU stages first: the fabric takes the frame when their bound has passed (cpu_work.py).
        fabric = e.now + spec.cpu_before_s
        frame = Frame(spec, index, fabric, fabric + spec.deadline_s, e._seq, pixels=pixels, origin=e.now)
        e.frames.append(frame)
        if spec.cpu_before:
            e.push(e.now, CPU_START, frame)
        else:
            self.fabric_release(frame)
        return frame

    def fabric_release(self, frame: Frame) -> None:
        if any(p.name == frame.pipeline.name for p in self.joining()):
            self.held.setdefault(frame.pipeline.name, []).append(frame)
        else:
            self.arrive(frame)

    def arrive(self, frame: Frame) -> None:
        """Release ``frame`` no earlier than its pipeline's arrival curve allows (arrivals.py).
        A frame held to the curve has its deadline count from its allowed release; one that
        waited for its pipeline's switch keeps its arrival's."""
        p = frame.pipeline
        k = frame.index                     # its place in the order the app sent it (arrivals.py)
        allowed = self.arrivals.earliest(p, k)
        release = max(self.engine.now, frame.release, allowed)
        in_order = self.arrivals.in_order(p.name, k)
        if not in_order or (frame.overran and release - k * p.period_s > self.arrivals.grid(p.name) + CURVE_TOL_S):
            # Released after a later frame, or late enough to move the curve's grid, it would hold
            # every later frame of its pipeline back (the host's overrun is no later frame's
            # fault): it ends here. Only a frame whose CPU prefix overran comes so.
            self.engine.finish(frame, "dropped", OVERRAN if frame.overran else OUT_OF_ORDER)
            return
        self.curve_index[frame.key] = k
        if release > frame.release:
            frame.origin += max(0.0, allowed - frame.release)
            frame.release = release
            frame.deadline = release + p.deadline_s
        self.arrivals.decided(p, k, release)
        self.engine.push(release, RELEASE, frame)

    def released(self, frame: Frame) -> None:
        e = self.engine
        k = self.curve_index.pop(frame.key, None)
        if frame.outcome is not None:       # held, and its pipeline ended before its release
            e.pending.remove(frame)
            return
        if k is not None:
            self.arrivals.taken(frame.pipeline, k, frame.release)
        e.demand.moved(frame.pipeline)

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """The earliest the pipeline's next frame may be released: its arrival curve from the
        frames released so far (arrivals.py); now before its first."""
        return self.arrivals.next_release(pipeline, self.engine.now)

    def need_time(self, pipeline: PipelineSpec) -> float:
        return self.next_release_s(pipeline) + pipeline.deadline_s

    def ended(self, frame: Frame) -> None:
        # A daemon runs for days: ended frames leave the engine once their app has been told.
        self.engine.frames.remove(frame)

    def test_pixels(self, frame: Frame) -> np.ndarray:
        raise FpgashareError(f"frame {frame.key} came without pixels")

    def take_held(self, name: str) -> list[Frame]:
        """The frames pipeline ``name`` sent before its switch (no longer held)."""
        return self.held.pop(name, [])

    # ---- DNN images
    def submit_dnn(self, name: str, image: np.ndarray) -> DnnRequest:
        """Queue an image for best-effort DNN pipeline ``name``; it runs in the next batch."""
        e = self.engine
        spec = next((p for p in (*e.dnn_pipelines, *e.cpu_pipelines) if p.name == name and not p.realtime), None)
        if spec is None:
            raise FpgashareError(f"no DNN pipeline {name!r}")
        e._seq += 1
        request = DnnRequest(spec, image, e._seq, e.now)
        if spec.host:
            e.cpu_jobs.run_dnn_on_host(request, spec.cpu_before_s, self.host_nets[name])
            return request
        e.dnn.queue[name].append(request)
        e.poke()                           # let the backfill see it at the next step
        return request
