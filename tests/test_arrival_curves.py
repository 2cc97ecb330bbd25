"""The arrival curve the engine enforces (runtime/sched/analysis/arrivals.py): whatever an app sends, the
released frames keep r_k - r_i >= (k - i) T - J; frames sent within their declared curve are never
held."""

from __future__ import annotations

from dataclasses import dataclass

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
    """What ``Submissions.arrive`` asks of an engine: the time and the release events it pushes."""

    def __init__(self) -> None:
        self.now, self.released = 0.0, []

    def push(self, at, kind, frame) -> None:
        self.released.append(at)


@given(st.floats(1e-3, 0.1), st.floats(0.0, 0.99), st.permutations(range(6)),
       st.lists(st.floats(0.0, 0.05), min_size=6, max_size=6))
def test_frames_reaching_the_fabric_out_of_order_still_keep_the_curve(period, jitter_share, order, gaps):
    # A CPU prefix runs on a pool of threads: a frame whose prefix overran reaches the fabric after
    # later frames did. The curve is over the releases as they come (any two at least T - J apart),
    # not over the order the app submitted them in.
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.sched.core.jobs import Frame
    from fpgashare.sched.sources.submitted import Submissions

    spec = PipelineSpec("p", "realtime", period_s=period, deadline_s=period, jitter_s=jitter_share * period)
    source, engine = Submissions(), _Engine()
    source.attach(engine)
    frames = [Frame(spec, source.arrivals.next_index("p"), 0.0, period, k) for k in range(6)]
    for k, gap in zip(order, gaps, strict=True):
        engine.now += gap
        source.arrive(frames[k])
    releases = sorted(engine.released)
    for i in range(len(releases)):
        for k in range(i + 1, len(releases)):
            assert releases[k] - releases[i] >= (k - i) * period - spec.jitter_s - 1e-9
