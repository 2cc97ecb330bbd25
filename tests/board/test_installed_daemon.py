"""The installed package on the board path, as a PYNQ owner runs it (board venv: the real pynq 4.0,
numpy 1.x): ``fpgashare board package`` writes the /etc/fpgashare folder (relocatable stand-ins),
``fpgashare daemon --board pynq`` runs as a process of its own against a stand-in FPGA manager and
firmware folder in a temporary directory, and a client registers a pipeline whose module is
loaded through the manager's sysfs files and reads ``status``. There is no shell overlay here
(Vivado's output), so a frame submitted ends ``error`` with that reason, and the daemon carries on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pynq_device = pytest.importorskip("pynq.pl_server.embedded_device", reason="needs the board extra (pynq)")
pytestmark = pytest.mark.board

CLI = Path(sys.executable).parent / "fpgashare"


def _wait_for(predicate, what: str, limit_s: float = 60.0):
    """Poll for a process's readiness; the limit only bounds a hung daemon, it times nothing."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_installed_daemon_loads_through_the_fpga_manager(board_dirs, tmp_path):
    from fpgashare.client import FrameFailed, connect

    _, firmware, manager = board_dirs
    assert CLI.is_file(), f"no fpgashare script beside {sys.executable}"
    import fpgashare

    assert "site-packages" in fpgashare.__file__, f"fpgashare imported from {fpgashare.__file__}, not the install"
    etc = tmp_path / "etc"
    packaged = subprocess.run([str(CLI), "board", "package", "--platform", "pynq-z2", "--out", str(etc),
                               "--relocatable", "--json"], capture_output=True, text=True, check=True)
    from fpgashare.catalogue.platform import load_platform

    modules = load_platform("pynq-z2").modules
    assert json.loads(packaged.stdout)["partials"] == len(modules)        # one file per module
    sock = tmp_path / "fpgashare.sock"
    log = tmp_path / "daemon.log"
    with log.open("w") as out:
        daemon = subprocess.Popen(
            [str(CLI), "daemon", "--board", "pynq", "--platform", str(etc / "platform.toml"),
             "--bitstreams", str(etc / "bitstreams"), "--firmware-dir", str(firmware),
             "--fpga-manager", str(manager), "--socket", str(sock)],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _wait_for(lambda: sock.exists() or daemon.poll() is not None, "the daemon's socket")
        assert daemon.poll() is None, log.read_text()
        staged = sorted(p.name for p in firmware.glob("*.bin"))
        assert len(staged) == sum(len(m.slots) for m in modules.values())   # each file into its slots
        with connect(sock) as fpga:
            pipe = fpga.pipeline("mask", ["threshold"], period_ms=50.0, frame_shape=(48, 64))

            def loaded():
                status = fpga.status()
                return status if status["port"]["loads"] >= 1 and any(
                    s["module"] == "threshold" for s in status["slots"]) else None

            status = _wait_for(loaded, "the pipeline's module to be loaded")
            slot = next(s["slot"] for s in status["slots"] if s["module"] == "threshold")
            assert (manager / "flags").read_text() == "1"
            # The manager's firmware file names the last partial loaded; the port may be loading
            # another slot meanwhile (the stand-in file is empty mid-write), so wait for a name.
            named = _wait_for(lambda: (manager / "firmware").read_text() or None, "a firmware name")
            assert named.startswith("fpgashare_") and (firmware / named).is_file(), named
            bin_data = (firmware / f"fpgashare_{slot}_threshold.bin").read_bytes()
            assert len(bin_data) % 4 == 0 and bin_data[48:52] == bytes.fromhex("665599aa")   # sync, byte-swapped
            assert "mask" in status["pipelines"]
            frame = np.zeros((48, 64), np.uint8)
            with pytest.raises(FrameFailed, match="overlay"):
                pipe.submit(frame).result(timeout=30)
            assert fpga.status()["outcomes"].get("error", 0) == 1
    finally:
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=30)
    assert code == 0, log.read_text()
    assert not sock.exists()
