"""The sentinel benchmark: frames on the fabric when their pipeline ends are never answered as results
without their output written.

Each round registers a pipeline (gauss3x3 then threshold on a 60x80 frame of 200s, whose output
is all 255s), fills every output slot of its ring with a sentinel (77), submits four frames and
then ends the pipeline under them:

- ``close``: the ``close`` op sent straight behind the frames, on one daemon for every round;
- ``sigterm``: SIGTERM to the daemon's process once the frames are in, a new daemon each round.

Every frame must end as exactly one of: a result whose output is the chain's (never the sentinel),
``dropped`` with the daemon's reason, or (SIGTERM only) ``DaemonError`` gone. Anything else is
counted as ``wrong`` and fails the run (exit 1).

The daemon runs in a process of its own, as apps meet it: forked from this process after the
imports, so a round's daemon starts in milliseconds (the ``fpgashare daemon`` command pays the
imports, ~1 s, each time; the daemon code it then runs is the same). The SIGTERM is a real signal,
taken by the daemon's handler (``Daemon.serve_forever``). Outcomes, not timings, are the measure.

    python -m benchmarks.close_sentinel [--quick] [--rounds 1000] [--mode both|close|sigterm] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import DaemonError, DeadlineMissed, FrameDropped, connect
from fpgashare.daemon import Daemon
from fpgashare.daemon.eventloop import new_event_loop
from fpgashare.sched.host.host_cost import HostCost

from benchmarks.results import write_result

SHAPE = (60, 80)
SENTINEL = 77
STAGES = ["gauss3x3", "threshold"]
FRAMES = 4                  #: per round: the ring's four slots
START_WAIT_S = 60.0         #: a forked daemon answers well within this
DILATION = 10.0             #: wall s per daemon s: frames stay on the fabric long enough to be caught
PHASES = 10                 #: the end comes 0, 0.1, ... 0.9 ms after the frames, round by round

log = logging.getLogger("fpgashare.cli.bench.close_sentinel")


def fork_daemon(sock: Path) -> int:
    """A daemon on the model backend in a child process of this one; returns its pid once it answers."""
    pid = os.fork()
    if pid == 0:                                      # the child: serve until SIGTERM, then exit
        code = 1
        try:
            logging.getLogger("fpgashare").setLevel(logging.WARNING)
            # the host taken as free: this measures closing, not the host (benchmarks/host_limit.py does)
            daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=DILATION,
                            host_cost=HostCost())
            loop = new_event_loop()
            loop.run_until_complete(daemon.serve_forever())
            code = 0
        except BaseException:                         # the parent sees the exit status
            logging.getLogger("fpgashare").exception("the forked daemon failed")
        finally:
            os._exit(code)
    deadline = time.monotonic() + START_WAIT_S
    while True:
        try:
            connect(sock).close()
            return pid
        except DaemonError:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() > deadline:
                raise RuntimeError("the forked daemon did not start") from None
            time.sleep(0.002)                         # waiting for another process to listen


def end_daemon(pid: int) -> int:
    """SIGTERM (if still running) and the exit code."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def prepare(fpga, name: str, frame: np.ndarray):
    """A pipeline whose modules are loaded (one frame through it), every output slot the sentinel."""
    pipe = fpga.pipeline(name, STAGES, period_ms=0.05, deadline_ms=50.0, frame_shape=SHAPE)
    pipe.submit(frame).result(timeout=30)
    for slot in range(pipe.ring.spec.slots):
        pipe.ring.output(slot)[...] = SENTINEL
    return pipe


def pause(round_: int) -> None:
    """A different phase each round: the end lands before, during or after the frames' fabric time."""
    until = time.perf_counter() + (round_ % PHASES) * 1e-4
    while time.perf_counter() < until:
        pass                                          # a spin: sleep() cannot wait 100 us


def settle(futures, expected: np.ndarray, counts: Counter, allow_gone: bool) -> None:
    """Count each frame's one outcome; a result must carry the chain's output."""
    for future in futures:
        try:
            out = future.result(timeout=30)
        except DeadlineMissed as late:               # late is a result too: its output must be there
            out = late.output
        except FrameDropped as exc:
            counts[f"dropped: {exc.reason}"] += 1
            continue
        except DaemonError as exc:
            counts["gone" if allow_gone and exc.kind == "gone" else f"wrong: {exc.kind}: {exc}"] += 1
            continue
        if np.array_equal(out, expected):
            counts["result (output written)"] += 1
        elif np.any(out == SENTINEL):
            counts["wrong: result with the sentinel"] += 1
        else:
            counts["wrong: result with other output"] += 1


def close_rounds(rounds: int, sock: Path, frame: np.ndarray, expected: np.ndarray) -> Counter:
    counts: Counter = Counter()
    pid = fork_daemon(sock)
    try:
        with connect(sock, timeout=30) as fpga:
            for i in range(rounds):
                name = f"r{i}"
                pipe = prepare(fpga, name, frame)
                futures = [pipe.submit(frame) for _ in range(FRAMES)]
                pause(i)
                fpga._send("close", pipeline=name)     # straight behind the frames, without waiting
                settle(futures, expected, counts, allow_gone=False)
                fpga.pipelines.pop(name).ring.close()
    finally:
        code = end_daemon(pid)
    if code != 0:
        counts[f"wrong: daemon exit {code}"] += 1
    return counts


def sigterm_rounds(rounds: int, sock: Path, frame: np.ndarray, expected: np.ndarray) -> Counter:
    counts: Counter = Counter()
    for i in range(rounds):
        pid = fork_daemon(sock)
        try:
            fpga = connect(sock, timeout=30)
            pipe = prepare(fpga, "s", frame)
            futures = [pipe.submit(frame) for _ in range(FRAMES)]
            pause(i)
        finally:
            code = end_daemon(pid)
        settle(futures, expected, counts, allow_gone=True)
        fpga.close()
        if code != 0:
            counts[f"wrong: daemon exit {code}"] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--mode", choices=["both", "close", "sigterm"], default="both")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="3 rounds of each mode: checks the benchmark runs")
    args = parser.parse_args()
    if args.quick:
        args.rounds = min(args.rounds, 3)
    if not 1 <= args.rounds <= 100_000:
        print("error: --rounds must be between 1 and 100000", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    sock = Path(tempfile.mkdtemp(prefix="fpgashare-sentinel-")) / "fpgashare.sock"
    frame = np.full(SHAPE, 200, np.uint8)
    expected = chain_reference(resolve_chain(STAGES, {}), frame)
    assert not np.any(expected == SENTINEL)
    result = {"rounds": args.rounds, "frames_per_round": FRAMES}
    modes = ["close", "sigterm"] if args.mode == "both" else [args.mode]
    for mode in modes:
        start = time.perf_counter()
        run = close_rounds if mode == "close" else sigterm_rounds
        counts = run(args.rounds, sock, frame, expected)
        result[mode] = {"outcomes": dict(sorted(counts.items())), "frames": sum(counts.values()),
                        "wrong": sum(n for k, n in counts.items() if k.startswith("wrong")),
                        "wall_s": round(time.perf_counter() - start, 1)}
    ok = all(result[m]["wrong"] == 0 and result[m]["frames"] == FRAMES * args.rounds for m in modes)
    result["ok"] = ok
    write_result("close_sentinel", result, quick=args.quick)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for mode in modes:
            r = result[mode]
            print(f"{mode}: {args.rounds} rounds, {r['frames']} frames, {r['wrong']} wrong, {r['wall_s']} s")
            for outcome, n in r["outcomes"].items():
                print(f"    {n:6d}  {outcome}")
        print("no frame answered as a result without its output written" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
