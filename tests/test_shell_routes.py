"""Stream routes in software (runtime/backends/shell_map.py): a set of routes that would share a slot between
streams, name a stream or slot the shell lacks, or hold a slot twice is refused before any register
is written; the words ``route`` writes carry exactly the chains asked for, one stream's route never
disturbs another's, and with one stream the writes are the single-stream shell's, word for word."""

from __future__ import annotations

import re

import pytest
from fpgashare.backends.shell_map import (
    REG_ROUTE_OUT,
    ROUTE_ENABLE,
    RouteError,
    ShellControl,
    check_routes,
    route_out_reg,
    route_word,
    slot_reg,
)
from hypothesis import given, settings
from hypothesis import strategies as st


class RecordingShell(ShellControl):
    """Registers as a dict, every write logged; route writes go through the rule the RTL route
    table applies (hdl_sim/rtl/route_table.sv), so a write the shell would refuse fails here."""

    def __init__(self, slots: int, streams: int) -> None:
        self.slot_count, self.stream_count = slots, streams
        self.words: dict[int, int] = {}
        self.log: list[tuple[int, int]] = []

    def _sink(self, index: int) -> tuple[bool, int] | None:
        """(is a slot, slot or stream) of a route register, None for other registers."""
        for k in range(self.slot_count):
            if index == slot_reg(k, 1):
                return True, k
        for s in range(self.stream_count):
            if index == route_out_reg(s, self.slot_count):
                return False, s
        return None

    def _owner(self, is_slot: bool, n: int, word: int) -> int:
        return (word >> 8) & 7 if is_slot else n

    def shell_write(self, index: int, value: int) -> None:
        self.log.append((index, value))
        sink = self._sink(index)
        if sink is not None and value & ROUTE_ENABLE:
            is_slot, n = sink
            stream, src = self._owner(is_slot, n, value), value & 0xF
            assert stream < self.stream_count, f"the shell would refuse {value:#x}: stream {stream}"
            if 1 <= src <= self.slot_count:
                before = self.words.get(slot_reg(src - 1, 1), 0)
                assert not (before & ROUTE_ENABLE) or (before >> 8) & 7 == stream, "takes another stream's slot"
            if is_slot:
                for other, word in self.words.items():
                    o = self._sink(other)
                    if o and other != index and word & ROUTE_ENABLE and word & 0xF == n + 1:
                        assert self._owner(*o, word) == stream, "feeds another stream's sink"
        self.words[index] = value

    def module_write(self, slot: int, index: int, value: int) -> int:
        return 0

    def module_read(self, slot: int, index: int) -> tuple[int, int]:
        return 0, 0

    def chain_of(self, stream: int) -> list[int]:
        """Decode a stream's chain from the registers, from its output back to its input."""
        word = self.words.get(route_out_reg(stream, self.slot_count), 0)
        assert word & ROUTE_ENABLE, f"stream {stream}'s output is not routed"
        chain, src = [], word & 0xF
        while src:
            slot = src - 1
            chain.append(slot)
            word = self.words.get(slot_reg(slot, 1), 0)
            assert word & ROUTE_ENABLE and (word >> 8) & 7 == stream, f"slot {slot} not in stream {stream}"
            src = word & 0xF
            assert len(chain) <= self.slot_count, "a loop in the routes"
        return chain[::-1]


@pytest.mark.parametrize(
    ("routes", "streams", "slots", "expected"),
    [
        ({0: [0, 1], 1: [1, 2]}, 2, 4, "slot 1 is in the routes of streams 0 and 1"),
        ({0: [3], 2: [3]}, 4, 4, "slot 3 is in the routes of streams 0 and 2"),
        ({2: [0]}, 2, 4, "route for stream 2: the shell has 2 stream(s), 0..1"),
        ({-1: [0]}, 2, 4, "route for stream -1"),
        ({1: [0]}, 1, 2, "route for stream 1: the shell has 1 stream(s), 0..0"),
        ({0: [0, 4]}, 2, 4, "stream 0's route [0, 4] names slot 4; the shell has slots 0..3"),
        ({0: [-1]}, 1, 2, "stream 0's route [-1] names slot -1; the shell has slots 0..1"),
        ({1: [2, 2]}, 2, 4, "a slot appears twice in the chain [2, 2] (slot 2, stream 1)"),
    ],
)
def test_bad_routes_are_refused_naming_stream_slot_and_problem(routes, streams, slots, expected):
    with pytest.raises(RouteError, match="^" + re.escape(expected)):
        check_routes(routes, streams, slots)


def test_a_refused_route_writes_nothing_and_keeps_the_others():
    shell = RecordingShell(slots=4, streams=2)
    shell.route([0, 1], stream=0)
    before = (dict(shell.words), len(shell.log))
    with pytest.raises(RouteError, match="slot 1 is in the routes of streams 0 and 1"):
        shell.route([1, 2], stream=1)
    with pytest.raises(RouteError, match="route for stream 2"):
        shell.route([2], stream=2)
    assert (shell.words, len(shell.log)) == before
    assert shell.routes == {0: [0, 1]} and shell.chain_of(0) == [0, 1]


def test_one_stream_writes_what_the_single_stream_shell_wrote():
    shell = RecordingShell(slots=3, streams=1)
    shell.route([2, 0])
    assert shell.log == [(slot_reg(0, 1), 0), (slot_reg(1, 1), 0), (slot_reg(2, 1), 0),
                         (slot_reg(2, 1), ROUTE_ENABLE | 0), (slot_reg(0, 1), ROUTE_ENABLE | 3),
                         (REG_ROUTE_OUT, ROUTE_ENABLE | 1)]
    assert route_word(3) == ROUTE_ENABLE | 3 and route_out_reg(0, 3) == REG_ROUTE_OUT
    with pytest.raises(ValueError, match="a slot appears twice"):   # as before streams: a ValueError
        shell.route([1, 1])


def test_a_second_stream_leaves_the_first_routed():
    shell = RecordingShell(slots=4, streams=4)
    shell.route([0, 1], stream=0)
    shell.log.clear()
    shell.route([3], stream=2)
    written = {index for index, _ in shell.log}
    assert not written & {slot_reg(0, 1), slot_reg(1, 1), REG_ROUTE_OUT}
    assert route_out_reg(2, 4) == 16 + 4 * 4 + 1 and (route_out_reg(2, 4), ROUTE_ENABLE | 4) in shell.log
    assert (shell.chain_of(0), shell.chain_of(2)) == ([0, 1], [3])
    shell.forget_routes()
    assert shell.routes == {}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8).flatmap(lambda slots: st.tuples(
    st.just(slots), st.integers(1, slots),
    st.lists(st.tuples(st.integers(0, slots - 1), st.lists(st.integers(0, slots - 1), max_size=4)), max_size=12))))
def test_routes_stay_disjoint_and_decode_to_what_was_asked(case):
    """Any sequence of route calls: each one the check accepts goes through writes the shell takes,
    and afterwards every stream's registers decode to its chain; a refused one changes nothing."""
    slots, streams, calls = case
    shell = RecordingShell(slots, streams)
    for stream, chain in calls:
        stream %= streams
        wanted = {**shell.routes, stream: chain}
        flat = [slot for c in wanted.values() for slot in c]
        ok = len(set(flat)) == len(flat)
        before = dict(shell.words)
        if ok:
            shell.route(chain, stream)
        else:
            with pytest.raises(RouteError):
                shell.route(chain, stream)
            assert shell.words == before
        for s, c in shell.routes.items():
            assert shell.chain_of(s) == c
