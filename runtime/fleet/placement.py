"""Which board a real-time pipeline is offered first: the fleet's placement order (docs/fleet.md).

The controller (controller.py) offers a pipeline to the candidate boards in this order and each
board's daemon runs the exact admission test; the order only decides where a pipeline goes when
several boards would admit it. Imports without Ray."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class BoardLoad:
    """What the controller has placed on a board, as the order sees it."""

    name: str
    slots: int                   #: the platform's reconfigurable slots
    dnn_slots: int               #: slots a DNN needs to run there at all (0: the platform has no DNN tile)
    used_milli: float = 0.0      #: stream time per period of its real-time pipelines, thousandths
    modules: Counter = field(default_factory=Counter)    #: modules of its real-time pipelines

    def keeps_dnn_room(self, modules: tuple[str, ...] | list[str]) -> bool:
        """Whether the board's distinct modules, ``modules`` added, leave ``dnn_slots`` slots."""
        return len(set(self.modules) | set(modules)) <= self.slots - self.dnn_slots


def placement_rank(modules: tuple[str, ...] | list[str], board: BoardLoad) -> tuple:
    """The key boards are offered a real-time pipeline holding ``modules`` by (smallest first):
    admission first, then the DNN.

    1. Boards where the pipeline leaves room for a DNN tile (``BoardLoad.keeps_dnn_room``) before
       boards where it would not: a board whose slots all hold pins runs no DNN image.
    2. The fewest modules the pipeline brings to the board: pipelines that share modules share
       their pinned slots, so a board of alike pipelines admits more (and pins fewer slots) than
       a board of mixed ones.
    3. The most stream time placed first: pack a board before opening another, so boards left
       empty stay whole for the DNN and for pipelines that need a board of their own.
    A refusal by a board's daemon only moves the pipeline on to the next board in this order, so
    the order decides where a pipeline goes, never whether it is admitted when some board would."""
    return (not board.keeps_dnn_room(modules), len(set(modules) - set(board.modules)), -board.used_milli,
            board.name)


def order_boards(modules: tuple[str, ...] | list[str], boards: list[BoardLoad]) -> list[str]:
    """The names of ``boards`` in the order a pipeline holding ``modules`` is offered them."""
    return [b.name for b in sorted(boards, key=lambda b: placement_rank(modules, b))]
