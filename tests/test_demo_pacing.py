"""The example apps pace their frames on the camera's frame grid of the daemon's clock: whenever an
app starts, its frames go out at multiples of its period, so apps reading one camera at periods that
divide each other release together (what keeps the demo's chains' frames adjacent in the schedule)."""

from __future__ import annotations

import math

import pytest
from fpgashare.apps._common import Pacer, on_grid
from fpgashare.errors import FpgashareError
from hypothesis import given
from hypothesis import strategies as st

periods = st.sampled_from([1 / 120, 1 / 60, 1 / 30, 1 / 25, 1 / 15, 0.1, 1.0])
starts = st.floats(min_value=0.0, max_value=1e4, allow_nan=False, allow_infinity=False)


class FakeFpga:
    """The daemon's clock as an app sees it: ``clock`` reads it, ``sleep_until`` records the wake-ups."""

    def __init__(self, now: float) -> None:
        self.now, self.wakes = now, []

    def clock(self) -> float:
        return self.now

    def sleep_until(self, t: float) -> None:
        self.wakes.append(t)
        self.now = max(self.now, t)


@given(starts, periods)
def test_the_first_frame_goes_out_at_the_next_grid_point(start, period):
    t0 = on_grid(start, period)
    assert start - 1e-9 <= t0 < start + period
    assert math.isclose(t0 / period, round(t0 / period), abs_tol=1e-6)


@given(starts, periods, st.integers(1, 4), st.floats(0.0, 10.0))
def test_apps_at_divisible_rates_release_together(start, period, ratio, later):
    """A reader at ``ratio`` times the rate, started any time later, releases a frame at every
    release of the slower reader from its own first one on."""
    slow, fast = FakeFpga(start), FakeFpga(start + later)
    slow_pacer, fast_pacer = Pacer(slow, period), Pacer(fast, period / ratio)
    for _ in range(6):
        slow_pacer.wait()
    for _ in range(6 * ratio + int(later / period + 2) * ratio):
        fast_pacer.wait()
    for t in slow.wakes:
        if t >= fast.wakes[0]:
            assert any(math.isclose(t, f, rel_tol=1e-9, abs_tol=1e-9) for f in fast.wakes)


def test_a_period_must_be_positive():
    with pytest.raises(FpgashareError, match="period"):
        on_grid(1.0, 0.0)
