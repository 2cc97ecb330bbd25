"""Daemon round trips on this machine: a control request (``clock``) and a frame's submit-to-result
overhead excluding compute, p50 and p99, with the daemon on the model backend at dilation 1 (a
frame then takes its hardware time on the wall clock, as on a board) in this process's thread
and the client here. Compute is the frame's hardware time (the chain's cycles at the fabric
clock) plus the twin's OpenCV call. Also counts the bytes that crossed the socket per frame, to
show pixels do not.

    python benchmarks/daemon_rtt.py [--frames N] [--json]

Goal: submit-to-result overhead p50 <= 150 us.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.backends import make_backend
from runtime.client import connect
from runtime.daemon import Daemon
from runtime.platform import load_platform

GOAL_US = 150.0


class CountingSocket:
    """Wraps the client's socket to count bytes each way."""

    def __init__(self, sock) -> None:
        self.sock, self.sent, self.received = sock, 0, 0

    def sendall(self, data) -> None:
        self.sent += len(data)
        self.sock.sendall(data)

    def recv(self, n):
        data = self.sock.recv(n)
        self.received += len(data)
        return data

    def __getattr__(self, name):
        return getattr(self.sock, name)


def percentiles(samples: list[float]) -> dict:
    us = np.array(samples) * 1e6
    return {"p50_us": round(float(np.percentile(us, 50)), 1), "p99_us": round(float(np.percentile(us, 99)), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "rtt.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), path, dilation=1.0)
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(daemon.start())
        ready.set()
        loop.run_until_complete(daemon._stopped.wait())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    shape = (120, 160)
    frame = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    try:
        with connect(path) as fpga:
            control = []
            for _ in range(args.frames):
                start = time.perf_counter()
                fpga.clock()
                control.append(time.perf_counter() - start)
            pipe = fpga.pipeline("rtt", ["threshold"], period_ms=100.0, frame_shape=shape)
            pipe.submit(frame).result(timeout=10)                   # the module is loaded after this
            counting = CountingSocket(fpga._sock)
            fpga._sock = counting
            overhead, compute = [], []
            for _ in range(args.frames):
                start = time.perf_counter()
                fut = pipe.submit(frame)
                fut.result(timeout=10)
                total = time.perf_counter() - start
                overhead.append(total)
            # The twin computes the output with OpenCV on the engine thread: measure that alone.
            from runtime.simrun import resolve_chain
            from runtime.vision_ref import chain_reference

            stages = resolve_chain(["threshold"], {})
            for _ in range(args.frames):
                start = time.perf_counter()
                chain_reference(stages, frame)
                compute.append(time.perf_counter() - start)
            per_frame_bytes = (counting.sent + counting.received) / args.frames
            hardware_s = pipe.exec_ms / 1e3
    finally:
        asyncio.run_coroutine_threadsafe(daemon.stop(), loop).result(10)
        thread.join(10)
    net = [max(0.0, t - c - hardware_s) for t, c in zip(sorted(overhead), sorted(compute), strict=True)]
    result = {"control_rtt": percentiles(control), "submit_to_result": percentiles(overhead),
              "compute_alone": percentiles(compute), "overhead_excluding_compute": percentiles(net),
              "hardware_us": round(hardware_s * 1e6, 1),
              "socket_bytes_per_frame": round(per_frame_bytes, 1), "frame_bytes": frame.nbytes,
              "frames": args.frames}
    result["goal_met"] = result["overhead_excluding_compute"]["p50_us"] <= GOAL_US
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for key in ("control_rtt", "submit_to_result", "compute_alone", "overhead_excluding_compute"):
        print(f"{key:28s} p50 {result[key]['p50_us']:8.1f} us   p99 {result[key]['p99_us']:8.1f} us")
    print(f"frame hardware time {result['hardware_us']} us ({shape[0]}x{shape[1]}, threshold, zcu104 clock)")
    print(f"socket bytes per frame: {result['socket_bytes_per_frame']} (the frame is {frame.nbytes} bytes)")
    print(f"goal: overhead p50 <= {GOAL_US:.0f} us: {'met' if result['goal_met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
