"""The ``fpgashare`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
from fpgashare.errors import FpgashareError

log = logging.getLogger("fpgashare")


def _emit(obj: dict, as_json: bool, lines: list[str]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")


def cmd_bitstream_build(args: argparse.Namespace) -> int:
    from fpgashare.bitstream.registry import build_all
    from fpgashare.platform import load_platform

    platform = load_platform(args.platform)
    entries = build_all(platform, Path(args.out))
    lines = [f"{e.path}  {e.size:>9} B  {e.slot:<18} {e.module:<12} sha256 {e.sha256[:16]}" for e in entries]
    lines.append(f"{len(entries)} partial bitstreams for {platform.name}, index {Path(args.out) / 'index.json'}")
    _emit({"platform": platform.name, "files": [str(e.path) for e in entries]}, args.json, lines)
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


def cmd_sim_run(args: argparse.Namespace) -> int:
    import cv2
    from fpgashare.hdl_sim.board import SimBoard
    from fpgashare.platform import load_platform
    from fpgashare.simrun import parse_overrides, resolve_chain, run_chain

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
    result = run_chain(SimBoard(platform), stages, frame)
    if not cv2.imwrite(str(out_path), result.output):
        raise FpgashareError(f"--out {out_path}: could not write the image")
    info = {"platform": platform.name, "chain": chain, "out": str(out_path), **result.as_dict()}
    lines = [f"{platform.name}: {' -> '.join(chain)} on a {frame.shape[1]}x{frame.shape[0]} frame",
             *(f"  {st:<14} in slot {sl}" for st, sl in result.slots.items()),
             f"  loads: {result.load_words} words, {result.load_cycles} port cycles = "
             f"{result.load_s * 1e3:.3f} ms at {platform.config_port.clock_hz / 1e6:.0f} MHz",
             f"  compute: {result.compute_cycles} cycles = {result.compute_s * 1e3:.3f} ms at "
             f"{platform.fabric_clock_hz / 1e6:.0f} MHz",
             *(f"  {st:<14} registers after the frame: " + ", ".join(f"{k}={v}" for k, v in regs.items())
               for st, regs in result.results.items()),
             f"  simulated in {result.wall_s:.2f} s wall; wrote {out_path}"]
    _emit(info, args.json, lines)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Three apps share the simulated FPGA through the daemon; exit 1 if a real-time frame missed."""
    from fpgashare.demo import report_lines, run_demo

    if args.frames < 2:
        raise FpgashareError("--frames must be at least 2 (the motion app needs two frames to compare)")
    summary = run_demo(args.platform, args.out, args.frames, args.backend, progress=sys.stderr.isatty())
    _emit(summary, args.json, report_lines(summary))
    missed = sum(p["late"] + p["dropped"] for p in summary["pipelines"].values() if p["class"] == "realtime")
    return 0 if not missed else 1


def cmd_dnn_eval(args: argparse.Namespace) -> int:
    from fpgashare.dnn.evaluate import evaluate, report_lines
    from fpgashare.platform import load_platform

    result = evaluate(args.model, args.tiles, load_platform(args.platform), args.images, args.backend)
    _emit(result, args.json, report_lines(result))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from fpgashare.bench import bench, report_lines

    schedulers = [s.strip() for s in args.scheduler.split(",") if s.strip()]
    report = bench(args.workload, schedulers, args.backend, args.trace, args.sweep, args.gantt)
    _emit(report, args.json, report_lines(report))
    return 0


def cmd_daemon(args: argparse.Namespace) -> int:
    from fpgashare.backends import make_backend
    from fpgashare.daemon import DEFAULT_SOCKET, Daemon, calibrate_dilation
    from fpgashare.eventloop import new_event_loop
    from fpgashare.platform import load_platform

    platform = load_platform(args.platform)
    options = {}
    if args.board == "pynq":
        if not args.bitstreams:
            raise FpgashareError("--board pynq needs --bitstreams (a folder made by fpgashare bitstream build)")
        options = {"bitstreams": args.bitstreams, "overlay": args.overlay}
    backend = make_backend(args.board, platform, **options)
    if args.dilation == "auto":
        dilation = calibrate_dilation(backend)
    else:
        try:
            dilation = float(args.dilation)
        except ValueError:
            raise FpgashareError(f"--dilation must be a number or auto, not {args.dilation!r}") from None
        if dilation <= 0:
            raise FpgashareError("--dilation must be > 0")
    logging.getLogger("fpgashare").setLevel(logging.INFO)
    daemon = Daemon(backend, args.socket or DEFAULT_SOCKET, dilation=dilation, scheduler=args.scheduler,
                    metrics_port=args.metrics_port)
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
              for s in status["slots"]]
    port = status["port"]
    lines.append(f"  port: {port['loads']} loads, {port['busy_s'] * 1e3:.1f} ms busy, {port['queued']} queued")
    lines += [f"  pipeline {name}: {'/'.join(p['modules'])}, {sum(p['outcomes'].values())} ended, "
              f"miss rate {100 * p['miss_rate']:.1f}%" for name, p in status["pipelines"].items()]
    lines += [f"  client {c['id']} (pid {c['pid']}, uid {c['uid']}): {', '.join(c['pipelines']) or '-'}"
              for c in status["clients"]]
    _emit(status, args.json, lines)
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
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bitstream_build)
    i = bs.add_parser("inspect", help="check a .bit file as the configuration port would")
    i.add_argument("file")
    i.add_argument("--platform", help="manifest to check against (default: found by the part field)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_bitstream_inspect)

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
    e.add_argument("--model", required=True, help="digits_cnn, edge_cnn, or a network file (.npz)")
    e.add_argument("--tiles", type=int, required=True, help="tiles (slots) the network may use")
    e.add_argument("--images", help=".npz with images (N x H x W uint8) and optional labels")
    e.add_argument("--backend", choices=["rtl", "reference"], default="rtl")
    e.add_argument("--platform", default="zcu104")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_dnn_eval)

    bn = sub.add_parser("bench", help="run a workload under several schedulers side by side")
    bn.add_argument("workload", help="workload file (TOML), or a shipped suite by name (e.g. nh_720p60_zcu104)")
    bn.add_argument("--scheduler", default="edf,rr-bundle,fcfs,static", help="comma-separated schedulers")
    bn.add_argument("--backend", choices=["model", "sim"], default="model")
    bn.add_argument("--trace", help="write a Chrome/Perfetto trace (one file per scheduler)")
    bn.add_argument("--sweep", metavar="PIPELINE", nargs="?", const=True,
                    help="add copies of this real-time pipeline (default: the workload's sweep key) until a miss")
    bn.add_argument("--gantt", help="write a Gantt chart of the first 100 ms (PNG; one per scheduler)")
    bn.add_argument("--json", action="store_true")
    bn.set_defaults(func=cmd_bench)

    dm = sub.add_parser("daemon", help="own the FPGA and serve apps on a Unix socket")
    dm.add_argument("--board", choices=["sim", "model", "pynq"], default="sim")
    dm.add_argument("--platform", default="zcu104", help="platform manifest (TOML) or name")
    dm.add_argument("--socket", default=None,
                    help="socket path (default $FPGASHARE_SOCKET or /run/fpgashare/fpgashare.sock)")
    dm.add_argument("--dilation", default="1",
                    help="wall s per daemon s when idle (auto: how much slower than the hardware the backend runs)")
    dm.add_argument("--scheduler", default="edf", help="edf, rr-bundle, fcfs or static")
    dm.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on 127.0.0.1:PORT")
    dm.add_argument("--bitstreams", help="pynq: folder of partial bitstreams with index.json")
    dm.add_argument("--overlay", help="pynq: the shell overlay (.bit with its .hwh beside it)")
    dm.set_defaults(func=cmd_daemon)
    st = sub.add_parser("status", help="slots, port, pipelines and clients of a running daemon")
    st.add_argument("--socket", default=None)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    d = sub.add_parser("demo", help="three apps share the simulated FPGA through the daemon")
    d.add_argument("--platform", default="zcu104")
    d.add_argument("--out", default="out/demo", help="folder for the video, trace and pictures")
    d.add_argument("--frames", type=int, default=30, help="frames of the synthetic video")
    d.add_argument("--backend", choices=["sim", "model"], default="sim", help="model: the twin, for a quick look")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except FpgashareError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
