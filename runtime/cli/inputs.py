"""Checks of the command line's inputs before they reach the loaders, so a bad file or value is an
``error: ...`` naming it (exit 2), never a traceback.

Bounds: a workload's ``seed`` is an integer in 0..2**32-1 (numpy's generators take no negative
seed); ``duration_s`` is finite and at most MAX_DURATION_S; each pipeline's frames over the run
(duration / period) at most MAX_FRAMES; the demo's ``--frames`` at most MAX_DEMO_FRAMES.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import sys
from pathlib import Path

from fpgashare.errors import FpgashareError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (PYNQ images)
    import tomli as tomllib

MAX_DURATION_S = 3600.0        #: simulated seconds of one workload run
MAX_FRAMES = 1_000_000         #: frames of one pipeline over a run
MAX_DEMO_FRAMES = 10_000
#: Frames of the demo's video: about a second at 30 fps. The summary's `wall time in the backend`
#: line says where a run's wall time went (loads, frames, DNN batches, the board idle); from an
#: empty build cache the models' build comes first (the shell and the apps' eleven modules).
DEMO_FRAMES = 30
#: The most video streams the demo's daemon uses: the board is partitioned as the apps register
#: (runtime/sched/board/relayout.py), so the apps' frames may compute side by side where the planner
#: splits it (for the default apps it keeps one partition). Chains of 3-4 stages reload every frame
#: whether on one stream or two.
DEMO_STREAMS = 2
SEED_RANGE = (0, 2**32 - 1)


def text_file(path: Path, what: str) -> str | None:
    """The text of ``path`` if it exists (None if not: the loader names it missing); refused if
    it is a folder or not UTF-8."""
    if not path.exists():
        return None
    if path.is_dir():
        raise FpgashareError(f"{path}: is a folder, not a {what}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FpgashareError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FpgashareError(f"{path}: not a {what}: byte 0x{data[exc.start]:02x} at offset {exc.start} "
                             "is not UTF-8 text") from None


def workload_file(name_or_path: str) -> None:
    """Refuse a workload file whose text, seed, duration or frame count is out of bounds (the
    loader checks the rest)."""
    from fpgashare.catalogue.resources import resolve

    path = resolve("suite", name_or_path)
    unknown_name("suite", path)
    text = text_file(path, "workload file")
    if text is None:
        return
    try:
        top = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return                              # the loader reports it, with the line
    seed = top.get("seed", 0)
    if isinstance(seed, int) and not isinstance(seed, bool) and not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise FpgashareError(f"{path}: seed must be in {SEED_RANGE[0]}..{SEED_RANGE[1]}, not {seed}")
    duration = top.get("duration_s")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        if not math.isfinite(duration) or duration > MAX_DURATION_S:
            raise FpgashareError(f"{path}: duration_s must be finite and at most {MAX_DURATION_S:g} s, "
                                 f"not {duration}")
        for i, entry in enumerate(top.get("pipeline", []) if isinstance(top.get("pipeline"), list) else []):
            period = entry.get("period_ms") if isinstance(entry, dict) else None
            if isinstance(period, (int, float)) and not isinstance(period, bool) and period > 0:
                if not math.isfinite(period):
                    raise FpgashareError(f"{path}: pipeline[{i}].period_ms must be finite, not {period}")
                if duration * 1e3 / period > MAX_FRAMES:
                    raise FpgashareError(f"{path}: pipeline[{i}] would release {duration * 1e3 / period:.0f} frames "
                                         f"in {duration} s; at most {MAX_FRAMES} per run")


def manifest_file(name_or_path: str) -> None:
    from fpgashare.catalogue.resources import resolve

    path = resolve("platform", name_or_path)
    unknown_name("platform", path)
    text_file(path, "platform manifest")


def unknown_name(kind: str, path: Path) -> None:
    """A bare name that is neither a file here nor a shipped ``kind``: name the shipped ones."""
    from fpgashare.catalogue.resources import names

    if not path.exists() and path.parent == Path("."):
        raise FpgashareError(f"no {kind} named {path.name!r}; shipped: {', '.join(names(kind))} "
                             f"(or give a file's path)")


def output_path(option: str, value: str | None) -> None:
    """An output file's folder must exist (it is not created for a file)."""
    if value is None:
        return
    parent = Path(value).expanduser().parent
    if not parent.is_dir():
        raise FpgashareError(f"{option} {value}: the folder {parent} does not exist")


# ---- argparse types: a bad value is ``error: argument --x: ...`` (exit 2), never a traceback

def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0 (a duration, a dilation)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, not {text}")
    return value


def port(text: str) -> int:
    """A TCP port, 1..65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1..65535, not {value}")
    return value


def host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets: ``[::1]:7411``); the host must be an IP address or
    a name of letters, digits, dots and dashes."""
    host, sep, port_text = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {text!r}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not all(part and all(c.isalnum() or c == "-" for c in part) for part in host.split(".")):
            raise argparse.ArgumentTypeError(f"{host!r} is not an IP address or a host name") from None
    return host, port(port_text)
