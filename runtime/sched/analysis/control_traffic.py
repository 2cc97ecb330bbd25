"""The shell's register traffic: board time an operation costs beyond its stream or port cycles.

Before a frame the runtime routes its chain and writes its modules' registers; before a load it
names the port's slot, after one it reads the port's status; a DNN batch reads each tile's sizes,
switches it into load mode and back, and reads its cycle counters. All of it goes over the shell's
one AXI-Lite port, one access after another, so an operation can also wait for the accesses of the
operations started beside it (one per video stream and one on the configuration port). The
co-simulated board counts every access as board time (hdl_sim/cosim.py); the twin's cycle model
counts streams and port words only. ``control_seconds`` bounds the difference for any one
operation, and the admission analysis adds it to every frame pass, every load and the blocking it
allows (runtime/sched/analysis/schedulability.py), so an admitted set stays admitted with the traffic counted.

The bound, per operation: (streams + 1) x (the most accesses any one operation makes) x the cycles
of one access. Measured on the RTL shell: 4 cycles per AXI-Lite read or write. A board's
CPU takes longer per access (an assumption to measure there: ``ACCESS_CYCLES`` is the RTL's).
"""

from __future__ import annotations

from fpgashare.catalogue.modules import KINDS
from fpgashare.catalogue.platform import Platform
from fpgashare.dnn.tile_format import DEFAULT_TILE

#: Cycles of one AXI-Lite access to the shell (write: address and data, then the response; read:
#: address, then the data), measured on the RTL harness.
ACCESS_CYCLES = 4
#: A load: the port's slot register before it; status, words, cycles and the slot's state after it.
LOAD_ACCESSES = 5
#: A DNN tile that gets its layers: three sizes and its info read, its mode set and cleared, its
#: status and layer count read.
TILE_PROGRAM_ACCESSES = 8

_MEMO: dict[int, tuple[Platform, float]] = {}


def operation_accesses(platform: Platform) -> int:
    """The most register accesses one operation (a frame pass, a load, a DNN batch) makes on ``platform``."""
    slots = len(platform.slots)
    route = 2 * slots + 1 + slots + 1            # cut every slot input, route the chain and the output; release
    most_regs = max((len(KINDS[m].regs) for m in platform.modules if m != "dnn_tile" and m in KINDS), default=0)
    frame = route + slots * most_regs             # every register of every stage, the longest chain
    dnn = 0
    if "dnn_tile" in platform.modules:
        tiles = slots
        dnn = tiles * (TILE_PROGRAM_ACCESSES + route) + route + tiles * (1 + DEFAULT_TILE.max_layers)
    return max(frame, LOAD_ACCESSES, dnn)


def control_seconds(platform: Platform) -> float:
    """How much later than its stream or port cycles any one operation can end on ``platform``'s
    shell: its own register accesses and those of the operations beside it (one per stream, one on
    the port), at ``ACCESS_CYCLES`` each."""
    hit = _MEMO.get(id(platform))
    if hit is None or hit[0] is not platform:
        cycles = (platform.streams + 1) * operation_accesses(platform) * ACCESS_CYCLES
        hit = _MEMO[id(platform)] = (platform, cycles / platform.fabric_clock_hz)
    return hit[1]
