"""``fpgashare demo``: three apps share one simulated FPGA for real.

A daemon on the simulated board (the shell in RTL: every bitstream through the configuration
port, every frame through the modules, every DNN image through the dnn_tile) serves the example
apps, each its own process: the edge detector (30 fps), the motion detector (60 fps) and the digit
reader (best effort), all on one synthetic video made here with OpenCV (moving shapes and
digits). Afterwards: a Perfetto trace, a Gantt picture, the edge detector's side-by-side video and
a summary per pipeline.

Time: the daemon's clock runs with the wall clock while the board is idle and stands still while
the RTL simulation is slower than the hardware it stands for, so every frame and load takes its
hardware time on it (see runtime/clock.py).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from fpgashare.errors import FpgashareError

log = logging.getLogger(__name__)

APPS = ("edge_detect", "motion", "digits")

#: Wall seconds per board second while the board idles. The daemon and three app processes share
#: the host's cores, and a few ms the daemon waits for one would pass for board time at 1 (loads
#: and frames already take exactly their hardware time: the clock is held while the RTL runs).
#: Measured 2026-12-03: at 1, 98-151 loads and late motion frames in some runs; at 4, 38-39 loads,
#: nothing late, about 19 s of wall time.
DEMO_DILATION = 4.0


def make_video(path: Path, frames: int, size: tuple[int, int] = (120, 160), seed: int = 3) -> Path:
    """Moving shapes and a few digits on a dark ground, written with OpenCV (MJPG)."""
    import cv2

    rows, cols = size
    rng = np.random.default_rng(seed)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30, (cols, rows))
    if not writer.isOpened():
        raise FpgashareError(f"OpenCV cannot write {path}")
    digits = "".join(str(d) for d in rng.integers(0, 10, 3))
    for k in range(frames):
        frame = np.full((rows, cols, 3), 20, np.uint8)
        x = int((k * 3) % (cols + 40)) - 20
        cv2.circle(frame, (x, rows // 3), rows // 8, (0, 180, 255), -1)
        cv2.rectangle(frame, (cols - 40 - k % 30, rows // 2), (cols - 10 - k % 30, rows // 2 + 25), (255, 90, 30), -1)
        for i, digit in enumerate(digits):
            cv2.putText(frame, digit, (10 + 30 * i, rows - 12), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2)
        writer.write(frame)
    writer.release()
    return path


class Progress:
    """A one-line progress report on stderr while the apps run."""

    def __init__(self, daemon, expected: int) -> None:
        self.daemon, self.expected = daemon, expected
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            done = sum(self.daemon.outcomes.values())
            filled = int(30 * min(1.0, done / max(1, self.expected)))
            sys.stderr.write(f"\r  [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.expected} frames and images, "
                             f"board time {self.daemon.clock.now():6.2f} s")
            sys.stderr.flush()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        sys.stderr.write("\n")


def run_demo(platform_name: str = "zcu104", out: str | Path = "out/demo", frames: int = 30,
             backend_name: str = "sim", progress: bool = True, dilation: float = DEMO_DILATION,
             size: tuple[int, int] = (120, 160)) -> dict:
    """Run the three apps against a daemon on the simulated board; return the summary."""
    from fpgashare.backends import make_backend
    from fpgashare.daemon import Daemon, DaemonThread
    from fpgashare.platform import load_platform
    from fpgashare.trace import write_gantt, write_trace

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    video = make_video(out / "input.avi", frames, size)
    platform = load_platform(platform_name)
    log.info("building or reusing the %s shell model (first run builds it: about a minute)", platform.name)
    backend = make_backend(backend_name, platform)
    sock = out / "fpgashare.sock"
    files = {"trace": str(out / "trace.json"), "gantt": str(out / "gantt.png"), "video": str(out / "edges.mp4")}
    started = time.perf_counter()
    daemon = Daemon(backend, sock, dilation=dilation)
    with DaemonThread(daemon):
        commands = {
            "edge_detect": ["--out", files["video"]],
            "motion": ["--out", str(out / "motion.mp4")],
            "digits": ["--out", str(out / "digits.mp4")],
        }
        procs = {}
        for app, extra in commands.items():
            cmd = [sys.executable, "-m", f"fpgashare.apps.{app}", "--video", str(video), "--socket", str(sock),
                   "--size", f"{size[0]}x{size[1]}", *extra]
            procs[app] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Each digit in each frame is one image; the motion app skips the first frame.
        expected = frames + (frames - 1) + 3 * frames
        with Progress(daemon, expected) if progress else contextlib.nullcontext():
            results = {app: proc.communicate(timeout=900) for app, proc in procs.items()}
        engine = daemon.engine
        write_trace(engine.trace, files["trace"], f"fpgashare demo on {platform.name}")
        # 100 ms of board time from the first frame: streams, loads and DNN batches side by side.
        first = min((e.start for e in engine.trace if e.track.startswith("slot")), default=0.0)
        write_gantt(engine.trace, files["gantt"], f"fpgashare demo on the simulated {platform.name}",
                    (first, first + 0.1))
        port = engine.slots.port
        busy = engine.slot_busy_s / max(1e-9, daemon.clock.now() * len(engine.slots.slots))
        board_s = daemon.clock.now()
        dnn_images = sum(engine.dnn_images.values())
    apps = {}
    for app, (stdout, stderr) in results.items():
        if procs[app].returncode != 0:
            raise FpgashareError(f"app {app} failed (exit {procs[app].returncode}): {stderr.strip()[-400:]}")
        apps[app] = dict(item.split("=", 1) for item in stdout.split())
        apps[app]["notes"] = [line for line in stderr.splitlines() if line.startswith("apps:")]
    pipelines = {}
    for name, stats in daemon.per_pipeline.items():
        lat, counts = stats["latencies_ms"], stats["outcomes"]
        pipelines[name] = {"class": stats["class"], "frames": sum(counts.values()),
                           "on_time": counts.get("on_time", counts.get("done", 0)), "late": counts.get("late", 0),
                           "dropped": counts.get("dropped", 0),
                           "latency_ms_p99": round(float(np.percentile(lat, 99)), 3) if lat else None}
    return {"platform": platform.name, "backend": backend.name, "pipelines": pipelines,
            "totals": {"reconfigurations": port.loads, "port_busy_s": round(port.busy_s, 6),
                       "slot_utilization": round(busy, 4), "dnn_images": dnn_images,
                       "dnn_images_per_s": round(dnn_images / board_s, 1) if board_s else 0.0,
                       "board_s": round(board_s, 3), "wall_s": round(time.perf_counter() - started, 1)},
            "apps": apps, "files": files}


def report_lines(summary: dict) -> list[str]:
    t = summary["totals"]
    lines = [f"fpgashare demo: three apps on the simulated {summary['platform']} ({summary['backend']} backend), "
             f"{t['board_s']:.2f} s of board time in {t['wall_s']:.0f} s of wall time",
             f"  {'pipeline':10s} {'class':10s} {'frames':>6s} {'on time':>7s} {'late':>5s} {'dropped':>7s} "
             f"{'p99 ms':>7s}"]
    for name, p in summary["pipelines"].items():
        p99 = "-" if p["latency_ms_p99"] is None else f"{p['latency_ms_p99']:.2f}"
        lines.append(f"  {name:10s} {p['class']:10s} {p['frames']:6d} {p['on_time']:7d} {p['late']:5d} "
                     f"{p['dropped']:7d} {p99:>7s}")
    lines.append(f"  {t['reconfigurations']} partial loads, port busy {t['port_busy_s'] * 1e3:.1f} ms, slots "
                 f"{100 * t['slot_utilization']:.1f}% busy, DNN {t['dnn_images']} images "
                 f"({t['dnn_images_per_s']:.0f}/s of board time)")
    for result in summary["apps"].values():
        for note in result["notes"]:
            lines.append(f"  {note.split(':', 1)[1].strip()}")
    lines.append("  wrote " + ", ".join(summary["files"].values()))
    return lines
