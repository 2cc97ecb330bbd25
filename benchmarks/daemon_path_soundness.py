"""Admitted means guaranteed on the daemon's path: generated episodes of apps that come and go.

Each episode draws a platform (PYNQ-Z2, ZCU104 at one or four pixels per clock), a number of
streams the daemon uses (1 .. the shell's), and apps: real-time cameras (chains of 1..2x slots
stages, 120x160 .. 1080x1920, periods 8-100 ms, deadlines between the chain's time and the
period, release jitter up to 2 ms) that register at random times in random order, some of them
leaving later, and best-effort DNN apps that send bursts of images. An app's camera starts when
its registration returns (its mode change is done: runtime/sched/analysis/mode_change.py), at a random
phase, and sends frame k at start + k x period + a random delay within its declared jitter.
The board the daemon runs (``Board``: one partition, partitions found as apps come, or a fixed
split) runs on a virtual clock over the twin.

Counted, as the app sees it: frames of admitted pipelines that did not end on time by their
arrival + deadline (the claim: none), frames and images that ended other than exactly once
(none). Frames still waiting when their own app leaves end dropped by the app's request and are
not misses.

    python -m benchmarks.daemon_path_soundness [--count 300] [--seed S] [--quick]

Seeds are fresh each run unless ``--seed`` is given (the first seed is printed, to reproduce).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import DNN_MODELS, PipelineSpec, realtime_spec
from fpgashare.dnn.planning import network
from fpgashare.errors import FpgashareError
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.board_admission import split_slots
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.registry import make_policy

from benchmarks.results import write_result
from benchmarks.workload_gen import FRAMES, VISION

log = logging.getLogger(__name__)

PLATFORMS = ("pynq-z2", "zcu104", "zcu104-x4")
LEFT = "the app left"


@dataclass
class App:
    spec: PipelineSpec
    register_s: float
    leave_s: float | None            #: when it leaves (None: it stays to the end)


def _camera(rng: random.Random, name: str, platform) -> PipelineSpec | None:
    """A random real-time chain the platform offers that fits a period of at most 100 ms."""
    for _ in range(20):
        longest = 2 * len(platform.slots) if rng.random() < 0.15 else len(platform.slots)
        chain = rng.sample([m for m in VISION if m in platform.modules or _preset(m, platform)],
                           rng.randint(1, longest))
        if len(chain) < len(platform.slots) and rng.random() < 0.25:
            chain = ["rgb2gray", *chain]
        rows, cols = rng.choice(FRAMES)
        try:
            probe = realtime_spec(name, chain, 1.0, 1.0, [rows, cols], platform)
        except FpgashareError:
            continue
        low = max(8e-3, probe.exec_s * 1.02)
        if low > 100e-3:
            continue
        period = round(rng.uniform(low, 100e-3), 4)
        deadline = rng.uniform(probe.exec_s, period)
        jitter = rng.uniform(0.0, min(2e-3, 0.5 * period)) if rng.random() < 0.7 else 0.0
        return realtime_spec(name, chain, period, deadline, [rows, cols], platform, jitter_s=jitter)
    return None


def _preset(stage: str, platform) -> bool:
    from fpgashare.catalogue.modules import PRESETS

    return stage in PRESETS and PRESETS[stage][0] in platform.modules


def episode(seed: int) -> tuple[object, int, list[App], list[tuple[float, float, int]], float]:
    """The platform, streams, real-time apps, DNN bursts (time, images) and duration of one episode."""
    rng = random.Random(seed)
    platform = load_platform(rng.choice(PLATFORMS))
    streams = rng.randint(1, min(platform.streams, len(platform.slots)))
    duration = rng.uniform(0.3, 1.0)
    apps = []
    for i in range(rng.randint(1, 7)):
        spec = _camera(rng, f"p{i}", platform)
        if spec is None:
            continue
        register = rng.uniform(0.0, 0.6 * duration)
        leave = rng.uniform(register, duration) if rng.random() < 0.3 else None
        apps.append(App(spec, register, leave))
    bursts = []
    if rng.random() < 0.6:
        for _ in range(rng.randint(1, 5)):
            bursts.append((rng.uniform(0.0, duration), rng.randint(1, 40), 0))
    return platform, streams, apps, bursts, duration


def replay(seed: int) -> dict:
    """One episode through the daemon's engine; its counts (module docstring)."""
    platform, streams, apps, bursts, duration = episode(seed)
    rng = random.Random(seed ^ 0x5EED)
    clock = VirtualClock()
    backend = ModelBackend(platform)
    online = streams > 1 and rng.random() < 0.5      # the daemon's default: partitions found as apps come
    if streams == 1 or online:
        engine = Board.whole(platform, backend, lambda: make_policy("edf"), clock, cap=streams)
    else:
        engine = Board(platform, backend, lambda: make_policy("edf"), clock, split_slots(platform, streams))
    def parts() -> list:
        return [e for _, e in engine.every()]

    for part in parts():
        part.want_output = False            # timing is the claim; outputs are the twin's
    ended: Counter = Counter()
    engine.on_finish = lambda item: ended.update([id(item)])
    engine.begin()
    actions: list[tuple[float, int, str, object]] = []
    for app in apps:
        actions.append((app.register_s, 0, "register", app))
        if app.leave_s is not None:
            actions.append((app.leave_s, 2, "leave", app))
    model = rng.choice(DNN_MODELS)
    dnn = PipelineSpec("dnn", "besteffort", model=model) if bursts and "dnn_tile" in platform.modules else None
    if dnn is not None:
        actions.append((0.0, 0, "register-dnn", dnn))
        actions += [(t, 1, "burst", n) for t, n, _ in bursts]
    admitted, refused, left, frames, images = set(), 0, set(), [], []

    def ready(app: App) -> None:            # the camera starts: frames from a random phase on
        start = clock.now() + rng.uniform(0.0, app.spec.period_s)
        k = 0
        while (t := start + k * app.spec.period_s) < duration:
            heap_push((t + rng.uniform(0.0, app.spec.jitter_s), 1, "frame", app))
            k += 1

    import heapq

    counter = iter(range(1 << 62))

    def heap_push(action) -> None:
        heapq.heappush(queue, (action[0], action[1], next(counter), action[2], action[3]))

    queue: list = []
    for a in actions:
        heap_push(a)
    pixels = {app.spec.name: np.zeros(app.spec.stages[0].kind.input_shape(*app.spec.frame), np.uint8) for app in apps}
    while queue:
        t, _, _, kind, item = heapq.heappop(queue)
        while (due := engine.next_event_s()) is not None and due <= t:
            clock.wait_until(max(due, clock.now()))
            engine.advance_to(clock.now())
        clock.wait_until(max(t, clock.now()))
        engine.advance_to(clock.now())
        if kind == "register":
            if getattr(engine, "busy", False):       # the previous registration has not returned yet
                heap_push((clock.now() + 1e-3, 0, "register", item))
                continue
            why = engine.admit(item.spec)
            if why:
                refused += 1
                continue
            admitted.add(item.spec.name)
            kw = {"on_refused": lambda _why, name=item.spec.name: admitted.discard(name)} if streams > 1 else {}
            engine.add_pipeline(item.spec, admitted=True, on_ready=lambda app=item: ready(app), **kw)
        elif kind == "register-dnn":
            engine.add_pipeline(item)
        elif kind == "leave" and item.spec.name in admitted:
            left.add(item.spec.name)
            engine.remove_pipeline(item.spec.name, LEFT)
        elif kind == "frame" and item.spec.name in admitted and item.spec.name not in left:
            frames.append(engine.submit(item.spec.name, pixels[item.spec.name]))
        elif kind == "burst":
            shape = network(dnn.model).input_shape
            images += [engine.submit_dnn("dnn", np.zeros(shape, np.uint8)) for _ in range(item)]
        engine.advance_to(clock.now())
    while (due := engine.next_event_s()) is not None and due <= duration + 2.0:
        clock.wait_until(max(due, clock.now()))
        engine.advance_to(clock.now())
    for name in sorted(admitted - left):
        engine.remove_pipeline(name, LEFT)
    if dnn is not None:
        engine.remove_pipeline("dnn", LEFT)
    while (due := engine.next_event_s()) is not None:
        clock.wait_until(max(due, clock.now()))
        engine.advance_to(clock.now())
    outcomes = Counter(f.outcome for f in frames)
    withdrawn = [f for f in frames if f.outcome == "dropped" and f.reason == LEFT]
    missed = [f for f in frames if f not in withdrawn and not (f.outcome == "on_time" and f.end is not None
                                                               and f.end <= f.origin + f.pipeline.due_s + 1e-9)]
    return {"seed": seed, "platform": platform.name, "streams": streams, "apps": len(apps),
            "admitted": len(admitted), "refused": refused, "left": len(left), "frames": len(frames),
            "outcomes": dict(outcomes), "withdrawn": len(withdrawn), "missed": len(missed),
            "first_miss": None if not missed else (missed[0].key, missed[0].outcome, missed[0].reason),
            "ended_twice": sum(1 for n in ended.values() if n != 1),
            "unended": sum(1 for f in (*frames, *images) if id(f) not in ended),
            "images": len(images), "dnn_done": sum(1 for r in images if r.outcome == "done"),
            "switches": sum(p.members.changes.switches for p in parts()), "online": online,
            "relayouts": getattr(engine, "relayouts", 0),
            "longest_change_ms": round(max(p.members.changes.longest_s for p in parts()) * 1e3, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--quick", action="store_true", help="a few episodes (CI)")
    ap.add_argument("--json", default=None, help="write the totals here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    count = 8 if args.quick else args.count
    first = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    log.info("episodes %d from seed %d", count, first)
    totals: Counter = Counter()
    by_platform: Counter = Counter()
    start = time.perf_counter()
    for seed in range(first, first + count):
        r = replay(seed)
        by_platform[(r["platform"], r["streams"])] += 1
        for key in ("relayouts", "apps", "admitted", "refused", "left", "frames", "withdrawn", "missed",
                    "ended_twice", "unended", "images", "dnn_done", "switches"):
            totals[key] += r[key]
        if r["missed"] or r["ended_twice"] or r["unended"]:
            log.info("FAILED %s", r)
    log.info("%d episodes in %.1f s (%s)", count, time.perf_counter() - start,
             ", ".join(f"{p} x{s}: {n}" for (p, s), n in sorted(by_platform.items())))
    log.info("apps %d, admitted %d, refused %d, left early %d; frames %d, missed as the app sees them %d, "
             "withdrawn by their app %d; ended other than once %d, never ended %d; DNN images %d, done %d; "
             "mode changes %d, re-layouts %d", totals["apps"], totals["admitted"], totals["refused"], totals["left"],
             totals["frames"], totals["missed"], totals["withdrawn"], totals["ended_twice"], totals["unended"],
             totals["images"], totals["dnn_done"], totals["switches"], totals["relayouts"])
    data = {"first_seed": first, "episodes": count, **{k: int(v) for k, v in totals.items()},
            "by_platform_and_streams": {f"{p} x{s}": n for (p, s), n in sorted(by_platform.items())}}
    write_result("daemon_path_soundness", data, quick=args.quick)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(data, fh, indent=1)


if __name__ == "__main__":
    main()
