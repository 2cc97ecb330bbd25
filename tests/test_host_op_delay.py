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


def test_the_delay_is_the_smallest_bound_and_only_shrinks_as_pipelines_join():
    """Any analysis made with an earlier set's delay still holds for a larger set: the delay of a
    set is the smallest response bound in it."""
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.catalogue.workload import realtime_spec

    platform = load_platform("zcu104")
    budget = HostBudget(COST)
    specs, delays = [], []
    for i, (period, deadline) in enumerate([(0.040, 0.040), (0.020, 0.010), (0.100, 0.090), (0.010, 0.004)]):
        spec = budget.fabric_spec(realtime_spec(f"p{i}", ["threshold"], period, deadline, [240, 320], platform))
        assert not isinstance(spec, str)
        specs.append(spec)
        delays.append(budget.op_delay_s(specs))
    assert all(b <= a for a, b in pairwise(delays)) and delays[-1] > 0
    assert delays[-1] == min(budget.reserves.values())
    assert HostBudget(COST, reserve_s=0.0).op_delay_s(specs) == 0.0
