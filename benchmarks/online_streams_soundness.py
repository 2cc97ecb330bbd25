"""Admitted means guaranteed for the daemon on several streams: a ``Board`` of fixed partitions
(runtime/sched/board/board.py).

Random workloads (benchmarks/workload_gen.py) are replayed as a daemon sees them: each real-time
pipeline registers at its first release (admission decides then, against the pipelines already in,
and picks its stream); once registration returns (its mode change is done) its frames come at
offset + k x period plus a random delay up to its jitter, and a best-effort DNN pipeline, if any,
gets an image every 5 ms from the start. At the end every app leaves (what still waits ends
dropped, as when a client disconnects). The engine runs on a virtual clock over the twin. Counted:
frames of admitted pipelines late or dropped (the claim: none), frames and images that ended other
than once or never (none), DNN images that failed, pipelines admitted and refused, and frame pairs
of different streams that overlapped.

    python -m benchmarks.online_streams_soundness [--count 100] [--seed S] [--max-s 2]   (seeds fresh unless given)

The one-stream runs (the daemon's default) are counted too, for comparison.
"""

from __future__ import annotations

import argparse
import logging
import random
from collections import Counter

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.dnn.planning import network
from fpgashare.errors import FpgashareError
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.board_admission import split_slots
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.registry import make_policy

from benchmarks.results import write_result
from benchmarks.workload_gen import random_workload

log = logging.getLogger(__name__)

DNN_EVERY_S = 0.005


def replay(seed: int, streams: int, max_s: float = 2.0, dnn_every_s: float = DNN_EVERY_S) -> dict:
    """One random workload through a ``streams``-stream online engine; its counts."""
    workload = random_workload(seed, max_s=max_s)
    platform = workload.platform
    streams = min(streams, platform.streams, len(platform.slots))
    clock = VirtualClock()
    engine = Board(platform, ModelBackend(platform), lambda: make_policy("edf"), clock, split_slots(platform, streams))
    for part in engine.parts:
        part.want_output = False            # timing is the claim; outputs are the twin's anyway
    ended: Counter = Counter()
    engine.on_finish = lambda item: ended.update([id(item)])
    engine.begin()
    rng = random.Random(seed)
    actions: list[tuple[float, int, str, object]] = []
    for p in (q for q in workload.pipelines if q.realtime):
        actions.append((p.offset_s, 0, "register", p))
        release = 0
        while (t := p.offset_s + release * p.period_s) < workload.duration_s:
            actions.append((t + rng.uniform(0.0, p.jitter_s), 1, "frame", p))
            release += 1
    dnn = [p for p in workload.pipelines if not p.realtime]
    if dnn:
        actions.append((0.0, 0, "register", dnn[0]))
        actions += [(k * dnn_every_s, 1, "image", dnn[0]) for k in range(int(workload.duration_s / dnn_every_s))]
    actions.sort(key=lambda a: (a[0], a[1]))
    admitted, refused, frames, images, homes, ready = set(), {}, [], [], {}, set()
    pixels = {p.name: np.zeros(tuple(p.frame), np.uint8) for p in workload.pipelines if p.realtime}
    for t, _, kind, p in actions:
        engine.advance_to(t)
        clock.wait_until(max(t, clock.now()))
        if kind == "register":
            why = engine.admit(p) if p.realtime else None
            if why:
                refused[p.name] = why
                continue
            try:
                # The app's camera starts once registration returns (the pipeline's switch).
                engine.add_pipeline(p, admitted=True, on_ready=lambda name=p.name: ready.add(name))
            except FpgashareError as exc:
                refused[p.name] = str(exc)
                continue
            admitted.add(p.name)
            homes[p.name] = engine.partition_of(p.name)[0]
        elif p.name in ready and kind == "frame":
            frames.append(engine.submit(p.name, pixels[p.name]))
        elif p.name in admitted and kind == "image":
            images.append(engine.submit_dnn(p.name, np.zeros(network(p.model).input_shape, np.uint8)))
        engine.advance_to(clock.now())
    while (due := engine.next_event_s()) is not None and due <= workload.duration_s + 2.0:
        clock.wait_until(max(due, clock.now()))
        engine.advance_to(clock.now())
    for name in sorted(admitted):           # the apps leave: what still waits ends dropped
        engine.remove_pipeline(name, "the app left")
    while (due := engine.next_event_s()) is not None:
        clock.wait_until(max(due, clock.now()))
        engine.advance_to(clock.now())
    outcomes = Counter(f.outcome for f in frames)
    spans = sorted((f.start, f.end, homes[f.pipeline.name]) for f in frames if f.start is not None and f.end)
    overlaps = sum(1 for i, (s, e, h) in enumerate(spans) for s2, _, h2 in spans[i + 1:] if s2 < e and h2 != h
                   and s2 >= s)
    return {"seed": seed, "platform": platform.name, "streams": streams, "admitted": len(admitted),
            "refused": len(refused), "frames": len(frames), "outcomes": dict(outcomes),
            "missed": outcomes["late"] + outcomes["dropped"] + outcomes["error"] + outcomes[None],
            "ended_twice": sum(1 for n in ended.values() if n != 1),
            "unended": sum(1 for f in (*frames, *images) if id(f) not in ended),
            "dnn_done": sum(1 for r in images if r.outcome == "done"),
            "dnn_failed": sum(1 for r in images if r.outcome == "error"), "overlaps": overlaps,
            "streams_used": len(set(homes.values()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--max-s", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true", help="three seeds of 0.3 s (CI: the script still runs)")
    args = ap.parse_args()
    if args.quick:
        args.count, args.max_s = 3, 0.3
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    totals: Counter = Counter()
    admitted_by_streams: Counter = Counter()
    first = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    log.info("seeds %d .. %d", first, first + args.count - 1)
    for seed in range(first, first + args.count):
        for streams in (1, 2, 3, 4):
            r = replay(seed, streams, args.max_s)
            if streams > r["streams"]:
                continue
            admitted_by_streams[streams] += r["admitted"]
            for key in ("admitted", "refused", "frames", "missed", "ended_twice", "unended", "dnn_done", "dnn_failed",
                        "overlaps"):
                totals[key] += r[key]
            totals["runs"] += 1
            totals["multi_stream_runs"] += r["streams_used"] > 1
            if r["missed"] or r["ended_twice"] or r["unended"] or r["dnn_failed"]:
                log.info("FAILED %s", r)
    log.info("%d runs (%d used more than one stream): %d pipelines admitted, %d refused; %d frames, %d missed, "
             "%d ended other than once, %d never ended; %d DNN images done, %d failed; %d frame pairs overlapped on "
             "different streams", totals["runs"], totals["multi_stream_runs"], totals["admitted"], totals["refused"],
             totals["frames"], totals["missed"], totals["ended_twice"], totals["unended"], totals["dnn_done"],
             totals["dnn_failed"], totals["overlaps"])
    log.info("pipelines admitted with 1..4 streams (4 on the ZCU104 only): %s",
             dict(sorted(admitted_by_streams.items())))
    write_result("online_streams_soundness", {"first_seed": first, "seeds": args.count, "max_s": args.max_s,
                                              **dict(totals),
                                              "admitted_by_streams": dict(sorted(admitted_by_streams.items()))},
                 quick=args.quick)
    if totals["missed"] or totals["ended_twice"] or totals["unended"] or totals["dnn_failed"]:
        raise SystemExit(1)             # the claim failed: say so to whoever runs it (CI too)


if __name__ == "__main__":
    main()
