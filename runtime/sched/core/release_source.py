"""What the engine asks of where its frames come from (``sched/sources/``): a workload's periodic
releases or the frames apps submit. The engine runs the same loop, policies and parts for both;
only these questions differ."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.sched.core.jobs import Frame


class ReleaseSource(Protocol):
    #: Whether the engine keeps a registration window before the first release (every slot
    #: filled once through the port): a workload's pipelines all register before it starts; a
    #: daemon's come whenever they like.
    warm_up: bool

    def attach(self, engine) -> None:
        """Called once by the engine it feeds, with itself."""

    def schedule(self) -> None:
        """Put the releases known in advance on the engine's loop (a workload's; none for submits)."""

    def next_release_s(self, pipeline: PipelineSpec) -> float:
        """The earliest the next unreleased frame of ``pipeline`` can be released (inf: none)."""

    def need_time(self, pipeline: PipelineSpec) -> float:
        """The deadline of ``pipeline``'s next unreleased frame, as the demand order ranks it."""

    def released(self, frame: Frame) -> None:
        """``frame`` was taken from the loop as released (it is in the engine's pending list)."""

    def fabric_release(self, frame: Frame) -> None:
        """``frame``'s CPU prefix is done: its fabric part is released (at its planned time or now)."""

    def ended(self, frame: Frame) -> None:
        """``frame`` ended and its owner was told."""

    def test_pixels(self, frame: Frame) -> np.ndarray:
        """Pixels for a frame that came without any."""
