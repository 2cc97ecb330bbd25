"""Pin lends (runtime/sched/policies/pin_lend.py): edf lends pinned slots to the DNN only inside
an idle gap, and every lent pin is back in its slot before the next release, so admitted frames
still never miss. Checked on generated workloads with a DNN, run for many hyperperiods with jitter,
and with a pipeline registering on the daemon's path while a pin is lent."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import PipelineSpec, realtime_spec
from fpgashare.cli.bench import run_one
from fpgashare.dnn.planning import network
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.policies.registry import make_policy
from hypothesis import given, note, settings
from hypothesis import strategies as st

from benchmarks.limit_gap import small_workload

HYPERPERIODS = 10


def dnn_workload(seed: int, hyperperiods: int = HYPERPERIODS):
    """The first of ``limit_gap``'s small workloads from ``seed`` on that has a DNN pipeline,
    run for ``hyperperiods``."""
    rng = random.Random(seed)
    for _ in range(200):
        w = small_workload(rng.randrange(2**31))
        if any(not p.realtime for p in w.pipelines):
            return replace(w, duration_s=w.duration_s * hyperperiods)
    raise AssertionError("no DNN workload drawn")


def nominal_releases(engine) -> list[float]:
    out = []
    for p in engine.pipelines:
        t = engine.t0 + p.offset_s
        while t < engine.end_s + p.period_s:
            out.append(t)
            t += p.period_s
    return sorted(out)


def check_lends(engine) -> int:
    """Every lent pin of one engine's run is back in its slot before the first release after the
    lend began, and every DNN batch on a lent pinned slot ends by then; the number of lends."""
    releases = nominal_releases(engine)
    loads = sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    lends = 0
    for e in loads:
        if e.args.get("reason") != "dnn-pin":
            continue
        # A tile into a pinned slot: the next load into that slot puts back the pin it held (the
        # load before), and ends before the first release after the lend began.
        lends += 1
        slot = e.name.rsplit(" ", 1)[1]
        into = [b for b in loads if b.name.endswith(f"-> slot {slot}")]
        k = into.index(e)
        pin = into[k - 1].name.split(" ")[1]
        due = next((t for t in releases if t > e.start + 1e-9), float("inf"))   # (one at e.start came first)
        back = into[k + 1] if k + 1 < len(into) else None
        batches = [b for b in engine.trace if b.track == f"slot {slot}" and b.name.startswith("dnn")
                   and e.end <= b.start and (back is None or b.start < back.start)]
        assert all(b.end <= due + 1e-9 for b in batches), (e, batches, due)
        if back is None:
            assert due > engine.end_s, (e, due)
            continue
        assert back.name == f"load {pin} -> slot {slot}", (e, back)
        assert back.end <= due + 1e-9, (e, back, due)
    return lends


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_lent_pins_are_back_before_the_next_release_and_nothing_misses(seed):
    workload = dnn_workload(seed)
    engine, result = run_one(workload, "edf", "model", check_rejected=False, streams=1)
    late = {n: p["late"] + p["dropped"] + p["errors"] for n, p in result["pipelines"].items()}
    assert not any(late.values()), late
    note(f"pin lends: {check_lends(engine)}")


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_lent_pins_beside_passes_on_a_spare_stream_are_back_before_the_next_release(seed):
    """On the board's streams the DNN may run on a lent pin beside a frame's last pass: the batch
    and the pin's reload still end before the next release, and nothing misses."""
    workload = dnn_workload(seed)
    board, result = run_one(workload, "edf", "model", check_rejected=False)
    admitted = set(result["admitted"])
    late = {n: p["late"] + p["dropped"] + p["errors"] for n, p in result["pipelines"].items() if n in admitted}
    assert not any(late.values()), late
    parts = getattr(board, "parts", [board])
    note(f"pin lends: {sum(check_lends(part) for part in parts)}")


#: (p0's deadline, p2's period, deadline, frame, p2's first frame after p0's second): the new
#: pipeline's frame misses behind p0's demand load; or p0's own frame, due within its stream and
#: less than a load more, misses for the pin still away.
CASES = {"the newcomer misses": (0.009698, 0.0145, 0.005467, [1080, 1920], 1e-4),
         "the running pipeline misses": (0.0031, 0.04, 0.03, [240, 320], 0.01)}


def _register_during_a_lend(p0_deadline: float, period: float, deadline: float, frame: list,
                            after: float) -> tuple[list, list]:
    plat = load_platform("zcu104-x4")
    p0 = realtime_spec("p0", ["rgb2gray", "downscale2x", "sobel_y", "box3x3"], 0.0286, p0_deadline, [1080, 1920],
                       plat)
    p2 = realtime_spec("p2", ["rgb2gray", "gauss3x3"], period, deadline, frame, plat)
    clock = VirtualClock()
    board = Board.whole(plat, ModelBackend(plat), lambda: make_policy("edf"), clock, cap=1)
    board.begin()

    def until(t: float) -> None:
        while (due := board.next_event_s()) is not None and due <= t:
            clock.wait_until(max(due, clock.now()))
            board.advance_to(clock.now())
        clock.wait_until(max(t, clock.now()))
        board.advance_to(clock.now())

    board.add_pipeline(PipelineSpec("dnn", "besteffort", model="digits_cnn"))
    assert not board.admit(p0)
    board.add_pipeline(p0, admitted=True)
    px = {p.name: np.zeros(p.stages[0].kind.input_shape(*p.frame), np.uint8) for p in (p0, p2)}
    start = 0.030
    until(start)
    frames = [board.submit("p0", px["p0"])]
    until(start + 0.003)
    for _ in range(60):                      # DNN work in the idle gap after p0's frame
        board.submit_dnn("dnn", np.zeros(network("digits_cnn").input_shape, np.uint8))
    until(start + 0.022)                     # a pin is lent now
    assert not board.admit(p2)
    board.add_pipeline(p2, admitted=True)
    until(start + p0.period_s)
    frames.append(board.submit("p0", px["p0"]))
    until(start + p0.period_s + after)
    frames.append(board.submit("p2", px["p2"]))
    until(start + 0.08)
    lends = [e for _, part in board.every() for e in part.trace
             if e.track == "port" and (e.args or {}).get("reason") == "dnn-pin"]
    return frames, lends


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_registration_while_a_pin_is_lent_misses_nothing(case):
    """A pipeline registers while a pin is lent: the mode change loads the lent pin back like a new
    pin before it switches, so neither the newcomer's first frame nor the running pipeline's frame
    waits for it."""
    frames, lends = _register_during_a_lend(*CASES[case])
    assert lends, "the scenario needs a pin lent before the registration"
    assert all(f.outcome == "on_time" for f in frames), [(f.key, f.outcome, f.reason) for f in frames]
