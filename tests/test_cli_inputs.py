"""Every bad command-line input is an ``error: ...`` naming it and exit 2, never a traceback:
binary and folder inputs, out-of-range seeds, unbounded durations and frame counts, output files
into missing folders, bad daemon quotas."""

from __future__ import annotations

import pytest
from fpgashare.cli import main

PIPELINE = ('[[pipeline]]\nname = "a"\nclass = "realtime"\nstages = ["threshold"]\n'
            'period_ms = {period}\nframe = [60, 80]\n')


def workload(tmp_path, seed="1", duration="1.0", period="10"):
    path = tmp_path / "w.toml"
    path.write_text(f'platform = "zcu104"\nseed = {seed}\nduration_s = {duration}\n' + PIPELINE.format(period=period))
    return str(path)


@pytest.mark.parametrize("argv,says", [
    (lambda t: ["bench", str(t / "bin.toml")], "not a workload file: byte 0xff at offset 0 is not UTF-8"),
    (lambda t: ["bench", str(t)], "is a folder, not a workload file"),
    (lambda t: ["bench", workload(t, seed="-1")], "seed must be in 0..4294967295, not -1"),
    (lambda t: ["bench", workload(t, duration="inf")], "duration_s must be finite and at most 3600 s, not inf"),
    (lambda t: ["bench", workload(t, duration="1e9")], "duration_s must be finite and at most 3600 s"),
    (lambda t: ["bench", workload(t, duration="3000", period="0.001")], "at most 1000000 per run"),
    (lambda t: ["bench", workload(t), "--trace", str(t / "missing" / "t.json")], "the folder"),
    (lambda t: ["bench", workload(t), "--gantt", str(t / "missing" / "g.png")], "does not exist"),
    (lambda t: ["demo", "--frames", "100000000"], "--frames must be at most 10000"),
    (lambda t: ["daemon", "--platform", str(t / "bin.toml")], "not a platform manifest"),
    (lambda t: ["daemon", "--board", "model", "--limit", "clients=x"], "'x' is not a number"),
    (lambda t: ["daemon", "--board", "model", "--limit", "nope=1"], "expected NAME=VALUE"),
    (lambda t: ["daemon", "--board", "model", "--dilation", "inf"], "--dilation must be a finite number > 0"),
    (lambda t: ["status", "--socket", str(t / "missing" / "x.sock")], "cannot reach the fpgashare daemon"),
])
def test_bad_inputs_are_named_errors(tmp_path, capsys, argv, says):
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00binary")
    assert main(argv(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and "Traceback" not in err
