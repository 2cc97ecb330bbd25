"""``fpgashare dnn import``: what a quantized ONNX model becomes on the tiles, or why it cannot."""

from __future__ import annotations

from fpgashare.dnn.onnx_graph import UnsupportedModelError, load_graph, node_label
from fpgashare.dnn.onnx_import import HANDLERS, import_onnx
from fpgashare.dnn.onnx_shipped import onnx_path
from fpgashare.errors import NetworkError


def _unsupported_nodes(source) -> list[str]:
    """Every node whose operator the importer has no rule for (the walk stops at the first)."""
    g = load_graph(source)
    return [node_label(n) for n in g.nodes
            if n.op_type not in HANDLERS and not (n.op_type == "Constant" and n.domain in ("", "ai.onnx"))]


def import_report(model: str, tiles: int, platform_name: str, out: str | None = None) -> tuple[dict, list[str]]:
    """(report, lines): the layers and the plan on ``tiles`` tiles of the platform, or the refusal."""
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.dnn.partition import partition
    from fpgashare.dnn.planning import link_model

    source = onnx_path(model)
    if source is None:
        raise NetworkError(f"{model}: not an ONNX model (.onnx)")
    try:
        imported = import_onnx(source)
    except UnsupportedModelError as exc:
        others = [n for n in _unsupported_nodes(source) if n not in str(exc)]
        first = str(exc).removeprefix(f"{source}: ")
        lines = [f"{source}: refused", f"  {first}"] + [f"  also not supported: {n}" for n in others]
        return {"model": str(source), "accepted": False, "refused": [str(exc), *others]}, lines
    platform = load_platform(platform_name)
    plan = partition(imported.network, tiles, link_model(platform), clock_hz=platform.fabric_clock_hz)
    lines = imported.describe()
    lines.append(f"  on {platform.name}: {len(plan.stages)} of {tiles} tile(s), predicted "
                 f"{round(plan.images_per_s, 1)} images/s")
    for (a, b), cycles in zip(plan.segments, plan.as_dict()["stage_cycles"], strict=True):
        lines.append(f"    tile: layers {a}..{b - 1}, {cycles} cycles/image")
    lines.append("  refused nodes: none")
    report = {"model": str(source), "accepted": True, "network": imported.network.name,
              "layers": [layer.kind for layer in imported.network.layers],
              "nodes": [{"name": r.name, "op": r.op_type, "role": r.role} for r in imported.roles],
              "input_scale": float(imported.input_q.scale), "output_scale": float(imported.output_q.scale),
              "plan": plan.as_dict(), "refused": []}
    if out:
        from fpgashare.dnn.network import save_network

        save_network(imported.network, out)
        lines.append(f"  network file written to {out}")
        report["out"] = str(out)
    return report, lines
