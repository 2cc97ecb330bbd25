"""``bench`` and the daemon agree: a workload replayed as the daemon sees it
(runtime/sched/board/daemon_replay.py) and the same workload sent through the daemon's socket by
clients, on a virtual clock, admit the same pipelines and end every frame the same way."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.catalogue.workload import load_workload
from fpgashare.client import AdmissionRejected, connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.board.daemon_replay import replay
from fpgashare.sched.core.clock import VirtualClock

WORKLOAD = """
platform = "zcu104"
seed = 3
duration_s = 0.25

[[pipeline]]
name = "edges"
class = "realtime"
period_ms = 20.0
frame = [240, 320]
stages = ["gauss3x3", "sobel_mag", "threshold"]
jitter_ms = 1.5

[[pipeline]]
name = "small"
class = "realtime"
period_ms = 10.0
frame = [120, 160]
stages = ["box3x3"]
offset_ms = 12.5

[[pipeline]]
name = "big"
class = "realtime"
period_ms = 14.0
deadline_ms = 12.0
frame = [1080, 1920]
stages = ["sharpen3x3", "erode3x3"]
offset_ms = 30.0
"""


def _through_the_socket(workload, sock) -> tuple[set[str], dict[str, dict[str, int]]]:
    """The workload's apps as clients of a daemon on a virtual clock: each registers at its first
    release, once the previous registration returned, and sends frame k at its release from then."""
    daemon = Daemon(make_backend("model", workload.platform, streams=4), sock, clock=VirtualClock(), streams=4)
    admitted, futures, outcomes = set(), {}, {}
    realtime = [p for p in workload.pipelines if p.realtime]
    with DaemonThread(daemon), connect(sock) as fpga:
        events: list = []
        for i, p in enumerate(realtime):
            heapq.heappush(events, (p.offset_s, 0, i, -1))
        pipes = {}
        while events:
            t, kind, i, k = heapq.heappop(events)
            p = realtime[i]
            daemon.run_until(max(t, daemon.clock.now()))
            if kind == 0:
                try:
                    pipes[p.name] = fpga.pipeline(p.name, [s.name for s in p.stages], p.period_s * 1e3,
                                                  p.frame, deadline_ms=p.deadline_s * 1e3,
                                                  jitter_ms=p.jitter_s * 1e3)
                except AdmissionRejected:
                    continue
                admitted.add(p.name)
                now, k = daemon.clock.now(), 0
                while (r := p.release_s(k, workload.seed)) < workload.duration_s:
                    if r >= now:
                        heapq.heappush(events, (r, 1, i, k))
                    k += 1
                continue
            mine = futures.setdefault(p.name, [])
            while len(mine) >= 3:               # its deadline has passed in board time: it has ended
                _settle(outcomes, p.name, mine.pop(0))
            pixels = np.zeros(p.stages[0].kind.input_shape(*p.frame), np.uint8)
            mine.append(pipes[p.name].submit(pixels))
            fpga.clock()                        # the submit is taken before time moves on
        daemon.run_until(workload.duration_s + 1.0)
        for name, fs in futures.items():
            for f in fs:
                _settle(outcomes, name, f)
    return admitted, outcomes


def _settle(outcomes: dict, name: str, future) -> None:
    try:
        future.result(timeout=10)
        kind = "on_time"
    except Exception as exc:                    # late, dropped: the client's typed errors
        kind = type(exc).__name__
    outcomes.setdefault(name, {}).setdefault(kind, 0)
    outcomes[name][kind] += 1


@pytest.mark.parametrize("seed", [3, 11])
def test_bench_and_the_daemon_admit_the_same_and_end_frames_the_same(tmp_path, seed):
    path = tmp_path / "w.toml"
    path.write_text(WORKLOAD.replace("seed = 3", f"seed = {seed}"))
    workload = load_workload(str(path))
    _, result = replay(workload, make_backend("model", workload.platform, streams=4), 4)
    admitted, outcomes = _through_the_socket(workload, tmp_path / "d.sock")
    assert admitted == set(result["admitted"])
    assert admitted, "nothing admitted: the comparison would be empty"
    for name in admitted:
        mine = result["pipelines"][name]
        assert outcomes[name].get("on_time", 0) == mine["on_time"] == mine["submitted"], (name, outcomes, mine)
        assert sum(outcomes[name].values()) == mine["submitted"]
