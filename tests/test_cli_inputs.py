"""Every bad command-line input is an ``error: ...`` naming it and exit 2, never a traceback:
binary and folder inputs, out-of-range seeds, unbounded durations and frame counts, output files
into missing folders, bad daemon quotas."""

from __future__ import annotations

import pytest
from fpgashare.cli.main import main

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
    (lambda t: ["bench", workload(t), "--gantt", str(t / "g.txt")], "--gantt takes a .png file name"),
    (lambda t: ["bench", workload(t), "--trace", str(t / "trace")], "--trace takes a .json file name"),
    (lambda t: ["demo", "--frames", "100000000"], "--frames must be at most 10000"),
    (lambda t: ["daemon", "--platform", str(t / "bin.toml")], "not a platform manifest"),
    (lambda t: ["daemon", "--platform", "zcu105"], "no platform named 'zcu105'; shipped: pynq-z2, zcu104"),
    (lambda t: ["bench", "nh_720p60"], "no suite named 'nh_720p60'; shipped: "),
    (lambda t: ["daemon", "--board", "model", "--limit", "clients=x"], "'x' is not a whole number"),
    (lambda t: ["daemon", "--board", "model", "--limit", "nope=1"], "expected NAME=VALUE"),
    (lambda t: ["daemon", "--board", "model", "--limit", "clients=1e3"], "'1e3' is not a whole number"),
    (lambda t: ["daemon", "--board", "model", "--limit", "fabric_share_per_user=50"], "a share of 0..1, not 50"),
    (lambda t: ["daemon", "--board", "model", "--dilation", "inf"], "--dilation must be a finite number > 0"),
    (lambda t: ["status", "--socket", str(t / "missing" / "x.sock")], "cannot reach the fpgashare daemon"),
])
def test_bad_inputs_are_named_errors(tmp_path, capsys, argv, says):
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00binary")
    assert main(argv(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and "Traceback" not in err


@pytest.mark.parametrize("argv,says", [
    (["daemon", "--metrics-port", "70000"], "argument --metrics-port: a port is 1..65535, not 70000"),
    (["daemon", "--metrics-port", "0"], "a port is 1..65535, not 0"),
    (["daemon", "--streams", "0"], "argument --streams: must be at least 1, not 0"),
    (["rtl", "synth", "--jobs", "0"], "argument --jobs: must be at least 1, not 0"),
    (["fleet", "bench", "x", "--max-copies", "-1"], "argument --max-copies: must be at least 1, not -1"),
    (["fleet", "bench", "x", "--dnn-seconds", "nan"], "must be a finite number above 0, not nan"),
    (["fleet", "bench", "x", "--dilation", "inf"], "must be a finite number above 0, not inf"),
    (["fleet", "up", "--boards", "0"], "argument --boards: must be at least 1, not 0"),
])
def test_bad_values_are_refused_by_the_parser(capsys, argv, says):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_the_daemon_does_not_replace_a_file_that_is_not_a_socket(tmp_path, capsys):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    assert main(["daemon", "--board", "model", "--socket", str(victim)]) == 2
    assert "exists and is not a socket; refusing to replace it" in capsys.readouterr().err
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("text,says", [("1.2.3.4:99999", "a port is 1..65535"), ("nohost", "expected HOST:PORT"),
                                       ("bad host!:80", "not an IP address or a host name"), (":80", "HOST:PORT")])
def test_listen_addresses_are_checked(text, says):
    import argparse

    from fpgashare.cli.inputs import host_port

    with pytest.raises(argparse.ArgumentTypeError, match=says):
        host_port(text)
    assert host_port("[::1]:7411") == ("::1", 7411) and host_port("board-1.lan:80") == ("board-1.lan", 80)


def test_fleet_status_at_a_dead_address_fails_fast(capsys):
    """Nothing listens at port 1: refused by a TCP probe at once (Ray alone retries for minutes)."""
    pytest.importorskip("ray")
    assert main(["fleet", "status", "--address", "127.0.0.1:1"]) == 2
    assert "no Ray head answers at 127.0.0.1:1" in capsys.readouterr().err
