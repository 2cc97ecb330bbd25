"""Split a network into contiguous layer segments over K tiles, minimising the bottleneck stage.

Dynamic programming over (tiles used, layers covered): neck[k][j] is the smallest possible
bottleneck for layers [0, j) on k tiles; each step tries every last segment [i, j) that fits one
tile. Segment costs come from running sums in one O(L^2) pass, the DP is O(K * L^2) comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from runtime.dnn.cycle_model import LinkModel, input_cycles, layer_cycles, segment_cycles, send_cycles
from runtime.dnn.network import Network
from runtime.dnn.tile_format import DEFAULT_TILE, TileSpec, footprint
from runtime.errors import NetworkError


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

    def as_dict(self) -> dict:
        return {"network": self.network, "tiles_available": self.tiles, "tiles_used": len(self.stages),
                "segments": self.segments, "stage_cycles": [round(s.cycles) for s in self.stages],
                "layer_cycles": [list(s.layer_cycles) for s in self.stages],
                "link_bytes": [s.out_bytes for s in self.stages[:-1]],
                "bottleneck_cycles": round(self.bottleneck_cycles), "latency_cycles": round(self.latency_cycles),
                "predicted_images_per_s": round(self.images_per_s, 2), "clock_hz": self.clock_hz}


def segment_costs(net: Network, link: LinkModel, spec: TileSpec = DEFAULT_TILE) -> list[list[float]]:
    """cost[i][j]: cycles per image of one tile running layers [i, j) (inf if they do not fit)."""
    n = len(net.layers)
    shapes = net.shapes()
    inf = float("inf")
    per_layer = [layer_cycles(net.layers[i], shapes[i], spec) for i in range(n)]
    recv = [input_cycles(i, s, link, spec) for i, s in enumerate(shapes)]
    send = [send_cycles(s, link, spec) for s in shapes]
    entries = [spec.entries(s) for s in shapes]
    w_need, pg_need = [0] * n, [0] * n
    for i, layer in enumerate(net.layers):
        if layer.has_params:
            kh, kw = layer.kernel_hw(shapes[i])
            pg_need[i] = spec.groups(layer.out_channels)
            w_need[i] = pg_need[i] * kh * kw * spec.groups(shapes[i][2])
    cost = [[inf] * (n + 1) for _ in range(n + 1)]
    max_act, max_w, max_pg, max_len = spec.act_entries, spec.w_entries, spec.pg_entries, spec.max_layers
    for i in range(n):
        comp, act, w, pg = 0, entries[i], 0, 0
        row = cost[i]
        for j in range(i + 1, min(n, i + max_len) + 1):
            comp += per_layer[j - 1]
            w += w_need[j - 1]
            pg += pg_need[j - 1]
            if entries[j] > act:
                act = entries[j]
            if act > max_act or w > max_w or pg > max_pg:
                break                      # every longer segment needs at least as much
            row[j] = recv[i] + comp + send[j]
    return cost


def partition(net: Network, tiles: int, link: LinkModel | None = None, spec: TileSpec = DEFAULT_TILE,
              clock_hz: float = 200e6) -> Plan:
    """The contiguous segmentation of ``net`` over at most ``tiles`` tiles with the smallest
    bottleneck (ties: fewer tiles, then lower total cycles). NetworkError if no split fits."""
    link = link or LinkModel()
    n = len(net.layers)
    if tiles < 1:
        raise NetworkError(f"{net.name}: need at least one tile, got {tiles}")
    cost = segment_costs(net, link, spec)
    inf = float("inf")
    # neck[k][j], total[k][j]: best (bottleneck, sum) for layers [0, j) on exactly k tiles.
    neck = [[inf] * (n + 1) for _ in range(tiles + 1)]
    total = [[inf] * (n + 1) for _ in range(tiles + 1)]
    back = [[-1] * (n + 1) for _ in range(tiles + 1)]
    neck[0][0] = total[0][0] = 0.0
    for k in range(1, tiles + 1):
        pn, pt, cn, ct, cb = neck[k - 1], total[k - 1], neck[k], total[k], back[k]
        for j in range(k, n + 1):
            bn, bt, bi = inf, inf, -1
            for i in range(max(k - 1, j - spec.max_layers), j):
                c = cost[i][j]
                b = pn[i]
                v = b if b > c else c
                if v < bn or (v == bn and pt[i] + c < bt):
                    bn, bt, bi = v, pt[i] + c, i
            cn[j], ct[j], cb[j] = bn, bt, bi
    k_best = min(range(1, tiles + 1), key=lambda k: (neck[k][n], k))
    if neck[k_best][n] == inf:
        raise NetworkError(f"{net.name} does not fit {tiles} tile(s): {_first_misfit(net, spec)}")
    cuts, j = [], n
    for k in range(k_best, 0, -1):
        i = back[k][j]
        cuts.append((i, j))
        j = i
    return plan_for(net, [c for c in reversed(cuts)], link, spec, clock_hz, tiles)


def plan_for(net: Network, segments: list[tuple[int, int]], link: LinkModel | None = None,
             spec: TileSpec = DEFAULT_TILE, clock_hz: float = 200e6, tiles: int | None = None) -> Plan:
    """The Plan of a given segmentation (contiguous, covering every layer, each fitting a tile)."""
    link = link or LinkModel()
    shapes = net.shapes()
    if not segments or segments[0][0] != 0 or segments[-1][1] != len(net.layers) or any(
            a[1] != b[0] for a, b in pairwise(segments)) or any(i >= j for i, j in segments):
        raise NetworkError(f"{net.name}: segments {segments} do not cover layers 0..{len(net.layers) - 1} "
                           "contiguously")
    stages = []
    for i, j in segments:
        problem = footprint(net, i, j, spec).problem(spec)
        if problem:
            raise NetworkError(f"{net.name}: layers {i}..{j - 1} do not fit one tile: {problem}")
        cycles, per_layer = segment_cycles(net, i, j, link, spec)
        stages.append(Stage(i, j, cycles, tuple(per_layer), spec.words(shapes[j]) * 4))
    return Plan(net.name, tiles or len(segments), tuple(stages), clock_hz, link.latency_cycles)


def _first_misfit(net: Network, spec: TileSpec) -> str:
    for i in range(len(net.layers)):
        problem = footprint(net, i, i + 1, spec).problem(spec)
        if problem:
            return f"layer {i} ({net.layers[i].kind}) alone {problem}"
    return f"{len(net.layers)} layers need more tiles of {spec.max_layers} layers"
