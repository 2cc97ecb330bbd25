"""The ``fpgashare`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
from fpgashare import cli_inputs
from fpgashare.errors import FpgashareError

log = logging.getLogger("fpgashare")


_positive_int = cli_inputs.positive_int     #: argparse names the option on error


def _emit(obj: dict, as_json: bool, lines: list[str]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")


def cmd_bitstream_build(args: argparse.Namespace) -> int:
    from fpgashare.bitstream.registry import build_all
    from fpgashare.platform import load_platform

    platform = load_platform(args.platform)
    if args.relocatable:
        return _bitstream_build_relocatable(platform, Path(args.out), args.json)
    entries = build_all(platform, Path(args.out))
    lines = [f"{e.path}  {e.size:>9} B  {e.slot:<18} {e.module:<12} sha256 {e.sha256[:16]}" for e in entries]
    lines.append(f"{len(entries)} partial bitstreams for {platform.name}, index {Path(args.out) / 'index.json'}")
    _emit({"platform": platform.name, "files": [str(e.path) for e in entries]}, args.json, lines)
    return 0


def _bitstream_build_relocatable(platform, out: Path, as_json: bool) -> int:
    """One partial per module (per slot shape), moved to the slot it goes into at load time."""
    from fpgashare.bitstream.registry import build_all

    entries = build_all(platform, out, relocatable=True)
    pairs = sum(len(e.slots) for e in entries)
    lines = [f"{e.path}  {e.size:>9} B  {e.module:<12} built for {e.slot}, serves {', '.join(e.slots)}"
             for e in entries]
    lines.append(f"{len(entries)} relocatable partial bitstreams for {platform.name} serve {pairs} (slot, module) "
                 f"pairs; index {out / 'index.json'}")
    _emit({"platform": platform.name, "relocatable": True, "files": [str(e.path) for e in entries],
           "pairs": pairs}, as_json, lines)
    return 0


def _platform_for_part(part: str, explicit: str | None):
    from fpgashare.bitstream.registry import part_field
    from fpgashare.platform import load_platform
    from fpgashare.resources import names

    if explicit:
        return load_platform(explicit)
    for name in names("platform"):
        platform = load_platform(name)
        if part_field(platform) == part:
            return platform
    raise FpgashareError(f"no shipped platform ({', '.join(names('platform'))}) is for part {part!r}; pass --platform")


def cmd_bitstream_inspect(args: argparse.Namespace) -> int:
    from fpgashare.bitstream.bitfile import parse_bit
    from fpgashare.bitstream.registry import inspect_bytes

    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FpgashareError(f"{path}: cannot read: {exc.strerror}") from None
    header, _ = parse_bit(data)
    platform = _platform_for_part(header.part, args.platform)
    report = inspect_bytes(data, platform)
    info = {"file": str(path), "platform": platform.name, **report.as_dict()}
    lines = [f"{k:>16}: {v}" for k, v in info.items()]
    _emit(info, args.json, lines)
    if not report.verdict.ok:
        sys.stderr.write(f"error: {path}: {report.verdict.message()}\n")
        return 1
    return 0


def _read_image(path: str, rgb: bool) -> np.ndarray:
    import cv2

    if not Path(path).is_file():
        raise FpgashareError(f"--in {path}: no such file")
    image = cv2.imread(path, cv2.IMREAD_COLOR if rgb else cv2.IMREAD_GRAYSCALE)
    if image is None:
        raise FpgashareError(f"--in {path}: not an image OpenCV can read")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB) if rgb else image


def cmd_board_package(args: argparse.Namespace) -> int:
    """The folder that goes under /etc/fpgashare on a board (runtime/vivado/package.py)."""
    from fpgashare.platform import load_platform
    from fpgashare.vivado.package import package

    result = package(load_platform(args.platform), Path(args.out),
                     partials=Path(args.partials) if args.partials else None,
                     shell=Path(args.shell) if args.shell else None,
                     relocatable=args.relocatable, dfx_mgr=args.dfx_mgr)
    lines = [f"{result.platform}: {result.partials} {result.origin} partial bitstream files, "
             f"shell overlay {'included' if result.shell else 'not included'}, in {result.out}"]
    if result.dfx_mgr:
        lines.append(f"  dfx-mgr firmware folder: {result.dfx_mgr}")
    lines += [f"  still needed: {m}" for m in result.missing]
    lines.append(f"  install: sudo cp -r {result.out}/. /etc/fpgashare/")
    _emit(result.as_dict(), args.json, lines)
    return 0


def cmd_sim_run(args: argparse.Namespace) -> int:
    import cv2
    from fpgashare.platform import load_platform
    from fpgashare.simrun import chain_board, parse_overrides, resolve_chain, run_chain

    platform = load_platform(args.platform)
    chain = [c.strip() for c in args.chain.split(",") if c.strip()]
    stages = resolve_chain(chain, parse_overrides(args.set or [], chain))
    frame = _read_image(args.input, rgb=stages[0].kind.channels_in == 3)
    if stages[0].kind.channels_in == 2:      # absdiff, bg_update: the frame and its reference side by side
        if not args.ref:
            raise FpgashareError(f"{stages[0].name} compares two frames: give the reference with --ref")
        ref = _read_image(args.ref, rgb=False)
        if ref.shape != frame.shape:
            raise FpgashareError(f"--ref {args.ref}: {ref.shape[1]}x{ref.shape[0]}, but --in is "
                                 f"{frame.shape[1]}x{frame.shape[0]}")
        frame = np.dstack([frame, ref])
    out_path = Path(args.output)
    if out_path.suffix.lower() not in (".png", ".pgm", ".bmp", ".tif", ".tiff"):
        raise FpgashareError(f"--out {out_path}: use a lossless format (.png, .pgm, .bmp, .tif)")
    result = run_chain(chain_board(platform, stages), stages, frame)
    if not cv2.imwrite(str(out_path), result.output):
        raise FpgashareError(f"--out {out_path}: could not write the image")
    info = {"platform": platform.name, "chain": chain, "out": str(out_path), **result.as_dict()}
    lines = [f"{platform.name}: {' -> '.join(chain)} on a {frame.shape[1]}x{frame.shape[0]} frame",
             *(f"  pass {n + 1}: " + ", ".join(f"{st} in slot {sl}" for st, sl in p.items())
               for n, p in enumerate(result.passes)),
             f"  loads: {result.load_words} words, {result.load_cycles} port cycles = "
             f"{result.load_s * 1e3:.3f} ms at {platform.config_port.clock_hz / 1e6:.0f} MHz",
             f"  compute: {result.compute_cycles} cycles = {result.compute_s * 1e3:.3f} ms at "
             f"{platform.fabric_clock_hz / 1e6:.0f} MHz",
             *(f"  {st:<14} registers after the frame: " + ", ".join(f"{k}={v}" for k, v in regs.items())
               for st, regs in result.results.items()),
             f"  simulated in {result.wall_s:.2f} s wall ({result.load_wall_s:.2f} s loading); streaming "
             f"{result.pixels_per_s / 1e6:.2f} M px/s wall, {result.pixels_per_cpu_s / 1e6:.2f} M per CPU s; "
             f"wrote {out_path}"]
    _emit(info, args.json, lines)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The example apps share the simulated FPGA through the daemon; exit 1 if a real-time frame missed."""
    from fpgashare.demo import DEMO_FRAMES, DEMO_STREAMS, parse_apps, parse_size, report_lines, run_demo

    frames = DEMO_FRAMES if args.frames is None else args.frames
    if frames < 2:
        raise FpgashareError("--frames must be at least 2 (the motion app needs two frames to compare)")
    summary = run_demo(args.platform, args.out, frames, args.backend, progress=sys.stderr.isatty(),
                       size=parse_size(args.size), apps=parse_apps(args.apps),
                       streams=DEMO_STREAMS if args.streams is None else args.streams)
    _emit(summary, args.json, report_lines(summary))
    missed = sum(p["late"] + p["dropped"] for p in summary["pipelines"].values() if p["class"] == "realtime")
    return 0 if not missed else 1


def cmd_dnn_eval(args: argparse.Namespace) -> int:
    from fpgashare.dnn.evaluate import evaluate, report_lines
    from fpgashare.platform import load_platform

    result = evaluate(args.model, args.tiles, load_platform(args.platform), args.images, args.backend, args.out)
    _emit(result, args.json, report_lines(result))
    return 0


def cmd_dnn_import(args: argparse.Namespace) -> int:
    from fpgashare.dnn.onnx_report import import_report

    report, lines = import_report(args.model, args.tiles, args.platform, args.out)
    _emit(report, args.json, lines)
    return 0 if report["accepted"] else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from fpgashare.bench import bench, report_lines

    schedulers = [s.strip() for s in args.scheduler.split(",") if s.strip()]
    report = bench(args.workload, schedulers, args.backend, args.trace, args.sweep, args.gantt, args.streams,
                   limit=args.limit, plan=args.plan)
    _emit(report, args.json, report_lines(report))
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
        try:
            value = float(text) if fields[key].type in ("float", float) else int(text, 0)
        except ValueError:
            raise FpgashareError(f"--limit {item!r}: {text!r} is not a number") from None
        if not value > 0 or value != value or value == float("inf"):
            raise FpgashareError(f"--limit {item!r}: must be a finite number > 0")
        values[key] = value
    if admin_group is not None:
        try:
            values["admin_gid"] = grp.getgrnam(admin_group).gr_gid
        except KeyError:
            raise FpgashareError(f"--admin-group {admin_group!r}: no such group") from None
    return Limits(**values)


def cmd_daemon(args: argparse.Namespace) -> int:
    from fpgashare.backends import make_backend
    from fpgashare.daemon import DEFAULT_SOCKET, Daemon, calibrate_dilation
    from fpgashare.eventloop import new_event_loop
    from fpgashare.platform import load_platform

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


def _host_reserve(ms: float | None) -> float | None:
    if ms is None:
        return None
    if not 0 <= ms < float("inf"):
        raise FpgashareError("--host-reserve-ms must be a finite number >= 0")
    return ms / 1e3


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
    _emit(status, args.json, lines)
    return 0


def cmd_rtl_tables(args: argparse.Namespace) -> int:
    from fpgashare.hwtables.generate import run

    return run(args.check)


def cmd_rtl_synth(args: argparse.Namespace) -> int:
    from fpgashare.platform import load_platform
    from fpgashare.synth import RESOURCES, SHELL, report, synth_platform

    platform = load_platform(args.platform)
    names = None
    if args.module:
        names = [args.module] if args.module == SHELL else [platform.module(args.module).name]
    result = report(platform, synth_platform(platform, names, jobs=args.jobs))
    if args.update_manifest:
        from fpgashare.synth import manifest_figures, update_manifest

        stale = {row["module"]: manifest_figures(row["synthesized"]) for row in result["modules"]
                 if row["module"] != SHELL and not row["headroom_ok"]}
        if stale:
            platform.path.write_text(update_manifest(platform.path.read_text(), stale))
            log.info("%s: resources of %s now from synthesis", platform.path, ", ".join(sorted(stale)))
            result = report(load_platform(platform.path), synth_platform(load_platform(platform.path), names,
                                                                          jobs=args.jobs))

    def cols(fig: dict[str, int]) -> str:
        return " ".join(f"{fig[r]:>6}" for r in RESOURCES)

    head = " ".join(f"{r:>6}" for r in RESOURCES)
    lines = [f"{platform.name}: Yosys synth_xilinx ({result['modules'][0]['tool']}); manifest = synthesized x1..1.5",
             f"{'module':<12} {'':<11} {head}  fits"]
    for row in result["modules"]:
        lines.append(f"{row['module']:<12} {'synthesized':<11} {cols(row['synthesized'])}")
        if "manifest" in row:
            over = sorted({f"{slot}: {', '.join(s['over'])}" for slot, s in row["slots"].items() if s["over"]})
            lines.append(f"{'':<12} {'manifest':<11} {cols(row['manifest'])}  "
                         f"{'yes' if row['fits'] else 'NO (' + '; '.join(over) + ')'}"
                         f"{'' if row['headroom_ok'] else '  (manifest outside 1x..1.5x)'}")
    _emit(result, args.json, lines)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fpgashare", description="Time-share one FPGA by partial reconfiguration.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = parser.add_subparsers(dest="command", required=True)

    bs = sub.add_parser("bitstream", help="build or inspect partial bitstreams").add_subparsers(
        dest="action", required=True)
    b = bs.add_parser("build", help="generate a platform's partial bitstreams")
    b.add_argument("platform", help="platform manifest (TOML) or name")
    b.add_argument("--out", required=True, help="output folder")
    b.add_argument("--relocatable", action="store_true",
                   help="one file per module, relocated at load time to any slot of the same shape")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bitstream_build)
    i = bs.add_parser("inspect", help="check a .bit file as the configuration port would")
    i.add_argument("file")
    i.add_argument("--platform", help="manifest to check against (default: found by the part field)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_bitstream_inspect)

    bd = sub.add_parser("board", help="what a real board needs").add_subparsers(dest="action", required=True)
    bp = bd.add_parser("package", help="assemble the /etc/fpgashare folder (manifest, partials, index, unit)")
    bp.add_argument("--platform", required=True, help="platform manifest (TOML) or name")
    bp.add_argument("--out", required=True, help="output folder (copy its contents to /etc/fpgashare)")
    bp.add_argument("--partials", help="the Vivado build's partials (OUT/bit); default: the simulated stand-ins")
    bp.add_argument("--shell", help="the Vivado build's shell overlay (OUT/shell.bit, with shell.hwh beside it)")
    bp.add_argument("--relocatable", action="store_true", help="stand-ins: one file per module, relocated at load")
    bp.add_argument("--dfx-mgr", action="store_true", help="also write a dfx-mgr firmware folder")
    bp.add_argument("--json", action="store_true")
    bp.set_defaults(func=cmd_board_package)

    rtl = sub.add_parser("rtl", help="the RTL itself").add_subparsers(dest="action", required=True)
    sy = rtl.add_parser("synth", help="synthesize each module and the static shell with Yosys; check the manifest")
    sy.add_argument("--platform", required=True, help="platform manifest (TOML) or name")
    sy.add_argument("--module", help="one module of the manifest, or 'shell' (default: all and the shell)")
    sy.add_argument("--jobs", type=_positive_int, default=2, help="Yosys runs at a time")
    sy.add_argument("--json", action="store_true")
    sy.add_argument("--update-manifest", action="store_true",
                    help="write the figures of modules outside 1x..1.5x into the manifest (LUT, FF x1.25)")
    sy.set_defaults(func=cmd_rtl_synth)
    tb = rtl.add_parser("tables", help="regenerate the SV package and Python module from the hardware tables")
    tb.add_argument("--check", action="store_true", help="only list stale generated files (exit 1 if any)")
    tb.set_defaults(func=cmd_rtl_tables)

    sim = sub.add_parser("sim", help="the simulated board").add_subparsers(dest="action", required=True)
    r = sim.add_parser("run", help="stream an image through a chain of modules in RTL")
    r.add_argument("--platform", required=True)
    r.add_argument("--chain", required=True, help="comma-separated modules or presets")
    r.add_argument("--set", action="append", metavar="MOD.REG=VALUE", help="register override")
    r.add_argument("--in", dest="input", required=True)
    r.add_argument("--ref", help="reference frame for a two-input first stage (absdiff, bg_update)")
    r.add_argument("--out", dest="output", required=True)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_sim_run)

    dnn = sub.add_parser("dnn", help="int8 networks on dnn_tile chains").add_subparsers(dest="action", required=True)
    e = dnn.add_parser("eval", help="run a model on K tiles and compare with the numpy reference")
    e.add_argument("--model", required=True, help="digits_cnn, printed_digits, edge_cnn, digits_qdq, "
                                                   "a network file (.npz) or a quantized ONNX model (.onnx)")
    e.add_argument("--tiles", type=_positive_int, required=True, help="tiles (slots) the network may use")
    e.add_argument("--images", help=".npz with images (N x H x W uint8; for an ONNX model its float input) "
                                    "and optional labels")
    e.add_argument("--backend", choices=["rtl", "reference"], default="rtl")
    e.add_argument("--platform", default="zcu104")
    e.add_argument("--out", help="write the outputs (N x values; an ONNX model's last int8 tensor) to this .npz")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_dnn_eval)
    im = dnn.add_parser("import", help="read a quantized int8 ONNX model: its tile layers, tiles, refused nodes")
    im.add_argument("model", help="a quantized ONNX model (.onnx): QDQ or QLinear int8")
    im.add_argument("--tiles", type=_positive_int, default=4, help="tiles to plan it on (default 4)")
    im.add_argument("--platform", default="zcu104")
    im.add_argument("--out", help="write the converted network file (.npz, runtime/dnn/network.py) here")
    im.add_argument("--json", action="store_true")
    im.set_defaults(func=cmd_dnn_import)

    bn = sub.add_parser("bench", help="run a workload under several schedulers side by side")
    bn.add_argument("workload", help="workload file (TOML), or a shipped suite by name (e.g. nh_720p60_zcu104)")
    bn.add_argument("--scheduler", default="edf,rr-bundle,fcfs,static,fred", help="comma-separated schedulers")
    bn.add_argument("--backend", choices=["model", "sim"], default="model")
    bn.add_argument("--trace", help="write a Chrome/Perfetto trace (one file per scheduler)")
    bn.add_argument("--sweep", metavar="PIPELINE", nargs="?", const=True,
                    help="add copies of this real-time pipeline (default: the workload's sweep key) until a miss")
    bn.add_argument("--gantt", help="write a Gantt chart of the first 100 ms (PNG; one per scheduler)")
    bn.add_argument("--streams", type=_positive_int, default=None,
                    help="use at most this many of the shell's video streams (default: all the backend carries)")
    bn.add_argument("--limit", action="store_true",
                    help="compute the workload's limits (best any scheduler could do; docs/limits.md) beside each "
                         "scheduler's figures (needs the limits extra: ortools)")
    bn.add_argument("--plan", choices=("both", "offline", "online"), default="both",
                    help="online: edf replayed as the daemon sees it (each pipeline registers at its first release); "
                         "offline: the whole workload planned at once; both (default): side by side")
    bn.add_argument("--json", action="store_true")
    bn.set_defaults(func=cmd_bench)

    dm = sub.add_parser("daemon", help="own the FPGA and serve apps on a Unix socket")
    dm.add_argument("--board", choices=["sim", "model", "pynq", "faulty"], default="sim")
    dm.add_argument("--platform", default="zcu104", help="platform manifest (TOML) or name")
    dm.add_argument("--socket", default=None,
                    help="socket path (default $FPGASHARE_SOCKET or /run/fpgashare/fpgashare.sock)")
    dm.add_argument("--dilation", default="1",
                    help="wall s per daemon s when idle (auto: how much slower than the hardware the backend runs)")
    dm.add_argument("--scheduler", default="edf",
                    help="edf, rr-bundle, fcfs, static or fred (the baselines: one stream)")
    dm.add_argument("--streams", type=_positive_int, default=None,
                    help="use at most this many video streams; the board is partitioned as pipelines come "
                         "(default: every stream the shell and backend carry; edf)")
    dm.add_argument("--host-reserve-ms", type=float, default=None,
                    help="the daemon's response bound for its own work per frame, board ms (default: from the host "
                         "cost measured at start; docs/guarantee.md, 'The host as a resource')")
    dm.add_argument("--metrics-port", type=cli_inputs.port, help="serve Prometheus metrics on 127.0.0.1:PORT")
    dm.add_argument("--bitstreams", help="pynq: folder of partial bitstreams with index.json")
    dm.add_argument("--overlay", help="pynq: the shell overlay (.bit with its .hwh beside it)")
    dm.add_argument("--limit", action="append", metavar="NAME=VALUE",
                    help="a quota (fpgashare.daemon.Limits: pipelines_per_client, shm_bytes_total, ...)")
    dm.add_argument("--admin-group", help="members see every client's details in status (root always does)")
    dm.add_argument("--watchdog-margin", type=float, metavar="FRACTION",
                    help="a load or frame running this fraction past its expected time is ended (default 1.0)")
    dm.add_argument("--firmware-dir", help="pynq: where partials are staged for the FPGA manager (/lib/firmware)")
    dm.add_argument("--fpga-manager", help="pynq: the FPGA manager's sysfs folder (/sys/class/fpga_manager/fpga0)")
    dm.set_defaults(func=cmd_daemon)
    st = sub.add_parser("status", help="slots, port, pipelines and clients of a running daemon")
    st.add_argument("--socket", default=None)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    d = sub.add_parser("demo", help="the example apps share the simulated FPGA through the daemon")
    d.add_argument("--platform", default="zcu104-x4", help="platform manifest (TOML) or name (default: the ZCU104 "
                   "at 4 pixels per clock)")
    d.add_argument("--out", default="out/demo", help="folder for the video, trace and pictures")
    d.add_argument("--frames", type=_positive_int, default=None, help="frames of the synthetic video (default 6)")
    d.add_argument("--size", default="480x640", help="ROWSxCOLS of the video and of every app's frames")
    d.add_argument("--apps", default="edge_detect,motion,colour_track,digits",
                   help="comma-separated: edge_detect, motion, colour_track, corners, template_track, digits")
    d.add_argument("--backend", choices=["sim", "model"], default="sim", help="model: the twin, for a quick look")
    d.add_argument("--streams", type=_positive_int, default=None,
                   help="the most video streams the daemon uses at once (default 2)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo)
    add_fleet_commands(sub)
    return parser


def add_fleet_commands(sub) -> None:
    """``fpgashare fleet up | status | bench`` (runtime/fleet/commands.py; the ``fleet`` extra)."""
    from fpgashare.fleet import commands

    fl = sub.add_parser("fleet", help="a fleet of boards on Ray (the fleet extra)").add_subparsers(
        dest="action", required=True)
    up = fl.add_parser("up", help="a Ray head and N simulated boards on this machine, until Ctrl-C")
    up.add_argument("--boards", type=_positive_int, default=3)
    up.add_argument("--platforms", default="zcu104,pynq-z2", help="platforms cycled over the boards")
    up.add_argument("--backend", choices=["model", "sim"], default="model")
    up.add_argument("--dilation", type=cli_inputs.positive_float, default=20.0,
                    help="wall s per daemon s of each board")
    up.set_defaults(func=commands.cmd_up)
    st = fl.add_parser("status", help="the fleet's boards, their pipelines and placement cost")
    st.add_argument("--address", help="Ray address HOST:PORT (default: the running `fleet up`)")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=commands.cmd_status)
    bn = fl.add_parser("bench", help="place a workload on 1..N simulated boards and spread DNN images")
    bn.add_argument("workload", help="workload file (TOML) or a shipped suite by name")
    bn.add_argument("--boards", type=_positive_int, default=3, help="largest fleet; every size from 1 is measured")
    bn.add_argument("--platforms", help="platforms cycled over the boards (default: the workload's)")
    bn.add_argument("--dilation", type=cli_inputs.positive_float, default=200.0,
                    help="wall s per daemon s of each board")
    bn.add_argument("--max-copies", type=_positive_int, default=40, help="copies of the workload tried at most")
    bn.add_argument("--dnn-seconds", type=cli_inputs.positive_float, default=2.0,
                    help="wall seconds of DNN images per fleet size at least (they run while the pipelines stream)")
    bn.add_argument("--stream-seconds", type=cli_inputs.positive_float, default=0.2,
                    help="board seconds every admitted pipeline streams frames per fleet size")
    bn.add_argument("--json", action="store_true")
    bn.set_defaults(func=commands.cmd_bench)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        _check_inputs(args)
        return args.func(args)
    except FpgashareError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except OSError as exc:          # a file the command could not make or read, named by the OS
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"error: {where}{exc.strerror or exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


def _check_inputs(args: argparse.Namespace) -> None:
    """Input files and output folders checked before any command runs (fpgashare.cli_inputs)."""

    if getattr(args, "workload", None):
        cli_inputs.workload_file(args.workload)
    platform = getattr(args, "platform", None)
    if isinstance(platform, str):
        cli_inputs.manifest_file(platform)
    for option in ("trace", "gantt"):
        cli_inputs.output_path(f"--{option}", getattr(args, option, None))
    frames = getattr(args, "frames", None)
    if isinstance(frames, int) and frames > cli_inputs.MAX_DEMO_FRAMES:
        raise FpgashareError(f"--frames must be at most {cli_inputs.MAX_DEMO_FRAMES}, not {frames}")


if __name__ == "__main__":
    sys.exit(main())
