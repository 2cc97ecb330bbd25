"""RTL throughput: a 3-stage chain (gauss3x3 -> sobel_mag -> threshold) on the zcu104 shell, at 1 and
at 4 pixels per clock, as the marginal rate between 640x480 and 1920x1080 frames (the fixed costs
cancel), per CPU second (steadier than wall time on a shared machine), one partial load's time, and
the CPU time of a cycle with nothing moving (every slot blank, then the chain loaded and at rest):

- ``new``: the simulated board as built now (each slot evaluates only its loaded module, a model of
  its own at the slot's boundary; the configuration block too, run alone during a load while the rest
  of the shell is at rest; the harness evaluates each model by the clock's level, without eval()'s
  housekeeping, hdl_sim/harness/eval_phases.h);
- ``whole_eval``: the same build with every model evaluated by Verilator's whole eval() at both clock
  levels (``ShellHarness.set_whole_eval``): ``phase_ratio`` is what the level split gains;
- ``exchange_before``: the same build with the pins between the shell and the module models exchanged
  as before the lean exchange (``ShellHarness.set_lean_exchange(False)``: a copy compared whole, every
  input written at both clock levels, no low evaluation folded), the harness's module path as it was:
  ``exchange_ratio`` on frames, ``exchange_idle_ratio`` on an idle cycle with the chain loaded,
  ``exchange_load_ratio`` on a load are what the lean exchange and the fold gain together;
- ``fold_apart``: the same build with every module model's two levels evaluated apart
  (``ShellHarness.set_fold_low(False)``; the lean exchange on): ``fold_ratio`` on frames is what folding
  a low evaluation into its edge's call gains;
- ``fabric_inside``: the shell with its AXI-Lite control path inside (``SimBoard(fabric=False)``), evaluated
  with it every cycle, where ``new`` simulates it as a model of its own skipped while the processor's bus
  rests: ``fabric_ratio`` on frames, ``fabric_idle_ratio`` on an idle cycle with the chain loaded;
- ``no_checkers``: the same build without the assertion checkers (``sva_*.sv``; ``SimBoard(checkers=False)``),
  a reference for what they cost (``checker_ratio`` on frames, ``checker_idle_ratio`` on an idle cycle),
  not a build anything runs on;
- ``old``: the shell with every module of every slot inside (``SimBoard(external=False)``), measured
  in the same run, so the ratio new / old is the speed-up on this machine at this load;
- optionally ``fpgashare sim run`` (a process per frame; ``--cli``) and cocotb (``--cocotb-pixels N``).

For ``new`` it also says what a streaming cycle is made of (one more large frame): the shares of the
shell's evaluations, the module models', the configuration block's and the harness's own work
(``cost_split``, ShellHarness.cost_split; ``split_ns_per_cycle`` applies them to the untimed CPU time of
a cycle, ``ns_per_cycle_large``; ``profiled_ns_per_cycle`` is the timed run's), and the evaluations a
cycle (``module_evals_per_cycle``: two per streaming module; ``extra_shell_evals_per_cycle``: the
boundary settling again).

    python -m benchmarks.rtl_throughput [--quick] [--repeats N] [--library full,chain,slot] [--cli] [--json]

Module libraries per slot: ``full``, the zcu104 manifest's (every module that exists at that NPPC, in
every slot: the target is stated for it), ``chain``, slots holding only the chain's three modules, and
``slot``, slots 0, 1, 2 holding one module each. ``--quick`` measures the chain library at NPPC 1 on
small frames, once (seconds once the builds are cached). Targets: >= 5 M pixels per CPU second at
one pixel per clock and >= 20 M at four (full library), one partial load <= 50 ms.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from fpgashare.bitstream.registry import build_config
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.hdl_sim.board import SimBoard

from benchmarks.results import write_result

CHAIN = ("gauss3x3", "sobel_mag", "threshold")
CHAIN_MODULES = ("conv3x3", "sobel_mag", "threshold")   #: the modules (bitstreams) the chain loads
SIZES = ((480, 640), (1080, 1920))   #: the marginal rate is taken between these two frame sizes
QUICK_SIZES = ((48, 64), (96, 128))
TARGETS = {1: 5e6, 4: 20e6}           #: pixels per CPU second by pixels per clock, full library
LOAD_TARGET_S = 0.05                  #: one partial load's wall time
LIBRARIES = ("full", "chain", "slot")
TARGET_LIBRARY = "full"   #: the library the targets are stated for
BUILDS = ("new", "whole_eval", "exchange_before", "fold_apart", "fabric_inside", "no_checkers", "old")


def one_module_per_slot(path: Path, modules: tuple[str, ...]) -> Path:
    """Rewrite the manifest at ``path`` so that module ``modules[k]`` fits slot k only; returns ``path``."""
    head, *blocks = path.read_text().split("\n[[module]]\n")
    slots = load_platform(path).slots
    out = []
    for block in blocks:
        name = block.split('name = "', 1)[1].split('"', 1)[0]
        if name in modules:
            block = re.sub(r'(?m)^slots = \[.*\]$', f'slots = ["{slots[modules.index(name)].name}"]', block, count=1)
        out.append(block)
    path.write_text("\n[[module]]\n".join([head, *out]))
    platform = load_platform(path)   # validate what was written
    assert [platform.slots_for(m)[0].index for m in modules] == list(range(len(modules)))
    return path


def library_manifest(platform: str, library: str, nppc: int, dest: Path) -> Path:
    """The benchmark's platform at ``nppc`` pixels per clock with the given per-slot library."""
    modules = None if library == "full" else CHAIN_MODULES
    path = manifest_at_pixels_per_clock(platform, nppc, dest, modules)
    return one_module_per_slot(path, CHAIN_MODULES) if library == "slot" else path


def machine_load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _marginal(seconds: dict[tuple[int, int], float]) -> float:
    (small, t_small), (big, t_big) = sorted(seconds.items())
    return (big[0] * big[1] - small[0] * small[1]) / (t_big - t_small)


def idle_cycle_cpu(board: SimBoard, repeats: int, cycles: int) -> float:
    """CPU seconds a cycle of the shell with nothing moving (the fastest of ``repeats`` runs): the floor
    of every cycle, whatever streams."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        board.rtl.idle(cycles)
        best = min(best, time.process_time() - start)
    return best / cycles


def cycle_profile(board: SimBoard, stages: list, frame: np.ndarray, size: tuple[int, int]) -> dict:
    """One more frame of ``size`` with the harness's cost split on (ShellHarness.cost_split: the shares of
    the shell's evaluations, the module models', the configuration block's and the harness's own work)
    and its evaluations counted, per cycle: what a streaming cycle is made of."""
    for k, stage in enumerate(stages):
        board.program(k, stage, *size)
    before = board.rtl.evaluations()
    folds_before = board.rtl.folds()[0]
    board.rtl.set_cost_split(True)
    start = time.process_time()
    _, stats = board.stream(frame, size)
    seconds = time.process_time() - start
    board.rtl.set_cost_split(False)
    extra_shell, modules, skipped = (a - b for a, b in zip(board.rtl.evaluations(), before, strict=True))
    return {"cost_split": board.rtl.cost_split(), "profiled_ns_per_cycle": seconds / stats.cycles * 1e9,
            "module_evals_per_cycle": modules / stats.cycles,
            "module_evals_skipped_per_cycle": skipped / stats.cycles,
            "extra_shell_evals_per_cycle": extra_shell / stats.cycles,
            "folds_per_cycle": (board.rtl.folds()[0] - folds_before) / stats.cycles}


def harness_rate(platform, repeats: int, external: bool = True, sizes=SIZES, whole_eval: bool = False,
                 idle_cycles: int = 100_000, checkers: bool = True, lean: bool = True,
                 fold: bool = True, fabric: bool = True) -> dict:
    """The chain loaded ``repeats`` times (every load timed, the fastest kept); the two frame sizes
    streamed in turn, ``repeats`` times each (taking turns, a burst of load on the shared machine slows
    both sizes rather than one), the fastest of each kept."""
    board = SimBoard(platform, external=external, checkers=checkers, fabric=fabric)
    board.rtl.set_whole_eval(whole_eval)
    if external:
        board.rtl.set_lean_exchange(lean)
        board.rtl.set_fold_low(fold)
    stages = [resolve_stage(n) for n in CHAIN]
    words = [build_config(platform, platform.slots[k], stage.kind.name) for k, stage in enumerate(stages)]
    idle_blank = idle_cycle_cpu(board, repeats, idle_cycles)
    load_wall, load_cpu = [], []
    for _ in range(repeats):   # the fastest of several: on a shared machine a load's wall time is mostly waiting
        for k in range(len(stages)):
            start, start_cpu = time.perf_counter(), time.process_time()
            assert board.load(k, words[k]).ok
            load_wall.append(time.perf_counter() - start)
            load_cpu.append(time.process_time() - start_cpu)
    idle_loaded = idle_cycle_cpu(board, repeats, idle_cycles)
    board.route(list(range(len(stages))))
    rng = np.random.default_rng(0)
    frames = {size: rng.integers(0, 256, size, dtype=np.uint8) for size in sizes}
    times: dict = {size: [] for size in sizes}
    cpu_times: dict = {size: [] for size in sizes}
    cycles = {}
    for _ in range(repeats):
        for size, frame in frames.items():
            for k, stage in enumerate(stages):
                board.program(k, stage, *size)
            start, start_cpu = time.perf_counter(), time.process_time()
            out, stats = board.stream(frame, size)
            times[size].append(time.perf_counter() - start)
            cpu_times[size].append(time.process_time() - start_cpu)
            if not np.array_equal(out, chain_reference(stages, frame)):
                raise RuntimeError(f"harness output differs from the reference at {size[0]}x{size[1]}")
            cycles[size] = stats.cycles
    seconds = {size: min(t) for size, t in times.items()}
    cpu = {size: min(t) for size, t in cpu_times.items()}
    small, large = sizes[0], sizes[-1]
    profile = {}
    # the build as used: where its streaming cycle goes
    if external and not whole_eval and checkers and lean and fold and fabric:
        profile = cycle_profile(board, stages, frames[large], large)
        ns = cpu[large] / cycles[large] * 1e9
        profile["ns_per_cycle_large"] = ns
        # The shares are of the timed cycles with the counter reads taken out: applied to the untimed cycle.
        split = {part: share * ns for part, share in profile["cost_split"].items()}
        profile["split_ns_per_cycle"] = split
    return {**profile, "marginal_pixels_per_s": _marginal(seconds), "marginal_pixels_per_cpu_s": _marginal(cpu),
            "frame_pixels_per_s": small[0] * small[1] / seconds[small],
            "cycles_per_s": cycles[small] / seconds[small], "cycles_small": cycles[small],
            "load_wall_s": min(load_wall), "load_cpu_s": min(load_cpu), "load_words": int(words[0].size),
            "idle_ns_per_cycle_blank": idle_blank * 1e9, "idle_ns_per_cycle_loaded": idle_loaded * 1e9}


def cli_rate(manifest: Path, repeats: int, tmp: Path) -> dict:
    """``fpgashare sim run`` on each frame size, ``repeats`` times after one warm-up round, the sizes taking
    turns: the median of the process's wall and CPU time, and the fastest of the frame's stream time as
    the command reports it (its JSON ``stream_wall_s`` and ``stream_cpu_s``). A process spends a second
    or more on fixed costs (start-up, generating three partial bitstreams in Python, loading them through
    the RTL configuration port), so the process-time marginal is noise-bound on a shared machine; the
    reported stream time is the CLI's own frame."""
    exe = shutil.which("fpgashare") or str(Path(sys.executable).parent / "fpgashare")
    rng = np.random.default_rng(1)
    images, cmds = {}, {}
    for rows, cols in SIZES:
        images[rows, cols] = image = tmp / f"in_{rows}x{cols}.png"
        cv2.imwrite(str(image), rng.integers(0, 256, (rows, cols), dtype=np.uint8))
        cmds[rows, cols] = [exe, "sim", "run", "--platform", str(manifest), "--chain", ",".join(CHAIN), "--in",
                            str(image), "--out", str(tmp / f"out_{rows}x{cols}.png"), "--json"]
    runs: dict = {size: {"process": [], "cpu": [], "stream": [], "stream_cpu": [], "load": []} for size in SIZES}
    for n in range(repeats + 1):
        for size in SIZES:   # the sizes take turns, as in harness_rate
            start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(cmds[size], check=True, capture_output=True, text=True, env=os.environ)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if n:   # the first round may build the harness
                report, got = json.loads(done.stdout), runs[size]
                got["process"].append(time.perf_counter() - start)
                got["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                got["stream"].append(report["stream_wall_s"])
                got["stream_cpu"].append(report["stream_cpu_s"])
                got["load"].append(report["load_wall_s"])
    for (rows, cols), image in images.items():
        expected = chain_reference([resolve_stage(s) for s in CHAIN], cv2.imread(str(image), cv2.IMREAD_GRAYSCALE))
        if not np.array_equal(cv2.imread(str(tmp / f"out_{rows}x{cols}.png"), cv2.IMREAD_GRAYSCALE), expected):
            raise RuntimeError(f"fpgashare sim run output differs from the reference at {rows}x{cols}")
    seconds = {size: statistics.median(r["process"]) for size, r in runs.items()}
    cpu = {size: statistics.median(r["cpu"]) for size, r in runs.items()}
    load = {size: statistics.median(r["load"]) for size, r in runs.items()}
    stream = {size: min(r["stream"]) for size, r in runs.items()}
    stream_cpu = {size: min(r["stream_cpu"]) for size, r in runs.items()}
    small = SIZES[0]
    return {"marginal_pixels_per_s": _marginal(stream), "marginal_pixels_per_cpu_s": _marginal(stream_cpu),
            "process_marginal_pixels_per_s": _marginal(seconds),
            "process_marginal_pixels_per_cpu_s": _marginal(cpu), "process_s_640x480": seconds[small],
            "load_wall_s_640x480": load[small],
            "process_s_large": seconds[SIZES[1]]}


def cocotb_rate(platform_name: str, pixels: int) -> dict:
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cocotb.json"
        platform = load_platform(platform_name)
        env = {"FPGASHARE_BENCH_OUT": str(out), "FPGASHARE_BENCH_PLATFORM": platform_name,
               "FPGASHARE_BENCH_PIXELS": str(pixels)}
        os.environ.update(env)
        _, failed = run_cocotb("shell", "benchmarks.cocotb_shell_drive", platform.rtl_parameters(), env)
        if failed or not out.exists():
            raise RuntimeError("the cocotb measurement failed")
        data = json.loads(out.read_text())
    return {"pixels_per_s": data["pixels"] / data["stream_s"],
            "load_words_per_s": data["load_words"] / data["load_s"], "pixels": data["pixels"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="chain library, NPPC 1, small frames, once")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cocotb-pixels", type=int, default=0, help="also drive the RTL from cocotb (NPPC 1)")
    parser.add_argument("--platform", default="zcu104")
    parser.add_argument("--library", default=TARGET_LIBRARY,
                        help=f"comma-separated per-slot libraries to measure, of {', '.join(LIBRARIES)}")
    parser.add_argument("--cli", action="store_true", help="also measure fpgashare sim run (a process per frame)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    libraries = [lib.strip() for lib in args.library.split(",") if lib.strip()]
    if not libraries or any(lib not in LIBRARIES for lib in libraries):
        parser.error(f"--library {args.library!r}: give some of {', '.join(LIBRARIES)}")
    sizes, repeats, nppcs = SIZES, args.repeats, (1, 4)
    if args.quick:
        libraries, sizes, repeats, nppcs = ["chain"], QUICK_SIZES, 1, (1,)
    started = datetime.datetime.now(datetime.timezone.utc)
    result: dict = {"chain": list(CHAIN), "sizes": [list(s) for s in sizes], "platform": args.platform,
                    "started_utc": started.strftime("%Y-%m-%d %H:%M"), "load_at_start": machine_load(),
                    "quick": args.quick, "libraries": {}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for library in libraries:
            row: dict = {}
            for nppc in nppcs:
                manifest = library_manifest(args.platform, library, nppc, tmp / f"{library}-x{nppc}.toml")
                platform = load_platform(manifest)
                got = row[f"nppc{nppc}"] = {build: harness_rate(platform, repeats, build != "old", sizes,
                                                                whole_eval=build == "whole_eval",
                                                                checkers=build != "no_checkers",
                                                                lean=build != "exchange_before",
                                                                fold=build != "fold_apart",
                                                                fabric=build != "fabric_inside")
                                            for build in BUILDS}
                got["ratio"] = got["new"]["marginal_pixels_per_cpu_s"] / got["old"]["marginal_pixels_per_cpu_s"]
                got["load_ratio"] = got["old"]["load_cpu_s"] / got["new"]["load_cpu_s"]
                got["phase_ratio"] = (got["new"]["marginal_pixels_per_cpu_s"]
                                      / got["whole_eval"]["marginal_pixels_per_cpu_s"])
                got["phase_load_ratio"] = got["whole_eval"]["load_cpu_s"] / got["new"]["load_cpu_s"]
                before = got["exchange_before"]
                got["exchange_ratio"] = got["new"]["marginal_pixels_per_cpu_s"] / before["marginal_pixels_per_cpu_s"]
                got["exchange_idle_ratio"] = before["idle_ns_per_cycle_loaded"] / got["new"]["idle_ns_per_cycle_loaded"]
                got["exchange_load_ratio"] = before["load_cpu_s"] / got["new"]["load_cpu_s"]
                got["fold_ratio"] = (got["new"]["marginal_pixels_per_cpu_s"]
                                     / got["fold_apart"]["marginal_pixels_per_cpu_s"])
                inside = got["fabric_inside"]
                got["fabric_ratio"] = got["new"]["marginal_pixels_per_cpu_s"] / inside["marginal_pixels_per_cpu_s"]
                got["fabric_idle_ratio"] = inside["idle_ns_per_cycle_loaded"] / got["new"]["idle_ns_per_cycle_loaded"]
                got["checker_ratio"] = (got["no_checkers"]["marginal_pixels_per_cpu_s"]
                                        / got["new"]["marginal_pixels_per_cpu_s"])
                got["checker_idle_ratio"] = (got["new"]["idle_ns_per_cycle_blank"]
                                             / got["no_checkers"]["idle_ns_per_cycle_blank"])
                if args.cli:
                    got["cli"] = cli_rate(manifest, repeats, tmp)
            result["libraries"][library] = row
    if args.cocotb_pixels:
        result["cocotb_nppc1"] = cocotb_rate(args.platform, args.cocotb_pixels)
    result["load_at_end"] = machine_load()
    target_row = result["libraries"].get(TARGET_LIBRARY, {})
    result["meets"] = {f"nppc{n}": target_row[f"nppc{n}"]["new"]["marginal_pixels_per_cpu_s"] >= rate
                       for n, rate in TARGETS.items() if f"nppc{n}" in target_row}
    loads = [r[f"nppc{n}"]["new"]["load_wall_s"] for r in result["libraries"].values() for n in nppcs]
    result["meets"]["load"] = min(loads) <= LOAD_TARGET_S
    write_result("rtl_throughput", result, quick=args.quick)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    a, b = sizes
    print(f"3-stage chain {' -> '.join(CHAIN)}, {args.platform} shell; marginal rate between {a[1]}x{a[0]} and "
          f"{b[1]}x{b[0]} frames, per CPU second")
    print(f"  {result['started_utc']} UTC, {os.cpu_count()} CPUs; {result['load_at_start']} at the start, "
          f"{result['load_at_end']} at the end")
    for library, row in result["libraries"].items():
        print(f"  library per slot: {library}")
        for nppc in nppcs:
            got = row[f"nppc{nppc}"]
            new, old = got["new"], got["old"]
            print(f"    NPPC {nppc}: new {new['marginal_pixels_per_cpu_s'] / 1e6:7.3f} M px/s, old "
                  f"{old['marginal_pixels_per_cpu_s'] / 1e6:7.3f} M px/s: {got['ratio']:.2f}x; "
                  f"one partial load ({new['load_words']} words) new {new['load_wall_s'] * 1e3:.0f} ms wall / "
                  f"{new['load_cpu_s'] * 1e3:.0f} ms CPU, old {old['load_wall_s'] * 1e3:.0f} / "
                  f"{old['load_cpu_s'] * 1e3:.0f} ms: {got['load_ratio']:.2f}x")
            print(f"      a cycle with nothing moving: {new['idle_ns_per_cycle_blank']:.0f} ns (every slot blank), "
                  f"{new['idle_ns_per_cycle_loaded']:.0f} ns (the chain's modules loaded, at rest); old "
                  f"{old['idle_ns_per_cycle_blank']:.0f} / {old['idle_ns_per_cycle_loaded']:.0f} ns")
            if "cost_split" in new:
                parts = ", ".join(f"{part} {ns:.0f} ns" for part, ns in new["split_ns_per_cycle"].items())
                print(f"      a streaming cycle ({new['ns_per_cycle_large']:.0f} ns at {b[1]}x{b[0]}, "
                      f"{new['profiled_ns_per_cycle']:.0f} ns timed by part): {parts}; "
                      f"{new['module_evals_per_cycle']:.2f} module and {new['extra_shell_evals_per_cycle']:.4f} "
                      f"extra shell evaluations a cycle")
            whole = got["whole_eval"]
            print(f"      whole eval() at both levels: {whole['marginal_pixels_per_cpu_s'] / 1e6:7.3f} M px/s, load "
                  f"{whole['load_cpu_s'] * 1e3:.0f} ms CPU: the level split {got['phase_ratio']:.2f}x on frames, "
                  f"{got['phase_load_ratio']:.2f}x on the load")
            before, apart = got["exchange_before"], got["fold_apart"]
            print(f"      the pins exchanged as before the lean exchange: "
                  f"{before['marginal_pixels_per_cpu_s'] / 1e6:7.3f} M px/s: the lean exchange and the fold "
                  f"{got['exchange_ratio']:.3f}x on frames, {got['exchange_idle_ratio']:.3f}x on an idle cycle "
                  f"(chain loaded), {got['exchange_load_ratio']:.3f}x on a load")
            print(f"      both levels of every module apart: {apart['marginal_pixels_per_cpu_s'] / 1e6:7.3f} "
                  f"M px/s: the fold {got['fold_ratio']:.3f}x on frames, {new['folds_per_cycle']:.2f} folds a cycle")
            inside = got["fabric_inside"]
            print(f"      the AXI-Lite control path inside the shell: {inside['marginal_pixels_per_cpu_s'] / 1e6:7.3f} "
                  f"M px/s, idle {inside['idle_ns_per_cycle_loaded']:.0f} ns (chain loaded): the fabric outside "
                  f"{got['fabric_ratio']:.3f}x on frames, {got['fabric_idle_ratio']:.3f}x on an idle cycle")
            bare = got["no_checkers"]
            print(f"      without the assertion checkers (a reference): {bare['marginal_pixels_per_cpu_s'] / 1e6:7.3f} "
                  f"M px/s, idle {bare['idle_ns_per_cycle_blank']:.0f} ns: the checkers cost "
                  f"{got['checker_ratio']:.2f}x on frames, {got['checker_idle_ratio']:.2f}x on an idle cycle")
            if "cli" in got:
                c = got["cli"]
                print(f"      fpgashare sim run: {c['marginal_pixels_per_cpu_s'] / 1e6:.3f} M px/s per CPU s, "
                      f"a {a[1]}x{a[0]} process {c['process_s_640x480']:.2f} s")
    if args.cocotb_pixels:
        print(f"  cocotb (NPPC 1, per-cycle Python): {result['cocotb_nppc1']['pixels_per_s'] / 1e6:.4f} M px/s")
    verdict = {True: "met", False: "NOT met"}
    for key, ok in result["meets"].items():
        goal = (f">= {TARGETS[int(key[-1])] / 1e6:.0f} M px per CPU s ({TARGET_LIBRARY} library)"
                if key.startswith("nppc") else f"one partial load <= {LOAD_TARGET_S * 1e3:.0f} ms wall")
        print(f"  target {key}: {goal}: {verdict[ok]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
