"""The partitioner: optimal against brute force, contiguous plans, clear errors for misfits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from fpgashare.dnn.cycle_model import LinkModel, segment_cycles
from fpgashare.dnn.models import digits_cnn, edge_cnn, random_layer
from fpgashare.dnn.network import Layer, Network
from fpgashare.dnn.partition import partition, plan_for
from fpgashare.dnn.tile_format import TileSpec, footprint
from fpgashare.errors import NetworkError


def random_network(rng: np.random.Generator, n: int) -> Network:
    start = (int(rng.integers(8, 24)), int(rng.integers(8, 24)), int(rng.integers(1, 12)))
    shape, layers = start, []
    for _ in range(n):
        if min(shape[:2]) >= 4 and rng.random() < 0.25:
            layers.append(Layer("maxpool"))
        else:
            stride = 2 if min(shape[:2]) >= 6 and rng.random() < 0.3 else 1
            layers.append(random_layer(rng, "conv", int(rng.integers(1, 40)), shape, stride=stride))
        shape = layers[-1].output_shape(shape)
    return Network("random", start, tuple(layers)).validate()


def brute_force(net: Network, tiles: int, link: LinkModel, spec: TileSpec) -> float:
    n, best = len(net.layers), float("inf")
    for k in range(1, tiles + 1):
        for cuts in itertools.combinations(range(1, n), k - 1):
            bounds = [0, *cuts, n]
            segs = list(itertools.pairwise(bounds))
            if any(footprint(net, a, b, spec).problem(spec) for a, b in segs):
                continue
            best = min(best, max(segment_cycles(net, a, b, link, spec)[0] for a, b in segs))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_dp_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, int(rng.integers(1, 8)))
    link = LinkModel(int(rng.choice([8, 16, 32])), int(rng.integers(1, 5)), int(rng.integers(2, 9)))
    spec = TileSpec(p=int(rng.choice([4, 8])), act_entries=int(rng.choice([512, 4096])),
                    w_entries=int(rng.choice([64, 8192])), max_layers=4)
    for tiles in range(1, 5):
        want = brute_force(net, tiles, link, spec)
        if want == float("inf"):
            with pytest.raises(NetworkError, match="does not fit"):
                partition(net, tiles, link, spec)
            continue
        plan = partition(net, tiles, link, spec)
        assert plan.bottleneck_cycles == pytest.approx(want)
        assert len(plan.stages) <= tiles
        assert plan.segments[0][0] == 0 and plan.segments[-1][1] == len(net.layers)


def test_plan_report_and_more_tiles_never_hurt():
    net = edge_cnn()
    necks = [partition(net, k).bottleneck_cycles for k in range(1, 5)]
    assert necks == sorted(necks, reverse=True) and necks[3] < necks[0] / 3
    plan = partition(net, 4).as_dict()
    assert plan["tiles_used"] == 4 and len(plan["link_bytes"]) == 3
    assert plan["predicted_images_per_s"] == pytest.approx(200e6 / plan["bottleneck_cycles"], rel=1e-3)


def test_misfits_are_explained():
    net = digits_cnn()
    with pytest.raises(NetworkError, match="needs 1024 activation entries, a tile has 100"):
        partition(Network("big", (32, 32, 1), (Layer("maxpool"),)), 2, spec=TileSpec(act_entries=100))
    with pytest.raises(NetworkError, match="at least one tile"):
        partition(net, 0)
    with pytest.raises(NetworkError, match="do not cover"):
        plan_for(net, [(0, 2), (3, 6)])
    with pytest.raises(NetworkError, match="needs 3 layers, a tile has 2"):
        plan_for(net, [(0, 3), (3, 6)], spec=TileSpec(max_layers=2))
