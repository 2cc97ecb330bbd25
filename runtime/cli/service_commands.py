"""What the service commands run: ``demo``, ``dnn eval|import``, ``bench``, ``daemon``, ``status``
(the parser is cli/main.py)."""

from __future__ import annotations

import argparse
import logging
import sys

from fpgashare.cli.output import emit
from fpgashare.errors import FpgashareError

log = logging.getLogger("fpgashare")



def cmd_demo(args: argparse.Namespace) -> int:
    """The example apps share the simulated FPGA through the daemon; exit 1 if a real-time frame missed."""
    from fpgashare.cli.demo import DEMO_FRAMES, DEMO_STREAMS, parse_apps, parse_size, report_lines, run_demo

    frames = DEMO_FRAMES if args.frames is None else args.frames
    if frames < 2:
        raise FpgashareError("--frames must be at least 2 (the motion app needs two frames to compare)")
    summary = run_demo(args.platform, args.out, frames, args.backend, progress=sys.stderr.isatty(),
                       size=parse_size(args.size), apps=parse_apps(args.apps),
                       streams=DEMO_STREAMS if args.streams is None else args.streams)
    emit(summary, args.json, report_lines(summary))
    missed = sum(p["late"] + p["dropped"] for p in summary["pipelines"].values() if p["class"] == "realtime")
    return 0 if not missed else 1


def cmd_dnn_eval(args: argparse.Namespace) -> int:
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.dnn.evaluate import evaluate, report_lines

    result = evaluate(args.model, args.tiles, load_platform(args.platform), args.images, args.backend, args.out)
    emit(result, args.json, report_lines(result))
    return 0


def cmd_dnn_import(args: argparse.Namespace) -> int:
    from fpgashare.dnn.onnx_report import import_report

    report, lines = import_report(args.model, args.tiles, args.platform, args.out)
    emit(report, args.json, lines)
    return 0 if report["accepted"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from fpgashare.cli.bench import bench, report_lines

    schedulers = [s.strip() for s in args.scheduler.split(",") if s.strip()]
    report = bench(args.workload, schedulers, args.backend, args.trace, args.sweep, args.gantt, args.streams,
                   limit=args.limit, plan=args.plan)
    emit(report, args.json, report_lines(report))
    return 0


def _limits(items: list[str] | None, admin_group: str | None):
    """``--limit NAME=VALUE`` items (and ``--admin-group``) over the default Limits."""
    import dataclasses
    import grp

    from fpgashare.daemon import Limits

    fields = {f.name: f for f in dataclasses.fields(Limits) if f.name != "admin_gid"}
    values: dict = {}
    for item in items or []:
        key, eq, text = item.partition("=")
        if not eq or key not in fields:
            raise FpgashareError(f"--limit {item!r}: expected NAME=VALUE with NAME one of {', '.join(fields)}")
        whole = fields[key].type not in ("float", float)
        try:
            value = int(text, 0) if whole else float(text)
        except ValueError:
            raise FpgashareError(f"--limit {item!r}: {text!r} is not a {'whole ' if whole else ''}number") from None
        if not value > 0 or value != value or value == float("inf"):
            raise FpgashareError(f"--limit {item!r}: must be a finite number > 0")
        if key == "fabric_share_per_user" and value > 1:    # a share, not a percentage
            raise FpgashareError(f"--limit {item!r}: a share of 0..1, not {text}")
        values[key] = value
    if admin_group is not None:
        try:
            values["admin_gid"] = grp.getgrnam(admin_group).gr_gid
        except KeyError:
            raise FpgashareError(f"--admin-group {admin_group!r}: no such group") from None
    return Limits(**values)


def cmd_daemon(args: argparse.Namespace) -> int:
    from fpgashare.backends import make_backend
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.daemon import DEFAULT_SOCKET, Daemon, calibrate_dilation
    from fpgashare.daemon.eventloop import new_event_loop

    limits = _limits(args.limit, args.admin_group)
    platform = load_platform(args.platform)
    options = {}
    if args.board == "pynq":
        if not args.bitstreams:
            raise FpgashareError("--board pynq needs --bitstreams (a folder made by fpgashare bitstream build)")
        options = {"bitstreams": args.bitstreams, "overlay": args.overlay}
        if args.firmware_dir:
            options["firmware_dir"] = args.firmware_dir
        if args.fpga_manager:
            options["fpga_manager"] = args.fpga_manager
    backend = make_backend(args.board, platform, **options)
    if args.dilation == "auto":
        dilation = calibrate_dilation(backend)
    else:
        try:
            dilation = float(args.dilation)
        except ValueError:
            raise FpgashareError(f"--dilation must be a number or auto, not {args.dilation!r}") from None
        if not 0 < dilation < float("inf"):
            raise FpgashareError("--dilation must be a finite number > 0")
    logging.getLogger("fpgashare").setLevel(logging.INFO)
    if args.watchdog_margin is not None and not 0 <= args.watchdog_margin < float("inf"):
        raise FpgashareError("--watchdog-margin must be a finite number >= 0")
    daemon = Daemon(backend, args.socket or DEFAULT_SOCKET, dilation=dilation, scheduler=args.scheduler,
                    metrics_port=args.metrics_port, limits=limits, watchdog_margin=args.watchdog_margin,
                    streams=args.streams, host_reserve_s=_host_reserve(args.host_reserve_ms))
    loop = new_event_loop()
    try:
        loop.run_until_complete(daemon.serve_forever())
    finally:
        loop.close()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from fpgashare.client import connect

    with connect(args.socket) as fpga:
        status = fpga.status()
    for envelope in ("v", "id", "ok"):
        status.pop(envelope, None)
    lines = [f"daemon clock {status['now']:.3f} s (dilation {status['dilation']:g}); outcomes {status['outcomes']}"]
    lines += [f"  slot {s['slot']}: {s['state']:8s} {s['module'] or '-':12s} {100 * s['utilization']:5.1f}% busy"
              f"  stream {s.get('stream', 0)}"
              for s in status["slots"]]
    port = status["port"]
    lines.append(f"  port: {port['loads']} loads, {port['busy_s'] * 1e3:.1f} ms busy, {port['queued']} queued")
    lines += [f"  pipeline {name}: {'/'.join(p['modules'])}, {sum(p['outcomes'].values())} ended, "
              f"miss rate {100 * p['miss_rate']:.1f}%" for name, p in status["pipelines"].items()]
    lines += [f"  client {c['id']} (pid {c['pid']}, uid {c['uid']}): {', '.join(c['pipelines']) or '-'}"
              for c in status["clients"]]
    emit(status, args.json, lines)
    return 0


def _host_reserve(ms: float | None) -> float | None:
    """``--host-reserve-ms`` in seconds (None: the daemon derives it per pipeline)."""
    if ms is None:
        return None
    if not 0 <= ms < float("inf"):
        raise FpgashareError("--host-reserve-ms must be a finite number >= 0")
    return ms / 1e3
