"""``fpgashare dnn eval``: run a model on K tiles (RTL) or on the numpy reference and report."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from fpgashare.dnn.models import get_model
from fpgashare.dnn.network import Network
from fpgashare.dnn.partition import partition
from fpgashare.dnn.planning import link_model
from fpgashare.dnn.reference import logits
from fpgashare.errors import FrameError, NetworkError
from fpgashare.platform import Platform

BACKENDS = ("rtl", "reference")


def read_images(path: str | Path, net: Network) -> tuple[np.ndarray, np.ndarray | None]:
    """``images`` (N x H x W uint8) and optional ``labels`` (N integers) from an .npz file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if "images" not in data.files:
                raise FrameError(f"{path}: no 'images' array (found: {', '.join(data.files) or 'nothing'})")
            images = data["images"]
            labels = data["labels"] if "labels" in data.files else None
    except FileNotFoundError:
        raise FrameError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise FrameError(f"{path}: not an .npz file: {exc}") from None
    h, w, c = net.input_shape
    want = (h, w) if c == 1 else (h, w, c)
    if images.dtype != np.uint8 or images.ndim != len(want) + 1 or images.shape[1:] != want or len(images) == 0:
        raise FrameError(f"{path}: images must be uint8 of shape (N, {', '.join(map(str, want))}) with N >= 1 "
                         f"for {net.name}, got {images.dtype} {images.shape}")
    if labels is not None:
        if labels.shape != (len(images),) or not np.issubdtype(labels.dtype, np.integer):
            raise FrameError(f"{path}: labels must be {len(images)} integers, got {labels.dtype} {labels.shape}")
    return images, labels


def default_images(net: Network) -> tuple[np.ndarray, np.ndarray | None]:
    if net.name == "digits_cnn":
        from fpgashare.dnn.train_digits import digits_split

        _, _, images, labels = digits_split()
        return images, labels
    if net.name == "printed_digits":
        from fpgashare.dnn.train_printed import held_out_set

        return held_out_set()
    h, w, c = net.input_shape
    shape = (2, h, w) if c == 1 else (2, h, w, c)
    return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8), None


def evaluate(model: str, tiles: int, platform: Platform, images_path: str | None = None,
             backend: str = "rtl") -> dict:
    if backend not in BACKENDS:
        raise NetworkError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    net = get_model(model)
    images, labels = read_images(images_path, net) if images_path else default_images(net)
    free = len(platform.slots_for("dnn_tile")) if "dnn_tile" in platform.modules else 0
    if tiles > free:
        raise NetworkError(f"--tiles {tiles}: platform {platform.name} has {free} slot(s) that can hold a dnn_tile")
    link = link_model(platform)
    plan = partition(net, tiles, link, platform.dnn_tile, clock_hz=platform.fabric_clock_hz)
    start = time.perf_counter()
    reference = logits(net, images)
    result: dict = {"model": net.name, "backend": backend, "platform": platform.name, "images": len(images),
                    "predicted_cycles_per_image": round(plan.bottleneck_cycles), "plan": plan.as_dict()}
    if backend == "rtl":
        from fpgashare.dnn.tile_chain import TileChain
        from fpgashare.hdl_sim.board import SimBoard

        chain = TileChain(SimBoard(platform), net, plan)
        run = chain.run(images)
        outputs = run.outputs.reshape(len(images), -1)
        same = [np.array_equal(a, b) for a, b in zip(outputs, reference, strict=True)]
        result.update(
            agree_with_reference=float(np.mean(same)),
            cycles_per_image=round(run.cycles / len(images), 1), stage_image_cycles=run.stage_image_cycles,
            measured_layer_cycles=run.layer_cycles, load_words=chain.load_words, load_cycles=chain.load_cycles,
            measured_images_per_s=round(platform.fabric_clock_hz * len(images) / run.cycles, 1))
    else:
        outputs = reference
        result.update(agree_with_reference=None, cycles_per_image=None)
    if labels is not None:
        result["accuracy"] = float(np.mean(outputs.argmax(axis=1) == labels))
    result["wall_s"] = round(time.perf_counter() - start, 3)
    return result


def report_lines(r: dict) -> list[str]:
    plan = r["plan"]
    lines = [f"{r['model']} on {plan['tiles_used']} of {plan['tiles_available']} tile(s), backend {r['backend']}, "
             f"{r['images']} images"]
    if "accuracy" in r:
        lines.append(f"  accuracy              {r['accuracy']:.4f}")
    agree = r["agree_with_reference"]
    lines.append(f"  agree_with_reference  {'n/a (this is the reference)' if agree is None else f'{agree:.4f}'}")
    cpi = r["cycles_per_image"]
    lines.append(f"  cycles_per_image      {'n/a (no RTL run)' if cpi is None else cpi}"
                 f"  (predicted {r['predicted_cycles_per_image']})")
    for (a, b), cycles in zip(plan["segments"], plan["stage_cycles"], strict=True):
        lines.append(f"  stage layers {a}..{b - 1}: {cycles} cycles/image predicted")
    lines.append(f"  link bytes per image  {plan['link_bytes']}")
    lines.append(f"  predicted             {plan['predicted_images_per_s']} images/s, "
                 f"latency {plan['latency_cycles']} cycles")
    lines.append(f"  wall_s                {r['wall_s']}")
    return lines
