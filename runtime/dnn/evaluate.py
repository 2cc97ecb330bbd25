"""``fpgashare dnn eval``: run a model on K tiles (RTL) or on the numpy reference and report.

A model is a shipped network, a network file (.npz), or a quantized ONNX model (.onnx, or the
shipped ``digits_qdq``): then the images are the model's float input, the host quantizes them,
and the report also compares the reference with onnxruntime (when it is installed).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from fpgashare.catalogue.platform import Platform
from fpgashare.dnn.models import get_model
from fpgashare.dnn.network import Network
from fpgashare.dnn.partition import partition
from fpgashare.dnn.planning import link_model
from fpgashare.dnn.reference import logits, run_network
from fpgashare.errors import FrameError, NetworkError

BACKENDS = ("rtl", "reference")


def _load_npz(path: str | Path) -> tuple[np.ndarray, np.ndarray | None]:
    """The ``images`` array and the optional ``labels`` of an .npz file, or a FrameError naming it."""
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
    return images, labels


def read_images(path: str | Path, net: Network) -> tuple[np.ndarray, np.ndarray | None]:
    """``images`` (N x H x W uint8) and optional ``labels`` (N integers) from an .npz file."""
    images, labels = _load_npz(path)
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


def read_float_inputs(path: str | Path, imported) -> tuple[np.ndarray, np.ndarray | None]:
    """``images`` (float, the ONNX model's input shape) and optional ``labels`` from an .npz file."""
    images, labels = _load_npz(path)
    images = imported.check_input(images)
    if labels is not None and (labels.shape != (len(images),) or not np.issubdtype(labels.dtype, np.integer)):
        raise FrameError(f"{path}: labels must be {len(images)} integers, got {labels.dtype} {labels.shape}")
    return images, labels


def _onnx_inputs(model: str, imported, images_path: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    if images_path:
        return read_float_inputs(images_path, imported)
    from fpgashare.dnn.onnx_shipped import shipped_onnx

    if shipped_onnx(model) is not None:
        from fpgashare.dnn.onnx_example import split, to_input

        _, _, images, labels = split()
        return to_input(images), labels
    raise FrameError(f"{model}: give the model's float inputs with --images (an .npz with 'images')")


def evaluate(model: str, tiles: int, platform: Platform, images_path: str | None = None,
             backend: str = "rtl", out: str | None = None) -> dict:
    """Run ``model`` on ``tiles`` tiles (RTL) or the reference; ``out`` (.npz) gets ``outputs``,
    N x values: for an ONNX model the integers of its last quantized tensor in its own zero point."""
    if backend not in BACKENDS:
        raise NetworkError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    from fpgashare.dnn.onnx_shipped import onnx_path

    source = onnx_path(model)
    imported = None
    if source is not None:
        from fpgashare.dnn.onnx_import import import_onnx

        imported = import_onnx(source)
        net = imported.network
        images, labels = _onnx_inputs(model, imported, images_path)
    else:
        try:
            net = get_model(model)
        except NetworkError as exc:
            if not str(exc).startswith("unknown model"):
                raise
            from fpgashare.dnn.onnx_shipped import known_models

            raise NetworkError(f"unknown model {model!r}; known: {known_models(network_files=True)}") from None
        images, labels = read_images(images_path, net) if images_path else default_images(net)
    free = len(platform.slots_for("dnn_tile")) if "dnn_tile" in platform.modules else 0
    if tiles > free:
        raise NetworkError(f"--tiles {tiles}: platform {platform.name} has {free} slot(s) that can hold a dnn_tile")
    link = link_model(platform)
    plan = partition(net, tiles, link, platform.dnn_tile, clock_hz=platform.fabric_clock_hz)
    start = time.perf_counter()
    if imported is not None:
        activations = imported.quantize_input(images)
        reference = imported.outputs(run_network(net, activations))
    else:
        activations, reference = images, logits(net, images)
    result: dict = {"model": net.name, "backend": backend, "platform": platform.name, "images": len(images),
                    "predicted_cycles_per_image": round(plan.bottleneck_cycles), "plan": plan.as_dict()}
    if backend == "rtl":
        from fpgashare.dnn.tile_chain import TileChain
        from fpgashare.hdl_sim.board import SimBoard

        chain = TileChain(SimBoard(platform), net, plan)
        run = chain.run(activations)
        outputs = imported.outputs(run.outputs) if imported is not None else run.outputs.reshape(len(images), -1)
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
    if imported is not None:
        result["onnxruntime"] = compare_onnxruntime(source, imported, images, reference)
    if out:
        np.savez(out, outputs=outputs)
        result["out"] = str(out)
    result["wall_s"] = round(time.perf_counter() - start, 3)
    return result


def compare_onnxruntime(source, imported, images: np.ndarray, reference: np.ndarray) -> dict | None:
    """How the reference's output integers compare with onnxruntime's (None without onnxruntime)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    from fpgashare.dnn.onnx_model import onnxruntime_outputs

    theirs = onnxruntime_outputs(source, imported, images)
    diff = np.abs(reference.astype(np.int32) - theirs)
    return {"equal_values": float(np.mean(diff == 0)), "max_abs_diff": int(diff.max()),
            "top1_agreement": float(np.mean(reference.argmax(1) == theirs.argmax(1)))}


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
    ort = r.get("onnxruntime")
    if ort:
        lines.append(f"  onnxruntime           {ort['equal_values']:.4f} of values equal, max diff "
                     f"{ort['max_abs_diff']}, top-1 agreement {ort['top1_agreement']:.4f} (reference vs onnxruntime)")
    if r.get("out"):
        lines.append(f"  outputs written to    {r['out']}")
    lines.append(f"  wall_s                {r['wall_s']}")
    return lines
