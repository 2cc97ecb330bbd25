"""Whether a backend runs in real time is part of its contract (``Backend.runs_in_real_time``):
every backend says so itself, a partition's view says what its board says, and the daemon asks
that property, never the backend's name (tests/test_layers.py keeps names out of the tests)."""

from __future__ import annotations

import pytest
from fpgashare.backends import BACKENDS, backend_class, make_backend
from fpgashare.backends.base import Backend
from fpgashare.backends.model import ModelBackend
from fpgashare.backends.slot_view import SlotView
from fpgashare.daemon.runner import calibrate_dilation


@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_says_whether_it_runs_in_real_time(name):
    cls = backend_class(name)
    declared = next((k.__dict__["runs_in_real_time"] for k in cls.__mro__ if "runs_in_real_time" in k.__dict__),
                    None)
    assert isinstance(declared, bool), f"the {name} backend does not say whether it runs in real time"
    assert "runs_in_real_time" not in Backend.__dict__, "the contract must not decide it for a backend"


@pytest.mark.parametrize("real", [False, True])
def test_a_partition_runs_in_real_time_as_its_board_does(zcu104, real):
    board = make_backend("model", zcu104)
    board.runs_in_real_time = real
    view = SlotView(board, [s.index for s in zcu104.slots][:2])
    assert view.runs_in_real_time is real


class _Untouchable(ModelBackend):
    """A board in real time that fails any operation: its dilation must come from the property."""

    runs_in_real_time = True

    def load(self, slot, module):
        raise AssertionError("a backend that runs in real time needs no calibration")

    def run_frame(self, *args, **kwargs):
        raise AssertionError("a backend that runs in real time needs no calibration")


def test_a_backend_in_real_time_is_not_dilated(zcu104):
    assert calibrate_dilation(_Untouchable(zcu104)) == 1.0


def test_a_simulated_backend_is_calibrated_and_never_faster_than_its_hardware(zcu104):
    board = make_backend("model", zcu104)
    assert calibrate_dilation(board) >= 1.0
    assert board.resident(0) == "threshold"      # it was measured: one load into slot 0


class _ColdFirstCall(ModelBackend):
    """A simulated board whose first frame pays a one-off cost (imports, caches) on a virtual clock."""

    def __init__(self, platform, clock):
        super().__init__(platform)
        self.clock, self.frames = clock, 0

    def run_frame(self, *args, **kwargs):
        self.frames += 1
        self.clock[0] += 1.0 if self.frames == 1 else 0.0        # one cold second, then no wall time
        return super().run_frame(*args, **kwargs)


def test_a_first_calls_one_off_cost_is_not_taken_for_the_backends_speed(zcu104, monkeypatch):
    import fpgashare.daemon.runner as runner

    clock = [0.0]
    monkeypatch.setattr(runner.time, "perf_counter", lambda: clock[0])
    assert calibrate_dilation(_ColdFirstCall(zcu104, clock)) == 1.0
