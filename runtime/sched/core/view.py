"""What a scheduling policy sees of the engine, and what it may do: the one interface between
the engine and the policies (runtime/sched/policies/: ``edf``, ``baselines``, ``fred`` and their
helpers ``backfill``, ``guard``, ``lookahead``, ``pin_move``; and core/policy.py).
``tests/test_policy_view.py`` checks that those modules use nothing else of the engine, and
``tests/test_layers.py`` that they import the core only through this module, jobs.py and policy.py.

The view is read-only: 21 members, five of them parts seen through narrow views of their own
(``port``, ``placement``, ``dnn``, ``foresight``, ``stream``: questions only), and ``slots`` seen
as ``SlotsView`` (states, residency, victims; no ``acquire``/``release``/``request``). A policy
changes nothing but through the named actions: ``start`` a frame, ``start_dnn`` a batch, ``load``
a module into a slot, ``commit`` the port to a frame's loads, ``drop`` a frame that certainly
misses, ``wake`` the policy later, and the contract's ``move_pin`` / ``plan_reload``.
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
    from fpgashare.sched.core.port import ConfigPort
    from fpgashare.sched.core.slots import Slot

__all__ = ["DnnView", "EngineView", "ForesightView", "NeedOrder", "PlacementView", "PortView", "SlotState",
           "SlotsView", "StreamView"]


class SlotsView(Protocol):
    """The slots as a policy reads them (``SlotManager``, slots.py, less its mutators)."""

    slots: Sequence[Slot]                       #: state, module, owner of each slot
    pinned: frozenset[int]                      #: slots the contract pins
    port: ConfigPort                            #: the loads queued and in flight
    fused: bool                                 #: the platform has fused regions (catalogue/fused_regions.py)
    platform: Platform                          #: the slots' platform (footprints of fused modules)

    def compatible(self, slot: int, module: str) -> bool: ...
    def compatible_slots(self, module: str) -> tuple[int, ...]: ...
    def ready_with(self, module: str) -> tuple[int, ...]: ...
    def busy_with(self, module: str) -> tuple[int, ...]: ...
    def coming_with(self, module: str) -> tuple[int, ...]: ...
    def held_modules(self, excluding: int | None = None) -> set[str]: ...
    def evict_key(self, module: str, future: NeedOrder) -> tuple: ...
    def holds(self, module: str) -> bool: ...
    def idle(self, exclude: set[int] = ...) -> list[int]: ...
    def victim(self, module: str, future: NeedOrder, keep: set[int] = ..., planned: set[int] = ...) -> int | None: ...
    def can_take(self, slot: int, module: str, keep: set[int] = ...) -> bool: ...
    def can_request(self, slot: int, module: str) -> bool: ...
    def taken_by(self, slot: int, module: str) -> tuple[int, ...]: ...


class StreamView(Protocol):
    """The shell's video stream (``FrameStream``, frame_stream.py)."""

    def free(self) -> bool: ...
    def free_at(self) -> float: ...


class PortView(Protocol):
    """The configuration port as a policy sees it (``PortDriver``, port_use.py)."""

    def shared(self) -> bool: ...
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

    def next_release_s(self, pipeline: PipelineSpec) -> float: ...
    def earliest_release_s(self) -> float: ...
    def stream_job_end(self) -> float | None: ...
    def next_passes(self) -> list[tuple[Frame, tuple[str, ...]]]: ...
    def module_needs(self, held: set[str] | None = None) -> dict[str, float]: ...
    def need_order(self, first: Sequence[Frame] = (), copies: bool = False) -> NeedOrder: ...
    def played_order(self, first: Sequence[Frame] = ()) -> NeedOrder: ...


class EngineView(Protocol):
    # ---- what there is (read-only)
    now: float
    t0: float                                   #: the first release (pipelines register before it)
    end_s: float                                #: when releases stop
    platform: Platform
    runs_dnn: bool                              #: whether the backend runs DNN batches
    pipelines: list[PipelineSpec]               #: real-time, admitted
    dnn_pipelines: list[PipelineSpec]           #: best-effort
    pending: list[Frame]                        #: released, not started (or between passes)
    running: dict[str, Frame]                   #: on the stream, by frame key
    dnn_images: dict[str, int]                  #: images done per DNN pipeline
    contract: AdmissionContract
    committed: Frame | None                     #: the frame that owns the port for its loads (edf)
    planned_reloads: dict[int, tuple[str, float]]
    changing: bool                              #: a mode change is under way: no DNN, lends or pin moves
    loads_after_t0: bool                        #: False: a quiet partition (every module pinned)
    slots: SlotsView
    stream: StreamView
    port: PortView
    placement: PlacementView
    dnn: DnnView
    foresight: ForesightView

    # ---- actions
    def start(self, frame: Frame, slots: Sequence[int]) -> None: ...
    def start_dnn(self, pipeline: PipelineSpec, slots: Sequence[int], images: int) -> DnnJob | None: ...
    def load(self, slot: int, module: str, reason: str = "demand", stamp: float = 0.0) -> None: ...
    def commit(self, frame: Frame) -> None: ...
    def drop(self, frame: Frame, reason: str) -> None: ...
    def wake(self, t: float) -> None: ...
    def move_pin(self, slot: int, to: int) -> None: ...
    def plan_reload(self, slot: int, module: str, by: float) -> None: ...
