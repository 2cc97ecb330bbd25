"""The real-time path first (runtime/daemon/control_lane.py), measured: an app's frames beside
*control load* — a registration storm (admission trials on the daemon's workers, mode changes,
closes, status), a DNN burst and status requests, each from a process of its own — and alone, in
the same run, with their ratios; and the same load on a daemon whose interpreter is left as it is
(a 5 ms switch interval, a collector that walks every object), on one that handles every request
inline (no control lane: the daemon as it was), and with 12 connections polling status besides. The
phases are interleaved over ``--rounds`` (this machine's other load drifts) and each phase's frames pooled.

A frame's *dispatch latency*: from the app sending its submit to the daemon handing it to the
engine (both read the system's monotonic clock); of it, from the loop reading the submit's bytes to
the hand-in, wall and the loop thread's CPU (the CPU figure leaves out the time the daemon was not
running at all: other processes on the cores, a worker holding the interpreter's lock). Also the
frame's *host path* at the app (its round trip less the time the engine had it), the loop's timer
dispatch delay, and the longest control piece (``status["control"]``: the blocking ``b`` the host
analysis must assume). Last, what the daemon's shorter switch interval costs a worker computing in
Python while the loop runs, and how late the loop wakes beside it at either interval.

Phases use loop_latency.py's machinery (a daemon process, the app, loaders as ``nobody`` when root).

    python -m benchmarks.realtime_first [--quick] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchmarks.loop_latency import phase

STORM_CHAINS = (["threshold"], ["gauss3x3", "threshold"], ["sobel_mag", "threshold"], ["erode3x3", "dilate3x3"],
                ["median3x3"], ["conv3x3", "threshold"], ["rgb2gray", "threshold"])


def registration_storm(sock: str, until: float) -> dict:
    """Registers pipelines (random chains, periods, sizes) until one is refused, asks for status,
    closes them all, and again: admission trials on the daemon's workers, mode changes, closes."""
    import random

    from fpgashare.client import AdmissionRejected, DaemonError, connect

    rng = random.Random(os.getpid())
    counts = {"registered": 0, "refused": 0}
    with connect(sock, timeout=30) as fpga:
        while time.monotonic() < until:
            pipes = []
            for k in range(6):
                chain = rng.choice(STORM_CHAINS)
                rows = rng.choice([48, 120, 240, 480])
                shape = (rows, rows * 4 // 3, 3) if chain[0] == "rgb2gray" else (rows, rows * 4 // 3)
                try:
                    pipes.append(fpga.pipeline(f"s{k}", chain, period_ms=rng.uniform(15.0, 100.0), frame_shape=shape))
                    counts["registered"] += 1
                except (AdmissionRejected, DaemonError):
                    counts["refused"] += 1
                    break
                if time.monotonic() >= until:
                    break
            fpga.status()
            for pipe in pipes:
                pipe.close()
    return counts


def dnn_burst(sock: str, until: float) -> dict:
    """A DNN pipeline's images, every ring slot kept busy."""
    import numpy as np
    from fpgashare.client import connect

    done = 0
    with connect(sock, timeout=30) as fpga:
        pipe = fpga.dnn("burst", model="digits_cnn")
        image = np.zeros(pipe.ring.spec.in_shape, pipe.ring.spec.np_dtype)
        while time.monotonic() < until:
            futures = [pipe.submit(image) for _ in range(pipe.ring.spec.slots)]
            for future in futures:
                future.result(timeout=30)
                done += 1
    return {"images": done}


def status_requests(sock: str, until: float) -> dict:
    """status, hello and clock, one after another (each answered before the next)."""
    from fpgashare.client import connect

    done = 0
    with connect(sock, timeout=30) as fpga:
        while time.monotonic() < until:
            fpga.status()
            fpga.request("hello")
            fpga.clock()
            done += 3
    return {"requests": done}


def status_tenants(sock: str, until: float, connections: int = 12) -> dict:
    """Many tenants polling: ``connections`` connections, each asking for status again as soon as
    it has its answer, so up to that many requests are ready on the loop at once."""
    import selectors
    import socket

    from fpgashare.wire.protocol import encode

    request = encode({"op": "status", "id": 1})
    selector, answers = selectors.DefaultSelector(), 0
    for _ in range(connections):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(sock)
        conn.sendall(request)
        selector.register(conn, selectors.EVENT_READ)
    while time.monotonic() < until:
        for key, _ in selector.select(0.1):
            if key.fileobj.recv(1 << 20):        # an answer (whole, at these sizes): the next request
                answers += 1
                key.fileobj.sendall(request)
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    return {"answers": answers}


# Each loader waits for its answers: the load is what clients can ask of the daemon, not a
# process spinning on this machine's two cores (the floods above measure that).
CONTROL_LOAD = (registration_storm, dnn_burst, status_requests)
#: name -> (the daemon's --serve arguments, the load: none, the control load, or that and many
#: tenants polling status)
REALTIME_PHASES = {"alone": ([], False), "control": ([], True),
                   "control_interpreter_default": (["--switch-us", "0"], True),
                   "control_inline": (["--inline"], True),
                   "tenants": ([], "tenants"), "tenants_inline": (["--inline"], "tenants")}


def serve(sock: str, switch_us: float | None, inline: bool, dispatch_log: str | None) -> None:
    """The daemon for a real-time phase: the model of a ZCU104 at dilation 1, its host cost measured;
    ``switch_us``: the interpreter's switch interval (0: its default); ``inline``: every request
    handled as it is read, as before the control lane. Each frame's *dispatch delay* — from the loop
    reading its submit's bytes to handing it to the engine, wall and the loop thread's CPU seconds —
    goes to ``dispatch_log`` (JSON) when the daemon stops."""
    import asyncio
    import gc
    import json

    from fpgashare.backends import make_backend
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.daemon import Daemon, server
    from fpgashare.daemon.eventloop import SWITCH_INTERVAL_S, new_event_loop
    from fpgashare.daemon.ops import Ops
    from fpgashare.sched.host.host_cost import HostCost

    delays: list[tuple[float, float]] = []
    pauses = {"collections": 0, "longest_ms": 0.0, "started": 0.0}

    def timed_collection(phase: str, info: dict) -> None:
        if phase == "start":
            pauses["started"] = time.perf_counter()
        else:
            pauses["collections"] += 1
            pauses["longest_ms"] = max(pauses["longest_ms"], (time.perf_counter() - pauses["started"]) * 1e3)
    gc.callbacks.append(timed_collection)
    feed, submit = asyncio.StreamReader.feed_data, Ops._op_submit

    def stamped_feed(reader, data) -> None:       # bytes read by the loop: when, if none were waiting
        if not reader._buffer:
            reader.fpgashare_read_at = (time.perf_counter(), time.thread_time())
        feed(reader, data)

    async def timed_submit(ops, client, message):
        read_at = getattr(client.writer._reader, "fpgashare_read_at", None)
        if read_at is not None:
            delays.append((time.perf_counter() - read_at[0], time.thread_time() - read_at[1], time.monotonic()))
        return await submit(ops, client, message)

    asyncio.StreamReader.feed_data, Ops._op_submit = stamped_feed, timed_submit

    if inline:
        server.REALTIME_OPS = frozenset({"hello", "clock", "status", "pipeline", "dnn", "submit", "infer", "close"})
    interval = SWITCH_INTERVAL_S if switch_us is None else (switch_us * 1e-6 or None)
    # The host taken as free: a calibration on a loaded machine must not refuse the app; this
    # measures the loop's order, host_limit.py the host's limit.
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, switch_interval_s=interval,
                    host_cost=HostCost())
    try:
        new_event_loop().run_until_complete(daemon.serve_forever())
    finally:
        if dispatch_log:
            Path(dispatch_log).write_text(json.dumps({"delays": delays, "gc": pauses}))


def worker_cost(seconds: float) -> dict:
    """A worker's pure-Python throughput while a loop thread wakes every millisecond (a busy
    daemon's rate), at the default switch interval and at the daemon's, and the loop's wake-up
    delay meanwhile."""
    import asyncio
    import threading

    import numpy as np
    from fpgashare.daemon.eventloop import SWITCH_INTERVAL_S, new_event_loop

    def burn(stop: threading.Event, out: list) -> None:
        n = 0
        while not stop.is_set():
            for i in range(1000):
                n += i * i
            out[0] += 1

    async def probe() -> list[float]:
        loop, delays = asyncio.get_running_loop(), []
        end = loop.time() + seconds
        while loop.time() < end:
            due = loop.time() + 1e-3
            woke = loop.create_future()
            loop.call_at(due, woke.set_result, None)
            await woke
            delays.append(loop.time() - due)
        return delays

    before, rows = sys.getswitchinterval(), {}
    try:
        for name, interval in (("default", before), ("daemon", SWITCH_INTERVAL_S)):
            sys.setswitchinterval(interval)
            stop, out = threading.Event(), [0]
            worker = threading.Thread(target=burn, args=(stop, out))
            start = time.perf_counter()
            worker.start()
            delays = np.array(new_event_loop().run_until_complete(probe())) * 1e3
            stop.set()
            worker.join()
            rate = out[0] / (time.perf_counter() - start)
            rows[name] = {"interval_us": round(interval * 1e6, 1), "worker_rate": rate,
                          "wake_p50_ms": round(float(np.percentile(delays, 50)), 4),
                          "wake_p99_ms": round(float(np.percentile(delays, 99)), 4),
                          "wake_max_ms": round(float(delays.max()), 4)}
    finally:
        sys.setswitchinterval(before)
    rows["daemon"]["worker_rate_vs_default"] = round(rows["daemon"]["worker_rate"] / rows["default"]["worker_rate"], 3)
    for row in rows.values():
        row["worker_rate"] = round(row["worker_rate"], 1)
    return rows


def _ms(values, q: float) -> float:
    import numpy as np

    return round(float(np.percentile(values, q)), 4)


def _load(results: list[dict]) -> str:
    """What the loaders got done, summed over the rounds (registered, refused, images, requests)."""
    total: dict[str, int] = {}
    for r in results:
        for load in r["loaders"]:
            for key, value in load.items():
                total[key] = total.get(key, 0) + value
    return ", ".join(f"{value} {key}" for key, value in total.items()) or "none"


def realtime_first(seconds: float, rounds: int) -> dict:
    """Every phase ``rounds`` times, the phases interleaved (the machine's other load drifts), each
    phase's frames pooled."""
    import numpy as np

    print(f"the real-time path first: an app's frames at 100 fps, {rounds} x {seconds:g} s per phase; control load "
          "= a registration storm, a DNN burst and status requests, one process each; tenants: and 12 connections "
          "polling status")
    runs: dict[str, list] = {name: [] for name in REALTIME_PHASES}
    for _ in range(rounds):
        for name, (serve_args, loaded) in REALTIME_PHASES.items():
            loaders = [*CONTROL_LOAD, status_tenants] if loaded == "tenants" else list(CONTROL_LOAD) if loaded else []
            # As this user (root is trusted: no request-rate quota), so the load is what they ask.
            runs[name].append(phase(name, seconds, 0, loaders=loaders, serve_args=serve_args, drop=False))
    print("disp: a frame's dispatch, from the app's send to the engine, ms; read: of it, from the loop reading "
          "it (its loop CPU: cpu); piece: the longest control piece's CPU; gc: the longest collection, ms")
    print(f"{'phase':<28} {'disp p50':>8} {'disp p99':>8} {'disp max':>8} {'p99/alone':>9} {'read p99':>8} "
          f"{'cpu max':>8} {'loop p99':>8} {'piece cpu':>9} {'gc max':>7}  app frames")
    rows, alone = {}, None
    for name, results in runs.items():
        failed = [r for r in results if "error" in r or "paths" not in r or not r.get("dispatch")
                  or any("error" in load for load in r["loaders"])]
        if failed:
            why = [load for load in failed[0].get("loaders", ()) if "error" in load] or failed[0]
            print(f"{name:<28} failed: {repr(why)[:300]}")
            rows[name] = {"failed": repr(why)[:300]}
            continue
        wall, cpu = (np.array([d[k] for r in results for d in r["dispatch"]]) * 1e3 for k in (0, 1))
        # The app sends one frame at a time: its n-th send is the daemon's n-th hand-in (a run whose
        # counts differ, a submit refused, is left out of this figure).
        sent = np.array([d[2] - s for r in results if len(r["sends"]) == len(r["dispatch"])
                         for s, d in zip(r["sends"], r["dispatch"], strict=True)]) * 1e3
        paths = np.array([v for r in results for v in r["paths"]]) * 1e3
        alone = alone or max(float(np.percentile(sent, 99)), 1e-6)
        on_time = sum(r["on_time"] for r in results)
        frames = sum(r["on_time"] + r["late"] + r["dropped"] for r in results)
        controls = [r.get("control") or {} for r in results]
        row = rows[name] = {
            "frames": int(sent.size), "dispatch_p50_ms": _ms(sent, 50), "dispatch_p99_ms": _ms(sent, 99),
            "dispatch_max_ms": round(float(sent.max()), 4),
            "dispatch_p99_vs_alone": round(float(np.percentile(sent, 99)) / alone, 3),
            "read_to_engine_p50_ms": _ms(wall, 50), "read_to_engine_p99_ms": _ms(wall, 99),
            "read_to_engine_max_ms": round(float(wall.max()), 4),
            "read_to_engine_cpu_p99_ms": _ms(cpu, 99), "read_to_engine_cpu_max_ms": round(float(cpu.max()), 4),
            "path_p50_ms": _ms(paths, 50), "path_p99_ms": _ms(paths, 99), "path_max_ms": round(float(paths.max()), 4),
            "loop_p99_ms": max(r["loop"]["p99_ms"] for r in results),
            "loop_max_ms": max(r["loop"]["max_ms"] for r in results),
            "control_turns": sum(c.get("turns", 0) for c in controls),
            "piece_p99_ms": max(c.get("piece_p99_ms", 0.0) for c in controls),
            "piece_max_ms": max(c.get("piece_max_ms", 0.0) for c in controls),
            "piece_cpu_p99_ms": max(c.get("piece_cpu_p99_ms", 0.0) for c in controls),
            "piece_cpu_max_ms": max(c.get("piece_cpu_max_ms", 0.0) for c in controls),
            "gc_longest_ms": round(max(r["gc"]["longest_ms"] for r in results), 3),
            "app_on_time": on_time, "app_frames": frames, "daemon_alive": all(r["alive"] for r in results),
            "load": _load(results)}
        print(f"{name:<28} {row['dispatch_p50_ms']:>8.3f} {row['dispatch_p99_ms']:>8.3f} "
              f"{row['dispatch_max_ms']:>8.2f} {row['dispatch_p99_vs_alone']:>9.2f} "
              f"{row['read_to_engine_p99_ms']:>8.3f} "
              f"{row['read_to_engine_cpu_max_ms']:>8.3f} {row['loop_p99_ms']:>8.3f} "
              f"{row['piece_cpu_max_ms']:>9.3f} {row['gc_longest_ms']:>7.2f}  {on_time}/{frames} on time"
              f"{'' if row['daemon_alive'] else ', DAEMON DIED'}")
    cost = worker_cost(min(seconds, 2.0))
    print("a worker computing in Python beside the loop: "
          + "; ".join(f"{name} switch interval {row['interval_us']:g} us: loop wake-up p50 {row['wake_p50_ms']:.3f} "
                      f"p99 {row['wake_p99_ms']:.3f} max {row['wake_max_ms']:.2f} ms" for name, row in cost.items())
          + f"; the worker's rate at the daemon's interval: {cost['daemon']['worker_rate_vs_default']:.3f} "
            "of the default's")
    return {"rounds": rounds, "phases": rows, "worker_beside_the_loop": cost}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round of 2 s per phase")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", metavar="SOCKET", help=argparse.SUPPRESS)      # a phase's daemon
    parser.add_argument("--switch-us", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--inline", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dispatch-log", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.switch_us, args.inline, args.dispatch_log)
        return 0
    seconds, rounds = (2.0, 1) if args.quick else (args.seconds, args.rounds)
    from benchmarks.results import write_result

    write_result("realtime_first", {"seconds_per_phase": seconds, **realtime_first(seconds, rounds)}, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
