"""``fred``: a space-sharing baseline after FRED (Biondi, Balsamo, Di Natale, Buttazzo, "A Framework
for Supporting Real-Time Applications on Dynamic Reconfigurable FPGAs", RTSS 2016; its Linux
runtime, github.com/fred-framework/fred-linux, ``scheduler_fred.c``), read, not copied.

FRED's scheduler, as its runtime implements it:

- slots are grouped into partitions, and every hardware task is bound to one partition;
- a request takes a free slot of its partition (one that already holds the task first, and then
  the reconfiguration is skipped), else it waits in the partition's FIFO queue, and a slot that
  completes takes the head of that queue;
- every request with a slot goes into one queue in front of the reconfiguration port (the FRI
  queue), ordered by the request's time stamp; the port serves it (reconfiguring, or skipping)
  and the task then computes; no preemption anywhere.

On this shell a frame's job is a chain on several slots and a stream, so a FRED partition here is a
stream and its slots, one frame at a time: the frames of the pipelines bound to it in FIFO order,
the head's missing modules loaded through the one port, whose queue is ordered by the frames'
release times across partitions (``PortArbiter(order="fifo")``). The partitions, what a FRED user
configures by hand, are planned by whoever builds the run (runtime/sched/board/fred_binding.py);
this policy runs one partition's engine and sees only its view. Like the other baselines it admits
everything and never drops a frame; FRED has no DNN.
"""

from __future__ import annotations

from fpgashare.sched.core.policy import Policy
from fpgashare.sched.core.view import EngineView


class FredPolicy(Policy):
    name = "fred"
    port_order = "fifo"         #: the FRI queue: by the requests' time stamps
    replacement = "lru"         #: a free slot of the partition; no lookahead

    def setup(self, engine: EngineView) -> None:
        """No warm-up beyond the first requests: FRED reconfigures on demand."""

    def dispatch(self, engine: EngineView) -> None:
        if not engine.pending:
            return
        head = min(engine.pending, key=lambda f: (f.release, f.seq))       # the partition's FIFO queue
        chosen, missing = engine.placement.find_slots(head, set())
        if not missing:
            if engine.stream.free():
                engine.start(head, [s for s in chosen if s is not None])
            return
        used = {s for s in chosen if s is not None}
        future = engine.foresight.need_order([head])
        for module in missing:
            coming = next((s for s in engine.slots.coming_with(module) if s not in used), None)
            if coming is not None:
                used.add(coming)
                continue
            victim = engine.slots.victim(module, future, keep=used)
            if victim is None:
                return                       # slots still busy: the head waits for them
            engine.load(victim, module, "demand", stamp=head.release)
            used.add(victim)
