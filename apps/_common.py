"""What the example apps share: a frame source (video file or camera), pacing by the daemon's
clock, and registering a chain with ``fallback="cpu"`` (the daemon runs the stages the FPGA cannot
take on its CPU, and the app says which)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import cv2
import numpy as np
from fpgashare.client import DeadlineMissed, Fpga, FrameDropped, Pipeline
from fpgashare.errors import FpgashareError

log = logging.getLogger("apps")


def add_source_args(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--video", help="video file to read frames from")
    source.add_argument("--camera", type=int, help="camera index (cv2.VideoCapture)")
    parser.add_argument("--socket", help="daemon socket (default $FPGASHARE_SOCKET)")
    # A daemon admits one pipeline at a time, each after a schedulability trial: on a busy host,
    # the third of three apps starting together can wait several seconds for its answer.
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a daemon reply")
    parser.add_argument("--frames", type=int, default=0, help="stop after N frames (0: the whole source)")
    parser.add_argument("--size", default="240x320", help="ROWSxCOLS the frames are resized to")
    parser.add_argument("--out", help="write a side-by-side video (input | output) here")
    parser.add_argument("--dump", help="write the inputs and outputs as .npz (for checking)")
    parser.add_argument("-v", "--verbose", action="store_true")


def frame_size(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise FpgashareError(f"--size must be ROWSxCOLS, not {text!r}") from None
    return rows, cols


def frames(args: argparse.Namespace):
    """RGB frames of the requested size from the video or camera."""
    capture = cv2.VideoCapture(args.video if args.video is not None else args.camera)
    if not capture.isOpened():
        raise FpgashareError(f"cannot open {args.video if args.video is not None else f'camera {args.camera}'}")
    rows, cols = frame_size(args.size)
    count = 0
    try:
        while not args.frames or count < args.frames:
            ok, bgr = capture.read()
            if not ok:
                break
            count += 1
            yield cv2.cvtColor(cv2.resize(bgr, (cols, rows), interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2RGB)
    finally:
        capture.release()


@dataclass
class Chain:
    """A registered chain: the daemon places each stage on the fabric or, where the fabric cannot
    take it, on its own CPU (``fallback="cpu"``); the app just submits frames."""

    pipeline: Pipeline
    last: np.ndarray | None = None
    #: The result registers of the last frame's modules, by stage name (``FrameFuture.results``).
    results: dict = field(default_factory=dict)

    @property
    def cpu_stages(self) -> str:
        """The stages the daemon runs on the host, comma-separated ("-" for none)."""
        return ",".join(stage for stage, where in self.pipeline.placement if where == "cpu") or "-"

    def process(self, frame: np.ndarray, counts: dict) -> np.ndarray:
        """The chain's output for ``frame``, its outcome counted; a dropped frame repeats the last
        output (or is blank), so the output stream has no holes."""
        counts["frames"] += 1
        self.results = {}
        future = self.pipeline.submit(np.ascontiguousarray(frame))
        try:
            out = future.result(timeout=30)
            counts["on_time"] += 1
        except DeadlineMissed as late:
            out = late.output
            counts["late"] += 1
        except FrameDropped as dropped:
            log.info("frame %d dropped (%s)", counts["frames"], dropped.reason)
            out = self.last if self.last is not None else np.zeros(self.pipeline.ring.spec.out_shape, np.uint8)
            counts["dropped"] += 1
        self.last = out
        self.results = future.results        # the registers its modules left (empty if dropped)
        return out


def register(fpga: Fpga, name: str, chain: list[str], period_ms: float, shape: tuple[int, int],
             params: dict | None = None) -> Chain:
    """Register ``chain``; stages the fabric does not take run in the daemon on its CPU (the
    daemon's fallback), and the app says which."""
    pipe = fpga.pipeline(name, chain, period_ms=period_ms, frame_shape=shape, params=params or {}, fallback="cpu")
    registered = Chain(pipe)
    if registered.cpu_stages != "-":
        log.warning("%s: %s run on the daemon's CPU, %s on the FPGA", name, registered.cpu_stages,
                    ",".join(s for s, where in pipe.placement if where == "fpga") or "nothing")
    return registered


class Pacer:
    """Frame k goes out at the daemon's time t0 + k * period."""

    def __init__(self, fpga: Fpga, period_s: float) -> None:
        self.fpga, self.period_s = fpga, period_s
        self.t0 = fpga.clock()
        self.k = 0

    def wait(self) -> None:
        self.fpga.sleep_until(self.t0 + self.k * self.period_s)
        self.k += 1


def side_by_side(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """BGR picture of two frames next to each other (gray or RGB, any sizes)."""
    def bgr(img):
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR) if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
        return cv2.resize(img, (left.shape[1], left.shape[0]), interpolation=cv2.INTER_NEAREST)
    return np.hstack([bgr(left), bgr(right)])


class Recorder:
    """Optional side-by-side video and .npz dump of what went in and came out."""

    def __init__(self, args: argparse.Namespace, fps: float) -> None:
        self.args, self.fps = args, fps
        self.writer = None
        self.inputs: list[np.ndarray] = []
        self.outputs: list[np.ndarray] = []
        self.notes: dict[str, list[np.ndarray]] = {}

    def add(self, frame: np.ndarray, output: np.ndarray) -> None:
        if self.args.out:
            picture = side_by_side(frame, output)
            if self.writer is None:
                fourcc = cv2.VideoWriter_fourcc(*"mp4v")
                self.writer = cv2.VideoWriter(self.args.out, fourcc, self.fps, (picture.shape[1], picture.shape[0]))
            self.writer.write(picture)
        if self.args.dump:
            self.inputs.append(frame)
            self.outputs.append(output)

    def note(self, key: str, value: np.ndarray) -> None:
        """Something else to keep in the dump (an app's intermediate results)."""
        if self.args.dump:
            self.notes.setdefault(key, []).append(value)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.release()
        if self.args.dump and self.inputs:
            extra = {key: np.stack(values) for key, values in self.notes.items()}
            np.savez_compressed(self.args.dump, inputs=np.stack(self.inputs), outputs=np.stack(self.outputs), **extra)


def app_main(doc: str, run: Callable[[argparse.Namespace], dict], argv: list[str] | None,
             extra_args: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """Parse the common arguments (and the app's own, ``extra_args``), run the app, print its counts
    as key=value words."""
    parser = argparse.ArgumentParser(description=" ".join(doc.split("\n\n")[0].split()))   # the first paragraph
    add_source_args(parser)
    if extra_args is not None:
        extra_args(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    try:
        counts = run(args)
    except FpgashareError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0
