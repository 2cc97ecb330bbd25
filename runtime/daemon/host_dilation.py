"""A simulated board's time dilation chosen from the host's measured cost.

The daemon counts its own work as a resource (runtime/sched/host/host_cost.py): a frame of
pipeline i costs it ``h_i = wall_i / dilation`` board seconds, its loop's busy period ``w`` must
fit in every pipeline's response bound R, and every fabric operation may start up to ``w`` late
(the fabric's analysis counts that with each pass and load). On a real board the dilation is 1 and
the host is what it is. On the simulated board the dilation is ours to choose: the board's clock
runs ``dilation`` times slower than the wall clock while it idles, so the same host work is
``dilation`` times less board time. A loaded host (its measured cost high, its loop blocked
for milliseconds while the OS runs other processes: ``block_s``) would at a fixed dilation get
stages placed on the CPU or refused, and frames late for the host's delays.

``choose_dilation`` takes the least dilation on a ladder from a floor up at which the daemon's
own admission (the same calls the daemon makes: ``HostBudget.fabric_spec``, ``check`` and the
board's ``admission_test`` with the host's operation delay, on a model of the board and a
virtual clock) admits a known set of pipelines whole on the fabric, in their registration order,
with the host ``safety`` times slower than measured. Why the safety is sound and cheap: every
host term in admission is ``cost / dilation`` (the job, the blocking, the busy period, the
operation delay; R is a share of the slack or HEADROOM times a busy period), so admitting the cost
times ``safety`` at dilation ``d`` is admitting the measured cost at ``d / safety``: the set stays
admissible if the host turns up to ``safety`` times slower than calibrated during the run, which
the daemon's own re-check (``HostWatch``, every RECHECK_EVERY frames) is too slow to catch in a
short run. The choice is checked, never extrapolated: the dilation returned is one admission
accepted. The guarantee's argument is unchanged: the daemon is then built with that dilation and
the same measured cost, and its admission decides as always.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.host.host_cost import HostBudget, HostCost

log = logging.getLogger(__name__)

#: How much slower than measured (the measurement's own margin included) the host may turn
#: during a run with the set still admitted at the chosen dilation.
SAFETY = 2.0
#: The ladder's step: each candidate is this times the last (each one is checked).
STEP = math.sqrt(2.0)
#: Steps up the ladder at most (8: 16 times the floor). The idle board costs its board time times
#: the dilation in wall time (a demo's ~2.7 s of board time is ~6 min at 128): beyond that a run
#: is not worth waiting for, and the daemon's admission decides (stages on its CPU, or refused).
MAX_STEPS = 8


@dataclass(frozen=True)
class DilationChoice:
    """The dilation chosen and why (the demo's summary prints it)."""

    dilation: float
    floor: float
    safety: float
    admitted: bool            #: whether admission took the set whole at ``dilation`` (else the ladder's top)
    refusal_at_floor: str | None   #: why the floor did not do (None: it did)

    @property
    def reason(self) -> str:
        if self.refusal_at_floor is None:
            return (f"the floor {self.floor:g}: the host's measured cost times {self.safety:g} leaves every "
                    f"pipeline whole on the fabric")
        verdict = "the least" if self.admitted else "the highest tried; not even it"
        return (f"{verdict} dilation at which the host's measured cost times {self.safety:g} leaves every "
                f"pipeline whole on the fabric (at {self.floor:g}: {self.refusal_at_floor})")

    def summary(self) -> dict:
        return {"wall_s_per_board_s": round(self.dilation, 3), "floor": self.floor, "safety": self.safety,
                "admitted": self.admitted, "reason": self.reason}


def refusal_at(platform: Platform, specs: Sequence[PipelineSpec], cost: HostCost, dilation: float,
               streams: int) -> str | None:
    """Why a daemon at ``dilation`` with the host's ``cost`` would not admit ``specs`` (real-time,
    in registration order) each whole on the fabric of ``platform`` on up to ``streams`` streams;
    None if it would. Runs the daemon's own admission on a model of the board and a virtual
    clock (runtime/daemon/admission.py, ``Admission.on_host`` and ``Admission.admit``)."""
    from fpgashare.backends.model import ModelBackend
    from fpgashare.sched.board.board import Board
    from fpgashare.sched.core.clock import VirtualClock
    from fpgashare.sched.policies.registry import make_policy

    budget = HostBudget(cost, dilation)
    board = Board.whole(platform, ModelBackend(platform), lambda: make_policy("edf"), VirtualClock(),
                        cap=streams if streams > 1 else None)
    for spec in specs:
        fabric = budget.fabric_spec(spec, [*board.pipelines, *board.cpu_pipelines])
        if isinstance(fabric, str):
            return f"{spec.name}: {fabric}"
        every = [*board.pipelines, *board.cpu_pipelines, fabric]
        why = budget.check(every) or board.admission_test(fabric, op_delay_s=budget.op_delay_s(every))()
        if why:
            return f"{spec.name}: {why}"
        board.add_pipeline(fabric, admitted=True)
    return None


def choose_dilation(platform: Platform, specs: Sequence[PipelineSpec], cost: HostCost, floor: float,
                    streams: int = 1, safety: float = SAFETY, max_steps: int = MAX_STEPS) -> DilationChoice:
    """The least dilation ``floor * STEP**k`` (k = 0..max_steps) at which the daemon's admission
    takes ``specs`` whole on the fabric with the host's ``cost`` times ``safety`` (module
    docstring); the ladder's top, marked not admitted, if none does."""
    if not (math.isfinite(floor) and floor >= 1.0):
        raise ValueError(f"the dilation's floor must be a finite number >= 1, not {floor!r}")
    if not (math.isfinite(safety) and safety >= 1.0):
        raise ValueError(f"the safety factor must be a finite number >= 1, not {safety!r}")
    slower = cost.scaled(safety)
    first = refusal_at(platform, specs, slower, floor, streams)
    if first is None:
        return DilationChoice(floor, floor, safety, True, None)
    dilation = floor
    for _ in range(max_steps):
        dilation *= STEP
        if refusal_at(platform, specs, slower, dilation, streams) is None:
            log.info("the host's measured cost needs dilation %.3g (at %g: %s)", dilation, floor, first)
            return DilationChoice(dilation, floor, safety, True, first)
    log.warning("no dilation up to %.3g admits the set whole on the fabric with the host's cost x %g (at %g: %s)",
                dilation, safety, floor, first)
    return DilationChoice(dilation, floor, safety, False, first)
