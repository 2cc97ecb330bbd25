"""What a fleet client is told about its pipelines, and the errors only a fleet raises. No Ray here:
these types import without the ``fleet`` extra."""

from __future__ import annotations

from dataclasses import dataclass

from fpgashare.client import AdmissionRejected, FrameFailed
from fpgashare.errors import FpgashareError

INSTALL_HINT = 'the fleet needs Ray: pip install "fpgashare[fleet]"'
BOARD_LOST = "board lost"


class FleetUnavailable(FpgashareError):  # noqa: N818 (the API's names: what happened, not 'Error')
    """Ray (the ``fleet`` extra) is not installed, or no fleet runs at the address given."""


class FleetRejected(AdmissionRejected):
    """No board admitted the pipeline; ``reasons`` maps each board tried to its refusal."""

    def __init__(self, pipeline: str, reasons: dict[str, str]) -> None:
        detail = "; ".join(f"{board}: {why}" for board, why in reasons.items()) or "the fleet has no live board"
        super().__init__("admission", f"pipeline {pipeline!r} not admitted on any board: {detail}")
        self.reasons = dict(reasons)


class BoardLost(FrameFailed):
    """The frame was on a board that died (its daemon or its Ray node) before it ended."""

    reason = BOARD_LOST

    def __init__(self, board: str, detail: str = BOARD_LOST) -> None:
        super().__init__(f"{detail} (board {board})")
        self.board = board


@dataclass(frozen=True)
class PipelineMoved:
    """The pipeline's board died and another board admitted it; frames go there from now on."""

    pipeline: str
    from_board: str
    to_board: str


@dataclass(frozen=True)
class PipelineLost:
    """The pipeline's board died and no board can take it; ``reason`` says why (each board's refusal,
    or the camera it is tied to). Frames submitted afterwards end dropped with this reason."""

    pipeline: str
    board: str
    reason: str


def event_from_wire(event: dict) -> PipelineMoved | PipelineLost:
    if event["kind"] == "moved":
        return PipelineMoved(event["pipeline"], event["from_board"], event["to_board"])
    return PipelineLost(event["pipeline"], event["board"], event["reason"])
