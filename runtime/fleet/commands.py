"""``fpgashare fleet up | status | bench``: what the CLI runs (runtime/cli/main.py builds the parser).
Imports without Ray; each command says how to install the ``fleet`` extra when Ray is missing."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
from fpgashare.errors import FpgashareError
from fpgashare.fleet.events import INSTALL_HINT, FleetUnavailable

log = logging.getLogger(__name__)

STATE_FILE = Path(os.environ.get("FPGASHARE_FLEET_FILE", Path.home() / ".cache" / "fpgashare" / "fleet.json"))
BOARD_PLATFORMS = ("zcu104", "pynq-z2")


def require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        raise FleetUnavailable(INSTALL_HINT) from None


def parse_boards(spec: str | None, count: int) -> list:
    """``--platforms zcu104,pynq-z2`` cycled over ``count`` boards named b1..bN."""
    from fpgashare.fleet.local import SimBoard

    if count < 1:
        raise FpgashareError(f"--boards must be >= 1, not {count}")
    names = [p.strip() for p in (spec or "zcu104").split(",") if p.strip()]
    for name in names:
        if name not in BOARD_PLATFORMS:
            raise FpgashareError(f"--platforms: unknown platform {name!r} ({', '.join(BOARD_PLATFORMS)})")
    return [SimBoard(f"b{i + 1}", names[i % len(names)], (f"cam{i + 1}",)) for i in range(count)]


def cmd_up(args) -> int:
    """A head and N simulated boards on this machine, until Ctrl-C / SIGTERM."""
    require_ray()
    from fpgashare.fleet.local import LocalFleet

    fleet = LocalFleet(parse_boards(args.platforms, args.boards), backend=args.backend, dilation=args.dilation)
    fleet.start()
    try:
        STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
        STATE_FILE.write_text(json.dumps({"address": fleet.address, "pid": os.getpid()}))
        sys.stdout.write(f"fleet up in {fleet.start_s:.1f} s: head {fleet.address}, "
                         f"boards {', '.join(f'{b.name} ({b.platform}, {b.socket})' for b in fleet.boards)}\n"
                         f"connect with fpgashare.fleet.connect({fleet.address!r}); Ctrl-C stops it\n")
        sys.stdout.flush()
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    finally:
        fleet.shutdown()
        STATE_FILE.unlink(missing_ok=True)
    return 0


def _address(args) -> str:
    if args.address:
        return args.address
    try:
        return json.loads(STATE_FILE.read_text())["address"]
    except (OSError, ValueError, KeyError):
        raise FpgashareError(f"no --address and no running `fpgashare fleet up` ({STATE_FILE} not found)") from None


def cmd_status(args) -> int:
    require_ray()
    from fpgashare.fleet.client import connect

    with connect(_address(args)) as fpga:
        status = fpga.status()
    if args.json:
        sys.stdout.write(json.dumps(status, indent=2) + "\n")
        return 0
    lines = []
    for name, b in status["boards"].items():
        state = "up" if b["alive"] else f"LOST ({b.get('lost', '?')})"
        lines.append(f"board {name}: {b['platform']:8s} {state}, cameras {','.join(b['cameras']) or '-'}, "
                     f"stream {b['stream_used_pct']:.1f}% placed, pipelines {', '.join(b['pipelines']) or '-'}")
    p = status["placement_ms"]
    lines.append(f"placement decisions: {p['decisions']}, p50 {p['p50']:.1f} ms, p99 {p['p99']:.1f} ms")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def bench_load(workload, load: str | None) -> tuple[str, list]:
    """What ``fleet bench`` copies until no board admits another: ``sweep``, the workload's sweep
    pipeline alone (the default when it names one); ``mix``, every real-time pipeline, one copy of
    each per round. The load's name and its pipelines."""
    realtime = [p for p in workload.pipelines if p.klass == "realtime"]
    if not realtime:
        raise FpgashareError(f"{workload.path}: no real-time pipeline to place")
    load = load or ("sweep" if workload.sweep else "mix")
    if load == "sweep":
        if not workload.sweep:
            raise FpgashareError(f"--load sweep: {workload.path} names no sweep pipeline (its `sweep` key)")
        return load, [p for p in realtime if p.name == workload.sweep]
    return load, realtime


def cmd_bench(args) -> int:
    """Place copies of the workload's real-time pipelines on 1..N boards until none admits another,
    with its DNN pipeline on the same boards; one table, every board count in one run."""
    require_ray()
    from fpgashare.catalogue.workload import load_workload
    from fpgashare.fleet.local import LocalFleet, SimBoard

    workload = load_workload(args.workload)
    args.load, args.copied = bench_load(workload, getattr(args, "load", None))
    kinds = parse_boards(args.platforms or workload.platform.name, args.boards)
    # Each fleet size on boards of its own, fresh as a fleet of that size starts: a board that ran
    # an earlier size's pipelines would carry its partitions into the next one.
    sizes = {k: [SimBoard(f"k{k}-b{i + 1}", kinds[i].platform) for i in range(k)] for k in range(1, len(kinds) + 1)}
    rows = []
    with LocalFleet([b for row in sizes.values() for b in row], dilation=args.dilation) as fleet:
        from fpgashare.fleet.client import connect

        with connect(fleet.address) as fpga:
            for row in sizes.values():
                rows.append(bench_boards(fpga, workload, [b.name for b in row], args))
            memory = fleet.node_rss_mb()
    base = rows[0]
    scaling = {"admitted": [round(r["admitted"] / base["admitted"], 3) if base["admitted"] else None for r in rows],
               "dnn_images_per_s": [round(r["dnn_images_per_s"] / base["dnn_images_per_s"], 3)
                                    if base["dnn_images_per_s"] else None for r in rows]}
    result = {"workload": workload.path.stem, "load": args.load, "copied": [p.name for p in args.copied],
              "dilation": args.dilation, "rows": rows, "scaling_vs_1_board": scaling, "memory_mb": memory}
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return 0
    lines = [f"fleet bench {workload.path.stem} ({args.platforms or workload.platform.name}), simulated boards on "
             f"the model backend, dilation {args.dilation:g}; copied until refused ({args.load}): "
             + ", ".join(p.name for p in args.copied),
             f"{'boards':>6} {'admitted':>8} {'per board':>24} {'placement p50/p99 ms':>21} "
             f"{'frames':>7} {'missed':>6} {'DNN img/s (board time)':>23} {'per board':>24}"]
    for r in rows:
        lines.append(f"{r['boards']:>6} {r['admitted']:>8} {json.dumps(r['admitted_per_board']):>24} "
                     f"{r['placement_p50_ms']:>10.1f}/{r['placement_p99_ms']:<10.1f} {r['frames']:>7} "
                     f"{r['missed']:>6} {r['dnn_images_per_s']:>23,.0f} {json.dumps(r['dnn_per_board']):>24}")
        for board, f in r["frames_per_board"].items():
            lines.append(f"{'':>6} {board}: {f['frames']} frames, {f['on_time']} on time, {f['late']} late, "
                         f"{f['dropped']} dropped, {f['error']} failed")
    lines.append("scaling vs 1 board (this run): admitted "
                 + " / ".join(_ratio(r["admitted"], base["admitted"]) for r in rows)
                 + ", DNN " + " / ".join(_ratio(r["dnn_images_per_s"], base["dnn_images_per_s"]) for r in rows))
    lines.append("memory per board node (raylet + agent) / daemon, MB: "
                 + ", ".join(f"{b}: {m['node_mb']:.0f} / {m['daemon_mb']:.0f}" for b, m in memory.items()))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def bench_boards(fpga, workload, boards: list[str], args) -> dict:
    """One row: pipelines admitted on ``boards``; then every admitted pipeline streams for
    ``args.stream_seconds`` board seconds (paced on its board's clock, by its board's agent) while
    DNN images are spread over the same boards. Frames are counted per board as they ended; DNN
    images per second are each board's images over its own clock's seconds (a simulated board's
    clock stands still while the host computes for it, so this is the board's rate, not the host's)."""
    import ray
    from fpgashare.client import AdmissionRejected
    from fpgashare.dnn.planning import network
    from fpgashare.fleet.controller import AGENT_PREFIX

    ray.get(fpga.controller.reset_decisions.remote())
    # The DNN first, as an app that runs all along: each daemon's planner then keeps it slots
    # where its real-time set leaves some (admission is not traded for it: docs/fleet.md).
    model = next((p.model for p in workload.pipelines if p.klass == "besteffort"), None) or "digits_cnn"
    dnn = fpga.dnn(f"dnn_{len(boards)}", model, boards=boards)
    admitted, per_board, pipes = 0, {b: 0 for b in boards}, []
    for copy in range(args.max_copies):
        placed_this_round = 0
        for spec in args.copied:
            try:
                pipe = fpga.pipeline(f"{spec.name}_{len(boards)}_{copy}", [s.name for s in spec.stages],
                                     period_ms=spec.period_s * 1e3, deadline_ms=spec.deadline_s * 1e3,
                                     frame_shape=spec.frame, boards=boards)
            except AdmissionRejected:
                continue
            pipes.append((pipe, spec))
            per_board[pipe.board] += 1
            admitted += 1
            placed_this_round += 1
        if not placed_this_round:
            break
    placement = ray.get(fpga.controller.status.remote())["placement_ms"]
    agents = {b: fpga.agent(AGENT_PREFIX + b) for b in boards}
    shape = network(model).input_shape
    image = np.zeros(shape[:2] if shape[2] == 1 else shape, np.uint8)
    # Streams start together and the DNN's images come meanwhile, never before: with pipelines
    # admitted and no frame yet, a frame may come at any instant, so a partition whose pipelines
    # leave less than a batch of slack runs no batch until their frames' releases are known.
    streams = [(pipe.board, agents[pipe.board].stream.remote(pipe.name, _frame_shape(spec), spec.period_s,
                                                                args.stream_seconds)) for pipe, spec in pipes]
    clock0 = {b: ray.get(a.clock.remote()) for b, a in agents.items()}
    done0 = dict(dnn.done)
    futures = []
    pending = [ref for _, ref in streams]
    wall0 = time.monotonic()
    while pending or time.monotonic() - wall0 < args.dnn_seconds:
        while dnn.backlog.qsize() < 64 * len(dnn.boards):
            futures.append(dnn.submit(image))
        _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.05) if pending else ([], [])
        if not pending:
            time.sleep(0.05)       # real waiting: keep the DNN queues full for the rest of the window
    done = {b: dnn.done.get(b, 0) - done0.get(b, 0) for b in boards}
    clock1 = {b: ray.get(a.clock.remote()) for b, a in agents.items()}
    frames = {b: {"frames": 0, "on_time": 0, "late": 0, "dropped": 0, "error": 0} for b in boards}
    misses = {}
    for (board, ref), (pipe, _) in zip(streams, pipes, strict=True):
        counts = ray.get(ref)
        for k in frames[board]:
            frames[board][k] += counts.get(k, 0)
        if counts.get("misses"):
            misses[pipe.name] = counts["misses"]
    # The pipelines leave before the images still queued are waited for: an admitted pipeline that
    # has stopped sending may send again at any instant, so its partition starts no batch longer
    # than its slack, and images queued behind it would wait for good.
    for pipe, _ in pipes:
        pipe.close()
    dnn.close()                  # images a board has not run end there (dropped, with the reason)
    unrun = 0
    for f in futures:
        try:
            f.result(timeout=120)
        except TimeoutError:
            raise FpgashareError(f"{len(boards)} boards: a DNN image never ended") from None
        except FpgashareError:
            unrun += 1
    rates = {b: done[b] / max(clock1[b] - clock0[b], 1e-9) for b in boards}
    return {"boards": len(boards), "admitted": admitted, "admitted_per_board": per_board,
            "placement_p50_ms": placement["p50"], "placement_p99_ms": placement["p99"],
            "placement_decisions": placement["decisions"],
            "frames_per_board": frames, "misses": misses,
            "frames": sum(f["frames"] for f in frames.values()),
            "missed": sum(f["late"] + f["dropped"] + f["error"] for f in frames.values()),
            "board_seconds": {b: round(clock1[b] - clock0[b], 4) for b in boards},
            "dnn_images_per_s": sum(rates.values()), "dnn_images_not_run": unrun,
            "dnn_per_board": {b: round(r) for b, r in rates.items()}}


def _frame_shape(spec) -> tuple[int, ...]:
    """The array a pipeline's first stage takes for a frame of ``spec.frame`` (RGB stages: 3 planes)."""
    from fpgashare.backends.simrun import resolve_chain

    chain = resolve_chain([s.name for s in spec.stages], {})
    return tuple(chain[0].kind.input_shape(*spec.frame))


def _ratio(value: float, base: float) -> str:
    """``value`` / ``base``, or "-" where the one board's figure is 0 (no ratio to give)."""
    return f"{value / base:.2f}" if base else "-"
