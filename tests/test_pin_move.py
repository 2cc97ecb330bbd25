"""Moving a pin to hide a load (runtime/sched/policies/pin_move.py): on crowded boards (more distinct modules
than slots) edf lends a pinned slot to the next frame's missing module under the job on the stream
and reloads the pin elsewhere under that frame; admitted pipelines still never miss."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

from fpgashare.catalogue.modules import resolve_stage
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import DNN_MODELS, PipelineSpec, Workload, realtime_spec
from fpgashare.sched.analysis.residency import residency
from fpgashare.sched.core.slots import SlotState
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import VISION
from tests.test_admission import assert_no_miss, run_admitted
from tests.test_pin_lend import nominal_releases


def crowded(seed: int) -> Workload:
    """Three or four pipelines on the ZCU104 whose chains need more distinct modules than its four
    slots, at one common rate with jitter and random offsets (the case pins and swaps are for),
    half the time with a best-effort DNN beside them."""
    rng = random.Random(seed)
    platform = load_platform("zcu104")
    while True:
        chains = [rng.sample(VISION, rng.randint(1, 3)) for _ in range(rng.randint(3, 4))]
        chains = [["rgb2gray", *c] if rng.random() < 0.3 else c for c in chains]
        if len({resolve_stage(s).kind.name for c in chains for s in c}) > len(platform.slots):
            break
    period = rng.choice([16.67e-3, 25e-3, 33.3e-3])
    frame = rng.choice([[480, 640], [720, 1280]])
    pipelines = []
    for i, chain in enumerate(chains):
        spec = realtime_spec(f"p{i}", chain, period, period, frame, platform, jitter_s=rng.uniform(0, 0.5e-3))
        pipelines.append(replace(spec, offset_s=round(rng.uniform(0, period), 4)))
    if rng.random() < 0.5:          # a DNN beside them: its tiles may go through pinned slots too
        pipelines.append(PipelineSpec("dnn", "besteffort", model=rng.choice(DNN_MODELS)))
    return Workload(Path(f"crowded_{seed}.toml"), platform, seed, 1.0, tuple(pipelines))


def check_pins_after(engine) -> None:
    """The moved pins still satisfy the analysis's residency condition, and each is in its slot."""
    pinned = engine.contract.pinned
    plan = residency(engine.pipelines, engine.backend.platform, Counter(pinned.values()), fixed=pinned)
    assert not isinstance(plan, str), plan
    releases = nominal_releases(engine)
    loads = sorted((e for e in engine.trace if e.track == "port"), key=lambda e: e.start)
    for slot, module in pinned.items():
        s = engine.slots.slots[slot]
        if s.module != module:
            # Lent to the DNN for an idle gap the run ended in: the pin is due back only by the
            # next release, which the run did not reach (tests/test_pin_lend.py checks the return).
            lend = [e for e in loads if e.name.endswith(f"-> slot {slot}") and e.args.get("reason") == "dnn-pin"]
            assert lend and s.module == "dnn_tile", (slot, module, s)
            due = next((t for t in releases if t > lend[-1].start + 1e-9), float("inf"))
            assert due > engine.end_s, (slot, module, s, lend[-1], due)
            continue
        assert s.state in (SlotState.READY, SlotState.LOADING), (slot, module, s)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_admitted_pipelines_never_miss_while_pins_move(seed):
    _, engine, summary = run_admitted(crowded(seed))
    assert_no_miss(summary, f"crowded seed {seed}")
    check_pins_after(engine)


def test_pins_move_on_crowded_boards_and_hide_loads():
    """Over twenty crowded workloads, pins do move, and every admitted frame is on time."""
    moves = 0
    for seed in range(20):
        _, engine, summary = run_admitted(crowded(seed))
        assert_no_miss(summary, f"crowded seed {seed}")
        check_pins_after(engine)
        moves += engine.pin_moves
    assert moves > 0


def _board_run_recording_moves(seed: int):
    """``admission_soundness --streams``'s workload for ``seed`` (random offsets and jitter, 1 to
    S streams, a plan of partitions), run on the board with every pin move recorded as (the frame
    it serves, the board slot its pin moves to)."""
    import fpgashare.sched.policies.edf as edf_module
    from fpgashare.backends.model import ModelBackend
    from fpgashare.sched.board.stream_plan import plan_streams
    from fpgashare.sched.board.workload_run import run_board

    from benchmarks.admission_soundness import draw

    workload = draw(seed, 2.0, False)
    plan = plan_streams(workload, random.Random(seed ^ 0x5EED).randint(1, workload.platform.streams),
                        spare_stream=True)
    moves = []
    original = edf_module.pin_move

    def recording(engine, frame, chosen, missing):
        move = original(engine, frame, chosen, missing)
        if move is not None:
            moves.append((frame.key, engine, move.to))
        return move

    edf_module.pin_move = recording
    try:
        board, summary = run_board(workload, ModelBackend(workload.platform), plan, edf_module.EdfPolicy)
    finally:
        edf_module.pin_move = original
    kept = {p.name for p in plan.admitted}
    summary["pipelines"] = {n: p for n, p in summary["pipelines"].items() if n in kept}
    slot_of = {id(e): view.global_slots for view, e in zip(board.views, board.parts, strict=True)}
    return board, summary, [(frame, slot_of[id(engine)][to]) for frame, engine, to in moves]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1))
@example(559056910)        # two copies of conv3x3 busy under G; F started on the one the pin was sent to
def test_the_frame_a_move_serves_never_streams_on_the_slot_the_pin_moves_to(seed):
    """Every move's frame F streams on none of the slot r the pin goes to (so M goes back under
    F's stream), whichever copy of its modules F starts on; and no admitted frame misses."""
    board, summary, moves = _board_run_recording_moves(seed)
    assert_no_miss(summary, f"seed {seed}")
    on_slot = {(e.name, int(e.track.split()[1])) for e in board.trace if e.track.startswith("slot ")}
    for frame, to in moves:
        assert (frame, to) not in on_slot, f"seed {seed}: {frame} streamed on slot {to}, where its move sent the pin"
