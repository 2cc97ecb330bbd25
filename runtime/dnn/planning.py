"""DNN plans for a platform: the partitioner with the platform's link and clock, cached."""

from __future__ import annotations

from functools import lru_cache

from fpgashare.dnn.cycle_model import LinkModel
from fpgashare.dnn.models import get_model
from fpgashare.dnn.partition import Plan, partition
from fpgashare.platform import Platform

_PLANS: dict[tuple, Plan] = {}


@lru_cache(maxsize=8)
def network(model: str):
    """The network of ``model``, built once per process."""
    return get_model(model)


@lru_cache(maxsize=64)
def program_words(model: str, start: int, stop: int) -> int:
    """Words of the load stream that gives a tile layers [start, stop) of ``model`` (one a cycle)."""
    from fpgashare.dnn.tile_format import load_stream

    return int(load_stream(network(model), start, stop).size)


def link_model(platform: Platform) -> LinkModel:
    return LinkModel(platform.link.lane_bits, platform.link.latency_cycles, platform.link.credits)


def dnn_plan(platform: Platform, model: str, tiles: int) -> Plan:
    """The partitioner's plan for ``model`` on at most ``tiles`` tiles of ``platform``."""
    key = (platform.path, model, tiles)
    if key not in _PLANS:
        _PLANS[key] = partition(network(model), tiles, link_model(platform), clock_hz=platform.fabric_clock_hz)
    return _PLANS[key]


def dnn_slot_count(platform: Platform) -> int:
    """How many slots of ``platform`` can hold a dnn_tile."""
    return len(platform.slots_for("dnn_tile")) if "dnn_tile" in platform.modules else 0


def images_per_stream_second(platform: Platform, model: str) -> float:
    """Best DNN throughput through the shell's one video stream: the partitioner's plan on every
    dnn_tile slot (the fastest single chain; a batch has the stream to itself)."""
    slots = dnn_slot_count(platform)
    return dnn_plan(platform, model, slots).images_per_s if slots else 0.0
