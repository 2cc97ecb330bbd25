"""Daemon round trips on this machine: a control request (``clock``) and a frame's submit-to-result
overhead excluding compute, p50 and p99, with the daemon on the model backend at dilation 1 (a
frame then takes its hardware time on the wall clock, as on a board), on a thread of this
process or (``--process``) as ``fpgashare daemon`` in a process of its own, and the client here.
Compute is the frame's hardware time (the chain's cycles at the fabric clock) plus the twin's
OpenCV call. Also counts the bytes that crossed the socket per frame, to show pixels do not.

The baseline, measured in the same run: a bare process-to-process ping-pong over a Unix socket
(a child process echoes length-prefixed messages of a submit's size) — the least any daemon can
cost per frame.

    python benchmarks/daemon_rtt.py [--frames N] [--process] [--json]

Goal: submit-to-result overhead p50 <= 2x the ping-pong's p50.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.client import connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.errors import FpgashareError

ROOT = Path(__file__).resolve().parent.parent
GOAL_RATIO = 2.0
ECHO = """
import socket, sys
s = socket.socket(fileno=int(sys.argv[1]))
while True:
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        break
    body = s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
    s.sendall(head + body)
"""


def ping_pong(rounds: int, size: int) -> list[float]:
    """Round trips of a ``size``-byte length-prefixed message to a child process that echoes it."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    child = subprocess.Popen([sys.executable, "-c", ECHO, str(theirs.fileno())], pass_fds=[theirs.fileno()])
    theirs.close()
    message = len(b"x" * size).to_bytes(4, "big") + b"x" * size
    times = []
    try:
        for _ in range(rounds + 50):          # the first 50 warm up
            start = time.perf_counter()
            mine.sendall(message)
            got = 0
            while got < len(message):
                got += len(mine.recv(1 << 16))
            times.append(time.perf_counter() - start)
    finally:
        mine.close()
        child.wait(10)
    return times[50:]


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

    def recvmsg(self, *args):
        data, ancillary, flags, address = self.sock.recvmsg(*args)
        self.received += len(data)
        return data, ancillary, flags, address

    def __getattr__(self, name):
        return getattr(self.sock, name)


def percentiles(samples: list[float]) -> dict:
    us = np.array(samples) * 1e6
    return {"p50_us": round(float(np.percentile(us, 50)), 1), "p99_us": round(float(np.percentile(us, 99)), 1)}


@contextlib.contextmanager
def serving(path: Path, own_process: bool):
    """A daemon on the model backend at dilation 1 on ``path``: on a thread of this process, or
    (``own_process``) as ``fpgashare daemon`` in a process of its own, as apps meet it."""
    if not own_process:
        with DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), path, dilation=1.0)):
            yield
        return
    daemon = subprocess.Popen([sys.executable, "-m", "fpgashare.cli", "daemon", "--board", "model", "--platform",
                               "zcu104", "--socket", str(path), "--dilation", "1"], cwd=ROOT,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:                       # serving once it answers (the socket appears before that)
            try:
                connect(path).close()
                break
            except FpgashareError:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)          # waiting for another process to start, not simulating
        yield
    finally:
        daemon.terminate()
        daemon.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--process", action="store_true", help="the daemon in a process of its own")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "rtt.sock"
    shape = (120, 160)
    frame = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    with serving(path, args.process), connect(path) as fpga:
        control = []
        for _ in range(args.frames):
            start = time.perf_counter()
            fpga.clock()
            control.append(time.perf_counter() - start)
        # A period shorter than a round trip: frames are never held to it (runtime/sched/board/online.py).
        pipe = fpga.pipeline("rtt", ["threshold"], period_ms=0.1, deadline_ms=100.0, frame_shape=shape)
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
        # The twin computes the output with OpenCV on the daemon's loop: measure that alone.
        from fpgashare.backends.simrun import resolve_chain
        from fpgashare.catalogue.vision_ref import chain_reference

        stages = resolve_chain(["threshold"], {})
        for _ in range(args.frames):
            start = time.perf_counter()
            chain_reference(stages, frame)
            compute.append(time.perf_counter() - start)
        per_frame_bytes = (counting.sent + counting.received) / args.frames
        hardware_s = pipe.exec_ms / 1e3
        request_bytes = counting.sent / args.frames
    pong = ping_pong(args.frames, int(request_bytes))
    net = [max(0.0, t - c - hardware_s) for t, c in zip(sorted(overhead), sorted(compute), strict=True)]
    result = {"daemon": "own process" if args.process else "thread of this process",
              "control_rtt": percentiles(control), "submit_to_result": percentiles(overhead),
              "compute_alone": percentiles(compute), "overhead_excluding_compute": percentiles(net),
              "unix_ping_pong": percentiles(pong), "hardware_us": round(hardware_s * 1e6, 1),
              "socket_bytes_per_frame": round(per_frame_bytes, 1), "frame_bytes": frame.nbytes,
              "frames": args.frames}
    result["overhead_over_ping_pong"] = round(result["overhead_excluding_compute"]["p50_us"]
                                              / result["unix_ping_pong"]["p50_us"], 2)
    result["goal_met"] = result["overhead_over_ping_pong"] <= GOAL_RATIO
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for key in ("control_rtt", "submit_to_result", "compute_alone", "overhead_excluding_compute", "unix_ping_pong"):
        print(f"{key:28s} p50 {result[key]['p50_us']:8.1f} us   p99 {result[key]['p99_us']:8.1f} us")
    print(f"frame hardware time {result['hardware_us']} us ({shape[0]}x{shape[1]}, threshold, zcu104 clock)")
    print(f"socket bytes per frame: {result['socket_bytes_per_frame']} (the frame is {frame.nbytes} bytes)")
    print(f"overhead p50 / ping-pong p50 = {result['overhead_over_ping_pong']:.2f}; goal <= {GOAL_RATIO:g}: "
          f"{'met' if result['goal_met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
