"""Workload files: the shipped suites load; every mistake is named by file, pipeline and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpgashare.catalogue.workload import load_workload
from fpgashare.errors import WorkloadError

SUITES = sorted((Path(__file__).resolve().parent.parent / "benchmarks" / "workloads").glob("*.toml"))

GOOD = '''platform = "zcu104"
seed = 1
duration_s = 1.0
[[pipeline]]
name = "edges"
class = "realtime"
period_ms = 16.7
frame = [720, 1280]
stages = ["gauss3x3", "sobel_mag"]
'''


def test_suites_load():
    assert len(SUITES) >= 6
    for path in SUITES:
        workload = load_workload(path)
        assert workload.pipelines and workload.duration_s > 0


def test_a_good_workload(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text(GOOD)
    w = load_workload(path)
    p = w.pipelines[0]
    assert p.modules == ("conv3x3", "sobel_mag") and p.deadline_s == pytest.approx(0.0167)
    assert 0 < p.exec_s < p.period_s
    assert [q.name for q in w.with_copies("edges", 3).pipelines] == ["edges#1", "edges#2", "edges#3"]
    second = GOOD[GOOD.index("[[pipeline]]"):].replace('"edges"', '"small"')
    two = load_workload(_write(tmp_path, GOOD.replace("seed = 1", 'seed = 1\nsweep = "edges"') + second))
    assert two.sweep == "edges"
    # Copies register after the pipelines already there (admission never evicts an earlier one).
    assert [q.name for q in two.with_copies("edges", 3).pipelines] == ["edges#1", "small", "edges#2", "edges#3"]


def _write(tmp_path, text: str) -> Path:
    path = tmp_path / "w2.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("change,message", [
    (("seed = 1", "seed = 1\ncolour = 3"), "unknown key colour"),
    (('class = "realtime"', 'class = "sometimes"'), "pipeline 'edges'.class must be one of"),
    (('stages = ["gauss3x3", "sobel_mag"]', 'stages = ["gauss3x3", "blur9"]'),
     r"pipeline 'edges'\.stages: unknown module"),
    (("frame = [720, 1280]", "frame = [720]"), "pipeline 'edges'.frame must be"),
    (("frame = [720, 1280]", "frame = [4000, 1280]"), "outside"),
    (("period_ms = 16.7", "period_ms = 1.0"), "more than its 1.00 ms deadline"),
    (("period_ms = 16.7", "period_ms = -3"), "period_ms must be > 0"),
    (('platform = "zcu104"', 'platform = "nowhere.toml"'), "platform"),
    (('stages = ["gauss3x3", "sobel_mag"]', 'stages = ["a", "b", "c", "d", "e"]'), "unknown module"),
    (("seed = 1", 'seed = 1\nsweep = "edgy"'), "sweep: 'edgy' is not a real-time pipeline"),
])
def test_mistakes_are_named(tmp_path, change, message):
    path = tmp_path / "w.toml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(WorkloadError, match=message) as err:
        load_workload(path)
    assert str(path) in str(err.value)


def test_besteffort_needs_a_known_model(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text(GOOD + '[[pipeline]]\nname = "dnn"\nclass = "besteffort"\nmodel = "resnet"\n')
    with pytest.raises(WorkloadError, match=r"pipeline 'dnn'\.model: unknown model 'resnet'"):
        load_workload(path)
