"""Cycle model of dnn_tile (hdl_sim/rtl/dnn_tile.sv) and of the links between tiles.

A tile handles one image at a time: it receives its input tensor, runs its layers one after the
other, and sends its output. Per layer: 1 setup cycle, then per output entry KH*KW*CG issue cycles
(max-pool: 4), one drain and one write cycle. Receive: one cycle per stream word, or the link's
flits per word if the lane is narrower than 32 bits. Send: P/4 + 1 cycles per entry (one read
cycle between entries), unless the link is slower; a tile downstream of another therefore
receives at that send rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpgashare.dnn.network import Layer, Network
from fpgashare.dnn.tile_format import DEFAULT_TILE, TileSpec

SETUP_CYCLES = 1
PER_OUTPUT_OVERHEAD = 2


@dataclass(frozen=True)
class LinkModel:
    """An inter-tile link: lane width, latency and credits (the platform's [link] table)."""

    lane_bits: int = 32
    latency_cycles: int = 2
    credits: int = 8

    @property
    def flits_per_word(self) -> int:
        return -(-32 // self.lane_bits)

    @property
    def flits_per_cycle(self) -> float:
        """Sustained rate: one flit per cycle, unless credits run out over the round trip (2 x latency
        + 1 cycles, as tests/hdl/test_stream_link.py measures on the RTL)."""
        return min(1.0, self.credits / (2 * self.latency_cycles + 1))

    def word_cycles(self, words: int) -> float:
        return words * self.flits_per_word / self.flits_per_cycle


def layer_cycles(layer: Layer, shape: tuple[int, int, int], spec: TileSpec = DEFAULT_TILE) -> int:
    """Cycles the tile spends on ``layer`` for an input of HWC ``shape``."""
    oh, ow, oc = layer.output_shape(shape)
    kh, kw = layer.kernel_hw(shape)
    taps = kh * kw * (1 if layer.kind == "maxpool" else spec.groups(shape[2]))
    return SETUP_CYCLES + oh * ow * spec.groups(oc) * (taps + PER_OUTPUT_OVERHEAD)


def recv_cycles(shape: tuple[int, int, int], link: LinkModel, spec: TileSpec = DEFAULT_TILE) -> float:
    return max(spec.words(shape), link.word_cycles(spec.words(shape)))


def send_cycles(shape: tuple[int, int, int], link: LinkModel, spec: TileSpec = DEFAULT_TILE) -> float:
    return max(spec.entries(shape) * (spec.p // 4 + 1), link.word_cycles(spec.words(shape)))


def input_cycles(start: int, shape: tuple[int, int, int], link: LinkModel, spec: TileSpec = DEFAULT_TILE) -> float:
    """Receive time of a stage starting at layer ``start``: the host feeds one word per cycle; a
    tile downstream of another receives at the upstream tile's send rate."""
    return recv_cycles(shape, link, spec) if start == 0 else send_cycles(shape, link, spec)


def segment_cycles(net: Network, start: int, stop: int, link: LinkModel,
                   spec: TileSpec = DEFAULT_TILE) -> tuple[float, list[int]]:
    """(cycles per image of a tile running layers [start, stop), per-layer compute cycles)."""
    shapes = net.shapes()
    per_layer = [layer_cycles(net.layers[i], shapes[i], spec) for i in range(start, stop)]
    total = input_cycles(start, shapes[start], link, spec) + sum(per_layer) + send_cycles(shapes[stop], link, spec)
    return total, per_layer
