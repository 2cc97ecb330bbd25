"""Whether a pending frame is certainly the next job at the end of the one on the stream
(runtime/sched/policies/certainly_next.py), the ground pin moves and early takes stand on: nothing
pending, and nothing any pipeline could release by then, comes before it in EDF order."""

from __future__ import annotations

from types import SimpleNamespace

from fpgashare.sched.policies.certainly_next import next_at


def _frame(deadline: float, seq: int):
    return SimpleNamespace(deadline=deadline, seq=seq)


def _engine(pending, releases: dict[str, tuple[float, float]]):
    """A stand-in with what ``next_at`` reads: pending frames, each pipeline's next release and
    relative deadline."""
    pipes = [SimpleNamespace(name=n, deadline_s=d) for n, (_, d) in releases.items()]
    foresight = SimpleNamespace(next_release_s=lambda p: releases[p.name][0])
    return SimpleNamespace(pending=pending, pipelines=pipes, running={}, foresight=foresight)


def test_a_frame_is_next_only_if_nothing_released_by_then_comes_first():
    f = _frame(0.020, 5)
    # Nothing else pending; the other pipeline's next frame comes after the stream frees: certain.
    assert next_at(_engine([f], {"a": (0.030, 0.010)}), f, end=0.012)
    # It could be released before the stream frees with an earlier deadline: not certain.
    assert not next_at(_engine([f], {"a": (0.011, 0.005)}), f, end=0.012)
    # Released in time but with a later deadline: F still goes first.
    assert next_at(_engine([f], {"a": (0.011, 0.015)}), f, end=0.012)
    # A pending frame ahead of it in EDF order.
    assert not next_at(_engine([f, _frame(0.019, 9)], {}), f, end=0.012)
