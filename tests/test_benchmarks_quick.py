"""Every benchmark still runs: each script in benchmarks/ that offers ``--quick`` is run that way,
must exit 0, and, if it writes results (benchmarks/results.py), must write a result file with its
commit and date that the renderer turns into a page. The list is discovered, not written down, so
a new benchmark is covered the day it lands; a script without ``--quick`` is reported as skipped,
naming itself, until it gets one."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
#: the results machinery itself (tested below), not benchmarks
MACHINERY = {"results", "render_results"}
QUICK_TIMEOUT_S = 300        # a quick mode takes seconds; this only keeps a hung one from hanging CI


def scripts() -> list[Path]:
    """Benchmark scripts: modules of benchmarks/ that run as a program."""
    return [path for path in sorted(BENCHMARKS.glob("*.py"))
            if path.stem not in MACHINERY and '__name__ == "__main__"' in path.read_text()]


def offers_quick(source: str) -> bool:
    return re.search(r"""add_argument\(\s*["']--quick["']""", source) is not None


def quick_requires(source: str) -> tuple[str, ...]:
    """The modules a script's quick mode needs from an optional extra, as the script declares them
    (``QUICK_REQUIRES = ("ray",)``, read without importing the script); without them it is skipped."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "QUICK_REQUIRES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def _environment(results: Path) -> dict:
    env = dict(os.environ, FPGASHARE_RESULTS_DIR=str(results))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


@pytest.mark.parametrize("script", scripts(), ids=lambda p: p.stem)
def test_quick_mode_runs(script: Path, tmp_path: Path) -> None:
    source = script.read_text()
    if not offers_quick(source):
        pytest.skip(f"benchmarks/{script.name} has no --quick mode yet")
    for module in quick_requires(source):
        pytest.importorskip(module, reason=f"benchmarks/{script.name} --quick needs {module} (an optional extra)")
    results = tmp_path / "results"
    # Run from a scratch folder: whatever a benchmark writes relative to its working directory
    # (workload_gen's out/random) stays out of the checkout.
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{script.stem}", "--quick"], cwd=tmp_path,
                          env=_environment(results), capture_output=True, text=True, timeout=QUICK_TIMEOUT_S)
    assert done.returncode == 0, f"{script.name} --quick exited {done.returncode}:\n{done.stderr[-3000:]}"
    if "write_result(" in source:
        written = sorted(results.glob("*.quick.json"))
        assert written, f"{script.name} --quick wrote no result file into {results}"
        for path in written:
            record = json.loads(path.read_text())
            assert record["quick"] is True and record["data"]
            assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", record["commit"]), record["commit"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["date"]), record["date"]
        page = tmp_path / "results.md"
        rendered = subprocess.run([sys.executable, "-m", "benchmarks.render_results", "--quick", "--results",
                                   str(results), "--out", str(page)], cwd=tmp_path, env=_environment(results),
                                  capture_output=True, text=True, timeout=60)
        assert rendered.returncode == 0, rendered.stderr
        text = page.read_text()
        for path in written:
            assert f"## {json.loads(path.read_text())['benchmark']}" in text
        assert "(quick mode)" in text


def test_every_benchmark_script_is_discovered() -> None:
    """The discovery finds the scripts (a broken glob would make the test above vacuous)."""
    found = {path.stem for path in scripts()}
    assert len(found) >= 10 and "admission_soundness" in found and not found & MACHINERY


def test_usage_lines_run_benchmarks_as_modules() -> None:
    """A benchmark imports the results writer as ``benchmarks.results``, which a script run as a file
    (``python benchmarks/NAME.py``) cannot find: the docs and the scripts' own usage lines must say
    ``python -m benchmarks.NAME``."""
    pages = [*BENCHMARKS.glob("*.py"), *(REPO / "docs").glob("*.md"), REPO / "README.md"]
    wrong = [f"{page.relative_to(REPO)}: {line.strip()}" for page in pages
             for line in page.read_text().splitlines() if re.search(r"python3? benchmarks/\w+\.py", line)]
    assert not wrong, wrong
