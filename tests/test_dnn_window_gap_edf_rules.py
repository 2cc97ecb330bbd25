"""The bound under edf's rules (benchmarks/dnn_window_gap.py, ``edf_rules_images``; argued in
docs/dnn-window-gap.md): edf's DNN images never exceed it on generated workloads, a plan whose
partitions do not host the DNN gets none, and on one partition each pass's unpinned copies
take slots from the tiles beside the pins."""

from __future__ import annotations

import random
from types import SimpleNamespace

from benchmarks.dnn_window_gap import analyse, dnn_fabric, dnn_seeds, quiet_gaps, unpinned_passes


def test_a_plan_that_hosts_no_dnn_gives_it_no_fabric():
    one = {"stream 0": {"slots": [0, 1], "pipelines": ["p0"], "dnn": False, "pinned": {}, "quiet": False}}
    assert dnn_fabric({"contract": one}, 2) == (0, 0, 0)
    hosts = {"stream 0": {**one["stream 0"], "dnn": True, "pinned": {"0": "erode3x3"}}}
    assert dnn_fabric({"contract": hosts}, 2) == (2, 0, 1)


def _frame(name: str, release: float, passes: list[tuple[float, float]], modules: list[tuple[str, ...]]):
    return SimpleNamespace(release=release, streamed=passes,
                           pipeline=SimpleNamespace(name=name, pass_modules=modules))


def test_unpinned_copies_are_counted_beside_the_pins_unless_an_evictor_may_hold_a_pin():
    contract = {"stream 0": {"slots": [0, 1, 2], "dnn": True, "pinned": {"0": "a", "1": "b"},
                             "evictors": {"e": 1}}}
    frames = [_frame("p", 0.0, [(0.001, 0.002)], [("a", "c", "c")]),
              _frame("e", 0.010, [(0.011, 0.012)], [("d",)]),
              _frame("q", 0.020, [(0.030, 0.031)], [("b", "d")])]
    engine = SimpleNamespace(frames=frames)
    # p: c twice, no pin (2); e: d while it may hold b's slot (1 - 1); q: d, the evictor long done
    passes = unpinned_passes({"contract": contract}, engine, slots=3, load_s=1e-3)
    assert passes == [(0.001, 0.002, 2), (0.011, 0.012, 0), (0.030, 0.031, 1)]


def test_a_quiet_gap_ends_at_every_release_even_one_that_streams_at_once():
    # a lent pin is back by the earliest next release (pin_lend.back_by), waiting frame or not
    frames = [_frame("p", 0.004, [(0.005, 0.006)], [("a",)]), _frame("q", 0.010, [(0.010, 0.011)], [("a",)])]
    engine = SimpleNamespace(frames=frames)
    assert quiet_gaps(engine, 0.02) == [(0.0, 0.004), (0.005, 0.010), (0.010, 0.02)]


def test_edf_never_runs_more_images_than_the_bound_under_its_rules(fresh_seed):
    # 210728935: a pin lend in the last quiet gap, which ends at the run's end, not at a release
    first = random.Random(fresh_seed).randrange(1, 10**9)
    for seed in [210728935, *dnn_seeds(first, 4)]:
        row = analyse(seed)
        assert row["run_images"] <= row["edf_rules_images"], (fresh_seed, seed, row)
        assert (row["run_images"] == 0) == (row["why_none"] is not None), (fresh_seed, seed, row)
