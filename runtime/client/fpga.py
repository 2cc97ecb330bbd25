"""``connect`` and ``Fpga``: an app's connection to the daemon and the calls it makes on it
(pipelines, the daemon's clock, status), reconnecting to a new daemon if asked."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from fpgashare.client.connection import Connection
from fpgashare.client.errors import DaemonError, unwrap
from fpgashare.client.pipeline import DnnPipeline, Pipeline
from fpgashare.wire.protocol import DEFAULT_SOCKET
from fpgashare.wire.shm import FrameRing, RingSpec

log = logging.getLogger("fpgashare.client")


def connect(path: str | Path | None = None, timeout: float = 5.0, reconnect: bool = False) -> Fpga:
    """A connection to the daemon at ``path`` (default: $FPGASHARE_SOCKET or
    /run/fpgashare/fpgashare.sock). ``reconnect``: when the daemon goes, connect again at the next
    call (waiting up to ``timeout`` for a new daemon) and register this app's pipelines anew."""
    return Fpga(Path(path) if path is not None else DEFAULT_SOCKET, timeout, reconnect)


class Fpga(Connection):
    """One connection; thread-safe. Replies are matched to requests by id (connection.py)."""

    def __init__(self, path: Path, timeout: float, reconnect: bool = False) -> None:
        super().__init__(path, timeout)
        self.reconnect = reconnect
        self._reconnecting = threading.Lock()
        self.pipelines: dict[str, Pipeline] = {}
        self.reconnects = 0
        self._open()

    def _open(self) -> None:
        sock = self._connect()
        try:
            hello = self.request("hello")
        except BaseException:
            sock.close()
            raise
        self.platform, self.dilation, self.client_id = hello["platform"], hello["dilation"], hello["client"]

    def _revive(self) -> None:
        """The daemon went: connect again (a new daemon may take a moment to come) and register
        every pipeline anew, each with its new ring."""
        with self._reconnecting:
            if not self._lost or self._closed:
                return
            with self._reading:
                self._sock.close()
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    self._open()
                    break
                except DaemonError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)          # waiting for a new daemon to listen, not simulating
            self.reconnects += 1
            for pipe in list(self.pipelines.values()):
                answer = self.request(pipe.op_register, **pipe.registration)
                pipe._renew(self._attach(answer), answer)
            log.info("reconnected to %s; %d pipeline(s) registered again", self.path, len(self.pipelines))

    def _ensure(self) -> None:
        """Connect again first if the daemon went and this connection reconnects (never in a
        fork() child using its parent's: before a frame is written into a ring slot it may share)."""
        self._own()
        if self._lost and self.reconnect and not self._closed:
            self._revive()

    def _send(self, op: str, **fields):
        self._ensure()
        return super()._send(op, **fields)

    def request(self, op: str, **fields) -> dict:
        """Send one request and wait for its reply; an error reply raises DaemonError."""
        _, future = self._send(op, **fields)
        return unwrap(self.wait(future, self.timeout))

    # ---- API
    def clock(self) -> float:
        """The daemon's time in seconds (dilated on the simulated board): pace frames by it."""
        return float(self.request("clock")["now"])

    def sleep_until(self, t: float) -> None:
        """Wait until the daemon's clock reads ``t`` (wall time scaled by the daemon's dilation;
        on the simulated board the clock also stands still while the RTL catches up), so an app
        paces its frames the same on a board and on the simulated board."""
        while (delay := (t - self.clock()) * self.dilation) > 0:
            time.sleep(delay)       # real waiting: pacing an app, not a simulated duration

    def status(self, own: bool = False) -> dict:
        """The daemon's status; ``own``: only this connection's pipelines and itself, even for an
        admin (what a proxy of remote clients asks for)."""
        return self.request("status", scope="own") if own else self.request("status")

    def pipeline(self, name: str, stages: list[str], period_ms: float, frame_shape: tuple[int, int],
                 deadline_ms: float | None = None, params: dict | None = None,
                 fallback: str | None = None, jitter_ms: float | None = None) -> Pipeline:
        """Register a real-time pipeline; raises AdmissionRejected with the reason if it does not fit.
        It returns once the pipeline can run under the guarantee. ``jitter_ms``: how late after its
        period's grid a frame may come (a camera's release jitter; admission counts it, and frames
        within it are never held).
        ``fallback="cpu"``: stages the fabric does not take (admission, a module the board lacks, a
        quarantined slot) run on the host, in the daemon, with OpenCV; ``Pipeline.placement`` says
        where each stage runs, and results are the same either way."""
        fields = {"name": name, "stages": list(stages), "period_ms": float(period_ms),
                  "frame_shape": [int(v) for v in frame_shape], "params": params or {}}
        if deadline_ms is not None:
            fields["deadline_ms"] = float(deadline_ms)
        if fallback is not None:
            fields["fallback"] = fallback
        if jitter_ms is not None:
            fields["jitter_ms"] = float(jitter_ms)
        answer = self.request("pipeline", **fields)
        pipe = Pipeline(self, name, self._attach(answer), answer, fields)
        self.pipelines[name] = pipe
        return pipe

    def _attach(self, answer: dict) -> FrameRing:
        """The ring a registration's reply hands over (its descriptor, or a named ring)."""
        spec = RingSpec.from_wire(answer["ring"])
        if answer.get("ring_fd"):
            if answer.get("fd") is None:
                raise DaemonError("gone", f"the daemon's reply for ring {spec.name} carried no descriptor")
            return FrameRing.attach_fd(spec, answer["fd"])
        return FrameRing.attach(spec)

    def dnn(self, name: str, model: str, fallback: str | None = None) -> DnnPipeline:
        """Register a best-effort DNN pipeline (``digits_cnn``, ``edge_cnn``): its images run in
        the slot time real-time pipelines leave. ``fallback="cpu"``: on a board without working
        dnn_tile slots, the daemon runs the int8 reference on the host (same outputs).
        ``model="X.onnx"`` (or ``digits_qdq``): a quantized ONNX model, converted here and sent to
        the daemon; the pipeline takes float inputs (runtime/dnn/onnx_client.py)."""
        if not isinstance(model, str):
            raise TypeError(f"dnn {name!r}: model must be a name or a path (str), not {type(model).__name__}")
        fields = {"name": name, "model": model}
        imported = None
        from fpgashare.dnn.onnx_shipped import onnx_path

        if onnx_path(model) is not None:      # converted here, sent as a network the daemon checks
            from fpgashare.dnn.onnx_client import registration

            imported, converted = registration(model)
            fields.update(converted)
        if fallback is not None:
            fields["fallback"] = fallback
        answer = self.request("dnn", **fields)
        pipe = DnnPipeline(self, name, self._attach(answer), answer, fields)
        self.pipelines[name] = pipe
        if imported is not None:
            from fpgashare.dnn.onnx_client import ImportedDnnPipeline

            return ImportedDnnPipeline(pipe, imported)
        return pipe

    def close(self) -> None:
        for pipe in list(self.pipelines.values()):
            pipe._drop()
        self.pipelines.clear()
        self._shut()

    def __enter__(self) -> Fpga:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
