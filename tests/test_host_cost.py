"""The host as a resource (runtime/sched/host/host_cost.py): the daemon's own work per frame enters
admission. The host cost is injected here, never measured: the daemon runs on a virtual clock."""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.client import AdmissionRejected, DeadlineMissed, FrameDropped, connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.core.clock import VirtualClock
from fpgashare.sched.host.host_cost import HostBudget, HostCost
from hypothesis import given, settings
from hypothesis import strategies as st

PLATFORM = load_platform("zcu104")


def _admit_copies(sock, host_cost, reserve_s, period_ms=10.0, copies=12) -> tuple[int, str]:
    """Copies of a small 480p pipeline registered until one is refused: how many, and why."""
    daemon = Daemon(make_backend("model", PLATFORM), sock, clock=VirtualClock(), host_cost=host_cost,
                    host_reserve_s=reserve_s)
    with DaemonThread(daemon), connect(sock) as fpga:
        for k in range(copies):
            try:
                fpga.pipeline(f"p{k}", ["threshold"], period_ms=period_ms, frame_shape=(120, 160))
            except AdmissionRejected as exc:
                return k, str(exc)
    return copies, ""


def test_a_set_the_host_cannot_carry_is_refused_naming_the_host(tmp_path):
    # 1 ms of the daemon's own work a frame: each 40 ms pipeline leaves the host a fifth of its
    # slack (about 8 ms), so the loop can take about seven frames that come together; the fabric
    # would take every copy of these small pipelines.
    cost = HostCost(per_frame_s=1e-3, block_s=0.3e-3)
    admitted, reason = _admit_copies(tmp_path / "host.sock", cost, None, period_ms=40.0)
    fabric_only, fabric_reason = _admit_copies(tmp_path / "free.sock", None, None, period_ms=40.0)
    assert 1 <= admitted < fabric_only
    assert reason.startswith(f"pipeline 'p{admitted}' not admitted: the host:")
    assert "response bound" in reason and "measured on this host" in reason
    assert "the host" not in fabric_reason


def test_one_reserve_for_every_pipeline_admits_as_many_as_it_covers(tmp_path):
    # 0.5 ms a frame and 0.3 ms of other work against a 2 ms reserve: three frames together.
    admitted, reason = _admit_copies(tmp_path / "fixed.sock", HostCost(per_frame_s=0.5e-3, block_s=0.3e-3), 2e-3)
    assert admitted == 3 and "the host:" in reason


def test_a_deadline_the_reserve_leaves_no_time_is_refused_naming_the_host(tmp_path):
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", PLATFORM), sock, clock=VirtualClock(), host_cost=HostCost(1e-4),
                    host_reserve_s=3e-3)
    with DaemonThread(daemon), connect(sock) as fpga:
        with pytest.raises(AdmissionRejected, match=r"the host: its response bound of 3\.000 ms"):
            fpga.pipeline("tight", ["threshold"], period_ms=10.0, deadline_ms=5.0, frame_shape=(120, 160))
        pipe = fpga.pipeline("loose", ["threshold"], period_ms=10.0, deadline_ms=8.0, frame_shape=(120, 160))
        assert pipe.deadline_ms == pytest.approx(8.0)           # the app's deadline, not the fabric's
        fabric = next(p for p in daemon.engine.pipelines if p.name == "loose")
        assert fabric.deadline_s == pytest.approx(8e-3 - 6e-3) and fabric.jitter_s == pytest.approx(3e-3)
        # each pass and load may start up to the loop's busy period late, which the host keeps within R
        assert 0.0 < daemon.engine.op_delay_s <= 3e-3


def test_bad_costs_are_refused_with_the_field():
    with pytest.raises(ValueError, match="per_frame_s"):
        HostCost(per_frame_s=-1.0)
    with pytest.raises(ValueError, match="reserve"):
        HostBudget(HostCost(1e-4), reserve_s=float("nan"))
    with pytest.raises(ValueError, match="share"):
        HostBudget(HostCost(1e-4), share=0.5)


def _fifo_overrun(jobs: list[tuple[float, float, float]], block_s: float, block_at: float) -> float:
    """The host loop, simulated: one callback of ``block_s`` (other work) begins at ``block_at``;
    real-time pieces (release, length, bound) are run in release order, never preempted, the loop
    never idle while one waits. The most a piece ended past its release plus its bound."""
    queue = list(jobs)
    heapq.heapify(queue)
    t, worst, blocked = 0.0, -float("inf"), False
    while queue:
        release, length, bound = heapq.heappop(queue)
        if not blocked and block_at <= max(t, release):
            t, blocked = max(t, block_at) + block_s, True     # the other callback got the loop first
        t = max(t, release) + length
        worst = max(worst, t - release - bound)
    return worst


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
def test_every_admitted_set_is_answered_within_the_reserve(seed, n):
    """Generated sets the host check admits: a simulated loop (any release pattern the declared
    periods and jitters allow, behind one other callback) answers every frame within its R."""
    rng = random.Random(seed)
    dilation = rng.choice([1.0, 20.0])
    cost = HostCost(per_frame_s=rng.uniform(1e-5, 1e-3), per_byte_s=rng.uniform(0, 2e-9),
                    per_load_s=rng.uniform(0, 2e-4), block_s=rng.uniform(0, 1e-3))
    budget = HostBudget(cost, dilation, reserve_s=rng.choice([None, rng.uniform(0.2e-3, 6e-3)]),
                        share=rng.uniform(0.02, 0.3))
    specs = []
    for k in range(n):
        period = rng.uniform(4e-3, 40e-3)
        spec = realtime_spec(f"p{k}", rng.choice([["threshold"], ["gauss3x3", "sobel_mag"]]), period, period,
                             [rng.choice([60, 120, 240]), rng.choice([80, 160, 320])], PLATFORM,
                             jitter_s=rng.uniform(0, period / 3))
        fabric = budget.fabric_spec(spec, specs)         # as the daemon asks: beside those admitted
        if isinstance(fabric, str):
            assert fabric.startswith("the host:")
            continue
        specs.append(fabric)
    if budget.check(specs) is not None or not specs:
        return
    horizon = 0.3
    jobs = []
    for p in specs:
        t = rng.uniform(0, p.period_s)
        while t < horizon:
            # The frame came at t; the loop sees it up to its jitter later (the fabric spec's
            # jitter counts the reserve, the app's is what it declared).
            bound = budget.reserves[p.name]
            jobs.append((t + rng.uniform(0, p.jitter_s - bound), budget.job_s(p), bound))
            t += p.period_s * rng.choice([1.0, 1.0, 1.5])
    assert _fifo_overrun(jobs, cost.block_s / dilation, rng.uniform(0, horizon)) <= 1e-12


def test_a_frame_that_ends_within_its_own_submit_leaves_no_host_time_behind(tmp_path):
    """The host may stall the loop in the middle of a submit for longer than the frame takes, so
    the step that releases the frame also ends and answers it. Its host time must not be kept
    for an end that has already been: every frame's entry is taken once it is answered."""
    daemon = Daemon(make_backend("model", PLATFORM), tmp_path / "d.sock", clock=VirtualClock())
    driver, advance = daemon.driver, daemon.driver.advance
    stall: list[float] = []

    def stalled_advance() -> None:
        if stall:                             # the host stalls before the step; the board runs on
            driver.clock.wait_until(driver.clock.now() + stall.pop())
        advance()

    driver.advance = stalled_advance
    with DaemonThread(daemon), connect(tmp_path / "d.sock") as fpga:
        pipe = fpga.pipeline("cam", ["threshold"], period_ms=20.0, frame_shape=(120, 160))
        outcomes = []
        for k, stalled in enumerate((0.0, 0.005, 0.2) * 2):
            t = 0.05 + 0.5 * k
            daemon.run_until(t)
            if stalled:                       # 5 ms: the frame ends on time within its own submit;
                stall.append(stalled)         # 200 ms: it is late there, dropped within it
            future = pipe.submit(np.zeros((120, 160), np.uint8))
            fpga.clock()                      # the submit is in before time moves on
            daemon.run_until(t + 0.4)
            try:
                outcomes.append(future.result(timeout=10).shape)
            except FrameDropped:
                outcomes.append("dropped")
            assert not stall
        assert outcomes == [(120, 160), (120, 160), "dropped"] * 2
        assert daemon.host_spent == {}


def test_a_late_frame_says_which_deadline_it_missed_when_the_host_took_its_share(tmp_path):
    """The engine judges a frame by the fabric's share of its deadline (the host's reserve taken
    each way), from when it reached the daemon. A frame that misses that share may still have come
    back well within the deadline its app was given: its reason must say which deadline it missed,
    or the app reads "past its deadline" for a frame a fraction of it late. Here the board's pass
    runs 8 ms longer than expected (a slow board: outside the admission, on purpose)."""
    sock = tmp_path / "late.sock"
    backend = make_backend("model", PLATFORM)
    daemon = Daemon(backend, sock, clock=VirtualClock(), host_cost=HostCost(1e-4), host_reserve_s=3e-3)
    start_frame = backend.start_frame

    def slow(*args, **kwargs):
        work = start_frame(*args, **kwargs)
        work.seconds += 8e-3
        return work

    backend.start_frame = slow
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("loose", ["threshold"], period_ms=20.0, deadline_ms=12.0, frame_shape=(240, 320))
        fabric = next(p for p in daemon.engine.pipelines if p.name == "loose")
        assert fabric.due_s == pytest.approx(6e-3) and pipe.deadline_ms == pytest.approx(12.0)
        future = pipe.submit(np.zeros((240, 320), np.uint8))
        fpga.clock()
        daemon.run_until(daemon.clock.now() + 0.02)
        with pytest.raises(DeadlineMissed) as missed:
            future.result(timeout=10)
    exc = missed.value
    assert exc.latency_ms > fabric.due_s * 1e3
    assert "due 6.000 ms after it reached the daemon: its 12.000 ms deadline less the 6.000 ms" in exc.reason
    assert "due 6.000 ms" in str(exc)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_frame_with_host_stages_is_judged_by_what_the_guarantee_promises_from_its_take(seed):
    """The engine's verdict for a frame with stages on the host counts from when the daemon took
    it: the app's deadline less R for the way in and R for the answer, which for a frame ending on
    the host leaves at the loop's notice of its end (its ``end``): D - R then, D - 2R otherwise.
    Judging by the fabric part's deadline plus the CPU bounds alone would report frames late that
    the guarantee kept (each late notice of a hand-over is R the analysis gave away)."""
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.sched.core.jobs import Frame
    from fpgashare.sched.host.cpu_fallback import fallback_candidates
    from fpgashare.sched.host.cpu_work import ModelledCpuCost

    rng = random.Random(seed)
    reserve = rng.uniform(0.1e-3, 1.0e-3)
    budget = HostBudget(HostCost(per_frame_s=50e-6), reserve_s=reserve)
    chain = resolve_chain(rng.sample(["gauss3x3", "threshold", "sobel_mag", "median3x3"], rng.randint(2, 3)), {})
    period = rng.uniform(20e-3, 80e-3)
    placements = [s for s, _ in fallback_candidates("p", chain, period, period, (120, 160), PLATFORM, {},
                                                    ModelledCpuCost()) if s is not None and not s.on_cpu_only]
    assert placements
    for placed in placements:
        fabric = budget.fabric_spec(placed)
        if isinstance(fabric, str):
            continue
        take = rng.uniform(0.0, 1.0)
        frame = Frame(fabric, 0, take, take + fabric.deadline_s, 0)
        ends_on_host = bool(placed.cpu_after)
        assert frame.due - take == pytest.approx(placed.due_s - (1 if ends_on_host else 2) * reserve)
