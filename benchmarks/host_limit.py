"""The host as a resource, on this machine: the daemon (``fpgashare daemon --board model``, a wall
clock at dilation 1) measures its own cost per frame at start; apps register copies of a pipeline
until admission refuses one (its reason must name the host: the fabric would take many more);
then every admitted pipeline streams for ``--seconds`` from its own process, paced by its period,
while another process keeps one core busy. Printed: pipelines admitted, the first refusal's
reason, frames, and the share on time (the app's future resolved on time: its deadline counted
from the frame's arrival at the daemon, on the daemon's clock, by which the apps pace as they are
told to), against the goal of 99.9%, the slowest reply in wall time, and the daemon's own
``status["host"]`` (its measured cost, reserve and re-check).

    python -m benchmarks.host_limit [--quick] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.results import write_result

CHAIN = ["gauss3x3", "threshold"]
SHAPE = (120, 160)
PERIOD_MS = 100.0
MAX_COPIES = 40
GOAL = 0.999


def app(sock: str, k: int, answers, start, seconds: float) -> None:
    """One app: register copy ``k``; say whether it was admitted; stream once told to start."""
    import numpy as np
    from fpgashare.client import AdmissionRejected, DeadlineMissed, FrameDropped, FrameFailed, connect

    counts = {"frames": 0, "on_time": 0, "late": 0, "dropped": 0, "error": 0}
    with connect(sock, timeout=60) as fpga:
        try:
            pipe = fpga.pipeline(f"copy{k}", CHAIN, period_ms=PERIOD_MS, frame_shape=SHAPE)
        except AdmissionRejected as exc:
            answers.put((k, "refused", str(exc)))
            return
        answers.put((k, "admitted", ""))
        start.wait()
        frame = np.zeros(SHAPE, np.uint8)
        # Paced on the daemon's clock, as apps are told to (it stands still while the model
        # backend computes slower than the hardware it stands for, so wall pacing would send early).
        begin = fpga.clock()
        n, replies = 0, []
        while fpga.clock() - begin < seconds:
            fpga.sleep_until(begin + n * PERIOD_MS / 1e3)
            sent = time.monotonic()
            counts["frames"] += 1
            try:
                pipe.submit(frame).result(timeout=30)
                counts["on_time"] += 1
                replies.append(time.monotonic() - sent)
            except DeadlineMissed as exc:
                counts["late"] += 1
                counts["late_worst_ms"] = max(counts.get("late_worst_ms", 0), int(exc.latency_ms))
            except FrameDropped as exc:
                counts["dropped"] += 1
                counts[f"dropped: {str(exc)[:60]}"] = counts.get(f"dropped: {str(exc)[:60]}", 0) + 1
            except FrameFailed:
                counts["error"] += 1
            n += 1
    counts["reply_wall_worst_ms"] = round(max(replies, default=0.0) * 1e3, 2)
    answers.put((k, "counts", json.dumps(counts)))


def run(seconds: float, busy: bool = True, most: int = MAX_COPIES) -> dict:
    from fpgashare.client import connect

    tmp = tempfile.mkdtemp(prefix="fpgashare-host-")
    sock = os.path.join(tmp, "d.sock")
    daemon = subprocess.Popen([sys.executable, "-m", "fpgashare.cli", "daemon", "--board", "model", "--dilation", "1",
                               "--socket", sock], stderr=subprocess.DEVNULL)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    ctx = mp.get_context("fork")
    answers, start = ctx.Queue(), ctx.Event()
    apps = []
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)                       # waiting for another process to start
        reason = ""
        for k in range(most):
            child = ctx.Process(target=app, args=(sock, k, answers, start, seconds))
            child.start()
            _, what, why = answers.get(timeout=120)
            if what == "refused":
                child.join(30)
                reason = why
                break
            apps.append(child)
        start.set()
        totals: dict[str, int] = {}
        for _ in apps:
            _, _, counts = answers.get(timeout=seconds + 120)
            for key, value in json.loads(counts).items():
                totals[key] = max(totals.get(key, 0), value) if key.endswith("_ms") else totals.get(key, 0) + value
        for child in apps:
            child.join(30)
        with connect(sock) as fpga:
            host = fpga.status().get("host", {})
    finally:
        for child in apps:
            if child.is_alive():
                child.kill()
        if spinner is not None:
            spinner.kill()
            spinner.wait(10)
        daemon.terminate()
        daemon.wait(30)
    frames = totals.get("frames", 0)
    return {"pipelines_admitted": len(apps), "chain": CHAIN, "frame": list(SHAPE), "period_ms": PERIOD_MS,
            "refused_because": reason, "refused_by_host": "the host:" in reason, "one_core_busy": busy,
            "seconds": seconds, **totals, "on_time_share": totals.get("on_time", 0) / frames if frames else 0.0,
            "goal": GOAL, "host": host}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="2 s of streaming")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--idle", action="store_true", help="no process keeping a core busy")
    parser.add_argument("--copies", type=int, default=MAX_COPIES, help="register at most this many")
    args = parser.parse_args(argv)
    result = run(2.0 if args.quick else args.seconds, busy=not args.idle, most=args.copies)
    write_result("host_limit", result, quick=args.quick)
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
        return 0
    sys.stdout.write(
        f"host limit (model backend, dilation 1, one core kept busy): {result['pipelines_admitted']} copies of "
        f"{'/'.join(CHAIN)} {SHAPE[0]}x{SHAPE[1]} at {PERIOD_MS:g} ms admitted; the next refused: "
        f"{result['refused_because'] or '-'}\n"
        f"{result.get('frames', 0)} frames in {result['seconds']:g} s: {result.get('on_time', 0)} on time as the app "
        f"sees them ({result['on_time_share']:.4%}; goal {GOAL:.1%}), {result.get('late', 0)} late, "
        f"{result.get('dropped', 0)} dropped, {result.get('error', 0)} failed; the slowest reply "
        f"{result.get('reply_wall_worst_ms', 0)} ms of wall time after its send\n"
        f"host as the daemon measured it: {json.dumps(result['host'])}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
