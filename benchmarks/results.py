"""Benchmark results as JSON files, so the figures the documentation shows come from runs, never
from hand-typed numbers.

Each benchmark calls ``write_result(name, data)`` once at the end of a run; the file
``benchmarks/results/<name>.json`` then holds the data together with the commit it was measured at
and the UTC time of the run. ``benchmarks/render_results.py`` turns those files into
``docs/results.md``. A quick run (``--quick``, what CI does so no benchmark rots) writes
``<name>.quick.json`` instead: it proves the benchmark still runs, its figures are not the
benchmark's claim, and the renderer leaves it out. ``$FPGASHARE_RESULTS_DIR`` points the files
elsewhere (the tests use it to keep the checkout clean).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"
DIR_VARIABLE = "FPGASHARE_RESULTS_DIR"
NAME = re.compile(r"[a-z][a-z0-9_]*")
#: keys every result file carries besides the benchmark's own ``data``
ENVELOPE = ("benchmark", "commit", "date", "quick", "host")


def results_dir() -> Path:
    """Where results go: ``$FPGASHARE_RESULTS_DIR`` if set, else ``benchmarks/results/``."""
    override = os.environ.get(DIR_VARIABLE)
    return Path(override) if override else RESULTS_DIR


#: What the benchmarks write (relative to the repository): not code, so not a dirty tree.
GENERATED = ("benchmarks/results", "docs/results.md")


def current_commit(repo: Path = REPO) -> str:
    """The checkout's commit (``git rev-parse HEAD``), with ``-dirty`` when tracked files differ
    from it; ``unknown`` outside a git checkout (an installed wheel). The generated results
    themselves (GENERATED) do not count: a run that follows another before they are committed
    still measures the commit's code."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--", ".",
                                *(f":(exclude){p}" for p in GENERATED)],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def _plain(value, where: str):
    """``value`` as JSON's own types (tuples become lists, numpy scalars numbers); anything else is
    an error naming where it sits, so a benchmark cannot write a file the renderer cannot read."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)      # JSON has no inf or nan
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if hasattr(value, "item") and callable(value.item):               # numpy scalars
        return _plain(value.item(), where)
    raise TypeError(f"benchmark result {where} is a {type(value).__name__}, not a JSON value")


def write_result(name: str, data: dict, quick: bool = False, directory: Path | None = None) -> Path:
    """Write one run's ``data`` as ``<name>.json`` (``<name>.quick.json`` for a quick run) with its
    commit and UTC date; returns the path."""
    if not NAME.fullmatch(name):
        raise ValueError(f"benchmark name {name!r}: lower-case letters, digits and '_' only")
    if not isinstance(data, dict):
        raise TypeError(f"benchmark result {name}: data must be a dict, not a {type(data).__name__}")
    record = {"benchmark": name, "commit": current_commit(),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "quick": bool(quick),
              "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
              "data": _plain(data, name)}
    folder = directory if directory is not None else results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (f"{name}.quick.json" if quick else f"{name}.json")
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    partial.replace(path)           # a reader never sees half a file
    return path


def read_results(directory: Path | None = None, quick: bool = False) -> list[dict]:
    """Every result file in ``directory`` (full runs; with ``quick`` the quick runs too), by name.
    A file that is not a result names itself and what it lacks."""
    folder = directory if directory is not None else results_dir()
    records = []
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(".quick.json") and not quick:
            continue
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        missing = [key for key in (*ENVELOPE, "data") if not isinstance(record, dict) or key not in record]
        if missing:
            raise ValueError(f"{path}: not a benchmark result, it lacks {', '.join(missing)}")
        records.append(record)
    return records
