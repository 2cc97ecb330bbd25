"""Benchmark results as files (benchmarks/results.py) and the page made of them
(benchmarks/render_results.py): any JSON-shaped data a benchmark writes comes back as written, with
its commit and date; the page shows every benchmark and every figure; bad data and bad files are
refused naming the problem."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.render_results import render
from benchmarks.results import read_results, write_result

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(lambda k: k[0] != "_")
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9),
                    st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=20))
ROWS = st.lists(st.dictionaries(KEYS, SCALARS, min_size=1, max_size=5), min_size=1, max_size=5)
DATA = st.recursive(st.dictionaries(KEYS, st.one_of(SCALARS, ROWS), min_size=1, max_size=6),
                    lambda inner: st.dictionaries(KEYS, st.one_of(SCALARS, ROWS, inner), min_size=1, max_size=4),
                    max_leaves=20)
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(data=DATA, name=NAMES, quick=st.booleans())
def test_a_result_comes_back_as_written_and_is_rendered(tmp_path_factory, data, name, quick) -> None:
    folder = tmp_path_factory.mktemp("results")
    path = write_result(name, data, quick=quick, directory=folder)
    assert path.name == f"{name}.quick.json" if quick else f"{name}.json"
    [record] = read_results(folder, quick=True)
    assert record["data"] == json.loads(json.dumps(data))
    assert record["benchmark"] == name and record["quick"] is quick
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", record["commit"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["date"])
    assert read_results(folder) == ([] if quick else [record])   # quick runs are not results
    page = render([record])
    assert f"## {name}\n" in page and record["date"] in page
    for key in _keys(data):
        assert key in page, f"figure {key!r} missing from the page"


def _keys(data: dict) -> set[str]:
    keys = set(data)
    for value in data.values():
        if isinstance(value, dict):
            keys |= _keys(value)
        elif isinstance(value, list):
            keys |= {k for row in value for k in row}
    return keys


def test_numpy_values_and_tuples_are_written_as_json(tmp_path: Path) -> None:
    path = write_result("np", {"n": np.int64(3), "x": np.float32(0.5), "pair": (1, 2), "inf": math.inf},
                        directory=tmp_path)
    assert json.loads(path.read_text())["data"] == {"n": 3, "x": 0.5, "pair": [1, 2], "inf": "inf"}


def test_bad_names_data_and_files_are_refused_naming_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="benchmark name"):
        write_result("Bad Name", {"a": 1}, directory=tmp_path)
    with pytest.raises(TypeError, match=r"x\.where\.deep is a set"):
        write_result("x", {"where": {"deep": {1, 2}}}, directory=tmp_path)
    with pytest.raises(TypeError, match="must be a dict"):
        write_result("x", [1, 2], directory=tmp_path)
    (tmp_path / "stray.json").write_text('{"benchmark": "stray"}')
    with pytest.raises(ValueError, match=r"stray\.json: not a benchmark result, it lacks commit"):
        read_results(tmp_path)
    (tmp_path / "stray.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"stray\.json: not JSON"):
        read_results(tmp_path)


def test_the_commit_is_dirty_for_changed_code_not_for_changed_results(tmp_path) -> None:
    import subprocess

    from benchmarks.results import GENERATED, current_commit

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    files = [tmp_path / "code.py", *(tmp_path / g / "x.json" if "." not in g else tmp_path / g for g in GENERATED)]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("a\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    head = current_commit(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{40}", head)
    for f in files[1:]:
        f.write_text("b\n")                 # a benchmark wrote its results: still the commit's code
    assert current_commit(tmp_path) == head
    files[0].write_text("b\n")
    assert current_commit(tmp_path) == f"{head}-dirty"
