"""Daemon round trips on this machine: a control request (``clock``) and a frame's submit-to-result
overhead excluding compute, p50 and p99, with the daemon on the model backend at dilation 1 (a
frame then takes its hardware time on the wall clock, as on a board), on a thread of this
process and (``--daemon process``) as ``fpgashare daemon`` in a process of its own, and the client here.
Compute is the frame's hardware time (the chain's cycles at the fabric clock) plus the twin's
OpenCV call. Also counts the bytes that crossed the socket per frame, to show pixels do not.

The baseline, measured in the same run: a bare process-to-process ping-pong over a Unix socket
(a child process echoes length-prefixed messages of a submit's size) — the least any daemon can
cost per frame. Beside it, the same ping-pong with the echo holding each message for the frame's
hardware time (the wait any process answering a frame's end has; on a virtual machine waking up
after it costs more than the bare round trip), and the CPU time per frame of both processes
against the ping-pong's, which other programs on the host do not inflate.

    python -m benchmarks.daemon_rtt [--quick] [--frames N] [--daemon thread|process|both] [--json]

Goal: submit-to-result overhead p50 <= 3x the ping-pong's p50.
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
from fpgashare.daemon.eventloop import SPIN_S
from fpgashare.errors import FpgashareError
from fpgashare.sched.host.host_cost import HostCost

ROOT = Path(__file__).resolve().parent.parent
GOAL_RATIO = 3.0
PERIOD_MS = 0.2      #: the frames' period: admitted for this frame (0.1 ms is not), below a round trip
JITTER_MS = 0.15
ECHO = """
import select, socket, sys, time
s = socket.socket(fileno=int(sys.argv[1]))
hold, spin = float(sys.argv[2]), float(sys.argv[3])
while True:
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        break
    body = s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
    if hold:                     # as the daemon's loop waits for a frame's end: sleep, then poll
        due = time.perf_counter() + hold
        if hold > spin:
            select.select([], [], [], hold - spin)
        while time.perf_counter() < due:
            pass
    s.sendall(head + body)
"""


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time a process has used: this one's (``None``), or a child's, every thread's together,
    from /proc's scheduler statistics (nanoseconds; None where there are none). CPU time, unlike
    wall time, does not grow when other programs take the machine's cores, so its ratio holds on
    a loaded host."""
    if pid is None:
        return time.process_time()
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return sum(int((task / "schedstat").read_text().split()[0]) for task in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def ping_pong(rounds: int, size: int, hold_s: float = 0.0) -> tuple[list[float], float | None]:
    """Round trips of a ``size``-byte length-prefixed message to a child process that echoes it
    (``hold_s`` after it came, waiting as the daemon's loop waits for a frame's end), and the CPU
    time both sides spent per round trip."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    child = subprocess.Popen([sys.executable, "-c", ECHO, str(theirs.fileno()), repr(hold_s), repr(SPIN_S)],
                             pass_fds=[theirs.fileno()])
    theirs.close()
    message = len(b"x" * size).to_bytes(4, "big") + b"x" * size
    times = []
    try:
        for i in range(rounds + 50):          # the first 50 warm up
            if i == 50:
                cpu = cpu_seconds(None), cpu_seconds(child.pid)
            start = time.perf_counter()
            mine.sendall(message)
            got = 0
            while got < len(message):
                got += len(mine.recv(1 << 16))
            times.append(time.perf_counter() - start)
        spent = _spent(cpu, cpu_seconds(None), cpu_seconds(child.pid), rounds)
    finally:
        mine.close()
        child.wait(10)
    return times[50:], spent


def _spent(before: tuple, mine: float, theirs: float | None, rounds: int) -> float | None:
    """CPU seconds per round, both processes together (None without /proc)."""
    if theirs is None or before[1] is None:
        return None
    return (mine - before[0] + theirs - before[1]) / rounds


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
        # the host taken as free here: this measures the trip, the host check is host_limit.py's
        with DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), path, dilation=1.0,
                                 host_cost=HostCost())):
            yield None
        return
    daemon = subprocess.Popen([sys.executable, "-m", "fpgashare.cli", "daemon", "--host-reserve-ms", "0", "--board",
                               "model", "--platform", "zcu104", "--socket", str(path), "--dilation", "1"], cwd=ROOT,
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
        yield daemon.pid
    finally:
        daemon.terminate()
        daemon.wait(30)


def measure(path: Path, own_process: bool, frames: int) -> dict:
    """One daemon's round trips: control requests, then ``frames`` frames submitted one at a time."""
    shape = (120, 160)
    frame = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    with serving(path, own_process) as pid, connect(path) as fpga:
        control = []
        for _ in range(frames):
            start = time.perf_counter()
            fpga.clock()
            control.append(time.perf_counter() - start)
        # The engine holds a frame that comes sooner than a period after the last one (the arrival
        # curve admission trusts), and a hold is not overhead: frames are paced at the period, and
        # the declared jitter absorbs the socket's own (a frame reaches the daemon a little sooner
        # or later than it was sent).
        pipe = fpga.pipeline("rtt", ["threshold"], period_ms=PERIOD_MS, jitter_ms=JITTER_MS, deadline_ms=100.0,
                             frame_shape=shape)
        pipe.submit(frame).result(timeout=10)                   # the module is loaded after this
        counting = CountingSocket(fpga._sock)
        fpga._sock = counting
        overhead, compute = [], []
        previous = time.perf_counter()
        cpu = cpu_seconds(None), cpu_seconds(pid) if own_process else None
        for _ in range(frames):
            while time.perf_counter() < previous + PERIOD_MS / 1e3:
                pass                        # pacing real arrivals (busy: a sleep is too coarse)
            start = previous = time.perf_counter()
            pipe.submit(frame).result(timeout=10)
            overhead.append(time.perf_counter() - start)
        mine, theirs = cpu_seconds(None), cpu_seconds(pid) if own_process else None
        spent = _spent(cpu, mine, theirs, frames)
        daemon_cpu = None if spent is None else (theirs - cpu[1]) / frames
        # The twin computes the output with OpenCV on the daemon's loop: measure that alone.
        from fpgashare.backends.simrun import resolve_chain
        from fpgashare.catalogue.vision_ref import chain_reference

        stages = resolve_chain(["threshold"], {})
        for _ in range(frames):
            start = time.perf_counter()
            chain_reference(stages, frame)
            compute.append(time.perf_counter() - start)
        hardware_s = pipe.exec_ms / 1e3
        sent, received = counting.sent, counting.received
    net = [max(0.0, t - c - hardware_s) for t, c in zip(sorted(overhead), sorted(compute), strict=True)]
    return {"daemon": "own process" if own_process else "thread of this process",
            "control_rtt": percentiles(control), "submit_to_result": percentiles(overhead),
            "compute_alone": percentiles(compute), "overhead_excluding_compute": percentiles(net),
            "hardware_us": round(hardware_s * 1e6, 1), "request_bytes": sent / frames,
            "socket_bytes_per_frame": round((sent + received) / frames, 1), "frame_bytes": frame.nbytes,
            "shape": list(shape), "cpu_us_per_frame": None if spent is None else round(spent * 1e6, 1),
            "daemon_cpu_us_per_frame": None if daemon_cpu is None else round(daemon_cpu * 1e6, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--daemon", choices=("thread", "process", "both"), default="both",
                        help="where the daemon runs: a thread of this process, a process of its own, or both")
    parser.add_argument("--quick", action="store_true", help="200 frames, the daemon on a thread")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    frames, where = (200, "thread") if args.quick else (args.frames, args.daemon)
    runs = []
    for own_process in {"thread": (False,), "process": (True,), "both": (False, True)}[where]:
        path = Path(tempfile.mkdtemp()) / "rtt.sock"
        runs.append(measure(path, own_process, frames))
    times, pong_cpu = ping_pong(frames, int(runs[0]["request_bytes"]))
    pong = {**percentiles(times), "cpu_us_per_round": None if pong_cpu is None else round(pong_cpu * 1e6, 1)}
    # The same ping-pong with the echo holding each message for the frame's hardware time: what
    # waking up after a wait costs on this host, which any process answering a frame's end pays.
    hold_s = runs[0]["hardware_us"] / 1e6
    held_times, _ = ping_pong(frames, int(runs[0]["request_bytes"]), hold_s)
    held = {key: round(value - hold_s * 1e6, 1) for key, value in percentiles(held_times).items()}
    for run in runs:
        run["overhead_over_ping_pong"] = round(run["overhead_excluding_compute"]["p50_us"] / pong["p50_us"], 2)
        run["overhead_over_held_ping_pong"] = round(run["overhead_excluding_compute"]["p50_us"]
                                                    / max(held["p50_us"], 1e-3), 2)
        run["goal_met"] = run["overhead_over_ping_pong"] <= GOAL_RATIO
        if run["cpu_us_per_frame"] is not None and pong_cpu:
            # Both processes' CPU per frame (the twin's compute taken out) over the ping-pong's.
            net_cpu = run["cpu_us_per_frame"] - run["compute_alone"]["p50_us"]
            run["cpu_over_ping_pong"] = round(net_cpu / pong["cpu_us_per_round"], 2)
    result = {"frames": frames, "unix_ping_pong": pong, "held_ping_pong_overhead": held, "goal_ratio": GOAL_RATIO,
              "runs": runs}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'unix_ping_pong':28s} p50 {pong['p50_us']:8.1f} us   p99 {pong['p99_us']:8.1f} us   "
              f"cpu {pong['cpu_us_per_round']} us a round (both processes)")
        print(f"{'held_ping_pong_overhead':28s} p50 {held['p50_us']:8.1f} us   p99 {held['p99_us']:8.1f} us   "
              "(the echo holds each message for the frame's hardware time; that time taken out)")
        for run in runs:
            print(f"-- daemon on a {run['daemon']}")
            for key in ("control_rtt", "submit_to_result", "compute_alone", "overhead_excluding_compute"):
                print(f"{key:28s} p50 {run[key]['p50_us']:8.1f} us   p99 {run[key]['p99_us']:8.1f} us")
            print(f"frame hardware time {run['hardware_us']} us ({run['shape'][0]}x{run['shape'][1]}, threshold, "
                  f"zcu104 clock); socket bytes per frame: {run['socket_bytes_per_frame']} "
                  f"(the frame is {run['frame_bytes']} bytes)")
            print(f"overhead p50 / ping-pong p50 = {run['overhead_over_ping_pong']:.2f}; goal <= {GOAL_RATIO:g}: "
                  f"{'met' if run['goal_met'] else 'NOT met'}")
            print(f"overhead p50 / held ping-pong overhead p50 = {run['overhead_over_held_ping_pong']:.2f}")
            if "cpu_over_ping_pong" in run:
                print(f"cpu per frame (daemon + client) {run['cpu_us_per_frame']} us (the daemon's "
                      f"{run['daemon_cpu_us_per_frame']} us); over the ping-pong's: "
                      f"{run['cpu_over_ping_pong']:.2f}")
    from benchmarks.results import write_result

    # Flat rows: the results page renders a list of mappings as one table, a column per key.
    flat = [{f"{key}_{k}" if isinstance(value, dict) else key: v
             for key, value in run.items() for k, v in (value.items() if isinstance(value, dict) else [(None, value)])}
            for run in runs]
    write_result("daemon_rtt", {**result, "runs": flat}, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
