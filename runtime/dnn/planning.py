"""DNN plans for a platform: the partitioner with the platform's link, clock and dnn_tile variant, cached."""

from __future__ import annotations

from fpgashare.catalogue.platform import Platform
from fpgashare.dnn.cycle_model import LinkModel
from fpgashare.dnn.models import get_model
from fpgashare.dnn.partition import Plan, partition
from fpgashare.dnn.tile_format import DEFAULT_TILE, TileSpec
from fpgashare.errors import NetworkError

_PLANS: dict[tuple, Plan] = {}
_MISFITS: dict[tuple, str | None] = {}
# A model's network and load-stream sizes, kept until ``forget(model)``. A batch's setup reads them
# on the daemon's loop; kept in caches of a few entries (least recently used out), another
# tenant's networks in use evicted them, and each of a model's batches rebuilt its network there
# (edge_cnn: ~8 ms of the loop a batch with 8 other networks in use). Bounded all the same: the
# daemon's models are the shipped ones and its client networks (network_wire.Registry: at most
# 256, each forgotten when the registry drops it).
_NETWORKS: dict[str, object] = {}
_WORDS: dict[tuple, int] = {}


def network(model: str):
    """The network of ``model``, built once per process (kept until ``forget(model)``)."""
    net = _NETWORKS.get(model)
    if net is None:
        net = _NETWORKS[model] = get_model(model)
    return net


def program_words(model: str, start: int, stop: int, spec: TileSpec = DEFAULT_TILE) -> int:
    """Words of the load stream that gives a ``spec`` tile layers [start, stop) of ``model`` (one a
    cycle); pass the platform's variant (``Platform.dnn_tile``)."""
    from fpgashare.dnn.tile_format import load_stream

    key = (model, start, stop, spec)
    words = _WORDS.get(key)
    if words is None:
        words = _WORDS[key] = int(load_stream(network(model), start, stop, spec).size)
    return words


def link_model(platform: Platform) -> LinkModel:
    return LinkModel(platform.link.lane_bits, platform.link.latency_cycles, platform.link.credits)


def dnn_plan(platform: Platform, model: str, tiles: int) -> Plan:
    """The partitioner's plan for ``model`` on at most ``tiles`` of ``platform``'s dnn_tile variant."""
    key = (platform.path, platform.dnn_tile, model, tiles)
    if key not in _PLANS:
        _PLANS[key] = partition(network(model), tiles, link_model(platform), platform.dnn_tile,
                                clock_hz=platform.fabric_clock_hz)
    return _PLANS[key]


def misfit(platform: Platform, model: str) -> str | None:
    """Why ``model`` cannot run on ``platform``'s dnn_tile slots (its variant too small for some
    layer even with every slot in the chain), or None when the partitioner finds a split."""
    key = (platform.path, platform.dnn_tile, model, dnn_slot_count(platform))
    if key not in _MISFITS:
        _MISFITS[key] = None
        try:
            if key[-1]:
                dnn_plan(platform, model, key[-1])
        except NetworkError as exc:
            tile = platform.dnn_tile
            _MISFITS[key] = (f"{model} does not fit {platform.name}'s dnn_tile (P={tile.p}, {tile.act_entries} "
                             f"activation entries, {tile.w_entries} weight entries): {exc}")
    return _MISFITS[key]


def forget(model: str) -> None:
    """Drop the plans kept for ``model`` (a client's network the daemon no longer holds: its plans
    must not outlive it, or a stream of networks would grow them without end)."""
    for cache in (_PLANS, _MISFITS):
        for key in [k for k in list(cache) if k[2] == model]:    # (a copy: workers plan meanwhile)
            cache.pop(key, None)
    for key in [k for k in list(_WORDS) if k[0] == model]:
        _WORDS.pop(key, None)
    _NETWORKS.pop(model, None)


def dnn_slot_count(platform: Platform) -> int:
    """How many slots of ``platform`` can hold a dnn_tile."""
    return len(platform.slots_for("dnn_tile")) if "dnn_tile" in platform.modules else 0


def images_per_stream_second(platform: Platform, model: str) -> float:
    """Best DNN throughput through the shell's one video stream: the partitioner's plan on every
    dnn_tile slot (the fastest single chain; a batch has the stream to itself)."""
    slots = dnn_slot_count(platform)
    return dnn_plan(platform, model, slots).images_per_s if slots else 0.0
