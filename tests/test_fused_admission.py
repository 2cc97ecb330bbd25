"""The analysis counts a fused region as one resource: a module spanning it takes every member, so
placements (chain passes, pins, the slots left beside pins) keep footprints disjoint, checked
against brute force on generated module sets; and generated zcu104-x4 workloads that use the fused
modules, once admitted, never miss on the twin."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

from fpgashare.backends.model import ModelBackend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.fused_fit import match_footprints
from fpgashare.catalogue.passes import fits, split_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.residency import residency, slot_compatibility
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.workload_gen import random_workload

X4 = load_platform("zcu104-x4")
MODULES = ("fast9", "template_match", "threshold", "sobel_mag", "conv3x3", "median3x3")


def _brute_force(modules: list[str]) -> bool:
    ok = slot_compatibility(X4)
    for slots in itertools.permutations(range(len(X4.slots)), len(modules)):
        if not all(ok(s, m) for s, m in zip(slots, modules, strict=True)):
            continue
        covered = [i for s, m in zip(slots, modules, strict=True) for i in X4.footprint(s, m)]
        if len(covered) == len(set(covered)):
            return True
    return False


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(MODULES), min_size=1, max_size=4))
def test_placements_keep_footprints_disjoint_and_miss_none(modules):
    placed = match_footprints(modules, [s.index for s in X4.slots], slot_compatibility(X4), X4)
    assert (placed is not None) == _brute_force(modules) == fits(modules, X4)
    if placed is not None:
        assert sorted(placed.values()) == sorted(modules)
        covered = [i for s, m in placed.items() for i in X4.footprint(s, m)]
        assert len(covered) == len(set(covered))


def test_a_fused_module_leaves_one_slot_beside_it():
    assert fits(["fast9", "threshold"], X4) and not fits(["fast9", "threshold", "sobel_mag"], X4)
    assert not fits(["fast9", "template_match"], X4)
    chain = resolve_chain(["gauss3x3", "fast9", "threshold"], {})
    assert len(split_chain(chain, 480, 640, X4)) == 2, "the three stages do not fit the fabric at once"
    corners = realtime_spec("corners", ["fast9"], 0.030, 0.030, [480, 640], X4)
    pair = realtime_spec("pair", ["threshold", "sobel_mag"], 0.030, 0.030, [480, 640], X4)
    # fast9 pinned takes the region: the pair's two stages do not fit the one slot left
    assert isinstance(residency([corners, pair], X4, Counter({"fast9": 1})), str)
    plan = residency([corners, pair], X4, Counter({"threshold": 1}))
    assert not isinstance(plan, str)
    verdict = analyse([corners, pair], X4)
    assert verdict.ok
    pinned = verdict.contract.pinned
    covered = [i for s, m in pinned.items() for i in X4.footprint(s, m)]
    assert len(covered) == len(set(covered))
    # L, the longest load the blocking counts, is the region's partial
    host = X4.fused[0].host
    assert verdict.contract.load_s >= X4.slot_load_seconds(host, "fast9") > X4.slot_load_seconds(0, "threshold")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_admitted_workloads_with_fused_modules_never_miss(seed):
    workload = random_workload(seed, "zcu104-x4", max_s=4.0, dnn=False)
    admission = admit(workload)
    kept = {p.name for p in admission.admitted}
    admitted = replace(workload, pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in kept))
    engine, summary = run_workload(admitted, ModelBackend(workload.platform), EdfPolicy(),
                                   contract=admission.contract)
    for name, p in summary["pipelines"].items():
        assert p["on_time"] == p["submitted"], f"seed {seed}: admitted {name} missed: {p}"
    assert all(f.outcome is not None for f in engine.frames)
