"""RTL test time: what CI's tests marked ``rtl`` cost at a base commit and at HEAD, measured in one run.

Each side is a detached git worktree of its commit in a scratch folder with a virtual environment of
its own (``pip install -e ".[test]"`` of that tree, so each side runs with the dependencies it
declares); there the tests marked ``rtl`` run as CI runs them (tests/run.sh, docs/testing.md "Where
the time goes")::

    python -m pytest -m rtl -n 2 --dist loadfile -q tests --ignore=tests/board

cold, as on a fresh CI machine: ``FPGASHARE_CACHE`` (the build cache's variable at both the default
base and HEAD), ``XDG_CACHE_HOME`` and ``YOWASP_CACHE_DIR`` (Yosys's compiled WebAssembly) point at
empty folders of the side's own. The sides run one after the other, never together.

The figure is the CPU time (user + system) of the pytest process and every process under it (the
xdist workers, Verilator, the C++ compiler, Yosys), read from ``getrusage(RUSAGE_CHILDREN)`` around
the run: on a machine shared with other work the CPU time a run needs is steadier than its wall
time, which is reported beside it. ``cpu_ratio`` is HEAD / base; the goal is <= 0.5. Each side says
how many tests ran, passed, failed, errored and were skipped (from pytest's JUnit XML) and pytest's
exit code: a side that fails tests is reported, and the benchmark then exits 1 after writing its
result. ``head_top_files`` and ``head_top_tests`` say where HEAD's time goes: the wall time of each
test (setup, call and teardown) in its worker, summed per test file.

    python -m benchmarks.rtl_test_time [--base COMMIT] [--quick] [--scratch DIR] [--keep] [--json]

``--quick`` proves the benchmark runs (about a minute of CPU: two cold builds of a counter): HEAD
against itself unless ``--base`` is given, the same worktrees, but each venv borrows the
running interpreter's installed dependencies (a ``.pth`` file) and installs only its tree, without
dependencies, and the tests are the one cheap test marked ``rtl`` in a file both commits have
(QUICK_TESTS: a counter verilated, compiled and linked, cold). Its figures are not the benchmark's claim.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from benchmarks.results import REPO, write_result

log = logging.getLogger("rtl_test_time")

BASE = "4827233"   #: the build the goal was filed against (the parent of the first commit of that work)
GOAL = 0.5         #: HEAD's CPU time over the base's, at most
#: CI's invocation of the suite (tests/run.sh) restricted to the tests marked rtl
PYTEST_ARGS = ("-m", "rtl", "-n", "2", "--dist", "loadfile", "-q")
FULL_TESTS = ("tests", "--ignore=tests/board")
#: one cheap rtl test present at the default base and at HEAD (the quick mode's whole selection)
QUICK_TESTS = ("tests/test_harness_build.py",)   # its one rtl test: a counter verilated and linked
#: the variables that point a side's caches at its own empty folders (relative to the side's scratch)
COLD_CACHES = {"FPGASHARE_CACHE": "cache/fpgashare", "XDG_CACHE_HOME": "cache/xdg",
               "YOWASP_CACHE_DIR": "cache/xdg/YoWASP"}
#: variables of the calling process that would make a side import or write somewhere else
DROPPED = ("PYTHONPATH", "VIRTUAL_ENV", "FPGASHARE_RESULTS_DIR", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER",
           "PYTEST_CURRENT_TEST")
TOP = 15


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


def add_worktree(commit: str, dest: Path) -> None:
    """A detached worktree of ``commit`` at ``dest``."""
    git("worktree", "add", "--detach", "--quiet", str(dest), commit)


def remove_worktree(dest: Path) -> None:
    try:
        git("worktree", "remove", "--force", str(dest))
    except subprocess.CalledProcessError:
        shutil.rmtree(dest, ignore_errors=True)
        git("worktree", "prune")


def make_venv(tree: Path, venv: Path, quick: bool) -> Path:
    """A virtual environment with ``tree`` installed editable; returns its Python. A full run installs
    the tree's ``test`` extra as CI does; a quick one borrows the running interpreter's packages."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    if quick:
        site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
        # a plain path line: the borrowed folder's own .pth files (its editable install) are not run
        (site / "zz_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        install = ["--no-deps", "-e", str(tree)]
    else:
        install = ["-e", f"{tree}[test]"]
    subprocess.run([str(python), "-m", "pip", "install", "-q", *install], check=True)
    return python


def side_environment(python: Path, scratch: Path) -> dict[str, str]:
    """The calling environment with the side's venv first on PATH and its caches cold."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(python.parent.parent)
    for variable, folder in COLD_CACHES.items():
        path = scratch / folder
        if path.exists() and any(path.iterdir()):
            raise RuntimeError(f"{path} is not empty: the run would not be cold")
        path.mkdir(parents=True, exist_ok=True)
        env[variable] = str(path)
    return env


def read_junit(path: Path) -> tuple[dict, list[dict]]:
    """Counts and per-test rows (file, test, seconds, outcome) from pytest's JUnit XML."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                break
        module, name = case.get("classname", ""), case.get("name", "")
        if not module:   # a module skipped while collecting (an optional extra missing): its name is the module
            module, name = name, ""
        cases.append({"file": module_file(module), "test": f"{module}::{name}" if name else module,
                      "seconds": float(case.get("time", 0.0)), "outcome": outcome})
    counts = {k: sum(c["outcome"] == k for c in cases) for k in ("passed", "failed", "error", "skipped")}
    return counts, cases


def module_file(classname: str) -> str:
    """``tests.test_x.TestY`` -> ``tests/test_x.py`` (a class, if any, is the part after the module)."""
    parts = classname.split(".")
    while parts and parts[-1][:1].isupper():
        parts.pop()
    return "/".join(parts) + ".py"


def run_side(label: str, commit: str, root: Path, quick: bool) -> tuple[dict, list[dict]]:
    """Check ``commit`` out under ``root``, install it and run its rtl tests cold; the side's figures
    and its per-test rows."""
    tree, scratch = root / f"{label}-tree", root / f"{label}-scratch"
    scratch.mkdir(parents=True)
    started = time.perf_counter()
    add_worktree(commit, tree)
    python = make_venv(tree, root / f"{label}-venv", quick)
    setup_wall = time.perf_counter() - started
    env = side_environment(python, scratch)
    junit = scratch / "junit.xml"
    command = [str(python), "-m", "pytest", *PYTEST_ARGS, f"--junitxml={junit}",
               *(QUICK_TESTS if quick else FULL_TESTS)]
    log.info("%s %s: %s (log %s)", label, commit[:12], " ".join(command[1:]), scratch / "pytest.log")
    load = os.getloadavg()[0]
    with (scratch / "pytest.log").open("w") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    counts, cases = read_junit(junit) if junit.exists() else ({}, [])
    figures = {"commit": commit, "cpu_s": cpu, "user_s": after.ru_utime - before.ru_utime,
               "system_s": after.ru_stime - before.ru_stime, "wall_s": wall, "tests_run": len(cases), **counts,
               "pytest_exit": done.returncode, "setup_wall_s": setup_wall,
               "load_at_start": load, "load_at_end": os.getloadavg()[0]}
    log.info("%s: %.0f CPU s, %.0f wall s, %d tests: %s, pytest exit %d", label, cpu, wall, len(cases),
             ", ".join(f"{v} {k}" for k, v in counts.items()), done.returncode)
    return figures, cases


def where_time_goes(cases: list[dict], top: int) -> tuple[list[dict], list[dict]]:
    """The test files and the tests taking the most wall time in their workers, with their shares."""
    total = sum(c["seconds"] for c in cases) or 1.0
    files: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        files[case["file"]].append(case["seconds"])
    by_file = sorted(({"file": f, "tests": len(s), "seconds": sum(s), "share": sum(s) / total}
                      for f, s in files.items()), key=lambda r: -r["seconds"])
    by_test = sorted(({"test": c["test"], "seconds": c["seconds"], "share": c["seconds"] / total,
                       "outcome": c["outcome"]} for c in cases), key=lambda r: -r["seconds"])
    return by_file[:top], by_test[:top]


def ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=None,
                        help=f"the commit HEAD is compared with (default {BASE}; with --quick, HEAD itself)")
    parser.add_argument("--quick", action="store_true", help="borrowed dependencies, one cheap rtl test file")
    parser.add_argument("--scratch", type=Path, default=None, help="parent of the run's scratch folder")
    parser.add_argument("--keep", action="store_true", help="keep the worktrees, venvs and logs")
    parser.add_argument("--top", type=int, default=TOP, help="how many files and tests to list")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # A quick run only proves the script works: comparing HEAD with itself needs no history, so a
    # shallow clone (as some CI checkouts are) runs it too.
    base = args.base or ("HEAD" if args.quick else BASE)
    commits = {"base": git("rev-parse", "--verify", f"{base}^{{commit}}"), "head": git("rev-parse", "HEAD")}
    if args.scratch is not None:
        args.scratch.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="rtl_test_time-", dir=args.scratch))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    sides, cases = {}, {}
    try:
        for label, commit in commits.items():
            sides[label], cases[label] = run_side(label, commit, root, args.quick)
    finally:
        for label in commits:
            if (root / f"{label}-tree").exists():
                remove_worktree(root / f"{label}-tree")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    top_files, top_tests = where_time_goes(cases["head"], args.top)
    cpu_ratio = ratio(sides["head"]["cpu_s"], sides["base"]["cpu_s"])
    result = {"started_utc": started, "invocation": "python -m pytest " + " ".join(PYTEST_ARGS) + " "
              + " ".join(QUICK_TESTS if args.quick else FULL_TESTS), "cold_caches": sorted(COLD_CACHES),
              "cpu_ratio": cpu_ratio, "wall_ratio": ratio(sides["head"]["wall_s"], sides["base"]["wall_s"]),
              "goal_cpu_ratio": GOAL, "meets_goal": cpu_ratio is not None and cpu_ratio <= GOAL,
              "sides": sides,
              "failed_tests": {label: [c["test"] for c in rows if c["outcome"] in ("failed", "error")]
                               for label, rows in cases.items()},
              "head_top_files": top_files, "head_top_tests": top_tests}
    path = write_result("rtl_test_time", result, quick=args.quick)
    if args.json:
        log.info("%s", json.dumps(result, indent=2))
    for label, side in sides.items():
        log.info("%-4s %s: %8.1f CPU s (%.1f user, %.1f system), %8.1f wall s; %d tests, %d passed, %d failed, "
                 "%d errors, %d skipped; pytest exit %d", label, side["commit"][:12], side["cpu_s"], side["user_s"],
                 side["system_s"], side["wall_s"], side["tests_run"], side.get("passed", 0), side.get("failed", 0),
                 side.get("error", 0), side.get("skipped", 0), side["pytest_exit"])
    log.info("HEAD / base: CPU %s, wall %s; goal CPU <= %.2f: %s", _fmt(cpu_ratio), _fmt(result["wall_ratio"]),
             GOAL, "met" if result["meets_goal"] else "NOT met")
    log.info("where HEAD's time goes (wall s in the workers, by file):")
    for row in top_files:
        log.info("  %8.1f s %5.1f%%  %3d tests  %s", row["seconds"], 100 * row["share"], row["tests"], row["file"])
    for label, failed in result["failed_tests"].items():
        if failed:
            log.warning("%s: %d tests failed or errored: %s", label, len(failed), ", ".join(failed[:10]))
    log.info("wrote %s", path)
    return 0 if all(side["pytest_exit"] == 0 for side in sides.values()) else 1


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    sys.exit(main())
