"""``fpgashare demo``: the example apps share one simulated FPGA for real.

A daemon on the simulated board (the shell in RTL: every bitstream through the configuration
port, every frame through the modules, every DNN image through the dnn_tile) serves the example
apps, each its own process: by default the edge detector (30 fps), the motion detector (60 fps),
the colour tracker (30 fps) and the digit reader (best effort, ``printed_digits`` on the DNN
tiles), on the ZCU104 at four pixels per clock (``zcu104-x4``) and one synthetic 640x480 video
made here with OpenCV (a textured ground, moving shapes, printed digits). Afterwards: a Perfetto
trace, a Gantt picture of the whole run, the edge detector's side-by-side video, a summary per
pipeline, how busy the fabric was, and how many of the printed digits the reader read right
(scored against what the video printed).

Wall time goes mostly to partial loads and frames in RTL: three real-time chains of 3-4 stages
use ten module kinds on four slots, so they swap modules every frame: 9 loads a 30 fps period at
best while the 60 fps motion chain runs, 6 after: 225-260 in 30 frames by the order the frames
happen to run in, plus the DNN's lends and the reloads after them (the summary prints the fewest
the frames' order needs beside the run's loads; docs/demo.md). A load runs the configuration
block alone while the rest of the shell is at rest (docs/simulated-board.md), and the board
simulates only the modules the apps use (``app_modules``), so the default video, 30 frames (about
a second), fits the README's first command within about a minute from an empty build cache on two
cores.

Time: the daemon's clock runs with the wall clock while the board is idle and stands still while
the RTL simulation is slower than the hardware it stands for, so every frame and load takes its
hardware time on it (see runtime/sched/core/clock.py). How much slower than the wall clock it
runs while the board idles (the dilation) is chosen from the host's measured cost: at least
``DEMO_DILATION``, more on a loaded host (``demo_dilation``, docs/demo.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from fpgashare.cli.demo_figures import fabric_busy, load_figures, stream_use
from fpgashare.cli.demo_video import score_readings, write_video
from fpgashare.cli.inputs import DEMO_FRAMES, DEMO_STREAMS  # the parser states them too
from fpgashare.errors import FpgashareError

log = logging.getLogger(__name__)

#: The example apps the demo can run, and the pipeline each registers with the daemon.
APP_PIPELINES = {"edge_detect": "edges", "motion": "motion", "colour_track": "colour", "corners": "corners",
                 "template_track": "template", "digits": "digits"}
APPS = ("edge_detect", "motion", "colour_track", "digits")
#: The demo's board: the ZCU104 at four pixels per clock (bitstreams/zcu104-x4.toml), every app's
#: chain at NPPC 4 (colour tracking's RGB and motion's frame pairs in 32-bit lanes of a 128-bit beat).
DEMO_PLATFORM = "zcu104-x4"
DEMO_SIZE = (480, 640)

#: The least wall seconds per board second while the board idles (the dilation's floor; the demo
#: picks a higher one where the host's measured cost needs it: ``demo_dilation``). The daemon and
#: three app processes share the host's cores, and a few ms the daemon waits for one would pass for
#: board time at 1 (loads and frames already take exactly their hardware time: the clock is held
#: while the RTL runs). At 1, late motion frames happened in some runs on a shared host; on two
#: streams each chain runs in two passes, closer to its deadline, and three demos at once on two
#: cores once lost a motion frame at 4; none at 8 (the wall time grows by ~2 s: the board idles at
#: most ~0.5 s).
DEMO_DILATION = 8.0


#: Wall seconds the demo waits for its apps to end. The RTL's wall time per board second is the
#: host's (three to four times longer on a loaded two-core host) and the dilation's, so this only
#: guards against a hung run.
DEMO_WAIT_S = 900
#: Wall seconds an app waits for a reply (its ``--timeout``). The apps' default (60 s) is a guard
#: against a dead daemon; here the daemon is the demo's own, and the digit reader's requests are
#: best effort: no deadline, served when the real-time chains leave the tiles time, which on a
#: loaded host came more than 60 s of wall time after the request (the reader then gave up and the
#: demo failed). So the apps wait as long as the demo does.
APP_WAIT_S = DEMO_WAIT_S


def app_modules(apps: tuple[str, ...]) -> list[str]:
    """The module kinds the apps' pipelines use (presets resolved to their module): the demo's
    library. The shell model instantiates every module of a slot's library in every slot, so a
    library of only these is about a third of the C++ of the platform's whole catalogue (it builds in
    about 18 s of CPU here instead of 30 with the same flags) and simulates a little faster (partial
    loads by about 15%, frames 25%, idle cycles 2x)."""
    import importlib

    from fpgashare.catalogue.modules import expand_chain, resolve_stage

    kinds: set[str] = set()
    for app in apps:
        if app == "digits":   # the reader's network runs on the DNN tiles
            kinds.add("dnn_tile")
            continue
        chain = importlib.import_module(f"fpgashare.apps.{app}").CHAIN
        kinds.update(resolve_stage(name).kind.name for name in expand_chain(chain))
    return sorted(kinds)


def demo_platform(platform_name: str, apps: tuple[str, ...], folder: Path):
    """The platform with its catalogue cut down to ``app_modules(apps)``, written to ``folder``:
    same slots, clocks, port and module ids, so the same schedules and outputs."""
    from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock

    base = load_platform(platform_name)
    wanted = app_modules(apps)
    missing = [m for m in wanted if m not in base.modules]
    if missing:
        raise FpgashareError(f"platform {base.name} has no {', '.join(missing)}, which the demo's apps need")
    return load_platform(manifest_at_pixels_per_clock(base.path, base.pixels_per_clock, folder / "platform.toml",
                                                      wanted))


def registration_order(apps: tuple[str, ...]) -> list[str]:
    """The apps by how much of the board they need, the shortest period first, the digit reader (best
    effort) last. The daemon plans its partitions for the pipelines in registration order (the
    planner ``bench`` uses, runtime/sched/board/relayout.py), so the order fixes the placement. In
    whatever order processes happened to connect, motion could once land beside a 30 fps chain on
    two slots and not fit the fabric (measured: its last two stages on the CPU in 1 of 3 loaded
    runs). Today the planner keeps the demo's three chains on one partition of all four slots (one
    pass a frame), in every run measured for docs/demo.md."""
    import importlib

    def period(app: str) -> float:
        return float("inf") if app == "digits" else importlib.import_module(f"fpgashare.apps.{app}").PERIOD_MS

    return sorted(apps, key=period)


def app_specs(apps: tuple[str, ...], size: tuple[int, int], platform) -> list:
    """The real-time pipelines ``apps`` register (the digit reader is best effort: none), in
    registration order, as the daemon builds them from a registration (runtime/daemon/ops.py): the
    app's chain, period (its deadline), parameters and the video's size on ``platform``."""
    import importlib

    from fpgashare.catalogue.workload import realtime_spec

    specs = []
    for app in registration_order(apps):
        if app == "digits":
            continue
        module = importlib.import_module(f"fpgashare.apps.{app}")
        period_s = module.PERIOD_MS / 1e3
        specs.append(realtime_spec(APP_PIPELINES[app], list(module.CHAIN), period_s, period_s, list(size), platform,
                                   getattr(module, "PARAMS", {})))
    return specs


def demo_dilation(backend, apps: tuple[str, ...], size: tuple[int, int], streams: int, floor: float = DEMO_DILATION):
    """The host's cost measured here, its block term at least how late the process wakes from a sleep
    (what the daemon is then given), and the dilation chosen from it:
    the least from ``floor`` up at which the daemon's admission takes every real-time app whole on
    the fabric with the host twice as slow as measured (runtime/daemon/host_dilation.py)."""
    from fpgashare.daemon.host_calibration import measure_host_cost, measure_wake_lateness, with_wake_lateness
    from fpgashare.daemon.host_dilation import choose_dilation

    # The daemon's loop preempted by the apps and whatever else runs is a block of its loop like a
    # long callback: on a loaded host it, not the daemon's own work, is what made frames late.
    cost = with_wake_lateness(measure_host_cost(backend), measure_wake_lateness())
    choice = choose_dilation(backend.platform, app_specs(apps, size, backend.platform), cost, floor, streams)
    log.info("host cost measured: %.3f ms a frame, %.3f ms a load, %.3f ms a block (margins included); "
             "dilation %.3g: %s", cost.per_frame_s * 1e3, cost.per_load_s * 1e3, cost.block_s * 1e3,
             choice.dilation, choice.reason)
    return cost, choice


def _await_registration(daemon, pipeline: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    """Until ``pipeline`` is registered (or its app has exited: its error is reported later)."""
    deadline = time.monotonic() + timeout_s
    while pipeline not in daemon.registered() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


def parse_size(text: str) -> tuple[int, int]:
    """``ROWSxCOLS`` -> (rows, cols): at least 240x320 (below it the printed digits are a dozen
    pixels tall and the reader misses some) and multiples of 4 (the motion app halves the frame;
    four pixels per clock need widths divisible by 4)."""
    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise FpgashareError(f"--size must be ROWSxCOLS, not {text!r}") from None
    if rows < 240 or cols < 320 or rows % 4 or cols % 4 or rows * cols > 1920 * 1080:
        raise FpgashareError(f"--size {text}: need at least 240x320, at most 1920x1080 pixels, both multiples of 4")
    return rows, cols


def parse_apps(text: str) -> tuple[str, ...]:
    """Comma-separated app names -> a tuple, each checked against ``APP_PIPELINES``."""
    apps = tuple(a.strip() for a in text.split(",") if a.strip())
    unknown = [a for a in apps if a not in APP_PIPELINES]
    if unknown or not apps or len(set(apps)) != len(apps):
        raise FpgashareError(f"--apps {text!r}: give each of {', '.join(APP_PIPELINES)} at most once"
                             + (f" ({', '.join(unknown)} unknown)" if unknown else ""))
    return apps


#: The backend's methods that do the board's work, and what the demo calls them.
METERED = (("_load", "loads"), ("_run_frame", "frames"), ("_run_dnn", "dnn_batches"))


class WallMeter:
    """Wall seconds and counts the backend spends in its three operations (partial loads, frames,
    DNN batches): where a demo's wall time goes. Wraps the backend instance's methods."""

    def __init__(self, backend) -> None:
        self.wall = {key: 0.0 for _, key in METERED}
        self.count = {key: 0 for _, key in METERED}
        for method, key in METERED:
            setattr(backend, method, self._timed(getattr(backend, method), key))

    def _timed(self, fn, key: str):
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[key] += time.perf_counter() - started
                self.count[key] += 1
        return timed

    def summary(self) -> dict:
        return {key: {"count": self.count[key], "wall_s": round(self.wall[key], 2)} for key in self.wall}


class Progress:
    """A one-line progress report on stderr while the apps run."""

    def __init__(self, daemon, expected: int) -> None:
        self.daemon, self.expected = daemon, expected
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            done = sum(self.daemon.outcomes.values())
            filled = int(30 * min(1.0, done / max(1, self.expected)))
            sys.stderr.write(f"\r  [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.expected} frames and images, "
                             f"board time {self.daemon.clock.now():6.2f} s")
            sys.stderr.flush()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        sys.stderr.write("\n")


def run_demo(platform_name: str = DEMO_PLATFORM, out: str | Path = "out/demo", frames: int = DEMO_FRAMES,
             backend_name: str = "sim", progress: bool = True, dilation: float | None = None,
             size: tuple[int, int] = DEMO_SIZE, apps: tuple[str, ...] = APPS, dump: bool = False,
             streams: int = DEMO_STREAMS) -> dict:
    """Run ``apps`` (names from ``APP_PIPELINES``) as processes against a daemon on the simulated
    board, on ``frames`` frames of ``size`` (rows, cols); return the summary. With ``dump``, the
    vision apps also write their inputs and outputs to ``out/<app>.npz`` (``files['dump_<app>']``)
    for checking against OpenCV. ``dilation``: wall seconds per board second while the board idles;
    None: chosen from the host's measured cost (``demo_dilation``), the summary's ``dilation`` says
    which and why."""
    from fpgashare.backends import make_backend
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.cli.trace import write_gantt, write_trace
    from fpgashare.daemon import Daemon, DaemonThread

    unknown = [a for a in apps if a not in APP_PIPELINES]
    if unknown or not apps:
        raise FpgashareError(f"demo apps: unknown {', '.join(unknown) or '(none given)'}; "
                             f"choose from {', '.join(APP_PIPELINES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    video = out / "input.avi"
    truth = write_video(video, frames, size)
    board_name = load_platform(platform_name).name
    platform = demo_platform(platform_name, apps, out)
    log.info("building or reusing the %s shell model with %s (the first run builds it and the modules: about "
             "30 s of CPU)", board_name, ", ".join(platform.modules))
    backend = make_backend(backend_name, platform)
    meter = WallMeter(backend)
    sock = out / "fpgashare.sock"
    files = {"trace": str(out / "trace.json"), "gantt": str(out / "gantt.png")}
    if "edge_detect" in apps:
        files["video"] = str(out / "edges.mp4")
    readings = out / "digits.json"
    started = time.perf_counter()
    if dilation is None:
        host_cost, choice = demo_dilation(backend, apps, size, streams)
        dilation = choice.dilation
        chosen = {**choice.summary(), "host_ms_per_frame": round(host_cost.per_frame_s * 1e3, 4),
                  "host_ms_per_load": round(host_cost.per_load_s * 1e3, 4),
                  "host_ms_block": round(host_cost.block_s * 1e3, 4)}
    else:
        host_cost, chosen = None, {"wall_s_per_board_s": dilation, "reason": "given"}
    daemon = Daemon(backend, sock, dilation=dilation, streams=streams, host_cost=host_cost)
    with DaemonThread(daemon):
        procs = {}
        order = registration_order(apps)
        for app in order:
            if app != order[0]:     # the most demanding app first: the partition it joins is then its own
                _await_registration(daemon, APP_PIPELINES[order[0]], procs[order[0]])
            extra = ["--out", files["video"] if app == "edge_detect" else str(out / f"{app}.mp4")]
            if app == "digits":
                extra += ["--readings", str(readings)]
            elif dump:
                files[f"dump_{app}"] = str(out / f"{app}.npz")
                extra += ["--dump", files[f"dump_{app}"]]
            cmd = [sys.executable, "-m", f"fpgashare.apps.{app}", "--video", str(video), "--socket", str(sock),
                   "--size", f"{size[0]}x{size[1]}", "--timeout", str(APP_WAIT_S), *extra]
            procs[app] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The motion app skips the first frame; the digit reader sends every bright blob (the six
        # digits and the ball, most frames).
        expected = sum({"motion": frames - 1, "digits": 7 * frames}.get(app, frames) for app in apps)
        with Progress(daemon, expected) if progress else contextlib.nullcontext():
            results = {app: proc.communicate(timeout=DEMO_WAIT_S) for app, proc in procs.items()}
        engine = daemon.engine
        write_trace(engine.trace, files["trace"], f"fpgashare demo on {board_name}")
        busy = fabric_busy(engine.trace, len(engine.slots.slots))
        first = min((e.start for e in engine.trace if e.track.startswith(("slot", "port"))), default=0.0)
        # The whole run from the first load: streams, loads and DNN batches side by side.
        write_gantt(engine.trace, files["gantt"], f"fpgashare demo on the simulated {board_name}: "
                    f"{size[1]}x{size[0]}, slots {100 * busy['slots_computing_or_loading']:.0f}% busy",
                    (first, first + busy["span_s"]))
        streams_used = stream_use(engine.trace)
        realtime = {name for name, stats in daemon.per_pipeline.items() if stats["class"] == "realtime"}
        loads = load_figures(engine.trace, len(engine.slots.slots), realtime)
        board_s = daemon.clock.now()
        dnn_images = sum(engine.dnn_images.values())
    port = engine.slots.port            # once the daemon has stopped: a load it started last is counted
    apps_out = {}
    for app, (stdout, stderr) in results.items():
        if procs[app].returncode != 0:
            raise FpgashareError(f"app {app} failed (exit {procs[app].returncode}): {stderr.strip()[-400:]}")
        apps_out[app] = dict(item.split("=", 1) for item in stdout.split())
        apps_out[app]["notes"] = [line for line in stderr.splitlines() if line.startswith("apps:")]
    pipelines = {}
    for name, stats in daemon.per_pipeline.items():
        lat, counts = stats["latencies_ms"], stats["outcomes"]
        pipelines[name] = {"class": stats["class"], "frames": sum(counts.values()),
                           "on_time": counts.get("on_time", counts.get("done", 0)), "late": counts.get("late", 0),
                           "dropped": counts.get("dropped", 0),
                           "latency_ms_p99": round(float(np.percentile(lat, 99)), 3) if lat else None}
    summary = {"platform": board_name, "modules": list(platform.modules), "backend": backend.name,
               "size": list(size), "frames": frames, "streams": streams_used, "dilation": chosen,
               "pipelines": pipelines,
               "totals": {"reconfigurations": port.loads, "port_busy_s": round(port.busy_s, 6), **loads,
                          "slot_utilization": busy["slots_computing"], "fabric": busy, "dnn_images": dnn_images,
                          "dnn_images_per_s": round(dnn_images / board_s, 1) if board_s else 0.0,
                          "board_s": round(board_s, 3), "wall_s": round(time.perf_counter() - started, 1),
                          "wall_by_operation": meter.summary()},
               "apps": apps_out, "files": files}
    if "digits" in apps:
        summary["digit_reader"] = score_readings(truth, json.loads(readings.read_text()))
    return summary


def report_lines(summary: dict) -> list[str]:
    t = summary["totals"]
    rows, cols = summary["size"]
    lines = [f"fpgashare demo: {len(summary['apps'])} apps on the simulated {summary['platform']} "
             f"({summary['backend']} backend), {summary['frames']} frames of {cols}x{rows}, "
             f"{t['board_s']:.2f} s of board time in {t['wall_s']:.0f} s of wall time",
             f"  {'pipeline':10s} {'class':10s} {'frames':>6s} {'on time':>7s} {'late':>5s} {'dropped':>7s} "
             f"{'p99 ms':>7s}"]
    for name, p in summary["pipelines"].items():
        p99 = "-" if p["latency_ms_p99"] is None else f"{p['latency_ms_p99']:.2f}"
        lines.append(f"  {name:10s} {p['class']:10s} {p['frames']:6d} {p['on_time']:7d} {p['late']:5d} "
                     f"{p['dropped']:7d} {p99:>7s}")
    fab = t["fabric"]
    floor = "" if t["loads_order_floor"] is None else \
        f"; the real-time frames in the order they ran need at least {t['loads_order_floor']}"
    lines.append(f"  {t['reconfigurations']} partial loads ({t['loads_for_dnn']} lending slots to the DNN{floor}), "
                 f"port busy {t['port_busy_s'] * 1e3:.1f} ms; over the "
                 f"{fab['span_s'] * 1e3:.0f} ms the board worked, slots {100 * fab['slots_computing']:.0f}% computing "
                 f"({100 * fab['slots_computing_or_loading']:.0f}% with loads), port {100 * fab['port_loading']:.0f}% "
                 f"loading; DNN {t['dnn_images']} images ({t['dnn_images_per_s']:.0f}/s of board time)")
    use = summary["streams"]
    lines.append("  streams: " + "; ".join(f"{k} {', '.join(v)}" for k, v in use["carried"].items())
                 + f"; two or more computing at once for {use['together_s'] * 1e3:.1f} ms")
    ops = t["wall_by_operation"]
    rest = t["wall_s"] - sum(v["wall_s"] for v in ops.values())
    lines.append("  wall time in the backend: " + ", ".join(f"{v['count']} {k.replace('_', ' ')} {v['wall_s']:.1f} s"
                                                           for k, v in ops.items())
                 + f"; {rest:.1f} s besides (the board idle at the demo's dilation, the apps starting)")
    dilation = summary["dilation"]
    measured = f" (the host measured {dilation['host_ms_per_frame']:.3f} ms a frame, " \
        f"{dilation['host_ms_per_load']:.3f} ms a load, its loop blocked up to {dilation['host_ms_block']:.3f} ms)" \
        if "host_ms_per_frame" in dilation else ""
    lines.append(f"  dilation {dilation['wall_s_per_board_s']:g} wall s per board s while the board idles: "
                 f"{dilation['reason']}{measured}")
    if "digit_reader" in summary:
        d = summary["digit_reader"]
        lines.append(f"  digit reader: {d['read_right']}/{d['printed']} printed digits read right "
                     f"({100 * (d['accuracy'] or 0):.1f}%), {d['not_digits']} "
                     f"blob{'' if d['not_digits'] == 1 else 's'} called no digit")
    for result in summary["apps"].values():
        for note in result["notes"]:
            lines.append(f"  {note.split(':', 1)[1].strip()}")
    lines.append("  wrote " + ", ".join(summary["files"].values()))
    return lines
