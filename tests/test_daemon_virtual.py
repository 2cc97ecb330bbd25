"""The daemon's outcomes on a virtual clock: time moves only when the test says, so outcomes and
latencies are exact and the same on every run, however loaded the host is (the wall-clock smoke
tests stay in tests/test_daemon.py)."""

from __future__ import annotations

import numpy as np
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import FrameDropped, connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.core.clock import VirtualClock

SHAPE = (60, 80)
CHAINS = {"a": ["gauss3x3", "threshold"], "b": ["sobel_mag"]}


def scenario(sock) -> tuple[dict, dict]:
    """Two clients, one pipeline each, 20 frames each released together every 10 ms (after a
    warm-up frame each)."""
    frame = np.random.default_rng(4).integers(0, 256, SHAPE, dtype=np.uint8)
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    latencies: dict[str, list[float]] = {"a": [], "b": []}
    with DaemonThread(daemon), connect(sock) as a, connect(sock) as b:
        pipes = {"a": a.pipeline("a", CHAINS["a"], period_ms=10.0, frame_shape=SHAPE),
                 "b": b.pipeline("b", CHAINS["b"], period_ms=10.0, frame_shape=SHAPE)}
        # Warm-up: cold slots (four loads) at the first frames; the policy may drop one.
        warm = {name: pipe.submit(frame) for name, pipe in pipes.items()}
        a.clock()
        b.clock()
        daemon.run_until(0.050)
        warm_up = [_outcome(future) for future in warm.values()]
        for k in range(5, 25):
            daemon.run_until(k * 0.010)
            futures = {name: pipe.submit(frame) for name, pipe in pipes.items()}
            a.clock()
            b.clock()                        # each connection's requests are taken in order: both frames are in
            daemon.run_until(k * 0.010 + 0.009)
            for name, future in futures.items():
                assert np.array_equal(future.result(timeout=10), chain_reference(resolve_chain(CHAINS[name], {}),
                                                                                   frame))
        for name in pipes:
            latencies[name] = list(daemon.per_pipeline[name]["latencies_ms"])
        return dict(daemon.outcomes), latencies, warm_up


def _outcome(future) -> str:
    try:
        future.result(timeout=10)
        return "result"
    except FrameDropped as exc:
        return exc.reason


def test_outcomes_and_latencies_are_exact_and_repeatable(tmp_path):
    first = scenario(tmp_path / "one.sock")
    outcomes, latencies, warm_up = first
    results = warm_up.count("result")
    assert outcomes["on_time"] == 40 + results and outcomes["dropped"] == 2 - results
    assert outcomes["late"] == outcomes["error"] == 0
    assert scenario(tmp_path / "two.sock") == first        # the same to the last bit on a second run
    # Once loaded, each pipeline's frames take the same time, frame after frame.
    for name in ("a", "b"):
        assert len({round(ms, 9) for ms in latencies[name][-20:]}) == 1     # to the picosecond


def test_a_frame_comes_back_with_the_registers_its_modules_left(tmp_path):
    """template_match leaves where the template matched best in registers; the client gets them
    with the frame (``FrameFuture.results``), equal to cv2.matchTemplate + minMaxLoc's place."""
    import cv2
    from fpgashare.catalogue.modules import template_registers
    from fpgashare.catalogue.vision_ref import template_best

    rng = np.random.default_rng(9)
    sock = tmp_path / "r.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    gray = cv2.GaussianBlur(rng.integers(0, 256, SHAPE, dtype=np.uint8), (5, 5), 0)
    template = gray[20:27, 41:48].copy()
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("find", ["template_match"], period_ms=10.0, frame_shape=SHAPE,
                             params={"template_match": template_registers(template)})
        for k in range(3):
            daemon.run_until(k * 0.010)
            future = pipe.submit(gray)
            fpga.clock()
            daemon.run_until(k * 0.010 + 0.009)
            assert np.array_equal(future.result(timeout=10), gray)          # the pixels pass through
            assert future.results == {"template_match": template_best(gray, template)}
        _, _, where, _ = cv2.minMaxLoc(cv2.matchTemplate(gray, template, cv2.TM_SQDIFF))
        assert (future.results["template_match"]["BEST_X"], future.results["template_match"]["BEST_Y"]) == where


def test_a_daemon_thread_closes_its_loop_when_it_ends(tmp_path):
    """Its loop is closed when the block ends, not left to the garbage collector, which would
    close it whenever it runs, in some later test, after its selector may be gone."""
    runner = DaemonThread(Daemon(make_backend("model", load_platform("zcu104")), tmp_path / "d.sock",
                                 clock=VirtualClock()))
    with runner, connect(tmp_path / "d.sock") as fpga:
        assert fpga.status() is not None and not runner.loop.is_closed()
    assert runner.loop.is_closed() and not runner.thread.is_alive()
