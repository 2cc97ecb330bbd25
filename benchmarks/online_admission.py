"""How many pipelines the daemon admits, against the offline planner and every fixed split.

Generated workloads (the episodes of benchmarks/daemon_path_soundness.py: three platforms, cameras
in random registration order; departures and DNN left out) are registered one at a time, each once
the previous registration returned, into:

- *online*: the daemon's default, partitions found as pipelines come (runtime/sched/board/relayout.py);
- *fixed N*: the board cut into N even partitions at the start, for every N the shell allows (what
  ``--streams N`` did before);
- *offline*: ``bench``'s planner over the whole set at once (runtime/sched/board/stream_plan.py).

Printed: admitted pipelines summed over the workloads, online as a share of offline, and the
workloads where online admits fewer than the best fixed split, split in two:

- *first come*: online admitted a pipeline that this fixed split refused, and the split used the
  room for more of the later ones. No online policy can avoid these: take a first pipeline that
  only the whole board serves, then k that each fit half of it but not beside the first. One
  fixed split admits the first and nothing else, another refuses it and admits the k. A policy
  that sees the first one must decide before the others come: admitting it loses to the second
  split when the k come, refusing it loses to the first split when they do not. So "at least
  as many as the best fixed split on every workload" holds for no online admission;
- *otherwise*: the fixed split admitted everything online did and more; these are the policy's own
  misses, and the claim is that there are none.

    python -m benchmarks.online_admission [--count 200] [--seed S] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.workload import Workload
from fpgashare.sched.board.board import Board
from fpgashare.sched.board.board_admission import split_slots
from fpgashare.sched.board.stream_plan import plan_streams
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.registry import make_policy

from benchmarks.daemon_path_soundness import episode
from benchmarks.results import write_result

log = logging.getLogger(__name__)


def _register_all(engine, specs) -> list[str]:
    """Register ``specs`` in order, each after the previous one is ready; the names admitted."""
    admitted = []
    for spec in specs:
        if engine.admit(spec) is not None:
            continue
        state = {}
        engine.add_pipeline(spec, admitted=True, on_ready=lambda s=state: s.setdefault("ready", True),
                            on_refused=lambda why, s=state: s.setdefault("refused", why))
        clock = engine.clock
        while not state and (due := engine.next_event_s()) is not None:
            clock.wait_until(max(due, clock.now()))
            engine.advance_to(clock.now())
        if state.get("ready", False):
            admitted.append(spec.name)
    return admitted


def compare(seed: int) -> dict:
    """Admitted counts of one workload under online, every fixed split and offline."""
    platform, most, apps, _, _ = episode(seed)
    most = min(platform.streams, len(platform.slots))
    specs = [a.spec for a in sorted(apps, key=lambda a: a.register_s)]
    online_engine = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock(), cap=most)
    online_engine.begin()
    online = _register_all(online_engine, specs)
    fixed = {}
    for n in range(1, most + 1):
        engine = Board(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock(),
                       split_slots(platform, n))
        engine.begin()
        fixed[n] = _register_all(engine, specs)
    offline = len(plan_streams(Workload(Path("<generated>"), platform, seed, 1.0, tuple(specs)), most).admitted)
    best = max(fixed, key=lambda n: len(fixed[n]))
    behind = len(online) < len(fixed[best])
    # Behind a split that refused one of online's pipelines: the first-come case of the docstring.
    first_come = behind and any(len(names) > len(online) and not set(online) <= set(names)
                                for names in fixed.values())
    return {"seed": seed, "platform": platform.name, "pipelines": len(specs), "online": len(online),
            "fixed": {n: len(names) for n, names in fixed.items()}, "best_fixed": len(fixed[best]),
            "offline": offline, "behind": behind, "first_come": first_come,
            "relayouts": getattr(online_engine, "relayouts", 0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: fresh)")
    ap.add_argument("--quick", action="store_true", help="a few workloads (CI)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    count = 6 if args.quick else args.count
    first = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    start = time.perf_counter()
    rows = [compare(seed) for seed in range(first, first + count)]
    online, offline = sum(r["online"] for r in rows), sum(r["offline"] for r in rows)
    best_fixed = sum(r["best_fixed"] for r in rows)
    behind = [r for r in rows if r["behind"]]
    own = [r for r in behind if not r["first_come"]]
    log.info("%d workloads from seed %d in %.1f s: admitted online %d, offline %d (online/offline %.3f), "
             "best fixed split %d (online/best fixed %.3f), one stream %d; online behind the best fixed split on "
             "%d workload(s), %d of them first come, %d otherwise; re-layouts %d", count, first,
             time.perf_counter() - start, online, offline, online / max(1, offline), best_fixed,
             online / max(1, best_fixed), sum(r["fixed"][1] for r in rows), len(behind), len(behind) - len(own),
             len(own), sum(r["relayouts"] for r in rows))
    for r in own:
        log.info("behind, not first come: %s", r)
    data = {"first_seed": first, "workloads": count, "admitted_online": online, "admitted_offline": offline,
            "online_over_offline": round(online / max(1, offline), 4), "admitted_best_fixed_split": best_fixed,
            "online_over_best_fixed": round(online / max(1, best_fixed), 4),
            "admitted_one_stream": sum(r["fixed"][1] for r in rows),
            "workloads_behind_best_fixed": len(behind), "behind_first_come": len(behind) - len(own),
            "behind_otherwise": len(own), "relayouts": sum(r["relayouts"] for r in rows)}
    write_result("online_admission", data, quick=args.quick)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**data, "behind": behind}, fh, indent=1)


if __name__ == "__main__":
    main()
