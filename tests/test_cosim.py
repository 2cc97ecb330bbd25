"""RTL time is board time: the co-simulated board (hdl_sim/cosim.py, backends/sim.py with
``streams``) runs loads, frames and DNN batches that overlap in the schedule in the same RTL cycles,
and the scheduler takes their ends from those cycles. Held to the twin on a workload with frames on
two streams at once, DNN batches beside frames and loads during both."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.backends.sim import SimBackend
from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform, manifest_at_pixels_per_clock
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.catalogue.workload import load_workload
from fpgashare.errors import FpgashareError
from fpgashare.hdl_sim.board import pack_beats
from fpgashare.hdl_sim.cosim import StreamPhase
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.board.stream_plan import plan_streams
from fpgashare.sched.board.workload_run import run_board
from fpgashare.sched.policies.edf import EdfPolicy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.cosim_agreement import TimedSim

pytestmark = pytest.mark.rtl

MODULES = ("conv3x3", "sobel_mag", "threshold", "erode3x3", "dilate3x3", "downscale2x", "dnn_tile")
WORKLOAD = '''
platform = "{platform}"
duration_s = 0.03
seed = 3

[[pipeline]]
name = "edges"
class = "realtime"
period_ms = 2.0
frame = [120, 160]
stages = ["gauss3x3", "sobel_mag", "threshold"]

[[pipeline]]
name = "morph"
class = "realtime"
period_ms = 2.5
offset_ms = 0.3
frame = [96, 128]
stages = ["erode3x3", "dilate3x3"]

[[pipeline]]
name = "small"
class = "realtime"
period_ms = 2.0
offset_ms = 0.05
frame = [128, 128]
stages = ["downscale2x"]

[[pipeline]]
name = "detector"
class = "besteffort"
model = "digits_cnn"
'''


@pytest.fixture(scope="module")
def small_zcu104(tmp_path_factory):
    """The ZCU104 shell with a short library and partitions shrunk to 60 frames (28 us loads)."""
    path = manifest_at_pixels_per_clock("zcu104", 1, tmp_path_factory.mktemp("cosim") / "zcu104-cosim.toml",
                                        modules=MODULES)
    path.write_text(path.read_text().replace("frames = 2800", "frames = 60"))
    return load_platform(path)


def _ended(pending, box: dict, name: str) -> None:
    pending.when_done(lambda t: box.__setitem__(name, t))


def _run(board: SimBackend, until: float = 1.0) -> None:
    while board.hardware_busy():
        board.run_hardware(until)


def test_frames_on_two_streams_and_a_load_share_cycles_and_each_takes_its_cycles_alone(small_zcu104):
    board = SimBackend(small_zcu104, streams=2)
    ends: dict[str, float] = {}
    for slot, module in enumerate(("conv3x3", "sobel_mag", "threshold")):
        _ended(board.start_load(slot, module), ends, f"load {slot}")
        _run(board)
    rng = np.random.default_rng(1)
    f0, f1 = rng.integers(0, 256, (48, 64), np.uint8), rng.integers(0, 256, (40, 56), np.uint8)
    s0, s1 = [resolve_stage("gauss3x3")], [resolve_stage("sobel_mag"), resolve_stage("threshold")]
    start = board.cosim.cycle / small_zcu104.fabric_clock_hz
    a = board.start_frame([0], s0, f0, stream=0)
    b = board.start_frame([1, 2], s1, f1, stream=1)
    load = board.start_load(3, "conv3x3")
    for name, pending in (("a", a), ("b", b), ("load", load)):
        _ended(pending, ends, name)
    _run(board)
    ra, rb, rl = a.report(), b.report(), load.report()
    assert np.array_equal(ra.output, chain_reference(s0, f0)) and np.array_equal(rb.output, chain_reference(s1, f1))
    assert rl.ok and board.resident(3) == "conv3x3"
    # They ran in the same cycles: each ended before the three together would end one after another.
    together = max(ends["a"], ends["b"], ends["load"]) - start
    apart = ra.seconds + rb.seconds + rl.seconds
    assert together < 0.6 * apart
    # And each took the cycles it takes alone.
    alone_a = board.start_frame([0], s0, f0, stream=0)
    _run(board)
    alone_b = board.start_frame([1, 2], s1, f1, stream=1)
    _run(board)
    assert (ra.cycles, rb.cycles) == (alone_a.report().cycles, alone_b.report().cycles)


def test_a_route_sharing_a_slot_is_refused_before_any_write(small_zcu104):
    board = SimBackend(small_zcu104, streams=2)
    board.start_load(0, "conv3x3")
    _run(board)
    frame = np.zeros((40, 40), np.uint8)
    busy = board.start_frame([0], [resolve_stage("gauss3x3")], frame, stream=0)
    clash = board.start_frame([0], [resolve_stage("gauss3x3")], frame, stream=1)
    _run(board)
    assert busy.report().output.shape == (40, 40)
    with pytest.raises(FpgashareError, match="slot 0 is in the routes of streams 0 and 1"):
        clash.report()
    with pytest.raises(FpgashareError, match="has 4 video stream"):
        SimBackend(small_zcu104, streams=5)


def test_the_twin_agrees_with_the_rtl_on_overlapping_frames_batches_and_loads(small_zcu104, tmp_path):
    path = tmp_path / "overlap.toml"
    path.write_text(WORKLOAD.format(platform=small_zcu104.path))
    workload = load_workload(path)
    plan = plan_streams(workload, 4)
    assert len(plan.partitions) >= 2 and not plan.rejected
    runs = {}
    rtl = TimedSim(small_zcu104, 4)
    for name, board in (("model", ModelBackend(small_zcu104, 4)), ("sim", rtl)):
        runs[name] = run_board(workload, board, plan, EdfPolicy, want_output=True)
    # Every operation ends on the RTL within the register traffic the analysis counts of its estimate.
    x = control_seconds(small_zcu104)
    assert len(rtl.timed) > 100 and all(board_s <= estimate + x for _, estimate, board_s in rtl.timed)
    (model, model_sum), (sim, sim_sum) = runs["model"], runs["sim"]
    # The same outcomes, images and loads; every frame's output identical.
    for name, p in model_sum["pipelines"].items():
        assert sim_sum["pipelines"][name]["on_time"] == p["on_time"] == p["submitted"] > 0, name
    assert sim_sum["totals"]["reconfigurations"] == model_sum["totals"]["reconfigurations"] > 0
    assert sim_sum["totals"]["dnn_images"] == pytest.approx(model_sum["totals"]["dnn_images"], rel=0.02)
    outputs = {f.key: f.output for f in model.frames}
    assert sum(f.output is not None for f in sim.frames) >= 30
    assert all(np.array_equal(f.output, outputs[f.key]) for f in sim.frames if f.output is not None)
    # Frame and load times within 2% of the twin's, slice by slice.
    spans = {}
    for name, engine in (("model", model), ("sim", sim)):
        for e in engine.trace:
            spans.setdefault(name, {}).setdefault((e.track, e.name), []).append(e.end - e.start)
    assert spans["model"].keys() == spans["sim"].keys()
    for key, times in spans["model"].items():
        if key[0].startswith(("stream", "port")):      # frames, DNN batches, loads
            for t_model, t_sim in zip(times, spans["sim"][key], strict=True):
                assert t_sim == pytest.approx(t_model, rel=0.02), key
    # The work did overlap in the RTL: frames on two streams, frames beside DNN batches, loads during frames.
    def overlaps(a, b):
        return sum(x.start < y.end and y.start < x.end for x in a for y in b)

    streams = {e.track for e in sim.trace if e.track.startswith("stream")}
    tracks = {s: [e for e in sim.trace if e.track == s] for s in sorted(streams)}
    frames = {s: [e for e in v if "/" in e.name] for s, v in tracks.items()}
    batches = [e for v in tracks.values() for e in v if e.name.startswith("detector")]
    loads = [e for e in sim.trace if e.track == "port" and e.start >= sim.t0]
    first, second = sorted(frames)[:2]
    assert overlaps(frames[first], frames[second]) > 0
    assert overlaps(frames[first], batches) > 0
    assert overlaps(loads, [e for v in frames.values() for e in v]) > 0


def test_failed_and_hung_frames_end_in_errors_and_give_their_stream_back(small_zcu104):
    """A frame whose module registers are refused (a blank, decoupled slot) and a frame that never
    completes (it waits for more output than the chain gives, until its cycle budget runs out) each
    end with an error saying why; the stream and the route are free again, and a frame on the same
    stream then runs bit-exact."""
    board = SimBackend(small_zcu104, streams=2)
    cosim, shell = board.cosim, board.board
    frame = np.random.default_rng(3).integers(0, 256, (32, 40), np.uint8)
    stage = resolve_stage("threshold")
    errors: list = []

    def on_end(t, report, error):
        errors.append(error)

    def hung():
        shell.route([2], 1)
        shell.program(2, stage, *frame.shape)
        try:
            cols = frame.shape[1]
            yield StreamPhase(1, pack_beats(frame, 1, 1), cols, frame.size + 50, cols, 20_000, settle=0)
        finally:
            shell.release_route(1)

    cosim.start(shell.frame_job(1, [2], [stage], frame), on_end)        # slot 2 is blank
    _run(board)
    board.start_load(2, "threshold")
    _run(board)
    cosim.start(hung(), on_end)
    _run(board)
    assert "register write refused" in str(errors[0]) and "did not finish" in str(errors[1])
    assert 1 not in shell.routes and not cosim.busy()
    again = board.start_frame([2], [stage], frame, stream=1)
    _run(board)
    assert np.array_equal(again.report().output, chain_reference([stage], frame))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_work_on_disjoint_slots_does_not_disturb_other_work(small_zcu104, seed):
    """Random frames on random disjoint chains and streams, started at random cycles, with a load
    into a free slot among them: each frame's output and stream cycles are those it has alone."""
    rng = np.random.default_rng(seed)
    board = SimBackend(small_zcu104, streams=4)
    kinds = ("conv3x3", "sobel_mag", "threshold", "erode3x3")
    modules = [str(m) for m in rng.permutation(kinds)]
    for slot, module in enumerate(modules):
        board.start_load(slot, module)
        _run(board)
    stage_of = {"conv3x3": "gauss3x3", "sobel_mag": "sobel_mag", "threshold": "threshold",
                "erode3x3": "erode3x3"}
    cut = sorted(rng.choice(np.arange(1, 4), size=rng.integers(1, 3), replace=False).tolist())
    chains = [[int(s) for s in c] for c in np.split(np.arange(4), cut)]
    reload = chains.pop(int(rng.integers(len(chains))))[0] if len(chains) > 1 else None
    jobs = []
    for stream, chain in enumerate(chains):
        stages = [resolve_stage(stage_of[modules[s]]) for s in chain]
        rows, cols = int(rng.integers(16, 48)), int(rng.integers(16, 64))
        jobs.append((stream, chain, stages, rng.integers(0, 256, (rows, cols), np.uint8)))
    hz = small_zcu104.fabric_clock_hz
    started = []
    for stream, chain, stages, frame in jobs:
        board.run_hardware(board.cosim.cycle / hz + int(rng.integers(0, 400)) / hz)
        started.append(board.start_frame(chain, stages, frame, stream=stream))
    if reload is not None:
        board.start_load(reload, modules[reload])
    _run(board)
    for (stream, chain, stages, frame), pending in zip(jobs, started, strict=True):
        together = pending.report()
        alone = board.start_frame(chain, stages, frame, stream=stream)
        _run(board)
        assert np.array_equal(together.output, chain_reference(stages, frame))
        assert together.cycles == alone.report().cycles
