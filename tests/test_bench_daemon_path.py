"""``fpgashare bench`` reports what users get: the workload replayed as the daemon sees it, beside
the offline plan (runtime/sched/board/daemon_replay.py)."""

from __future__ import annotations

import pytest
from fpgashare.catalogue.workload import load_workload
from fpgashare.cli.bench import bench


@pytest.mark.parametrize("suite", ["nh_720p60_zcu104", "multicam_pynq_z2", "dnn_backfill_zcu104"])
def test_bench_prints_the_daemon_path_beside_the_offline_plan(suite):
    report = bench(suite, ["edf"])
    online, [offline] = report["daemon_path"], report["results"]
    assert online["scheduler"] == "edf (daemon path)" and offline["scheduler"] == "edf"
    workload = load_workload(suite)
    realtime = {p.name for p in workload.pipelines if p.realtime}
    # Every real-time pipeline is admitted or refused with a reason, on each path.
    for r in (online, offline):
        assert set(r["admitted"]) | {x["name"] for x in r["rejected"]} == realtime
        assert all(x["reason"] for x in r["rejected"])
    for name, p in online["pipelines"].items():
        assert p["late"] == p["dropped"] == p["errors"] == 0, (name, p)
        assert p["on_time"] == p["submitted"] > 0
    only = bench(suite, ["edf"], plan="offline")
    assert [r["scheduler"] for r in only["results"]] == ["edf"] and "daemon_path" not in only
    assert only["results"][0]["admitted"] == offline["admitted"]


def test_the_daemon_path_keeps_the_dnn_fed_where_it_has_a_partition():
    report = bench("dnn_backfill_zcu104", ["edf"], plan="online")
    online = report["daemon_path"]
    assert report["results"] == []
    assert online["totals"]["dnn_images_per_s"] > 0


def test_a_bad_plan_is_refused_by_name():
    from fpgashare.errors import FpgashareError

    with pytest.raises(FpgashareError, match="--plan 'sometimes'"):
        bench("nh_720p60_zcu104", ["edf"], plan="sometimes")
