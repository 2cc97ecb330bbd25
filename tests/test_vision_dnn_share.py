"""Vision and a DNN sharing the PYNQ-Z2's fabric: real-time frames never miss and the best-effort
DNN gets at least 90% of the window bound that pays for tile loads and fill latency
(benchmarks/vision_dnn_share.py), on generated workloads and the shipped suite, on the twin and
(marked rtl) through the RTL."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import PipelineSpec, Workload, load_workload, realtime_spec
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.vision_dnn_share import Chain, measure, stream_windows, window_images

SUITE = Path(__file__).resolve().parent.parent / "benchmarks" / "workloads" / "vision_reader_pynq_z2.toml"
#: Gray single-stage pipelines the PYNQ-Z2 offers beside the tile.
STAGES = ["sobel_mag", "gauss3x3", "median3x3", "threshold", "erode3x3", "downscale2x"]


@given(st.floats(0, 0.05), st.floats(1e-5, 1e-3), st.floats(1e-5, 1e-3), st.floats(0, 2e-3), st.integers(0, 2))
def test_window_images_is_the_reference_formula(window, fill, step, load, resident):
    chains = [Chain(1, fill, step), Chain(2, fill * 1.1, step / 1.6)]
    got = window_images(window, chains, load, resident)
    want = 0
    for c in chains:
        loads = 2 * max(0, c.tiles - resident) * load
        if window >= loads + c.fill_s:
            want = max(want, 1 + int((window - loads - c.fill_s) // c.step_s))
    assert got == want
    # More room never gives fewer images; a window shorter than any chain's fill gives none.
    assert window_images(window + step, chains, load, resident) >= got
    assert window_images(min(fill, fill * 1.1) * 0.99, chains, 0.0, 2) == 0


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 0.1)), max_size=20))
def test_windows_and_busy_time_cover_the_span(jobs):
    busy = [(a, a + d) for a, d in jobs]
    windows = stream_windows(busy, 0.0, 1.0)
    # Idle windows plus the union of busy time within [0, 1) make the whole span.
    covered, t = 0.0, 0.0
    for a, b in sorted(busy):
        a, b = max(a, t), min(b, 1.0)
        if b > a:
            covered += b - a
            t = b
    assert sum(windows) + covered == pytest.approx(1.0, abs=1e-9)


def random_share(seed: int) -> Workload:
    """A random gray real-time pipeline (one stage, 120p..720p, at 1.3..4x its stream time) and a
    best-effort shipped model that fits the PYNQ-Z2's tile."""
    rng = random.Random(seed)
    platform = load_platform("pynq-z2")
    frame = rng.choice([[120, 160], [240, 320], [480, 640], [720, 1280]])
    probe = realtime_spec("probe", [rng.choice(STAGES)], 1.0, 1.0, frame, platform)
    period = probe.exec_s * rng.uniform(1.3, 4.0) + 1e-3
    spec = realtime_spec("vision", [s.name for s in probe.stages], period, period, frame, platform,
                         jitter_s=rng.uniform(0, 0.1) * period)
    dnn = PipelineSpec("dnn", "besteffort", model=rng.choice(["digits_cnn", "printed_digits"]))
    return Workload(Path(f"share_{seed}.toml"), platform, seed, 0.3, (spec, dnn))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_generated_shares_miss_nothing_and_reach_the_bound_on_the_twin(seed):
    workload = random_share(seed)
    row = measure(workload, "model")
    assert row["rejected"] == [] and row["misses"] == 0, row
    assert row["dnn_images"] > 0 and row["of_bound"] >= 0.9, row


def test_shipped_suite_on_the_twin():
    workload = load_workload(SUITE)
    assert workload.platform.name == "pynq-z2"
    for duration in (workload.duration_s, 1.0):      # as shipped (short for the RTL), and longer
        row = measure(replace(workload, duration_s=duration), "model")
        assert row["misses"] == 0 and row["rejected"] == [], row
        assert sum(row["frames_on_time"].values()) > 0
        assert row["of_bound"] >= 0.9, row


@pytest.mark.rtl
def test_shipped_suite_through_the_rtl():
    """The dnn_tile RTL in its slot of the simulated PYNQ-Z2 beside the vision module: what the twin
    predicts, within 2% of its images."""
    workload = load_workload(SUITE)
    twin, rtl = measure(workload, "model"), measure(workload, "sim")
    assert rtl["misses"] == 0 and rtl["rejected"] == [], rtl
    assert rtl["frames_on_time"] == twin["frames_on_time"]
    assert rtl["of_bound"] >= 0.9, rtl
    assert rtl["dnn_images"] == pytest.approx(twin["dnn_images"], rel=0.02)
