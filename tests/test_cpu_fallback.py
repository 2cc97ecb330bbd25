"""``fallback="cpu"``: stages the fabric does not take run on the host inside the daemon, the
client gets the same results (OpenCV's) and is told where each stage ran; without it, refusals
are as before. Daemons here run on a virtual clock with a fixed-rate CPU cost model."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform, resolve_platform_path
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import AdmissionRejected, DaemonError, FrameDropped, connect
from fpgashare.daemon.server import Daemon
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.cpu_fallback import fallback_candidates
from fpgashare.sched.host.cpu_work import CpuCost, CpuExecutor, ModelledCpuCost, chain_shape
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_daemon_virtual import DaemonThread

EDGES = ["rgb2gray", "gauss3x3", "sobel_mag", "threshold"]
GRAY_MODULES = ["gauss3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "median3x3", "sharpen3x3"]


def without_modules(tmp_path: Path, platform: str, drop: set[str]) -> Path:
    """A copy of ``platform``'s manifest without the modules in ``drop`` (a board that lacks them)."""
    text = resolve_platform_path(platform).read_text()
    blocks = re.split(r"(?m)^(?=\[\[module\]\])", text)
    kept = [b for b in blocks if not (b.startswith("[[module]]") and re.search(r'name = "(\w+)"', b)[1] in drop)]
    path = tmp_path / f"{platform}-less.toml"
    path.write_text("".join(kept))
    return path


def run_frames(daemon: Daemon, pipe, frames: list[np.ndarray], period_s: float, t0: float = 0.05) -> list:
    """Submit each frame a period apart on the daemon's virtual clock; each frame's outcome."""
    out = []
    for k, frame in enumerate(frames):
        daemon.run_until(t0 + k * period_s)
        future = pipe.submit(frame)
        pipe.fpga.clock()                      # the submit is in before time moves on
        daemon.run_until(t0 + (k + 1) * period_s)
        try:
            out.append(future.result(timeout=10))
        except Exception as exc:               # an outcome too: the test says which it expects
            out.append(exc)
    return out


def test_a_module_the_board_lacks_runs_on_the_host(tmp_path):
    platform = load_platform(without_modules(tmp_path, "pynq-z2", {"sobel_mag"}))
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock())
    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(6)]
    chain = resolve_chain(EDGES, {})
    with DaemonThread(daemon), connect(sock) as fpga:
        with pytest.raises(AdmissionRejected, match="no sobel_mag"):
            fpga.pipeline("strict", EDGES, period_ms=33.3, frame_shape=(48, 64))
        pipe = fpga.pipeline("edges", EDGES, period_ms=33.3, frame_shape=(48, 64), fallback="cpu")
        # The longest run the board has, from the head: rgb2gray and gauss3x3; the tail on the host.
        assert pipe.placement == [("rgb2gray", "fpga"), ("gauss3x3", "fpga"), ("sobel_mag", "cpu"),
                                  ("threshold", "cpu")]
        outputs = run_frames(daemon, pipe, frames, 0.0333)
        status = fpga.status()["pipelines"]["edges"]
    for frame, out in zip(frames, outputs, strict=True):
        assert isinstance(out, np.ndarray) and np.array_equal(out, chain_reference(chain, frame))
    assert status["placement"] == [list(p) for p in pipe.placement]
    assert status["outcomes"] == {"on_time": len(frames)}


def test_a_head_the_board_lacks_runs_first_on_the_host(tmp_path):
    """rgb2gray missing: the host converts, then the fabric runs the rest (held to the CPU bound)."""
    platform = load_platform(without_modules(tmp_path, "pynq-z2", {"rgb2gray"}))
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock())
    frames = [np.random.default_rng(k).integers(0, 256, (40, 56, 3), dtype=np.uint8) for k in range(5)]
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("edges", EDGES, period_ms=33.3, frame_shape=(40, 56), fallback="cpu")
        assert [w for _, w in pipe.placement] == ["cpu", "fpga", "fpga", "fpga"]
        outputs = run_frames(daemon, pipe, frames, 0.0333)
    chain = resolve_chain(EDGES, {})
    assert all(np.array_equal(out, chain_reference(chain, f)) for f, out in zip(frames, outputs, strict=True))


def test_admission_refusal_moves_stages_to_the_host(tmp_path):
    """A fabric that a first pipeline fills leaves a second only a part (or none) of its chain."""
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("pynq-z2")), sock, clock=VirtualClock())
    frame = np.random.default_rng(3).integers(0, 256, (480, 640), dtype=np.uint8)
    with DaemonThread(daemon), connect(sock) as fpga:
        # 640x480 at 1 pixel per clock is 3.1 ms a stage-pass: nine frames of it a 33 ms period.
        fpga.pipeline("big", ["gauss3x3", "sobel_mag"], period_ms=4.0, frame_shape=(480, 640))
        with pytest.raises(AdmissionRejected):
            fpga.pipeline("more", ["threshold"], period_ms=4.0, frame_shape=(480, 640))
        pipe = fpga.pipeline("more", ["threshold", "erode3x3"], period_ms=20.0, frame_shape=(480, 640),
                             fallback="cpu")
        assert [w for _, w in pipe.placement] == ["cpu", "cpu"]
        [out] = run_frames(daemon, pipe, [frame], 0.02)
    assert np.array_equal(out, chain_reference(resolve_chain(["threshold", "erode3x3"], {}), frame))


def test_without_a_fitting_placement_the_refusal_names_both_reasons(tmp_path):
    sock = tmp_path / "d.sock"
    slow = ModelledCpuCost(s_per_pixel=1e-6)           # a host far too slow for the deadline
    daemon = Daemon(make_backend("model", load_platform("pynq-z2")), sock, clock=VirtualClock(), cpu_cost=slow)
    with DaemonThread(daemon), connect(sock) as fpga:
        with pytest.raises(AdmissionRejected) as refused:
            fpga.pipeline("edges", EDGES, period_ms=1.0, frame_shape=(480, 640), fallback="cpu")
        with pytest.raises(DaemonError, match="fallback"):
            fpga.pipeline("edges", EDGES, period_ms=33.0, frame_shape=(48, 64), fallback="gpu")
    message = str(refused.value)
    assert "not admitted" in message and "host" in message


def test_candidates_go_from_the_whole_chain_to_the_host_alone():
    platform = load_platform("zcu104")
    chain = resolve_chain(EDGES, {})
    got = [spec for spec, _ in fallback_candidates("p", chain, 1 / 30, 1 / 30, (48, 64), platform, {},
                                                   ModelledCpuCost())]
    fabric = [[s.name for s in spec.stages] for spec in got]
    assert fabric[0] == EDGES and fabric[-1] == [] and len(fabric) == 4 * 5 // 2 + 1
    assert [len(f) for f in fabric] == sorted((len(f) for f in fabric), reverse=True)
    for spec in got:                          # every candidate keeps the frame's deadline
        assert spec.due_s == pytest.approx(1 / 30)
        assert [s for s, _ in spec.placement] == EDGES


def test_the_measured_cost_is_a_bound_above_a_run():
    cost = CpuCost(runs=3)
    chain = resolve_chain(["gauss3x3", "sobel_mag"], {})
    seconds = cost.seconds(chain, 120, 160)
    assert seconds >= cost.measure(chain, 120, 160) and seconds == cost.seconds(chain, 120, 160)


def test_threads_compute_the_same_as_inline():
    chain = resolve_chain(EDGES, {})
    frame = np.random.default_rng(0).integers(0, 256, (32, 48, 3), dtype=np.uint8)
    pool = CpuExecutor(workers=2)
    try:
        threaded = pool.run_stages(chain, 0.01, frame).report()
        inline = CpuExecutor().run_stages(chain, 0.01, frame).report()
        assert np.array_equal(threaded[0], inline[0]) and threaded[1] == inline[1] == {}
    finally:
        pool.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_chain_on_any_board_gives_opencvs_output(tmp_path_factory, data):
    """Random gray chains on both boards, each lacking random modules: with the fallback every
    frame ends in exactly one outcome, on time, equal to OpenCV's."""
    tmp_path = tmp_path_factory.mktemp("fb")
    board = data.draw(st.sampled_from(["pynq-z2", "zcu104"]))
    names = data.draw(st.lists(st.sampled_from(GRAY_MODULES), min_size=1, max_size=7, unique=True))
    chain = resolve_chain(names, {})
    lacking = data.draw(st.sets(st.sampled_from(sorted({s.kind.name for s in chain})), max_size=2))
    platform = load_platform(without_modules(tmp_path, board, lacking))
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock())
    frames = [np.random.default_rng(k).integers(0, 256, (24, 32), dtype=np.uint8) for k in range(3)]
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("p", names, period_ms=50.0, frame_shape=(24, 32), fallback="cpu")
        on_fabric = {s for s, w in pipe.placement if w == "fpga"}
        assert not on_fabric & lacking
        outputs = run_frames(daemon, pipe, frames, 0.05)
        outcomes = fpga.status()["pipelines"]["p"]["outcomes"]
    assert outcomes == {"on_time": len(frames)}
    for frame, out in zip(frames, outputs, strict=True):
        assert np.array_equal(out, chain_reference(chain, frame))
    assert chain_shape(chain, 24, 32) == outputs[0].shape[:2]


def test_a_dnn_without_tiles_runs_its_int8_reference_on_the_host(tmp_path):
    """A board without dnn_tile (the PYNQ-Z2 less its tile): with the fallback the daemon reads
    digits on the host, bit for bit the tiles' output; without it the registration is refused."""
    from fpgashare.dnn.planning import network
    from fpgashare.dnn.reference import logits

    sock = tmp_path / "d.sock"
    platform = load_platform(without_modules(tmp_path, "pynq-z2", {"dnn_tile"}))
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock())
    net = network("printed_digits")
    images = np.random.default_rng(5).integers(0, 256, (3, *net.input_shape[:2]), dtype=np.uint8)
    with DaemonThread(daemon), connect(sock) as fpga:
        with pytest.raises(AdmissionRejected, match="dnn_tile"):
            fpga.dnn("strict", "printed_digits")
        pipe = fpga.dnn("digits", "printed_digits", fallback="cpu")
        assert pipe.placement == [("printed_digits", "cpu")]
        futures = [pipe.submit(img) for img in images]
        fpga.clock()
        daemon.run_until(0.1)
        outputs = [f.result(timeout=10) for f in futures]
        assert fpga.status()["pipelines"]["digits"]["placement"] == [["printed_digits", "cpu"]]
    want = logits(net, images[..., None])
    assert all(np.array_equal(out, w) for out, w in zip(outputs, want, strict=True))


def test_closing_drops_frames_still_on_the_host(tmp_path):
    """Nothing is lost: a frame whose CPU part is under way when its pipeline closes ends dropped."""
    platform = load_platform(without_modules(tmp_path, "pynq-z2", {"rgb2gray"}))
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock())
    frame = np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("edges", EDGES, period_ms=33.3, frame_shape=(40, 56), fallback="cpu")
        daemon.run_until(0.01)
        future = pipe.submit(frame)
        fpga.clock()
        daemon.run_until(0.01 + 1e-6)           # its rgb2gray is on the host (bound > 1 us)
        pipe.close()
        daemon.run_until(0.2)
        with pytest.raises(FrameDropped, match="closed"):
            future.result(timeout=10)
        assert daemon.engine.on_cpu == {}


def test_quarantined_slots_send_a_new_pipeline_to_the_host(tmp_path):
    """Every slot of the board quarantined (loads failing): a pipeline registered with the fallback
    runs wholly on the host and gets OpenCV's output; one without it is refused."""
    from fpgashare.sched.core.slots import SlotState

    sock = tmp_path / "d.sock"
    backend = make_backend("faulty", load_platform("pynq-z2"))
    daemon = Daemon(backend, sock, clock=VirtualClock())
    frame = np.random.default_rng(4).integers(0, 256, (48, 64), dtype=np.uint8)
    with DaemonThread(daemon), connect(sock) as fpga:
        backend.arm("load_raises", 4)                  # two failed loads quarantine a slot
        first = fpga.pipeline("first", ["threshold", "erode3x3"], period_ms=20.0, frame_shape=(48, 64))
        futures = []
        for k in range(3):
            daemon.run_until(0.02 * k)
            futures.append(first.submit(frame))
            fpga.clock()
        daemon.run_until(0.1)
        for future in futures:                         # each ends, in one outcome: no slot to run on
            with pytest.raises(FrameDropped):
                future.result(timeout=10)
        assert [s.state for s in daemon.engine.slots.slots] == [SlotState.FAILED] * 2
        with pytest.raises(AdmissionRejected):
            fpga.pipeline("strict", ["gauss3x3"], period_ms=20.0, frame_shape=(48, 64))
        pipe = fpga.pipeline("soft", ["gauss3x3", "sobel_mag"], period_ms=20.0, frame_shape=(48, 64),
                             fallback="cpu")
        assert [w for _, w in pipe.placement] == ["cpu", "cpu"]
        [out] = run_frames(daemon, pipe, [frame], 0.02, t0=0.2)
    assert np.array_equal(out, chain_reference(resolve_chain(["gauss3x3", "sobel_mag"], {}), frame))


def test_latency_counts_from_the_apps_frame_not_the_fabrics_release(tmp_path):
    """A CPU head runs first: the reported latency includes it (and its bound holds the fabric)."""
    platform = load_platform(without_modules(tmp_path, "pynq-z2", {"rgb2gray"}))
    sock = tmp_path / "d.sock"
    cost = ModelledCpuCost()
    daemon = Daemon(make_backend("model", platform), sock, clock=VirtualClock(), cpu_cost=cost)
    frame = np.zeros((40, 56, 3), np.uint8)
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("edges", EDGES, period_ms=33.3, frame_shape=(40, 56), fallback="cpu")
        run_frames(daemon, pipe, [frame], 0.0333)
        [latency] = daemon.stats.per_pipeline["edges"]["latencies_ms"]
    head = cost.seconds(resolve_chain(["rgb2gray"], {}), 40, 56)
    assert latency > head * 1e3                 # the host's bound, then the fabric's passes
