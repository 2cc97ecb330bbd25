"""Split a network into contiguous layer segments over K tiles, minimising the bottleneck stage.

Dynamic programming over (tiles used, layers covered): neck[k, j] is the smallest possible
bottleneck for layers [0, j) on k tiles; each step tries every last segment [i, j) that fits one
tile. Segment costs come from prefix sums as one (L+1) x (L+1) array and each DP step is a few
array operations over it, so planning stays far below a millisecond for K <= 4, L <= 30.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

import numpy as np
from fpgashare.dnn.cycle_model import LinkModel, input_cycles, layer_cycles, send_cycles
from fpgashare.dnn.network import Network
from fpgashare.dnn.tile_format import DEFAULT_TILE, TileSpec, footprint
from fpgashare.errors import NetworkError


@dataclass(frozen=True)
class Stage:
    start: int
    stop: int
    cycles: float                    #: per image, receive + layers + send
    layer_cycles: tuple[int, ...]
    out_bytes: int                   #: bytes this stage sends downstream per image


@dataclass(frozen=True)
class Plan:
    """A segmentation and what the cycle model predicts for it."""

    network: str
    tiles: int                       #: tiles available
    stages: tuple[Stage, ...]
    clock_hz: float
    link_latency: int = field(default=0)

    @property
    def segments(self) -> list[tuple[int, int]]:
        return [(s.start, s.stop) for s in self.stages]

    @property
    def bottleneck_cycles(self) -> float:
        return max(s.cycles for s in self.stages)

    @property
    def latency_cycles(self) -> float:
        """One image through every stage, stages back to back, plus the link latencies."""
        return sum(s.cycles for s in self.stages) + self.link_latency * (len(self.stages) - 1)

    @property
    def images_per_s(self) -> float:
        return self.clock_hz / self.bottleneck_cycles

    def batch_cycles(self, images: int) -> float:
        """``images`` back to back through the stages: the first fills the chain, each next one
        follows a bottleneck stage later (the tiles' own layers; their programming is extra)."""
        return self.latency_cycles + (images - 1) * self.bottleneck_cycles

    def as_dict(self) -> dict:
        return {"network": self.network, "tiles_available": self.tiles, "tiles_used": len(self.stages),
                "segments": self.segments, "stage_cycles": [round(s.cycles) for s in self.stages],
                "layer_cycles": [list(s.layer_cycles) for s in self.stages],
                "link_bytes": [s.out_bytes for s in self.stages[:-1]],
                "bottleneck_cycles": round(self.bottleneck_cycles), "latency_cycles": round(self.latency_cycles),
                "predicted_images_per_s": round(self.images_per_s, 2), "clock_hz": self.clock_hz}


@dataclass(frozen=True)
class CostTable:
    """Per-layer and per-tensor figures of one network on one tile/link model."""

    layer_cycles: tuple[int, ...]    #: compute cycles of layer i
    recv: np.ndarray                 #: receive cycles of a stage starting at layer i
    send: np.ndarray                 #: send cycles of the tensor after layer j - 1
    cost: np.ndarray                 #: cost[i, j]: one tile running layers [i, j), inf if it does not fit


@lru_cache(maxsize=128)
def cost_table(net: Network, link: LinkModel, spec: TileSpec = DEFAULT_TILE) -> CostTable:
    """The figures the partitioner needs; cached by the network's structure (cycles do not
    depend on weight values), so re-planning for another K costs only the DP."""
    n = len(net.layers)
    shapes = net.shapes()
    per_layer = [layer_cycles(layer, shapes[i], spec) for i, layer in enumerate(net.layers)]
    w_need, pg_need = np.zeros(n + 1), np.zeros(n + 1)
    for i, layer in enumerate(net.layers):
        if layer.has_params:
            kh, kw = layer.kernel_hw(shapes[i])
            pg_need[i + 1] = spec.groups(layer.out_channels)
            w_need[i + 1] = pg_need[i + 1] * kh * kw * spec.groups(shapes[i][2])
    recv = np.array([input_cycles(i, sh, link, spec) for i, sh in enumerate(shapes)])
    send = np.array([send_cycles(sh, link, spec) for sh in shapes])
    entries = np.array([spec.entries(sh) for sh in shapes], dtype=float)
    comp = np.cumsum([0, *per_layer])                          # prefix sums
    w, pg = np.cumsum(w_need), np.cumsum(pg_need)
    i, j = np.indices((n + 1, n + 1))
    # Largest tensor a segment [i, j) touches: running max of entries along each row from i.
    act = np.maximum.accumulate(np.where(j >= i, entries[None, :], 0.0), axis=1)
    fits = ((j > i) & (j - i <= spec.max_layers) & (act <= spec.act_entries)
            & (w[None, :] - w[:, None] <= spec.w_entries) & (pg[None, :] - pg[:, None] <= spec.pg_entries))
    cost = np.where(fits, recv[:, None] + comp[None, :] - comp[:, None] + send[None, :], np.inf)
    for array in (recv, send, cost):
        array.flags.writeable = False
    return CostTable(tuple(per_layer), recv, send, cost)


def partition(net: Network, tiles: int, link: LinkModel | None = None, spec: TileSpec = DEFAULT_TILE,
              clock_hz: float = 200e6) -> Plan:
    """The contiguous segmentation of ``net`` over at most ``tiles`` tiles with the smallest
    bottleneck (ties: fewer tiles, then lower total cycles). NetworkError if no split fits."""
    link = link or LinkModel()
    n = len(net.layers)
    if tiles < 1:
        raise NetworkError(f"{net.name}: need at least one tile, got {tiles}")
    table = cost_table(net, link, spec)
    cost = table.cost
    # neck[k, j], total[k, j]: best (bottleneck, sum) for layers [0, j) on exactly k tiles; one
    # step is a min over the last segment's start i, done for every j at once.
    neck = np.full((tiles + 1, n + 1), np.inf)
    total = np.full((tiles + 1, n + 1), np.inf)
    back = np.zeros((tiles + 1, n + 1), dtype=int)
    neck[0, 0] = total[0, 0] = 0.0
    for k in range(1, tiles + 1):
        cand = np.maximum(neck[k - 1][:, None], cost)          # [i, j]
        best = cand.min(axis=0)
        sums = np.where(cand == best[None, :], total[k - 1][:, None] + cost, np.inf)
        back[k] = sums.argmin(axis=0)
        neck[k], total[k] = best, sums.min(axis=0)
    k_best = min(range(1, tiles + 1), key=lambda k: (neck[k, n], k))
    if not np.isfinite(neck[k_best, n]):
        raise NetworkError(f"{net.name} does not fit {tiles} tile(s): {_first_misfit(net, spec, tiles)}")
    cuts, j = [], n
    for k in range(k_best, 0, -1):
        i = int(back[k, j])
        cuts.append((i, j))
        j = i
    return _plan(net, cuts[::-1], table, link, spec, clock_hz, tiles)


def plan_for(net: Network, segments: list[tuple[int, int]], link: LinkModel | None = None,
             spec: TileSpec = DEFAULT_TILE, clock_hz: float = 200e6, tiles: int | None = None) -> Plan:
    """The Plan of a given segmentation (contiguous, covering every layer, each fitting a tile)."""
    link = link or LinkModel()
    if not segments or segments[0][0] != 0 or segments[-1][1] != len(net.layers) or any(
            a[1] != b[0] for a, b in pairwise(segments)) or any(i >= j for i, j in segments):
        raise NetworkError(f"{net.name}: segments {segments} do not cover layers 0..{len(net.layers) - 1} "
                           "contiguously")
    table = cost_table(net, link, spec)
    for i, j in segments:
        if not np.isfinite(table.cost[i, j]):
            problem = footprint(net, i, j, spec).problem(spec)
            raise NetworkError(f"{net.name}: layers {i}..{j - 1} do not fit one tile: {problem}")
    return _plan(net, segments, table, link, spec, clock_hz, tiles)


def _plan(net: Network, segments: list[tuple[int, int]], table: CostTable, link: LinkModel, spec: TileSpec,
          clock_hz: float, tiles: int | None) -> Plan:
    shapes = net.shapes()
    stages = tuple(Stage(i, j, float(table.cost[i, j]), table.layer_cycles[i:j], spec.words(shapes[j]) * 4)
                   for i, j in segments)
    return Plan(net.name, tiles or len(segments), stages, clock_hz, link.latency_cycles)


def _first_misfit(net: Network, spec: TileSpec, tiles: int) -> str:
    for i in range(len(net.layers)):
        problem = footprint(net, i, i + 1, spec).problem(spec)
        if problem:
            return f"layer {i} ({net.layers[i].kind}) alone {problem}"
    return (f"every layer fits a tile alone, but no split of the {len(net.layers)} layers into {tiles} "
            f"segment(s) does (whole network: {footprint(net, 0, len(net.layers), spec).problem(spec)})")
