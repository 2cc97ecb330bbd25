"""Cold lends (runtime/sched/policies/cold_lend.py): with DNN work, edf's setup loads the DNN's
tiles first and puts a pinned slot's pin back by the first release, so the registration window
runs DNN batches and admitted frames still never miss. Checked on generated workloads with a DNN
(on the board's streams and on one), and on a workload built so that the window has room."""

from __future__ import annotations

import random
from dataclasses import replace

from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import PipelineSpec, Workload, realtime_spec
from fpgashare.cli.bench import run_one
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

TILE = "dnn_tile"
#: Loads a frame makes for itself. A frame committed before its release (early_commit.py) may make
#: them before the first release, into a pinned slot too: they are its job's, which the analysis
#: charges, not the setup's, whose pins the cold lend must leave in place.
FRAME_LOADS = ("demand", "prefetch")


def dnn_workload(seed: int, hyperperiods: int = 3) -> Workload:
    """The first of ``limit_gap``'s small workloads from ``seed`` on that has a DNN pipeline."""
    rng = random.Random(seed)
    for _ in range(200):
        w = small_workload(rng.randrange(2**31))
        if any(not p.realtime for p in w.pipelines):
            return replace(w, duration_s=w.duration_s * hyperperiods)
    raise AssertionError("no DNN workload drawn")


def pins(result: dict) -> dict[int, str]:
    """Every pinned slot of the run's contract (board slot numbers) and its pin."""
    contract = result.get("contract") or {}
    if "pinned" in contract:
        return {int(k): v for k, v in contract["pinned"].items()}
    return {int(k): v for part in contract.values() for k, v in part.get("pinned", {}).items()}


def loads_into(engine) -> dict[int, list]:
    out: dict[int, list] = {}
    for e in sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start):
        out.setdefault(int(e.name.rsplit(" ", 1)[1]), []).append(e)
    return out


def check_window(workload: Workload, engine, result: dict) -> int:
    """The cold lend's promises on one run; the number of tiles loaded before the first release."""
    late = {n: p["late"] + p["dropped"] + p["errors"] for n, p in result["pipelines"].items()}
    assert not any(late.values()), late
    first = engine.t0 + min(p.offset_s for p in workload.pipelines if p.realtime and p.name in result["admitted"])
    pinned = pins(result)
    into = loads_into(engine)
    for slot, pin in pinned.items():
        # Every setup load into a pinned slot and every DNN batch on it begun before the first
        # release ends by it, and the last setup load into it by then loaded its pin.
        before = [e for e in into.get(slot, []) if e.start < first and e.args.get("reason") not in FRAME_LOADS]
        assert all(e.end <= first + 1e-9 for e in before), (slot, [(e.name, e.end, first) for e in before])
        assert before and before[-1].name.split(" ")[1] == pin, (slot, pin, [e.name for e in before])
        batches = [e for e in engine.trace if e.track == f"slot {slot}" and e.name.startswith("dnn")
                   and e.start < first]
        assert all(e.end <= first + 1e-9 for e in batches), (slot, [(e.start, e.end, first) for e in batches])
    return sum(1 for loads in into.values() for e in loads if e.start < first and e.name.startswith(f"load {TILE} "))


@settings(max_examples=12, deadline=None)
@example(111085, None)      # an early-committed frame loads into a pinned slot before the first release
@given(st.integers(0, 2**31 - 1), st.sampled_from([None, 1]))
def test_pins_are_in_place_at_the_first_release_and_nothing_misses(seed, streams):
    workload = dnn_workload(seed)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=streams)
    tiles = check_window(workload, engine, result)
    note(f"tiles loaded before the first release: {tiles}")


def _late_start(offset_s: float) -> Workload:
    """One pipeline on the PYNQ-Z2 whose deadline leaves no time for a load (its module is pinned),
    first released ``offset_s`` after the registration window, and a DNN."""
    plat = load_platform("pynq-z2")
    spec = realtime_spec("p0", ["conv3x3"], 0.02, 0.0015, [240, 320], plat)
    pipelines = (replace(spec, offset_s=offset_s), PipelineSpec("dnn", "besteffort", model="digits_cnn"))
    return Workload(None, plat, 0, 0.04, pipelines)


def test_the_tiles_load_first_and_a_pinned_slot_runs_them_when_the_window_has_room():
    """A first release well after the registration window: the tiles' loads come first, into the
    pinned slot too, DNN images finish before the first release, and the pin is back by it."""
    workload = _late_start(0.015)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    (slot, _), = pins(result).items()
    first = engine.t0 + 0.015
    port = sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    assert port[0].name.startswith(f"load {TILE} "), port[0].name
    assert any(e.name == f"load {TILE} -> slot {slot}" and e.end <= first for e in port)
    assert any(e.track.startswith("stream") and e.name.startswith("dnn") and e.end <= first for e in engine.trace)
    assert check_window(workload, engine, result) == 2


def test_no_cold_lend_without_room_before_the_first_release():
    """A first release right at the end of the registration window leaves no room for a tile: the
    setup loads the pin first, as without a DNN."""
    workload = _late_start(0.0)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    first_load = min((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    assert first_load.args.get("reason") == "pin", first_load.name
    check_window(workload, engine, result)


def test_both_copies_a_tile_displaced_come_back_in_time_for_the_first_frame():
    """A chain using conv3x3 twice and a DNN: the tiles take both slots the warm-up would fill, and
    the just-in-time reloads count both copies (the second is missing too while no slot holds
    the first), so the first frames start at their release, waiting for no load."""
    plat = load_platform("pynq-z2")
    spec = realtime_spec("p0", ["gauss3x3", "box3x3"], 0.02, 0.015, [240, 320], plat)
    pipelines = (replace(spec, offset_s=0.010), PipelineSpec("dnn", "besteffort", model="digits_cnn"))
    workload = Workload(None, plat, 0, 0.04, pipelines)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    assert check_window(workload, engine, result) == 2
    assert engine.frames and all(f.start == f.release for f in engine.frames), \
        [(f.release, f.start) for f in engine.frames]
