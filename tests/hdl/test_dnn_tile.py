"""dnn_tile: every layer type bit-exact with the numpy reference on random tensors (odd sizes,
stride 2, padding, several channel groups, saturation and accumulator-wrap corners), and the
tile's per-layer cycle counters equal to the cycle model; for each variant the platforms build
(8x8 MAC array in UltraRAM, 4x4 in block RAM), and on networks generated from a fresh seed."""

from __future__ import annotations

import json
import os
import random

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamSink, AxiStreamSource
from fpgashare.dnn.cycle_model import layer_cycles
from fpgashare.dnn.models import random_layer
from fpgashare.dnn.network import Layer, Network
from fpgashare.dnn.reference import run_network
from fpgashare.dnn.tile_chain import REG_LAYER0, REG_MODE, REG_NLAYERS, REG_STATUS
from fpgashare.dnn.tile_format import TileSpec, footprint, load_stream, pack_activations, unpack_activations

from tests.hdl.vision_tb import clock_and_reset, random_pauses

#: The variants under test: the zcu104's (8x8, UltraRAM) and the PYNQ-Z2's (4x4, block RAM), each
#: with small buffers so that the build stays quick; cycles do not depend on the sizes.
VARIANTS = {"p8_uram": TileSpec(p=8, act_entries=512, w_entries=512, pg_entries=16, max_layers=8),
            "p4_bram": TileSpec(p=4, act_entries=1024, w_entries=1024, pg_entries=32, max_layers=8, uram=False)}
#: The variant this simulation runs (the pytest side names it in the environment).
SPEC = VARIANTS[os.environ.get("DNN_TILE_VARIANT", "p8_uram")]


class TileTB:
    def __init__(self, dut, seed: int) -> None:
        self.dut = dut
        self.rng = random.Random(seed)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst, byte_lanes=1)
        self.snk = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst, byte_lanes=1)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)

    def pressure(self, duty: float) -> None:
        self.src.set_pause_generator(random_pauses(self.rng, duty))
        self.snk.set_pause_generator(random_pauses(self.rng, duty))

    async def reg(self, index: int) -> int:
        return await self.axil.read_dword(4 * index)

    async def load(self, net: Network, start: int = 0, stop: int | None = None) -> None:
        stop = len(net.layers) if stop is None else stop
        await self.axil.write_dword(4 * REG_MODE, 1)
        await self.src.send([int(w) for w in load_stream(net, start, stop, SPEC)])
        await self.src.wait()
        await ClockCycles(self.dut.clk, 2)
        await self.axil.write_dword(4 * REG_MODE, 0)
        assert await self.reg(REG_STATUS) == 0
        assert await self.reg(REG_NLAYERS) == stop - start

    async def run(self, net: Network, x: np.ndarray) -> np.ndarray:
        await self.src.send([int(w) for w in pack_activations(x, SPEC)])
        frame = await self.snk.recv()
        return unpack_activations(np.array(frame.tdata, np.uint32), net.output_shape, SPEC)


def random_conv(rng: np.random.Generator, shape, **kw) -> Layer:
    layer = random_layer(rng, "conv", int(rng.integers(1, 20)), shape, **kw)
    return layer


async def check(tb: TileTB, net: Network, rng: np.random.Generator, images: int = 2) -> None:
    await tb.load(net)
    for _ in range(images):
        x = rng.integers(-128, 128, (1, *net.input_shape), dtype=np.int8)
        got = await tb.run(net, x[0])
        want = run_network(net, x)[0]
        assert np.array_equal(got, want), f"{net.name}: {np.argwhere(got != want)[:5]}"
    shapes = net.shapes()
    for i, layer in enumerate(net.layers):
        assert await tb.reg(REG_LAYER0 + i) == layer_cycles(layer, shapes[i], SPEC), f"{net.name} layer {i} cycles"
    assert await tb.reg(REG_STATUS) == 0


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def conv_variants(dut):
    await clock_and_reset(dut)
    tb = TileTB(dut, 1)
    rng = np.random.default_rng(1)
    for n, (k, stride, pad) in enumerate([(3, 1, 1), (3, 2, 1), (3, 2, 0), (1, 1, 0), (5, 2, 2), (2, 1, 1)]):
        tb.pressure(0.3 * (n % 2))
        shape = (int(rng.integers(3, 10)), int(rng.integers(3, 10)), int(rng.integers(1, 20)))
        layer = random_layer(rng, "conv", int(rng.integers(1, 20)), shape, kernel=k, stride=stride, pad=pad,
                             relu=bool(n % 2))
        await check(tb, Network(f"conv{k}s{stride}p{pad}", shape, (layer,)).validate(), rng)


@cocotb.test(timeout_time=200, timeout_unit="ms")
async def pool_fc_and_a_chain(dut):
    await clock_and_reset(dut)
    tb = TileTB(dut, 2)
    tb.pressure(0.2)
    rng = np.random.default_rng(2)
    await check(tb, Network("pool", (7, 9, 13), (Layer("maxpool"),)).validate(), rng)
    await check(tb, Network("fc", (3, 2, 11), (random_layer(rng, "fc", 17, (3, 2, 11), relu=False),)).validate(), rng)
    shape = (9, 7, 3)
    layers = []
    for kind in ("conv", "maxpool", "conv", "fc"):
        layer = Layer("maxpool") if kind == "maxpool" else random_layer(rng, kind, 12, shape)
        layers.append(layer)
        shape = layer.output_shape(shape)
    await check(tb, Network("chain", (9, 7, 3), tuple(layers)).validate(), rng)


@cocotb.test(timeout_time=100, timeout_unit="ms")
async def saturation_and_wrap_corners(dut):
    await clock_and_reset(dut)
    tb = TileTB(dut, 3)
    rng = np.random.default_rng(3)
    shape = (5, 5, 24)
    oc = 10
    w = np.where(rng.random((oc, 3, 3, 24)) < 0.5, -128, 127).astype(np.int8)
    # Large accumulators, biases at the int32 edges (the sum wraps), big and tiny rescales.
    bias = np.array([2**31 - 1, -2**31, 0, 1, -1, 2**30, -2**30, 123456, -654321, 7], np.int32)
    mult = np.array([2**31 - 1, 2**30, 1, 2**31 - 1, 12345, 2**31 - 1, 2**30 + 1, 99, 2**31 - 2, 5], np.int32)
    shift = np.array([1, 31, 62, 40, 20, 33, 32, 10, 62, 2], np.uint8)
    layer = Layer("conv", oc, 3, 1, 1, False, w, bias, mult, shift)
    net = Network("corners", shape, (layer,)).validate()
    await tb.load(net)
    for x in (np.full(shape, 127, np.int8), np.full(shape, -128, np.int8),
              rng.integers(-128, 128, shape, dtype=np.int8)):
        got = await tb.run(net, x)
        assert np.array_equal(got, run_network(net, x[None])[0])
    relu = Network("corners_relu", shape, (Layer("conv", oc, 3, 1, 1, True, w, bias, mult, shift),)).validate()
    await check(tb, relu, rng)


def random_network(rng: np.random.Generator, spec: TileSpec) -> Network:
    """A network that fits ``spec``: up to spec.max_layers layers (conv of random kernel, stride and
    padding, max-pool, fc) on a small random input, every shape valid."""
    while True:
        net = _random_layers(rng, spec.max_layers)
        if footprint(net, 0, len(net.layers), spec).problem(spec) is None:
            return net


def _random_layers(rng: np.random.Generator, max_layers: int) -> Network:
    shape = (int(rng.integers(4, 11)), int(rng.integers(4, 11)), int(rng.integers(1, 13)))
    start, layers = shape, []
    for _ in range(int(rng.integers(1, max_layers + 1))):
        roll = rng.random()
        if roll < 0.2 and min(shape[:2]) >= 2:
            layer = Layer("maxpool")
        elif roll < 0.3:
            layer = random_layer(rng, "fc", int(rng.integers(1, 20)), shape, relu=bool(rng.random() < 0.5))
        else:
            k = int(rng.integers(1, 4))
            pad = int(rng.integers(0, k))
            if min(shape[:2]) + 2 * pad < k:
                continue
            layer = random_layer(rng, "conv", int(rng.integers(1, 20)), shape, kernel=k,
                                 stride=int(rng.integers(1, 3)), pad=pad, relu=bool(rng.random() < 0.7))
        layers.append(layer)
        shape = layer.output_shape(shape)
        if shape[:2] == (1, 1):
            break
    return Network("generated", start, tuple(layers)).validate()


@cocotb.test(timeout_time=400, timeout_unit="ms")
async def generated_networks(dut):
    """Networks and inputs from the seed the pytest side drew (its failure message names it)."""
    await clock_and_reset(dut)
    seed = int(os.environ.get("DNN_TILE_SEED", "0"))
    tb = TileTB(dut, seed)
    rng = np.random.default_rng(seed)
    for n in range(4):
        tb.pressure(0.25 * (n % 2))
        await check(tb, random_network(rng, SPEC), rng)


def run_variant(name: str, seed: int) -> tuple[int, int]:
    from fpgashare.hdl_sim.cocotb_build import run_cocotb

    spec = VARIANTS[name]
    return run_cocotb("dnn_tile", __name__, parameters={
        "P": spec.p, "ACT_ENTRIES": spec.act_entries, "W_ENTRIES": spec.w_entries,
        "PG_ENTRIES": spec.pg_entries, "MAX_LAYERS": spec.max_layers, "URAM": int(spec.uram)},
        extra_env={"DNN_TILE_VARIANT": name, "DNN_TILE_SEED": str(seed)})


@pytest.mark.rtl
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_dnn_tile_rtl(variant):
    seed = random.SystemRandom().randrange(2**31)
    tests, failed = run_variant(variant, seed)
    assert tests == 4 and failed == 0, json.dumps({"variant": variant, "seed": seed})
