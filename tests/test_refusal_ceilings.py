"""benchmarks/refusal_ceilings.py measures the analysis with one term removed by putting stand-ins
in place of the analysis' functions: each stand-in must take every parameter of the function it
replaces, or a caller that passes one (a hold budget's re-test, say) stops the benchmark."""

from __future__ import annotations

import inspect

import pytest
from fpgashare.sched.analysis import evicting_pins, processor_demand, schedulability

from benchmarks import refusal_ceilings

STAND_INS = [
    (refusal_ceilings._no_blocking, processor_demand.release_test),
    (refusal_ceilings._committed_before_release, processor_demand.release_test),
    (refusal_ceilings._remembered_arrays, schedulability._arrays),
    (refusal_ceilings._no_put_back, evicting_pins._plan),
]


@pytest.mark.parametrize(("stand_in", "replaced"), STAND_INS, ids=lambda f: getattr(f, "__name__", ""))
def test_a_stand_in_takes_every_parameter_of_what_it_replaces(stand_in, replaced):
    """As many parameters, in the same places; those with a default (which callers may pass by
    name) under the same names."""
    theirs = list(inspect.signature(replaced).parameters.values())
    ours = list(inspect.signature(stand_in).parameters.values())
    assert len(ours) == len(theirs), f"{stand_in.__name__} takes {ours}, {replaced.__name__} takes {theirs}"
    for mine, their in zip(ours, theirs, strict=True):
        if their.default is not inspect.Parameter.empty:
            assert mine.name == their.name, (stand_in.__name__, mine.name, replaced.__name__, their.name)
