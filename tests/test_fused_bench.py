"""``fpgashare bench`` on small generated zcu104-x4 workloads whose real-time pipelines use the fused
region's modules (fast9, template_match): edf admits them and every admitted frame is on time, in the
offline plan and on the daemon's path."""

from __future__ import annotations

import json
import random

from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.workload import realtime_spec
from fpgashare.cli.main import main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

X4 = load_platform("zcu104-x4")
SMALL = ("threshold", "sobel_mag", "gauss3x3", "erode3x3", "downscale2x")


def _workload(seed: int) -> str:
    """Two or three pipelines: one with a fused module (and a one-slot stage or not), the others
    one-slot chains; frames 120x160..480x640, periods 40-100 ms, deadlines at least twice the
    chain's stream time plus a fused load. The fused pipeline registers first: the daemon keeps the
    pins in force when a later pipeline registers, and pins in the region's slots leave a later
    fused pipeline no room (docs/fused-slots.md, limits)."""
    rng = random.Random(seed)
    lines = ['platform = "zcu104-x4"', f"seed = {seed}", "duration_s = 1.5", ""]
    fused_load_s = X4.slot_load_seconds(X4.fused[0].host)
    for i in range(rng.randint(2, 3)):
        if i == 0:
            chain = [rng.choice(["fast9", "template_match"])]
            if rng.random() < 0.5:
                chain.insert(0, rng.choice(SMALL))
        else:
            chain = rng.sample(SMALL, rng.randint(1, 2))
        rows, cols = rng.choice([(120, 160), (240, 320), (480, 640)])
        period = rng.randint(40, 100)
        probe = realtime_spec("probe", chain, period / 1e3, period / 1e3, [rows, cols], X4)
        deadline = max(2 * probe.exec_s + 2 * fused_load_s, period * rng.uniform(0.6, 1.0) / 1e3) * 1e3
        stages = ", ".join(f'"{s}"' for s in chain)
        lines += ["[[pipeline]]", f'name = "p{i}"', 'class = "realtime"', f"period_ms = {period}",
                  f"deadline_ms = {min(deadline, period):.3f}", f"frame = [{rows}, {cols}]", f"stages = [{stages}]",
                  f"offset_ms = {1.0 + i + rng.uniform(0, 5):.1f}", ""]
    return "\n".join(lines)


@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**9))
def test_bench_runs_fused_workloads_without_a_miss(tmp_path, capsys, seed):
    path = tmp_path / f"fused_{seed}.toml"
    path.write_text(_workload(seed))
    assert main(["bench", str(path), "--scheduler", "edf", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for result in (report["results"][0], report["daemon_path"]):
        assert "p0" in result["admitted"] or result["rejected"], result
        for name in result["admitted"]:
            p = result["pipelines"][name]
            assert p["on_time"] == p["submitted"] > 0, f"seed {seed}: {name} missed: {p}"
    assert "p0" in report["results"][0]["admitted"], "the fused pipeline alone-ish fits: it must be admitted"
