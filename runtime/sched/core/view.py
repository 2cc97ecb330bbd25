"""What a scheduling policy sees of the engine, and what it may do: the one interface between
``engine.py`` and the policies (``edf.py``, ``policy.py``, ``baselines.py``, ``fred.py``) and their
helpers (``backfill.py``, ``guard.py``, ``lookahead.py``, ``pin_move.py``). ``Engine`` implements it;
``tests/test_policy_view.py`` checks that those modules use nothing else of the engine.

The view is read-mostly: pending and running work, the slots (``SlotManager``: states, residency,
victims; ``slots.request`` is the one way to queue a load), the stream, the port's backlog, the
admission contract and forecasts of the next releases (the questions go to the engine's parts:
``port``, ``placement``, ``dnn``, ``foresight``, each seen through a view of its own). The
actions: ``start`` a frame, ``start_dnn`` a batch, ``drop`` a frame that certainly misses, ``wake``
the policy later, and the contract's ``move_pin`` / ``plan_reload``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

# What a policy names of the core besides the view itself (it imports the core through view.py,
# jobs.py and policy.py only: tests/test_layers.py).
from fpgashare.sched.core.demand import NeedOrder
from fpgashare.sched.core.slots import SlotState

if TYPE_CHECKING:
    from fpgashare.catalogue.platform import Platform
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.sched.analysis.schedulability import AdmissionContract
    from fpgashare.sched.core.jobs import DnnJob, Frame
    from fpgashare.sched.core.slots import SlotManager

__all__ = ["DnnView", "EngineView", "ForesightView", "NeedOrder", "PlacementView", "PortView", "SlotState"]


class PortView(Protocol):
    """The configuration port as a policy sees it (``PortDriver``, port_use.py)."""

    def free(self) -> bool: ...
    def backlog_s(self) -> float: ...
    def load_seconds(self, slot: int) -> float: ...
    def shortest_load_s(self) -> float: ...
    def longest_load_s(self) -> float: ...


class PlacementView(Protocol):
    """Where frames fit (``Placement``, slot_use.py)."""

    def find_slots(self, frame: Frame, reserved: set[int]) -> tuple[list[int | None], list[str]]: ...
    def free_at(self, slot: int) -> float | None: ...
    def copies_needed(self) -> dict[str, int]: ...


class DnnView(Protocol):
    """Best-effort DNN work waiting (``DnnJobs``, dnn_jobs.py)."""

    def backlog(self, pipeline: PipelineSpec) -> bool: ...
    def setup_s(self, slots: Sequence[int], model: str, plan) -> float: ...


class ForesightView(Protocol):
    """Forecasts of the next releases and the modules they want (``Foresight``, foresight.py)."""

    def earliest_release_s(self) -> float: ...
    def stream_job_end(self) -> float | None: ...
    def next_passes(self) -> list[tuple[Frame, tuple[str, ...]]]: ...
    def module_needs(self, held: set[str] | None = None) -> dict[str, float]: ...
    def need_order(self, first: Sequence[Frame] = ()) -> NeedOrder: ...


class EngineView(Protocol):
    # ---- what there is
    now: float
    t0: float                                   #: the first release (pipelines register before it)
    end_s: float                                #: when releases stop
    platform: Platform
    runs_dnn: bool                              #: whether the backend runs DNN batches
    slots: SlotManager
    pipelines: list[PipelineSpec]               #: real-time, admitted
    dnn_pipelines: list[PipelineSpec]           #: best-effort
    pending: list[Frame]                        #: released, not started (or between passes)
    running: dict[str, Frame]                   #: on the stream, by frame key
    dnn_images: dict[str, int]                  #: images done per DNN pipeline
    contract: AdmissionContract
    committed: Frame | None                     #: the frame that owns the port for its loads (edf)
    planned_reloads: dict[int, tuple[str, float]]
    changing: bool                              #: a mode change is under way: no DNN, lends or pin moves
    loads_after_t0: bool
    port_shared: bool
    port: PortView
    placement: PlacementView
    dnn: DnnView
    foresight: ForesightView

    # ---- questions
    def stream_free(self) -> bool: ...
    def stream_free_at(self) -> float: ...
    def next_release_s(self, pipeline: PipelineSpec) -> float: ...

    # ---- actions
    def start(self, frame: Frame, slots: Sequence[int]) -> None: ...
    def start_dnn(self, pipeline: PipelineSpec, slots: Sequence[int], images: int) -> DnnJob | None: ...
    def drop(self, frame: Frame, reason: str) -> None: ...
    def wake(self, t: float) -> None: ...
    def move_pin(self, slot: int, to: int) -> None: ...
    def plan_reload(self, slot: int, module: str, by: float) -> None: ...
