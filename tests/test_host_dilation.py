"""The simulated board's dilation chosen from the host's measured cost (runtime/daemon/host_dilation.py):
on generated host costs, the dilation chosen is one the daemon's admission takes the demo's apps
whole at with the host ``safety`` times slower, and the ladder's step below it is not; the host
terms scale as cost / dilation; a free host keeps the floor. Virtual clocks and the board's model:
no RTL, no wall-clock timing."""

from __future__ import annotations

import random

import pytest
from fpgashare.cli.demo import APPS, DEMO_DILATION, DEMO_SIZE, DEMO_STREAMS, app_specs, demo_platform
from fpgashare.daemon.host_dilation import STEP, choose_dilation, refusal_at
from fpgashare.sched.host.host_cost import FREE, HostCost


@pytest.fixture(scope="module")
def demo_board(tmp_path_factory):
    platform = demo_platform("zcu104-x4", APPS, tmp_path_factory.mktemp("platform"))
    return platform, app_specs(APPS, DEMO_SIZE, platform)


def _host_cost(rng: random.Random) -> HostCost:
    """A host between a fast idle machine and a badly loaded one (log-uniform per frame, 10 us to
    10 ms of the daemon's work a frame; copies and loads in proportion, with their own spread)."""
    per_frame = 10 ** rng.uniform(-5, -2)
    return HostCost(per_frame, per_frame * 10 ** rng.uniform(-7, -5.5), per_frame * 10 ** rng.uniform(-2, 0),
                    per_frame * rng.uniform(0.5, 2.0))


def test_the_chosen_dilation_is_the_least_on_its_ladder_that_admission_takes(demo_board, fresh_seed):
    platform, specs = demo_board
    seed = fresh_seed
    rng = random.Random(seed)
    for _ in range(6):
        cost = _host_cost(rng)
        choice = choose_dilation(platform, specs, cost, DEMO_DILATION, DEMO_STREAMS)
        slower = cost.scaled(choice.safety)
        assert choice.dilation >= DEMO_DILATION, seed
        if choice.admitted:
            assert refusal_at(platform, specs, slower, choice.dilation, DEMO_STREAMS) is None, (seed, cost)
        if choice.dilation > DEMO_DILATION:       # the step below was refused, and the reason says why
            assert refusal_at(platform, specs, slower, choice.dilation / STEP, DEMO_STREAMS), (seed, cost)
            assert choice.refusal_at_floor and choice.refusal_at_floor in choice.reason
        else:
            assert choice.refusal_at_floor is None and "floor" in choice.reason
        assert choice.summary()["wall_s_per_board_s"] == pytest.approx(choice.dilation, rel=1e-3)


def test_the_host_terms_scale_as_cost_over_dilation(demo_board, fresh_seed):
    """Admitting the cost times k at dilation d is admitting the cost at d / k: the safety factor's
    argument (host_dilation.py's docstring)."""
    platform, specs = demo_board
    seed = fresh_seed
    rng = random.Random(seed)
    for _ in range(6):
        cost, k, d = _host_cost(rng), rng.uniform(1.5, 6.0), 10 ** rng.uniform(0, 2)
        plain = refusal_at(platform, specs, cost, d, DEMO_STREAMS)
        scaled = refusal_at(platform, specs, cost.scaled(k), d * k, DEMO_STREAMS)
        assert (plain is None) == (scaled is None), (seed, cost, k, d, plain, scaled)


def test_a_free_host_keeps_the_floor_and_a_hopeless_one_says_so(demo_board):
    platform, specs = demo_board
    free = choose_dilation(platform, specs, FREE, DEMO_DILATION, DEMO_STREAMS)
    assert free.dilation == DEMO_DILATION and free.admitted
    hopeless = HostCost(0.05, 0.0, 0.0, 0.05)       # 50 ms of the daemon's work per frame
    choice = choose_dilation(platform, specs, hopeless, DEMO_DILATION, DEMO_STREAMS, max_steps=3)
    assert not choice.admitted and choice.dilation == pytest.approx(DEMO_DILATION * STEP ** 3)
    assert "not even" in choice.reason and "the host" in choice.reason


def test_a_slower_host_never_gets_a_lower_dilation_than_a_fast_one_needs_at_the_floor(demo_board):
    """Many times the host's cost needs a higher dilation than the floor: the mechanism reacts to load."""
    platform, specs = demo_board
    fast = HostCost(2e-4, 1.5e-10, 3e-5, 2e-4)      # a quiet two-core host's measure, margin included
    loaded = fast.scaled(8.0)
    assert choose_dilation(platform, specs, fast, DEMO_DILATION, DEMO_STREAMS).dilation == DEMO_DILATION
    slow = choose_dilation(platform, specs, loaded, DEMO_DILATION, DEMO_STREAMS)
    assert slow.admitted and slow.dilation > DEMO_DILATION


def test_bad_floors_and_safeties_are_refused(demo_board):
    platform, specs = demo_board
    with pytest.raises(ValueError, match="floor"):
        choose_dilation(platform, specs, FREE, 0.5)
    with pytest.raises(ValueError, match="safety"):
        choose_dilation(platform, specs, FREE, 8.0, safety=float("nan"))


def test_the_hosts_preemption_is_a_block_never_less_than_measured(fresh_seed):
    """The demo counts how late the process wakes (the loop preempted) as the loop's block: raised to
    it times the margin, never lowered, the other terms kept."""
    from fpgashare.daemon.host_calibration import measure_wake_lateness, with_wake_lateness

    seed = fresh_seed
    rng = random.Random(seed)
    for _ in range(50):
        cost, lateness, margin = _host_cost(rng), 10 ** rng.uniform(-6, -1), rng.uniform(1.0, 3.0)
        raised = with_wake_lateness(cost, lateness, margin)
        assert raised.block_s == max(cost.block_s, lateness * margin), seed
        assert (raised.per_frame_s, raised.per_byte_s, raised.per_load_s) == \
            (cost.per_frame_s, cost.per_byte_s, cost.per_load_s)
    lateness = measure_wake_lateness(samples=5, sleep_s=1e-4)
    assert 0.0 <= lateness < float("inf")
