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


def cmd_bench(args) -> int:
    """Place copies of the workload's real-time pipelines on 1..N boards until none admits another,
    then spread DNN images over the same boards; one table, every board count in one run."""
    require_ray()
    from fpgashare.catalogue.workload import load_workload
    from fpgashare.fleet.local import LocalFleet

    workload = load_workload(args.workload)
    boards = parse_boards(args.platforms or workload.platform.name, args.boards)
    rows = []
    with LocalFleet(boards, dilation=args.dilation) as fleet:
        from fpgashare.fleet.client import connect

        with connect(fleet.address) as fpga:
            for k in range(1, len(boards) + 1):
                rows.append(bench_boards(fpga, workload, [b.name for b in boards[:k]], args))
            memory = fleet.node_rss_mb()
    result = {"workload": workload.path.stem, "dilation": args.dilation, "rows": rows, "memory_mb": memory}
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return 0
    lines = [f"fleet bench {workload.path.stem} ({args.platforms or workload.platform.name}), simulated boards on "
             f"the model backend, dilation {args.dilation:g}",
             f"{'boards':>6} {'admitted':>8} {'per board':>24} {'placement p50/p99 ms':>21} "
             f"{'DNN img/s (board time)':>23} {'per board':>24}"]
    for r in rows:
        lines.append(f"{r['boards']:>6} {r['admitted']:>8} {json.dumps(r['admitted_per_board']):>24} "
                     f"{r['placement_p50_ms']:>10.1f}/{r['placement_p99_ms']:<10.1f} {r['dnn_images_per_s']:>23,.0f} "
                     f"{json.dumps(r['dnn_per_board']):>24}")
    base = rows[0]
    lines.append("scaling vs 1 board: admitted " + " / ".join(f"{r['admitted'] / max(base['admitted'], 1):.2f}"
                                                              for r in rows)
                 + ", DNN " + " / ".join(f"{r['dnn_images_per_s'] / max(base['dnn_images_per_s'], 1e-9):.2f}"
                                         for r in rows))
    lines.append("memory per board node (raylet + agent) / daemon, MB: "
                 + ", ".join(f"{b}: {m['node_mb']:.0f} / {m['daemon_mb']:.0f}" for b, m in memory.items()))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def bench_boards(fpga, workload, boards: list[str], args) -> dict:
    """One row: pipelines admitted on ``boards`` and DNN images per board-second there."""
    import ray
    from fpgashare.client import AdmissionRejected

    ray.get(fpga.controller.reset_decisions.remote())
    realtime = [p for p in workload.pipelines if p.klass == "realtime"]
    admitted, per_board, pipes = 0, {b: 0 for b in boards}, []
    for copy in range(args.max_copies):
        placed_this_round = 0
        for spec in realtime:
            try:
                pipe = fpga.pipeline(f"{spec.name}_{len(boards)}_{copy}", [s.name for s in spec.stages],
                                     period_ms=spec.period_s * 1e3, deadline_ms=spec.deadline_s * 1e3,
                                     frame_shape=spec.frame, boards=boards)
            except AdmissionRejected:
                continue
            pipes.append(pipe)
            per_board[pipe.board] += 1
            admitted += 1
            placed_this_round += 1
        if not placed_this_round:
            break
    placement = ray.get(fpga.controller.status.remote())["placement_ms"]
    for pipe in pipes:
        pipe.close()
    model = next((p.model for p in workload.pipelines if p.klass == "besteffort"), None) or "digits_cnn"
    dnn = fpga.dnn(f"dnn_{len(boards)}", model, boards=boards)
    from fpgashare.dnn.planning import network

    shape = network(model).input_shape
    image = np.zeros(shape[:2] if shape[2] == 1 else shape, np.uint8)
    for f in [dnn.submit(image) for _ in range(64 * len(dnn.boards))]:   # warm up every board's path
        f.result(timeout=120)
    start_done = dict(dnn.done)
    start = time.monotonic()
    futures = []
    while time.monotonic() - start < args.dnn_seconds:
        while dnn.backlog.qsize() < 256 * len(dnn.boards):
            futures.append(dnn.submit(image))
        time.sleep(0.005)         # real waiting: keep the queues full without spinning
    wall = time.monotonic() - start
    done = {b: dnn.done[b] - start_done[b] for b in dnn.boards}
    for f in futures:
        f.result(timeout=300)
    dnn.close()
    return {"boards": len(boards), "admitted": admitted, "admitted_per_board": per_board,
            "placement_p50_ms": placement["p50"], "placement_p99_ms": placement["p99"],
            "placement_decisions": placement["decisions"],
            "dnn_images_per_s": sum(done.values()) / wall * args.dilation,
            "dnn_per_board": {b: round(n / wall * args.dilation) for b, n in done.items()}}
