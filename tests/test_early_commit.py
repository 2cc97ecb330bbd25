# ruff: noqa: N806  (the analysis's names: L, J, D, P)
"""Frames committed before their known release (runtime/sched/analysis/early_commit.py): the shift
each pipeline may take, that the plain contract is kept wherever it admits, and, on generated
workloads admitted only with early frames, that every frame ends by its earliest deadline, streams
only once it has come, and nothing admitted misses over 25 hyperperiods with fresh jitter."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from fpgashare.backends.model import ModelBackend
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.sched.analysis.admission import admit
from fpgashare.sched.analysis.early_commit import early_shifts, shifted
from fpgashare.sched.analysis.evicting_pins import analyse_evicting
from fpgashare.sched.analysis.schedulability import analyse
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.sources.periodic import run_workload

from benchmarks.limit_gap import small_workload


def _spec(name, chain, period, deadline, jitter=0.0, offset=0.0, plat="pynq-z2"):
    spec = realtime_spec(name, chain, period, deadline, [240, 320], load_platform(plat), jitter_s=jitter)
    return replace(spec, offset_s=offset)


def test_shift_is_the_loads_less_the_jitter_and_never_before_the_offset():
    L = 0.0015
    a = _spec("a", ["sobel_mag", "threshold"], 0.02, 0.02, jitter=0.0005, offset=0.01)
    b = _spec("b", ["conv3x3"], 0.02, 0.02, jitter=0.0, offset=0.001)      # offset caps the shift
    c = _spec("c", ["dilate3x3"], 0.02, 0.02, jitter=0.002, offset=0.01)   # jitter outlasts its load
    d = _spec("d", ["erode3x3"], 0.02, 0.02, offset=0.01)                   # nothing to load
    pipelines = [a, b, c, d]
    loads = {"a": 2, "b": 1, "c": 1, "d": 0}
    J = np.array([p.jitter_s for p in pipelines])
    got = early_shifts(pipelines, loads, L, J)
    assert got == pytest.approx([2 * L - 0.0005, 0.001, 0.0, 0.0])


def test_shifted_model_moves_release_and_deadline_and_drops_jitter():
    D, J, P = np.array([0.01, 0.02]), np.array([0.0005, 0.001]), np.array([0.005, 0.0])
    D2, J2, P2 = shifted(D, J, P, np.array([0.002, 0.0]))
    assert D2 == pytest.approx([0.012, 0.02])
    assert J2 == pytest.approx([0.0, 0.001])
    assert P2 == pytest.approx([0.003, 0.0])


def _early_workloads(first_seed: int, wanted: int, scan: int = 400):
    """Generated workloads (limit_gap's small ones) that admission takes only with early frames."""
    found = []
    for seed in range(first_seed, first_seed + scan):
        workload = small_workload(seed)
        admission = admit(workload, phased=True)
        if admission.contract.early:
            found.append((workload, admission))
            if len(found) == wanted:
                break
    return found


def test_early_frames_only_where_the_other_tests_refuse():
    rng = random.Random(20_211)
    for _ in range(150):
        workload = small_workload(rng.randrange(1, 10**9))
        rt = [p for p in workload.pipelines if p.realtime]
        plain = analyse(rt, workload.platform, phased=True)
        if plain.ok:              # the early test only adds: whatever passes as is passes with it
            assert analyse(rt, workload.platform, phased=True, early_commit=True).ok
        admission = admit(workload, phased=True)
        if admission.contract.early:
            assert not analyse(admission.admitted, workload.platform, phased=True).ok
            assert not analyse_evicting(admission.admitted, workload.platform, phased=True).ok
            assert not admission.contract.pinned_first
            for name, shift in admission.contract.early.items():    # its own loads less its jitter
                p = next(q for q in admission.admitted if q.name == name)
                own = admission.verdict.plan.loads[name] - admission.contract.evictors.get(name, 0)
                assert 0.0 < shift <= own * admission.contract.load_s - p.jitter_s + 1e-12
                assert shift <= p.offset_s + 1e-12


def test_admitted_early_frames_meet_their_earliest_deadline_and_stream_after_they_come():
    rng = random.Random(77_031)
    cases = _early_workloads(rng.randrange(1, 10**8), wanted=5)
    assert cases, "no generated workload needed early frames: widen the scan"
    early_frames = 0
    for workload, admission in cases:
        kept = {p.name for p in admission.admitted}
        for run in range(2):                # fresh jitter: the workload's seed draws it
            w = replace(workload, seed=rng.randrange(1, 10**9), duration_s=workload.duration_s * 25,
                        pipelines=tuple(p for p in workload.pipelines if not p.realtime or p.name in kept))
            engine, summary = run_workload(w, ModelBackend(w.platform), EdfPolicy(), contract=admission.contract)
            for name in kept:
                got = summary["pipelines"][name]
                assert got["late"] == got["dropped"] == got["errors"] == 0, (workload.seed, run, name)
            for frame in engine.frames:
                if frame.arrives is None:
                    continue
                early_frames += 1
                nominal = frame.deadline - frame.pipeline.deadline_s
                shift = admission.contract.early[frame.pipeline.name]
                assert frame.release == pytest.approx(nominal - shift)     # pending from a − δ
                assert nominal - 1e-12 <= frame.arrives <= nominal + frame.pipeline.jitter_s + 1e-9
                assert frame.streamed[0][0] >= frame.arrives - 1e-12      # streams once it has come
                assert frame.end <= frame.deadline + 1e-9                  # by its earliest deadline
    assert early_frames > 0
