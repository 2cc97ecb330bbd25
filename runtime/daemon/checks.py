"""Validation at the daemon's edge: every field of a request is checked for type, finiteness and
range before anything changes, and a failure is a ``bad_request`` naming the op and the field.

Bounds (a request outside them is refused, whatever the platform could do):

- names (pipeline, model): 1..64 printable characters;
- stages: a list of 1..16 module or preset names;
- period_ms: finite, in [MIN_PERIOD_MS, MAX_PERIOD_MS]; deadline_ms: finite, in (0, MAX_PERIOD_MS];
- frame_shape: [rows, cols], integers in 1..MAX_SIDE (the platform's own limits are checked next);
- params: {stage name: {register: integer}}, at most 16 stages of 32 registers, values in int32;
- slot: an integer (the ring's own range is checked by the op); shape: up to 4 integers in
  0..MAX_SIDE; dtype: a string of at most 16 characters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fpgashare.wire.protocol import ProtocolError

NAME_MAX = 64
MIN_PERIOD_MS = 0.01
MAX_PERIOD_MS = 60_000.0
MAX_SIDE = 16_384
MAX_STAGES = 16
MAX_REGISTERS = 32
#: A register value: a 32-bit word, signed (conv3x3's taps) or unsigned (a template's packed bytes).
WORD32 = (-(1 << 31), (1 << 32) - 1)


def _bad(message: dict, key: str, problem: str) -> ProtocolError:
    op = message.get("op")
    return ProtocolError("bad_request", f"{op}: {key} {problem}")


def show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def name(message: dict, key: str) -> str:
    """A name: a string of 1..NAME_MAX printable characters."""
    value = message.get(key)
    if not isinstance(value, str):
        raise _bad(message, key, f"must be a string, got {show(value)}")
    if not 1 <= len(value) <= NAME_MAX or not value.isprintable():
        raise _bad(message, key, f"must be 1..{NAME_MAX} printable characters, got {show(value)}")
    return value


def integer(message: dict, key: str, low: int, high: int) -> int:
    value = message.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(message, key, f"must be an integer, got {show(value)}")
    if not low <= value <= high:
        raise _bad(message, key, f"must be in {low}..{high}, got {value}")
    return value


def number(message: dict, key: str, low: float, high: float, default: float | None = None,
           low_open: bool = False) -> float:
    """A finite number in [low, high] ((low, high] with ``low_open``); ``default`` when absent."""
    if key not in message and default is not None:
        return default
    value = message.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _bad(message, key, f"must be a number, got {show(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise _bad(message, key, f"must be finite, got {value}")
    if value > high or value < low or (low_open and value == low):
        bound = f"({low:g}, {high:g}]" if low_open else f"[{low:g}, {high:g}]"
        raise _bad(message, key, f"must be in {bound}, got {value:g}")
    return value


def int_list(message: dict, key: str, min_len: int, max_len: int, low: int, high: int) -> list[int]:
    value = message.get(key)
    if not isinstance(value, list) or not min_len <= len(value) <= max_len:
        raise _bad(message, key, f"must be a list of {min_len}..{max_len} integers, got {show(value)}")
    for v in value:
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            raise _bad(message, key, f"must hold integers in {low}..{high}, got {show(value)}")
    return list(value)


def stages(message: dict, key: str = "stages") -> list[str]:
    value = message.get(key)
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_STAGES:
        raise _bad(message, key, f"must be a list of 1..{MAX_STAGES} module names, got {show(value)}")
    for v in value:
        if not isinstance(v, str) or not 1 <= len(v) <= NAME_MAX or not v.isprintable():
            raise _bad(message, key, f"must hold module names (strings of 1..{NAME_MAX} characters), got {show(v)}")
    return list(value)


def params(message: dict, key: str = "params") -> dict[str, dict[str, int]]:
    """Register overrides {stage: {register: int}}; absent or None is no overrides."""
    value = message.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_STAGES:
        raise _bad(message, key, f"must be a map of at most {MAX_STAGES} stages to register maps, got {show(value)}")
    out: dict[str, dict[str, int]] = {}
    for stage, registers in value.items():
        if not isinstance(stage, str) or not 1 <= len(stage) <= NAME_MAX:
            raise _bad(message, key, f"has a stage name that is not a short string: {show(stage)}")
        if not isinstance(registers, dict) or len(registers) > MAX_REGISTERS:
            raise _bad(message, f"{key}.{stage}", f"must be a map of at most {MAX_REGISTERS} registers to "
                       f"integers, got {show(registers)}")
        for reg, v in registers.items():
            if not isinstance(reg, str) or not 1 <= len(reg) <= NAME_MAX:
                raise _bad(message, f"{key}.{stage}", f"has a register name that is not a short string: {show(reg)}")
            if not isinstance(v, int) or isinstance(v, bool) or not WORD32[0] <= v <= WORD32[1]:
                raise _bad(message, f"{key}.{stage}.{reg}", f"must be a 32-bit word (-2^31 .. 2^32-1), got {show(v)}")
        out[stage] = dict(registers)
    return out


def short_string(message: dict, key: str, max_len: int = 16) -> str:
    value = message.get(key)
    if not isinstance(value, str) or not 1 <= len(value) <= max_len:
        raise _bad(message, key, f"must be a string of 1..{max_len} characters, got {show(value)}")
    return value


FALLBACKS = ("cpu",)


def fallback(message: dict, key: str = "fallback") -> str | None:
    """Where stages the fabric does not take may run: None (nowhere: refused) or "cpu"."""
    value = message.get(key)
    if value is not None and value not in FALLBACKS:
        raise _bad(message, key, f"must be one of {', '.join(map(repr, FALLBACKS))} or absent, got {show(value)}")
    return value


@dataclass(frozen=True)
class PipelineRequest:
    """A ``pipeline`` registration's fields, each checked."""

    name: str
    stages: list[str]
    period_ms: float
    deadline_ms: float
    rows: int
    cols: int
    jitter_ms: float
    params: dict[str, dict[str, int]]
    fallback: str | None


def pipeline_request(message: dict) -> PipelineRequest:
    """The fields of a ``pipeline`` request, or the first bad one named. Release jitter must be
    below the period (the arrival curve admission assumes)."""
    name_ = name(message, "name")
    stages_ = stages(message)
    period_ms = number(message, "period_ms", MIN_PERIOD_MS, MAX_PERIOD_MS)
    deadline_ms = number(message, "deadline_ms", 0.0, MAX_PERIOD_MS, default=period_ms, low_open=True)
    rows, cols = int_list(message, "frame_shape", 2, 2, 1, MAX_SIDE)
    jitter_ms = number(message, "jitter_ms", 0.0, period_ms, default=0.0)
    if jitter_ms >= period_ms:
        raise ProtocolError("bad_request", f"pipeline {name_!r}: jitter_ms must be below period_ms "
                                           f"({jitter_ms:g} >= {period_ms:g})")
    return PipelineRequest(name_, stages_, period_ms, deadline_ms, rows, cols, jitter_ms, params(message),
                           fallback(message))
