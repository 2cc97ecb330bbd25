"""yowasp's Yosys is compiled at its first run and cached without a lock, so a process's first Yosys
run first asks Yosys its version under a lock in the build cache (hdl_sim/yosys_run.py): runs
starting on an empty cache wait for one compile, not for each other's designs. Later runs take no
lock."""

from __future__ import annotations

import fcntl
import subprocess
import threading

from fpgashare.hdl_sim import yosys_run


def _lock_is_held(cache) -> bool:
    with open(cache / "yosys-first-run" / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_only_the_first_runs_compile_step_holds_the_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("FPGASHARE_CACHE", str(tmp_path))
    monkeypatch.setattr(yosys_run, "_WARM", threading.Event())
    held = []

    def fake_run(cmd, cwd, capture_output, text):
        held.append((cmd[1], _lock_is_held(tmp_path)))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(yosys_run.subprocess, "run", fake_run)
    for _ in range(3):
        assert yosys_run.run_yosys(["yosys", "-q", "x.ys"], tmp_path).returncode == 0
    assert held == [("-V", True), ("-q", False), ("-q", False), ("-q", False)]


def test_a_failed_first_run_still_releases_the_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("FPGASHARE_CACHE", str(tmp_path))
    monkeypatch.setattr(yosys_run, "_WARM", threading.Event())
    monkeypatch.setattr(yosys_run.subprocess, "run",
                        lambda cmd, cwd, capture_output, text: subprocess.CompletedProcess(cmd, 1, "", "error"))
    assert yosys_run.run_yosys(["yosys", "x.ys"], tmp_path).returncode == 1
    assert not _lock_is_held(tmp_path)
