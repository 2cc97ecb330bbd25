"""The fleet's placement order (runtime/fleet/placement.py) on generated fleets and pipelines, with
a stand-in for each board's admission (any rule: the order must hold whatever the daemons decide).
Admission first: a pipeline some board admits is placed. Then the DNN: a pipeline takes a board's
last DNN room only when every board where it keeps that room refused it, and it opens an empty
board only when every occupied board where it keeps the room refused it."""

from __future__ import annotations

from collections import Counter

from fpgashare.fleet.placement import BoardLoad, order_boards
from hypothesis import given, settings
from hypothesis import strategies as st

MODULES = ("conv3x3", "sobel_mag", "threshold", "downscale2x", "median3x3", "rgb2gray")

pipelines = st.lists(st.tuples(st.lists(st.sampled_from(MODULES), min_size=1, max_size=3, unique=True),
                               st.floats(20.0, 400.0)), min_size=1, max_size=40)
fleets = st.lists(st.tuples(st.sampled_from([(4, 1), (2, 1), (4, 0)]), st.floats(300.0, 4000.0)),
                  min_size=1, max_size=5)


def admits(board: BoardLoad, capacity: float, modules: list[str], need: float) -> bool:
    """A stand-in daemon: its slots hold every distinct module, and its stream time suffices."""
    return len(set(board.modules) | set(modules)) <= board.slots and board.used_milli + need <= capacity


@settings(max_examples=300, deadline=None)
@given(fleet=fleets, work=pipelines, refuse_some=st.randoms(use_true_random=False))
def test_placement_order_puts_admission_first_then_the_dnn(fleet, work, refuse_some):
    boards = [BoardLoad(f"b{i}", slots, dnn, 0.0, Counter()) for i, ((slots, dnn), _) in enumerate(fleet)]
    capacity = {b.name: cap for b, (_, cap) in zip(boards, fleet, strict=True)}
    by_name = {b.name: b for b in boards}
    for modules, need in work:
        # A daemon may also refuse for reasons of its own (its partitions, its host): at random here.
        verdict = {b.name: admits(b, capacity[b.name], modules, need) and refuse_some.random() > 0.2
                   for b in boards}
        order = order_boards(modules, boards)
        assert sorted(order) == sorted(by_name)
        placed = next((name for name in order if verdict[name]), None)
        assert (placed is None) == (not any(verdict.values()))        # admitted when some board admits it
        if placed is None:
            continue
        board = by_name[placed]
        kept = [b for b in boards if b.keeps_dnn_room(modules)]
        if not board.keeps_dnn_room(modules):
            assert not any(verdict[b.name] for b in kept), (placed, modules)
        if not board.modules:
            occupied = [b for b in kept if b.modules]
            assert not board.keeps_dnn_room(modules) or not any(verdict[b.name] for b in occupied), (placed, modules)
        board.modules.update(modules)
        board.used_milli += need


def test_alike_pipelines_share_a_board_and_leave_the_others_room():
    """Two kinds of pipelines that together would fill a 4-slot board's slots go to two boards,
    each keeping a slot for a DNN tile, and the third board stays empty."""
    boards = [BoardLoad(f"b{i}", 4, 1) for i in range(1, 4)]
    edges, thumb = ["conv3x3", "sobel_mag", "threshold"], ["downscale2x", "threshold"]
    where = []
    for modules in [edges, thumb] * 4:
        name = order_boards(modules, boards)[0]                # every board admits here
        where.append(name)
        board = next(b for b in boards if b.name == name)
        board.modules.update(modules)
        board.used_milli += 100.0
    assert where == ["b1", "b2"] * 4
    assert all(b.keeps_dnn_room([]) for b in boards) and not boards[2].modules
