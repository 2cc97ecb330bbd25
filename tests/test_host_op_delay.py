"""The host's delay of fabric operations is counted: a daemon's loop may notice any engine event
late (busy with other work) and so start a frame's pass or a load late; admission counts that
delay with every operation (``Board.op_delay_s``, the smallest response bound R of the set,
runtime/sched/host/host_cost.py), and the fabric sees each pipeline as the host leaves it
(deadline D - 2R, jitter J + R: ``HostBudget.fabric_spec``).

Checked on generated workloads, fresh seeds each run: every event is taken late by a random
delay up to R (arrivals, load ends, frame ends, releases), and no frame of an admitted pipeline
ends after its arrival plus its deadline less R (the answer's own way back)."""

from __future__ import annotations

from itertools import pairwise

from fpgashare.backends.model import ModelBackend
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.board.board import Board
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.host_cost import HostBudget
from fpgashare.sched.policies.registry import make_policy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.host_op_delay import COST, late_run
from benchmarks.late_loop import join, step_to, take_events_until


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.2e-3, 0.5e-3, 1.0e-3]))
def test_frames_keep_their_deadlines_when_the_loop_starts_every_operation_late(seed, reserve_s):
    frames, late = late_run(seed, reserve_s, counted=True)
    assert late == 0, f"{late} of {frames} frames late (seed {seed}, R {reserve_s * 1e3} ms)"


def test_the_delay_is_counted_with_every_operation_of_every_partition():
    """The board hands the analysis the register traffic plus the host's delay, in every partition,
    and keeps it for partitions a re-layout builds later."""
    from fpgashare.catalogue.platform import load_platform

    platform = load_platform("zcu104")
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock(), cap=4)
    board.op_delay_s = 0.7e-3
    assert board.control_s == control_seconds(platform) + 0.7e-3
    assert all(e.members.analysis_kw["control_s"] == board.control_s for e in board.parts)
    board.build([(0, 1), (2, 3)])
    assert all(e.members.analysis_kw["control_s"] == board.control_s for e in board.parts)


def test_the_delay_is_the_loops_busy_period_and_stays_within_every_bound():
    """The host's delay of an operation is the loop's longest busy period with the set: it grows
    as pipelines join, and while the host check passes it is within every pipeline's bound R."""
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.catalogue.workload import realtime_spec

    platform = load_platform("zcu104")
    budget = HostBudget(COST)
    specs, delays = [], []
    for i, (period, deadline) in enumerate([(0.040, 0.040), (0.020, 0.010), (0.100, 0.090), (0.010, 0.008)]):
        spec = budget.fabric_spec(realtime_spec(f"p{i}", ["threshold"], period, deadline, [240, 320], platform), specs)
        assert not isinstance(spec, str)
        specs.append(spec)
        assert budget.check(specs) is None
        delays.append(budget.op_delay_s(specs))
    assert all(b >= a for a, b in pairwise(delays)) and delays[0] > 0
    assert delays[-1] == budget.busy_s(specs) <= min(budget.reserves.values())
    assert HostBudget(COST, reserve_s=0.0).op_delay_s(specs) == 0.0


def test_a_longer_delay_is_refused_when_a_contract_in_force_would_not_hold():
    """A newcomer that makes the host's delay longer than the contracts in force were made for is
    admitted only if each still holds with it; else refused naming the host."""
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.catalogue.workload import realtime_spec

    platform = load_platform("zcu104")
    clock = VirtualClock()
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), clock)
    board.begin()
    tight = realtime_spec("tight", ["gauss3x3", "sobel_mag"], 0.010, 0.0045, [480, 640], platform)
    assert board.admit(tight) is None
    board.add_pipeline(tight, admitted=True)
    small = realtime_spec("small", ["threshold"], 0.100, 0.100, [60, 80], platform)
    assert board.admission_test(small, op_delay_s=0.0)() is None
    why = board.admission_test(small, op_delay_s=5e-3)()
    assert why is not None and why.startswith("the host:") and "stream 0" in why
    assert board.op_delay_s == 0.0                  # nothing changed by the refusal


def test_a_longer_delay_changes_every_partition_before_the_newcomer_is_ready():
    """Admitted with a longer delay, the newcomer waits until every other partition has switched
    to its set re-analysed with it (a mode change each); the board then counts the delay."""
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.catalogue.workload import realtime_spec
    from fpgashare.sched.board.board_admission import split_slots

    platform = load_platform("zcu104")
    clock = VirtualClock()
    board = Board(platform, ModelBackend(platform), lambda: make_policy("edf"), clock, split_slots(platform, 2))
    board.begin()

    def register(spec, delay) -> list[float]:
        ready: list[float] = []
        assert board.admission_test(spec, op_delay_s=delay)() is None
        board.add_pipeline(spec, admitted=True, on_ready=lambda: ready.append(clock.now()))
        return ready

    first = register(realtime_spec("a", ["gauss3x3"], 0.020, 0.020, [480, 640], platform), 0.0)
    while not first and (due := board.next_event_s()) is not None:
        clock.wait_until(max(due, clock.now()))
        board.advance_to(clock.now())
    home_a = board.partition_of("a")[0]
    ready = register(realtime_spec("b", ["threshold"], 0.020, 0.020, [480, 640], platform), 0.4e-3)
    other = board.parts[home_a].members.changes
    assert board.partition_of("b")[0] != home_a and other.active      # a's partition changes first
    while not ready and (due := board.next_event_s()) is not None:
        clock.wait_until(max(due, clock.now()))
        board.advance_to(clock.now())
    assert ready and not other.active and board.op_delay_s == 0.4e-3
    assert all(e.members.analysis_kw["control_s"] == board.control_s for e in board.parts)


def _edge_split_run(seed: int, reserve_s: float, host_first: bool) -> tuple[int, int]:
    """A two-stage chain with one stage on the host (before or after the fabric's), its deadline the
    shortest admission takes, 40 frames with every event noticed up to R late: (frames, those past
    the app's deadline less R)."""
    import random

    import numpy as np
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.sched.host.cpu_fallback import fallback_candidates
    from fpgashare.sched.host.cpu_work import ModelledCpuCost

    rng = random.Random(seed)
    platform, clock = load_platform("zcu104"), VirtualClock()
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), clock)
    board.parts[0].want_output = False
    board.begin()
    board.op_delay_s = reserve_s
    chain = resolve_chain(["gauss3x3", "threshold"] if host_first else ["threshold", "gauss3x3"], {})
    budget = HostBudget(COST, reserve_s=reserve_s)

    def split(deadline_s: float):
        for spec, _ in fallback_candidates("p", chain, 0.040, deadline_s, (120, 160), platform, {}, ModelledCpuCost()):
            if spec is not None and bool(spec.cpu_before) == host_first and bool(spec.cpu_after) != host_first:
                return spec
        return None

    fabric = None
    for extra in np.arange(0.0, 0.02, 0.0001):          # the shortest deadline admission takes
        spec = split(0.002 + extra)
        fabric = budget.fabric_spec(spec) if spec is not None else None
        if fabric is not None and not isinstance(fabric, str) and board.admit(fabric) is None:
            break
    assert join(board, fabric)
    pixels = np.zeros(chain[0].kind.input_shape(120, 160), np.uint8)
    frames = []
    start = clock.now() + 0.01

    def late() -> float:                      # the loop notices an event up to R late
        return rng.uniform(0.0, reserve_s)

    for k in range(40):
        arrival = start + k * fabric.period_s
        noticed = arrival + late()
        take_events_until(board, noticed, late)
        step_to(board, noticed)
        frames.append((arrival, board.submit("p", pixels)))
    while (due := board.next_event_s()) is not None:
        clock.wait_until(max(due + rng.uniform(0.0, reserve_s), clock.now()))
        board.advance_to(clock.now())
    app_deadline = fabric.due_s + budget.taken["p"]
    return len(frames), sum(1 for a, f in frames if f.end is None or f.end > a + app_deadline - reserve_s + 1e-9)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.5e-3, 1.0e-3]), st.booleans())
def test_frames_handed_between_host_and_fabric_keep_their_deadlines_at_the_edge(seed, reserve_s, host_first):
    """A placement with a stage on the host hands each frame over once more (its fabric part released
    when the loop notices the host stage's end, or its host stage started when it notices the
    fabric's): one more R each (``HostBudget.fabric_spec``). Admitted at its tightest deadline, no
    frame ends past the app's deadline less R."""
    frames, late = _edge_split_run(seed, reserve_s, host_first)
    assert frames == 40 and late == 0, f"{late} of {frames} late"
