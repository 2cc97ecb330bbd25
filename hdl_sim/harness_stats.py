"""What the bulk harness reports of a run: a whole ``fs_run`` call's counts, and one armed
channel's (a stream or the configuration port), in harness cycles."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunStats:
    """What one fs_run call saw."""

    cycles: int
    sent: int
    received: int
    extra_out: int
    tlast_errors: int
    tuser_errors: int
    cfg_sent: int
    cfg_end_cycle: int
    out_end_cycle: int

    @property
    def finished(self) -> bool:
        return self.cycles >= 0


#: Channel index of the configuration port in the harness (streams are 0..15).
PORT_CHANNEL = 16


@dataclass(frozen=True)
class ChannelStats:
    """What one armed channel saw, in absolute harness cycles."""

    sent: int
    received: int
    extra_out: int
    tlast_errors: int
    tuser_errors: int
    start: int
    last_word: int      #: the last output word (the port: the last bitstream word)
    end: int            #: done: settle (the port: activation) cycles after that
