"""The slot model with a fused region (zcu104-x4): generated sequences of loads, load ends, frames and
resets never leave two modules in overlapping slots, evict exactly what a load's take holds, never
take a busy or loading slot, and agree with the backend about what each slot holds."""

from __future__ import annotations

import pytest
from fpgashare.backends import make_backend
from fpgashare.catalogue.platform import load_platform
from fpgashare.sched.core.demand import NeedOrder
from fpgashare.sched.core.slots import SlotManager, SlotState
from hypothesis import given, settings
from hypothesis import strategies as st

MODULES = ("fast9", "template_match", "threshold", "sobel_mag", "conv3x3")


@pytest.fixture(scope="module")
def x4():
    return load_platform("zcu104-x4")


def _check(platform, slots: SlotManager) -> None:
    occupied: dict[int, int] = {}         # slot -> the slot whose module occupies it
    for s in slots.slots:
        if s.module is None:
            continue
        for i in platform.footprint(s.index, s.module):
            assert i not in occupied, f"slots {occupied.get(i)} and {s.index} both occupy slot {i}"
            occupied[i] = s.index
            if i != s.index:
                member = slots.slots[i]
                assert member.module is None and member.host == s.index
                assert member.state is (SlotState.LOADING if s.state is SlotState.LOADING else s.state)
    for s in slots.slots:
        if s.host is not None:
            assert occupied.get(s.index) == s.host, f"slot {s.index} points at {s.host}, which does not span it"
        if s.state is SlotState.READY and s.module is not None:
            assert slots.backend.resident(s.index) == s.module


def _finish_all(slots: SlotManager, now: float) -> None:
    while slots.start_next(now) is not None:
        slots.finish(now)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("load", "run", "end", "reset")), st.sampled_from(MODULES),
                          st.integers(0, 3), st.permutations(MODULES)), max_size=40))
def test_generated_sequences_keep_the_region_whole(x4, ops):
    slots = SlotManager(make_backend("model", x4))
    busy: list[int] = []
    now = 0.0
    for op, module, pick, order in ops:
        now += 1.0
        if op == "load":
            before = [s.module for s in slots.slots]
            keep = set(busy)
            victim = slots.victim(module, NeedOrder([list(order)]), keep=keep)
            if victim is None:
                continue
            takes = set(x4.footprint(victim, module))
            slots.request(victim, module)
            for i, held in enumerate(before):
                if i in busy:
                    assert slots.slots[i].state is SlotState.BUSY, "a load took a busy slot"
                if held is not None and i != victim and any(j in takes for j in x4.footprint(i, held)):
                    assert slots.slots[i].module is None, f"slot {i}'s {held} overlaps the load and must go"
            _finish_all(slots, now)
        elif op == "run":
            ready = [s.index for s in slots.slots if s.state is SlotState.READY and s.module is not None]
            if ready:
                slot = ready[pick % len(ready)]
                slots.acquire([slot], "job")
                busy.append(slot)
        elif op == "end" and busy:
            slots.release([busy.pop(pick % len(busy))], now)
        elif op == "reset" and busy:
            slots.reset([busy.pop(pick % len(busy))], now)
        _check(x4, slots)


def test_a_fused_load_takes_every_member_and_a_member_load_evicts_it(x4):
    slots = SlotManager(make_backend("model", x4))
    (region,) = x4.fused
    host, *rest = region.slots
    order = NeedOrder([["fast9", "threshold"]])
    slots.request(rest[0], "threshold")
    _finish_all(slots, 0.0)
    assert slots.victim("fast9", order) == host
    slots.request(host, "fast9")
    assert slots.slots[rest[0]].module is None, "the member's module is evicted"
    assert all(slots.slots[i].state is SlotState.LOADING for i in region.slots)
    _finish_all(slots, 1.0)
    assert all(slots.slots[i].state is SlotState.READY for i in region.slots)
    slots.acquire([host], "frame")
    assert all(slots.slots[i].state is SlotState.BUSY for i in region.slots)
    # while fast9 runs no load may take a member; the only place for another module is outside
    outside = next(s.index for s in x4.slots if s.index not in region.slots)
    assert slots.victim("threshold", order) == outside
    with pytest.raises(RuntimeError, match="busy"):
        slots.request(rest[-1], "threshold")
    slots.release([host], 2.0)
    slots.request(rest[-1], "threshold")
    assert slots.slots[host].module is None and slots.slots[host].state is SlotState.BLANK
    assert all(slots.slots[i].host is None for i in region.slots)
