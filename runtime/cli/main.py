"""The ``fpgashare`` command line."""

from __future__ import annotations

import argparse
import logging
import sys

from fpgashare.cli import hardware_commands, service_commands
from fpgashare.cli import inputs as cli_inputs
from fpgashare.errors import FpgashareError

log = logging.getLogger("fpgashare")


_positive_int = cli_inputs.positive_int     #: argparse names the option on error


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
    b.set_defaults(func=hardware_commands.cmd_bitstream_build)
    i = bs.add_parser("inspect", help="check a .bit file as the configuration port would")
    i.add_argument("file")
    i.add_argument("--platform", help="manifest to check against (default: found by the part field)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=hardware_commands.cmd_bitstream_inspect)

    bd = sub.add_parser("board", help="what a real board needs").add_subparsers(dest="action", required=True)
    bp = bd.add_parser("package", help="assemble the /etc/fpgashare folder (manifest, partials, index, unit)")
    bp.add_argument("--platform", required=True, help="platform manifest (TOML) or name")
    bp.add_argument("--out", required=True, help="output folder (copy its contents to /etc/fpgashare)")
    bp.add_argument("--partials", help="the Vivado build's partials (OUT/bit); default: the simulated stand-ins")
    bp.add_argument("--shell", help="the Vivado build's shell overlay (OUT/shell.bit, with shell.hwh beside it)")
    bp.add_argument("--relocatable", action="store_true", help="stand-ins: one file per module, relocated at load")
    bp.add_argument("--dfx-mgr", action="store_true", help="also write a dfx-mgr firmware folder")
    bp.add_argument("--json", action="store_true")
    bp.set_defaults(func=hardware_commands.cmd_board_package)

    rtl = sub.add_parser("rtl", help="the RTL itself").add_subparsers(dest="action", required=True)
    sy = rtl.add_parser("synth", help="synthesize each module and the static shell with Yosys; check the manifest")
    sy.add_argument("--platform", required=True, help="platform manifest (TOML) or name")
    sy.add_argument("--module", help="one module of the manifest, or 'shell' (default: all and the shell)")
    sy.add_argument("--jobs", type=_positive_int, default=2, help="Yosys runs at a time")
    sy.add_argument("--json", action="store_true")
    sy.add_argument("--update-manifest", action="store_true",
                    help="write the figures of modules outside 1x..1.5x into the manifest (LUT, FF x1.25)")
    sy.set_defaults(func=hardware_commands.cmd_rtl_synth)
    tb = rtl.add_parser("tables", help="regenerate the SV package and Python module from the hardware tables")
    tb.add_argument("--check", action="store_true", help="only list stale generated files (exit 1 if any)")
    tb.set_defaults(func=hardware_commands.cmd_rtl_tables)

    sim = sub.add_parser("sim", help="the simulated board").add_subparsers(dest="action", required=True)
    r = sim.add_parser("run", help="stream an image through a chain of modules in RTL")
    r.add_argument("--platform", required=True)
    r.add_argument("--chain", required=True, help="comma-separated modules or presets")
    r.add_argument("--set", action="append", metavar="MOD.REG=VALUE", help="register override")
    r.add_argument("--in", dest="input", required=True)
    r.add_argument("--ref", help="reference frame for a two-input first stage (absdiff, bg_update)")
    r.add_argument("--out", dest="output", required=True)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=hardware_commands.cmd_sim_run)

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
    e.set_defaults(func=service_commands.cmd_dnn_eval)
    im = dnn.add_parser("import", help="read a quantized int8 ONNX model: its tile layers, tiles, refused nodes")
    im.add_argument("model", help="a quantized ONNX model (.onnx): QDQ or QLinear int8")
    im.add_argument("--tiles", type=_positive_int, default=4, help="tiles to plan it on (default 4)")
    im.add_argument("--platform", default="zcu104")
    im.add_argument("--out", help="write the converted network file (.npz, runtime/dnn/network.py) here")
    im.add_argument("--json", action="store_true")
    im.set_defaults(func=service_commands.cmd_dnn_import)

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
    bn.set_defaults(func=service_commands.cmd_bench)

    dm = sub.add_parser("daemon", help="own the FPGA and serve apps on a Unix socket")
    dm.add_argument("--host-reserve-ms", type=float, default=None,
                    help="the daemon's response bound for its own work per frame, board ms (default: from the host "
                         "cost measured at start; docs/guarantee.md, 'The host as a resource')")
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
    dm.set_defaults(func=service_commands.cmd_daemon)
    st = sub.add_parser("status", help="slots, port, pipelines and clients of a running daemon")
    st.add_argument("--socket", default=None)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=service_commands.cmd_status)

    d = sub.add_parser("demo", help="the example apps share the simulated FPGA through the daemon")
    d.add_argument("--platform", default="zcu104-x4", help="platform manifest (TOML) or name (default: the ZCU104 "
                   "at 4 pixels per clock)")
    d.add_argument("--out", default="out/demo", help="folder for the video, trace and pictures")
    d.add_argument("--frames", type=_positive_int, default=None,
                   help=f"frames of the synthetic video (default {cli_inputs.DEMO_FRAMES})")
    d.add_argument("--size", default="480x640", help="ROWSxCOLS of the video and of every app's frames")
    d.add_argument("--apps", default="edge_detect,motion,colour_track,digits",
                   help="comma-separated: edge_detect, motion, colour_track, corners, template_track, digits")
    d.add_argument("--backend", choices=["sim", "model"], default="sim", help="model: the twin, for a quick look")
    d.add_argument("--streams", type=_positive_int, default=None,
                   help="the most video streams the daemon uses at once "
                   f"(default {cli_inputs.DEMO_STREAMS})")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=service_commands.cmd_demo)
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
    bn.add_argument("--dilation", type=cli_inputs.positive_float, default=1000.0,
                    help="wall s per daemon s of each board")
    bn.add_argument("--load", choices=["sweep", "mix"],
                    help="copied until no board admits another: the workload's sweep pipeline (default when it "
                         "names one) or every real-time pipeline, one copy of each per round")
    bn.add_argument("--max-copies", type=_positive_int, default=200,
                    help="rounds of copies tried at most (a guard: rounds stop once no board admits a copy)")
    bn.add_argument("--dnn-seconds", type=cli_inputs.positive_float, default=2.0,
                    help="wall seconds of DNN images per fleet size at least (they run while the pipelines stream)")
    bn.add_argument("--stream-seconds", type=cli_inputs.positive_float, default=0.1,
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
    """Input files and output folders checked before any command runs (fpgashare.cli.inputs)."""

    if getattr(args, "workload", None):
        cli_inputs.workload_file(args.workload)
    platform = getattr(args, "platform", None)
    if isinstance(platform, str):
        cli_inputs.manifest_file(platform)
    for option in ("trace", "gantt"):
        cli_inputs.output_path(f"--{option}", getattr(args, option, None))
    for option, suffix in (("gantt", ".png"), ("trace", ".json")):    # NAME.png becomes NAME.SCHEDULER.png
        value = getattr(args, option, None)
        if isinstance(value, str) and not value.endswith(suffix):
            raise FpgashareError(f"--{option} {value}: --{option} takes a {suffix} file name "
                                 f"(one per scheduler: NAME.SCHEDULER{suffix})")
    frames = getattr(args, "frames", None)
    if isinstance(frames, int) and frames > cli_inputs.MAX_DEMO_FRAMES:
        raise FpgashareError(f"--frames must be at most {cli_inputs.MAX_DEMO_FRAMES}, not {frames}")


if __name__ == "__main__":
    sys.exit(main())
