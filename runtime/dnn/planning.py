"""DNN plans for a platform: the partitioner with the platform's link and clock, cached."""

from __future__ import annotations

from functools import lru_cache

from runtime.dnn.cycle_model import LinkModel
from runtime.dnn.models import get_model
from runtime.dnn.partition import Plan, partition
from runtime.platform import Platform

_PLANS: dict[tuple, Plan] = {}


@lru_cache(maxsize=8)
def network(model: str):
    """The network of ``model``, built once per process."""
    return get_model(model)


def link_model(platform: Platform) -> LinkModel:
    return LinkModel(platform.link.lane_bits, platform.link.latency_cycles, platform.link.credits)


def dnn_plan(platform: Platform, model: str, tiles: int) -> Plan:
    """The partitioner's plan for ``model`` on at most ``tiles`` tiles of ``platform``."""
    key = (platform.path, model, tiles)
    if key not in _PLANS:
        _PLANS[key] = partition(network(model), tiles, link_model(platform), clock_hz=platform.fabric_clock_hz)
    return _PLANS[key]


def images_per_slot_second(platform: Platform, model: str) -> float:
    """Best DNN throughput per slot over 1..all slots: what one idle slot-second is worth."""
    if "dnn_tile" not in platform.modules:
        return 0.0
    plan = best_group_plan(platform, model)
    return plan.images_per_s / len(plan.stages)


def best_group_plan(platform: Platform, model: str) -> Plan:
    """The plan with the most images per slot-second over 1..all dnn_tile slots (ties: fewer
    tiles); best-effort work runs replicas of it on groups of that many idle slots."""
    slots = len(platform.slots_for("dnn_tile")) if "dnn_tile" in platform.modules else 0
    plans = [dnn_plan(platform, model, k) for k in range(1, slots + 1)]
    if not plans:
        raise ValueError(f"{platform.name} has no dnn_tile slots")
    return max(plans, key=lambda plan: (plan.images_per_s / len(plan.stages), -len(plan.stages)))
