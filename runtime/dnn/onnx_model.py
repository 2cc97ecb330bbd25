"""An imported model: the tile network plus what the host does around it (quantize the float
input, report the output integers), and the same computation by onnxruntime for comparison."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from fpgashare.dnn.network import Network
from fpgashare.dnn.onnx_graph import QParams
from fpgashare.dnn.reference import run_network
from fpgashare.errors import FrameError


@dataclass(frozen=True)
class NodeRole:
    """What one ONNX node became."""

    name: str
    op_type: str
    role: str


@dataclass(frozen=True)
class ImportedModel:
    """A quantized ONNX model as tile layers. The host quantizes the float input (its first
    QuantizeLinear, computed as onnxruntime does: float32 division, round half to even,
    saturate) and the tiles run ``network``; ``outputs`` are the integers of the last quantized
    tensor in ONNX's element order and in its own zero point."""

    network: Network
    input_name: str
    input_dims: tuple[int, ...]      #: per image, ONNX order: (C, H, W) or (K,)
    input_q: QParams
    output_q: QParams
    output_name: str                 #: the graph output (the DequantizeLinear of the last int8 tensor, or it)
    roles: tuple[NodeRole, ...]
    source: str
    #: the ONNX tensor holding the input's integers, then each layer's output's (None: none does,
    #: e.g. a layer a later ReLU was folded into); for comparing layer by layer
    tensors: tuple[str | None, ...] = ()

    def check_input(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.ndim == len(self.input_dims) and x.shape == self.input_dims:
            x = x[None]
        if x.shape[1:] != self.input_dims or len(x) == 0 or x.dtype.kind != "f":
            raise FrameError(f"{self.network.name}: input {self.input_name!r} is float of shape "
                             f"(N, {', '.join(map(str, self.input_dims))}), got {x.dtype} {x.shape}")
        return x.astype(np.float32)

    def quantize_input(self, x: np.ndarray) -> np.ndarray:
        """Float input [N, *input_dims] -> the tiles' int8 activations [N, H, W, C]."""
        x = self.check_input(x)
        q = self.input_q
        lo, hi = (0, 255) if q.dtype == "uint8" else (-128, 127)
        with np.errstate(over="ignore", invalid="ignore"):
            y = np.rint(x / q.scale)
        y = np.clip(np.nan_to_num(y, nan=0.0) + q.zero_point, lo, hi) - q.offset
        y = y.astype(np.int8)
        return y.transpose(0, 2, 3, 1) if y.ndim == 4 else y[:, None, None, :]

    def outputs(self, tile_out: np.ndarray) -> np.ndarray:
        """The tiles' int8 output [N, H, W, C] -> N x values: ONNX element order, own zero point."""
        out = tile_out.astype(np.int16)
        if out.shape[1:3] != (1, 1):
            out = out.transpose(0, 3, 1, 2)
        return out.reshape(len(out), -1) + self.output_q.offset

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The project's integer reference of the model on float input: N x output integers."""
        return self.outputs(run_network(self.network, self.quantize_input(x)))

    def describe(self) -> list[str]:
        """Lines for ``fpgashare dnn import``: the layers, and what every node became."""
        net = self.network
        shapes = net.shapes()
        lines = [f"{self.source}: {net.name}, input {self.input_name!r} (N, {', '.join(map(str, self.input_dims))}) "
                 f"quantized on the host as {self.input_q.describe()}",
                 f"  {len(net.layers)} tile layers (HWC shapes):"]
        for i, layer in enumerate(net.layers):
            what = layer.kind if layer.kind == "maxpool" else (
                f"{layer.kind} {layer.out_channels} ch" + (f", {layer.kernel}x{layer.kernel} stride {layer.stride} "
                                                           f"pad {layer.pad}" if layer.kind == "conv" else "")
                + (", relu" if layer.relu else ""))
            lines.append(f"    {i}: {what:<40} {shapes[i]} -> {shapes[i + 1]}")
        lines.append(f"  output: the integers of the tensor before {self.output_name!r}, {self.output_q.describe()}")
        lines.append("  nodes:")
        lines += [f"    {r.name or '(unnamed)'} ({r.op_type}): {r.role}" for r in self.roles]
        return lines


def onnxruntime_outputs(model_path, imported: ImportedModel, x: np.ndarray) -> np.ndarray:
    """onnxruntime's result for float input ``x``, as the integers of the last quantized tensor
    (recovered exactly from its DequantizeLinear: (q - zp) * s / s rounds back to q - zp)."""
    from fpgashare.dnn.onnx_deps import need_onnxruntime

    ort = need_onnxruntime()
    source = model_path if isinstance(model_path, (bytes, bytearray)) else str(model_path)
    sess = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    x = imported.check_input(x)
    # An input whose batch is a fixed number (exporters often write 1) takes that many images a
    # run; the last run is padded with copies of the last image, and the padding cut off.
    batch = sess.get_inputs()[0].shape[0]
    step = batch if isinstance(batch, int) and batch > 0 else max(len(x), 1)
    runs = []
    for i in range(0, len(x), step):
        part = x[i:i + step]
        padded = np.concatenate([part, np.repeat(part[-1:], step - len(part), axis=0)])
        runs.append(sess.run(None, {imported.input_name: padded})[0][:len(part)])
    got = np.concatenate(runs)
    got = got.reshape(len(got), -1)
    q = imported.output_q
    if got.dtype.kind == "f":
        return (np.rint(got / q.scale) + q.zero_point).astype(np.int16)
    return got.astype(np.int16)
