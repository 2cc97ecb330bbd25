"""Chains longer than the fabric run in passes through memory (runtime/catalogue/passes.py): each pass's
output goes back in as the next pass's input, end to end equal to OpenCV, every frame one outcome,
and admission names the pass that cannot fit."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.passes import fits, split_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.catalogue.workload import Workload, realtime_spec
from fpgashare.client import connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import VISION

EDGES = ["rgb2gray", "gauss3x3", "sobel_mag", "threshold"]


def run_checked(workload: Workload, backend: str = "model", scheduler=EdfPolicy):
    """Run with outputs kept; every frame of an admitted pipeline equals OpenCV's on its input."""
    admission = admit(workload)
    kept = {p.name for p in admission.admitted}
    admitted = replace(workload, pipelines=tuple(p for p in workload.pipelines if p.name in kept))
    engine, summary = run_workload(admitted, make_backend(backend, workload.platform), scheduler(),
                                   contract=admission.contract, want_output=True)
    for frame in engine.frames:
        assert frame.outcome is not None, frame.key                       # exactly one outcome each
        if frame.outcome == "on_time":
            pixels = engine.source.pixels[frame.pipeline.name]
            assert np.array_equal(frame.output, chain_reference(frame.pipeline.stages, pixels)), frame.key
    return admission, engine, summary


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["pynq-z2", "zcu104"]), st.integers(0, 10**9))
def test_random_chains_of_one_to_eight_stages_give_opencvs_output(platform_name, seed):
    rng = random.Random(seed)
    platform = load_platform(platform_name)
    pipelines = []
    for i in range(rng.randint(1, 2)):
        chain = rng.sample(VISION, rng.randint(1, 8))
        if rng.random() < 0.3:
            chain = ["rgb2gray", *chain[:7]]
        spec = realtime_spec(f"p{i}", chain, 0.02, 0.02, [rng.choice([18, 24, 40]), rng.choice([20, 32, 48])],
                             platform, jitter_s=rng.uniform(0, 1e-3))
        pipelines.append(replace(spec, offset_s=rng.uniform(0, 0.02)))
    workload = Workload(Path("passes.toml"), platform, seed, 0.2, tuple(pipelines))
    admission, _, summary = run_checked(workload)
    assert admission.admitted, admission.rejected        # small frames: at least the first fits
    for name in (p.name for p in admission.admitted):
        assert summary["pipelines"][name]["on_time"] == summary["pipelines"][name]["submitted"], summary


def test_a_chain_longer_than_the_slots_is_split_into_the_fewest_passes():
    z2, zcu = load_platform("pynq-z2"), load_platform("zcu104")
    stages = resolve_chain(EDGES, {})
    assert split_chain(stages, 480, 640, z2) == (2, 2)
    assert split_chain(stages, 480, 640, zcu) == (4,)
    eight = resolve_chain(["gauss3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "median3x3",
                           "box3x3", "fast9"], {})
    counts = split_chain(eight, 120, 160, z2)
    assert sum(counts) == 8 and len(counts) == 4
    k = 0
    for count in counts:
        assert fits([s.kind.name for s in eight[k:k + count]], z2)
        k += count


def test_the_edge_detector_runs_in_two_passes_on_the_pynq_z2_rtl_bit_exact():
    """RGB 4-stage edge detector on the two-slot board, each pass through the simulated RTL."""
    platform = load_platform("pynq-z2")
    spec = realtime_spec("edges", EDGES, 1 / 30, 1 / 30, [48, 64], platform)
    assert spec.passes == (2, 2)
    workload = Workload(Path("edges.toml"), platform, 5, 0.2, (spec,))
    _, engine, summary = run_checked(workload, backend="sim")
    assert summary["pipelines"]["edges"]["on_time"] == summary["pipelines"]["edges"]["submitted"] == 6
    assert all(len(f.streamed) == 2 for f in engine.frames)


def test_a_chain_whose_passes_cannot_meet_the_deadline_is_refused_naming_the_pass():
    platform = load_platform("pynq-z2")
    spec = realtime_spec("big", EDGES, 0.040, 0.012, [1080, 1920], platform)
    verdict = analyse([spec], platform)
    assert not verdict.ok
    assert "2 passes" in verdict.reason and "pass 1 (rgb2gray, gauss3x3)" in verdict.reason
    assert "12.00 ms deadline" in verdict.reason


def test_the_daemon_serves_a_chain_in_passes(tmp_path):
    """A client registers the 4-stage chain on a PYNQ-Z2 daemon (virtual clock) and gets OpenCV's output."""
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("pynq-z2")), sock, clock=VirtualClock())
    frame = np.random.default_rng(2).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    want = chain_reference(resolve_chain(EDGES, {}), frame)
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("edges", EDGES, period_ms=33.3, frame_shape=(48, 64))
        for k in range(10):
            daemon.run_until(0.05 + k * 0.0333)
            future = pipe.submit(frame)
            fpga.clock()
            daemon.run_until(0.05 + k * 0.0333 + 0.033)
            assert np.array_equal(future.result(timeout=10), want)


@pytest.mark.parametrize("scheduler", ["rr-bundle", "fcfs"])
def test_baselines_run_passes_too(scheduler):
    from fpgashare.sched.policies.registry import make_policy

    platform = load_platform("pynq-z2")
    spec = realtime_spec("edges", EDGES, 1 / 30, 1 / 30, [120, 160], platform)
    workload = Workload(Path("edges.toml"), platform, 1, 0.5, (spec,))
    engine, summary = run_workload(workload, make_backend("model", platform), make_policy(scheduler), want_output=True)
    pixels = engine.source.pixels["edges"]
    assert summary["pipelines"]["edges"]["on_time"] == summary["pipelines"]["edges"]["submitted"] > 10
    assert all(np.array_equal(f.output, chain_reference(spec.stages, pixels)) for f in engine.frames)


def test_the_twin_agrees_with_the_rtl_on_passes():
    """Same workload, model and sim backends: same outcomes and outputs, each pass's stream time
    within 2% (the cycle model is the twin's; the RTL's cycles are the board's)."""
    platform = load_platform("pynq-z2")
    spec = realtime_spec("edges", EDGES, 1 / 30, 1 / 30, [40, 56], platform)
    workload = Workload(Path("edges.toml"), platform, 9, 0.1, (spec,))
    runs = {b: run_checked(workload, backend=b)[1] for b in ("model", "sim")}
    model, sim = runs["model"].frames, runs["sim"].frames
    assert [f.outcome for f in model] == [f.outcome for f in sim] == ["on_time"] * len(model)
    for a, b in zip(model, sim, strict=True):
        assert np.array_equal(a.output, b.output)
        for (s0, e0), (s1, e1) in zip(a.streamed, b.streamed, strict=True):
            assert abs((e0 - s0) - (e1 - s1)) <= 0.02 * (e1 - s1), (a.key, a.streamed, b.streamed)


def test_ddr_traffic_counts_every_pass_and_admission_keeps_to_the_budget(tmp_path):
    """Each pass reads its input and writes its output: two passes move twice a one-pass chain's
    intermediate traffic; a set whose traffic exceeds the fabric's share of platform.ddr_bytes_per_s is
    refused, naming it."""
    from fpgashare.catalogue.platform import resolve_platform_path
    from fpgashare.sched.analysis.schedulability import analyse

    zcu, z2 = load_platform("zcu104"), load_platform("pynq-z2")
    one = realtime_spec("e", EDGES, 1 / 30, 1 / 30, [480, 640], zcu)
    two = realtime_spec("e", EDGES, 1 / 30, 1 / 30, [480, 640], z2)
    assert len(one.pass_stages) == 1 and len(two.pass_stages) == 2
    assert one.ddr_bytes_per_frame == 480 * 640 * 3 + 480 * 640
    assert two.ddr_bytes_per_frame == one.ddr_bytes_per_frame + 2 * 480 * 640
    text = resolve_platform_path("pynq-z2").read_text()
    small = tmp_path / "small.toml"
    small.write_text(text.replace("ddr_bytes_per_s = 2_100_000_000", "ddr_bytes_per_s = 100_000_000"))
    tight = load_platform(small)
    spec = realtime_spec("e", EDGES, 1 / 30, 1 / 30, [480, 640], tight)
    assert analyse([spec], z2).ok
    verdict = analyse([spec], tight)
    assert not verdict.ok and "ddr_bytes_per_s" in verdict.reason and "MB/s" in verdict.reason
