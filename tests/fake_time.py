"""The host's monotonic time for the tests that drive a daemon's wall clock: a reading the test
moves (wall seconds), handed to ``WallClock`` as its time source."""

from __future__ import annotations


class FakeTime:
    """The host's monotonic time (wall seconds), moved by the test (and by what it simulates)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t
