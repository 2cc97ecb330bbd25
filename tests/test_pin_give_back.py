"""A join that first gives pins back (runtime/sched/analysis/join.py): a partition whose pins
fill its slots still takes a newcomer the analysis admits with fewer pins, in two analysed
changes, and no admitted frame misses meanwhile."""

from __future__ import annotations

from pathlib import Path

from fpgashare.backends.model import ModelBackend
from fpgashare.backends.slot_view import sub_platform
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import Workload, realtime_spec
from fpgashare.errors import FpgashareError
from fpgashare.sched.analysis.join import join_giving_back
from fpgashare.sched.analysis.schedulability import analyse, transition_check
from fpgashare.sched.board.daemon_replay import replay
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st


def _board_of_one_slot_partitions():
    """Cameras on the PYNQ-Z2 whose first two take a one-slot partition each, with a pin there."""
    platform = load_platform("pynq-z2")
    specs = [realtime_spec("wide", ["box3x3"], 0.0622, 0.0236, [1080, 1920], platform),
             realtime_spec("small", ["erode3x3"], 0.0511, 0.0326, [480, 640], platform),
             realtime_spec("tiny", ["threshold"], 0.0586, 0.0235, [120, 160], platform)]
    return platform, specs


def test_a_newcomer_is_admitted_by_giving_a_pin_back_and_nothing_misses():
    platform, specs = _board_of_one_slot_partitions()
    workload = Workload(Path("<test>"), platform, 11, 2.0, tuple(specs))
    _, result = replay(workload, ModelBackend(platform), 2)
    assert "tiny" in result["admitted"], result["rejected"]
    assert result["totals"]["pins_given_back"] >= 1
    for name, counts in result["pipelines"].items():
        assert counts["late"] == counts["dropped"] == counts["errors"] == 0, (name, counts)
        assert counts["on_time"] > 0, (name, counts)


MODULES = ["erode3x3", "dilate3x3", "box3x3", "threshold", "sobel_x", "gauss3x3", "median3x3"]
SHAPES = [[120, 160], [240, 320], [480, 640], [720, 1280], [1080, 1920]]


@st.composite
def _sets(draw):
    """A platform cut to a few slots, pipelines in force with the most pins their analysis finds,
    and a newcomer."""
    platform = load_platform(draw(st.sampled_from(["pynq-z2", "zcu104"])))
    slots = draw(st.integers(1, len(platform.slots)))
    platform = sub_platform(platform, tuple(s.index for s in platform.slots[:slots]))
    specs = []
    for i in range(draw(st.integers(2, 4))):
        period = draw(st.floats(0.008, 0.08))
        try:
            specs.append(realtime_spec(f"p{i}", draw(st.lists(st.sampled_from(MODULES), min_size=1, max_size=2,
                                                               unique=True)),
                                       period, period * draw(st.floats(0.2, 1.0)), draw(st.sampled_from(SHAPES)),
                                       platform))
        except FpgashareError:
            assume(False)
    before, newcomer = specs[:-1], specs[-1]
    most = analyse(before, platform)                 # pins first: the most a set in force may hold
    assume(most.ok)
    return platform, before, newcomer, dict(most.contract.pinned)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_sets())
def test_the_first_step_only_gives_pins_back_and_the_second_keeps_them(case):
    """Whenever a join gives pins back: C1 is a subset of the pins in force (nothing loads before
    its switch) and passes for the set in force; C' is a superset of C1 and passes with the
    newcomer; and if C' adds pins, the set under C1 affords their loads (transition_check)."""
    platform, before, newcomer, pinned = case
    steps = join_giving_back(before, newcomer, platform, pinned, {})
    if isinstance(steps, str):
        return
    first, then = steps
    assert set(first.contract.pinned.items()) < set(pinned.items())
    assert analyse(before, platform, keep_pinned=first.contract.pinned).ok
    assert set(first.contract.pinned.items()) <= set(then.contract.pinned.items())
    assert then.ok and {p.name for p in (*before, newcomer)} == set(then.plan.loads)
    if set(then.contract.pinned.items()) - set(first.contract.pinned.items()):
        assert transition_check(before, dict(first.plan.loads), platform).ok


def test_a_pin_load_adds_no_blocking_when_no_frame_loads():
    """A pin load holds only the port: with every module pinned it cannot delay a frame, so the
    transition check of a set that loads nothing equals its plain analysis."""
    platform = load_platform("zcu104")
    cam = realtime_spec("cam", ["sobel_mag"], 0.0157, 0.00252, [480, 640], platform)
    assert transition_check([cam], {"cam": 0}, platform, port_share=2).ok
    assert not transition_check([cam], {"cam": 1}, platform, port_share=2).ok
