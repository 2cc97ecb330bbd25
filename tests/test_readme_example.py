"""The README's first app works as printed: its exact snippet runs, in a process of its own as an app
would, against a daemon on the model backend, and every frame it read comes back once, equal to
OpenCV's result for the chain it registered."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.host.host_cost import HostCost

README = Path(__file__).resolve().parent.parent / "README.md"
#: Idle time runs this many times slower than board time, so the app's pacing and the daemon's
#: bookkeeping have room on a loaded host (outcomes are checked, not timings).
DILATION = 10.0
#: After the snippet: hand the test what it produced.
REPORT = "\nimport pickle\npickle.dump({'outputs': outputs, 'placement': edges.placement}, open('report.pkl', 'wb'))\n"


def readme_app() -> str:
    """The python block of the README's "A first app" section."""
    body = re.search(r"^## A first app\n(.*?)(?=^## )", README.read_text(), re.MULTILINE | re.DOTALL)
    assert body, "README has no '## A first app' section"
    blocks = re.findall(r"^```python\n(.*?)^```", body.group(1), re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, "the first app is one python block"
    return blocks[0]


def write_video(path: Path, frames: int, seed: int) -> list[np.ndarray]:
    """A short 640x480 video of moving shapes; returns the RGB frames as a reader decodes them."""
    rng = np.random.default_rng(seed)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30, (640, 480))
    for k in range(frames):
        image = np.full((480, 640, 3), rng.integers(0, 80), np.uint8)
        for _ in range(3):
            centre = (int(rng.integers(60, 580)) + 10 * k, int(rng.integers(60, 420)))
            colour = tuple(int(c) for c in rng.integers(0, 256, 3))
            cv2.circle(image, centre, int(rng.integers(20, 60)), colour, -1)
        writer.write(image)
    writer.release()
    capture = cv2.VideoCapture(str(path))
    decoded = []
    while (bgr := capture.read()[1]) is not None:
        decoded.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    capture.release()
    assert len(decoded) == frames
    return decoded


def test_the_readme_app_runs_against_a_daemon(tmp_path: Path, fresh_seed: int) -> None:
    frames = write_video(tmp_path / "in.mp4", frames=4, seed=fresh_seed)
    sock = tmp_path / "fpga.sock"
    # The host taken as free: the snippet's pipeline must be admitted however busy this machine is
    # (a cost measured at start under other load could refuse it; the host's own checks:
    # tests/test_host_cost.py).
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=DILATION, host_cost=HostCost())
    env = dict(os.environ, FPGASHARE_SOCKET=str(sock))
    with DaemonThread(daemon):
        done = subprocess.run([sys.executable, "-c", readme_app() + REPORT], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (fresh_seed, done.stderr[-3000:])
    assert "stages run on:" in done.stdout, fresh_seed
    report = pickle.loads((tmp_path / "report.pkl").read_bytes())
    outputs, placement = report["outputs"], report["placement"]
    assert len(outputs) == len(frames), fresh_seed         # every frame read ended in one outcome
    assert [stage for stage, _ in placement] == ["rgb2gray", "gauss3x3", "sobel_mag", "threshold"]
    assert all(where == "fpga" for _, where in placement)  # the ZCU104 takes the whole chain
    stages = resolve_chain([stage for stage, _ in placement], {})
    returned = [(out, rgb) for out, rgb in zip(outputs, frames, strict=True) if out is not None]
    assert returned, f"seed {fresh_seed}: no frame came back"
    for out, rgb in returned:
        assert np.array_equal(out, chain_reference(stages, rgb)), fresh_seed
    counted = sum(daemon.outcomes[k] for k in ("on_time", "late", "dropped", "error"))
    assert counted == len(frames), (fresh_seed, daemon.outcomes)
