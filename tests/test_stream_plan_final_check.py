"""The partitioned plan with known phases (runtime/sched/board/stream_plan.py) never fails its own
final check: a partition admitted while the port was counted shared by more partitions (the DNN's
own stream still to come) is checked again with the partitions that do load, and that check must
pass whatever test admitted the partition (plain, evicting, pinned-first, frames committed early).
A failure there is a RuntimeError out of ``plan_streams``: ``fpgashare bench --streams`` and
``admission_soundness --streams --phased`` stop on the workload instead of running it."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.cli.bench import run_one
from fpgashare.sched.board.stream_plan import plan_streams

from benchmarks.limit_gap import small_workload


def _with_dnn(seed: int):
    workload = small_workload(seed, max_pipelines=6)
    if "dnn_tile" in workload.platform.modules and not any(not p.realtime for p in workload.pipelines):
        workload = replace(workload, pipelines=(*workload.pipelines,
                                                PipelineSpec("dnn", "besteffort", model="digits_cnn")))
    return workload


def _plan_or_fail(workload, streams: int):
    try:
        return plan_streams(workload, streams, phased=True, spare_stream=True)
    except RuntimeError as exc:
        pytest.fail(f"{workload.path} on {streams} streams: {exc}")


@pytest.mark.parametrize("seed", [840164, 840374])
def test_a_partition_admitted_with_a_wider_port_share_passes_the_final_check(seed):
    # Found by a generated search: pipelines on the PYNQ-Z2's two slots with a DNN; the last one
    # admitted passes only with a frame committed before its release when the port is counted
    # shared by two partitions (the longer L allows the longer shift), and not with one.
    workload = _with_dnn(seed)
    plan = _plan_or_fail(workload, 2)
    for part in plan.partitions:
        assert part.verdict is None or part.verdict.ok
    # The partition keeps the verdict of the wider share (its loads counted longer, its early
    # frames' lead sized with them): the bench's run of the plan misses nothing.
    _, result = run_one(replace(workload, duration_s=workload.duration_s * 10), "edf", "model", streams=2)
    assert sorted(result["admitted"]) == sorted(p.name for p in plan.admitted)
    for name in result["admitted"]:
        q = result["pipelines"][name]
        assert q["submitted"] and q["on_time"] == q["submitted"], (name, q)


def test_generated_plans_pass_their_final_check(fresh_seed):
    rng = random.Random(fresh_seed)
    for _ in range(12):
        seed = rng.randrange(1, 10**9)
        workload = _with_dnn(seed)
        if workload.platform.streams < 2:
            continue
        streams = random.Random(seed).randint(2, workload.platform.streams)
        plan = _plan_or_fail(workload, streams)
        for part in plan.partitions:
            assert part.verdict is None or part.verdict.ok, (fresh_seed, seed, part.stream, part.verdict.reason)
