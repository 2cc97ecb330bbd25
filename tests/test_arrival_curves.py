"""The arrival curve the engine enforces (runtime/sched/analysis/arrivals.py): whatever an app sends, the
released frames keep r_k - r_i >= (k - i) T - J; frames sent within their declared curve are never
held."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from fpgashare.sched.analysis.arrivals import ArrivalCurves
from hypothesis import given
from hypothesis import strategies as st


@dataclass(frozen=True)
class Spec:
    name: str
    period_s: float
    jitter_s: float


def _release_all(spec: Spec, arrivals: list[float]) -> list[float]:
    curves, out = ArrivalCurves(), []
    for t in arrivals:
        k = curves.next_index(spec.name)
        release = max(t, curves.earliest(spec, k))
        curves.decided(spec, k, release)
        curves.taken(spec, k, release)
        out.append(release)
    return out


@given(st.floats(1e-3, 0.1), st.floats(0.0, 0.99), st.lists(st.floats(0.0, 0.2), min_size=1, max_size=40))
def test_any_sender_is_held_to_the_curve(period, jitter_share, gaps):
    spec = Spec("p", period, jitter_share * period)
    arrivals = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    releases = _release_all(spec, arrivals)
    assert all(r >= a for r, a in zip(releases, arrivals, strict=True))
    for i in range(len(releases)):
        for k in range(i + 1, len(releases)):
            assert releases[k] - releases[i] >= (k - i) * period - spec.jitter_s - 1e-9


@given(st.floats(1e-3, 0.1), st.floats(0.0, 0.99), st.floats(0.0, 1.0),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_a_sender_within_its_declared_curve_is_never_held(period, jitter_share, phase, delays):
    spec = Spec("p", period, jitter_share * period)
    arrivals = [phase + k * period + d * spec.jitter_s for k, d in enumerate(delays)]
    # (equal up to floating point: grid + k T - J may land an ulp past the arrival)
    assert all(abs(r - a) <= 1e-12 for r, a in zip(_release_all(spec, arrivals), arrivals, strict=True))


def test_the_next_release_counts_from_the_frames_taken():
    spec, curves = Spec("p", 0.010, 0.002), ArrivalCurves()
    assert curves.next_release(spec, 5.0) == 5.0                      # before its first frame: any time
    curves.taken(spec, 0, 1.0)
    assert curves.next_release(spec, 0.0) == 1.0 + 0.010 - 0.002
    curves.forget("p")
    assert curves.next_release(spec, 2.0) == 2.0


class _Engine:
    """What ``Submissions.arrive`` asks of an engine: the time, the release events it pushes and
    the frames it ends."""

    def __init__(self) -> None:
        self.now, self.released, self.ended = 0.0, [], []
        self.demand = SimpleNamespace(moved=lambda pipeline: None)

    def push(self, at, kind, frame) -> None:
        self.released.append((at, frame))

    def finish(self, frame, outcome, reason="") -> None:
        self.ended.append((frame, outcome, reason))


@given(st.floats(1e-3, 0.1), st.floats(0.0, 0.99), st.permutations(range(6)),
       st.lists(st.floats(0.0, 0.05), min_size=6, max_size=6), st.sets(st.integers(0, 5)))
def test_frames_reaching_the_fabric_out_of_order_keep_the_curve_and_delay_no_later_frame(
        period, jitter_share, order, gaps, overran):
    # A CPU prefix runs on a pool of threads: a frame whose prefix overran reaches the fabric late,
    # or after later frames did. The curve holds over the releases (any two at least T - J apart
    # in the order they are released); a frame that comes after a later one, or late enough to move
    # the curve's grid, is dropped rather than released, so that no frame after it is held back.
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.sched.core.jobs import Frame
    from fpgashare.sched.sources.submitted import Submissions

    spec = PipelineSpec("p", "realtime", period_s=period, deadline_s=period, jitter_s=jitter_share * period)
    source, engine = Submissions(), _Engine()
    source.attach(engine)
    frames = [Frame(spec, source.arrivals.next_index("p"), 0.0, period, k, overran=k in overran) for k in range(6)]
    for k, gap in zip(order, gaps, strict=True):
        engine.now += gap
        source.arrive(frames[k])
        if engine.released and engine.released[-1][1] is frames[k]:
            source.released(frames[k])
    released = sorted(engine.released, key=lambda r: r[0])
    assert sorted(f.index for _, f in released) == [f.index for _, f in released]      # in the app's order
    assert len(released) + len(engine.ended) == 6                                      # each frame once
    assert {id(f) for _, f in released}.isdisjoint(id(f) for f, _, _ in engine.ended)
    for i in range(len(released)):
        for k in range(i + 1, len(released)):
            assert released[k][0] - released[i][0] >= (k - i) * period - spec.jitter_s - 1e-9
    # Each frame released on time or as the curve allows it: one released late only to keep the
    # curve from its earlier frames, never because a frame the host delayed came before it.
    for at, f in released:
        earlier = [(a, g) for a, g in released if g.index < f.index]
        floor = max([a + (f.index - g.index) * period - spec.jitter_s for a, g in earlier], default=-1.0)
        assert at <= max(engine_now_at(f, order, gaps), floor) + 1e-9


def engine_now_at(frame, order, gaps) -> float:
    """When ``frame`` reached the source in the test above."""
    return sum(gaps[: order.index(frame.index) + 1])
