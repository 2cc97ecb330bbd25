"""QONNX versions of the generated float nets (IntQuant on the input, the weights and every layer's
output), and a plain-ONNX rewrite of IntQuant (Div, Clip, Round, Mul: the operator's definition) so
that onnxruntime executes the QONNX semantics for comparison."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

DOMAIN = "qonnx.custom_op.general"


def _const(graph, name: str, value) -> str:
    graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def ranges(model: onnx.ModelProto, x: np.ndarray) -> dict[str, float]:
    """Largest |value| of every node output over ``x`` (onnxruntime on the float model)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    outs = [o for n in m.graph.node for o in n.output]
    del m.graph.output[:]
    m.graph.output.extend(helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return {o: float(np.abs(v).max()) for o, v in zip(outs, sess.run(None, {"x": x}), strict=True)}


def to_qonnx(model: onnx.ModelProto, calib: np.ndarray, rng: np.random.Generator) -> onnx.ModelProto:
    """IntQuant after the input and every Conv/Gemm/Relu, on every weight and bias; ReLU outputs are
    unsigned 7-bit or signed 8-bit at random; weights per tensor or per channel at random; biases
    32-bit in the accumulator's scale (input scale x weight scale)."""
    top = ranges(model, calib)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    nodes = list(g.node)
    del g.node[:]
    bits8, zero = _const(g, "q_bits8", np.float32(8)), _const(g, "q_zero", np.float32(0))
    bits7 = _const(g, "q_bits7", np.float32(7))

    def quant(src: str, dst: str, scale, bits: str, signed: int, narrow: int = 0) -> None:
        s = _const(g, f"{dst}_scale", np.asarray(scale, np.float32))
        g.node.append(helper.make_node("IntQuant", [src, s, zero, bits], [dst], name=f"{dst}_quant", domain=DOMAIN,
                                       signed=signed, narrow=narrow, rounding_mode="ROUND"))

    bits32 = _const(g, "q_bits32", np.float32(32))
    current = np.float32(calib.max() / 127)          # the scale of the tensor the next node reads
    quant("x", "x_q", current, bits8, 1)
    renamed = {"x": "x_q"}
    for n in nodes:
        for k, inp in enumerate(n.input):
            n.input[k] = renamed.get(inp, inp)
        if n.op_type in ("Conv", "Gemm"):
            w = numpy_helper.to_array(inits[n.input[1]])
            if rng.random() < 0.5:
                scale = np.abs(w).reshape(len(w), -1).max(1).reshape((-1,) + (1,) * (w.ndim - 1)) / 127
            else:
                scale = np.float32(np.abs(w).max() / 127)
            quant(n.input[1], f"{n.input[1]}_q", scale, bits8, 1, 1)
            n.input[1] = f"{n.input[1]}_q"
            # The bias in the accumulator's scale, 32 bits (Brevitas' Int32Bias): the tile's int32 bias.
            acc_scale = (current * np.asarray(scale, np.float32)).reshape(-1).astype(np.float32)
            quant(n.input[2], f"{n.input[2]}_q", acc_scale, bits32, 1)
            n.input[2] = f"{n.input[2]}_q"
        g.node.append(n)
        out = n.output[0]
        if n.op_type in ("Conv", "Gemm", "Relu"):
            nxt = [c for c in nodes if out in c.input]
            if n.op_type != "Relu" and nxt and nxt[0].op_type == "Relu":
                continue                                    # quantized after its ReLU
            current = np.float32(max(top[out], 1e-2) / 127)     # a dead ReLU still gets a usable scale
            if n.op_type == "Relu" and rng.random() < 0.5:
                quant(out, f"{out}_q", current, bits7, 0)
            else:
                quant(out, f"{out}_q", current, bits8, 1)
            renamed[out] = f"{out}_q"
    last = g.output[0].name
    g.output[0].name = renamed.get(last, last)
    m.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return m


def executable(model: onnx.ModelProto) -> onnx.ModelProto:
    """IntQuant rewritten as Div, Clip, Round, Mul (zero point 0): plain ONNX onnxruntime runs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    nodes = list(g.node)
    del g.node[:]
    for n in nodes:
        if n.op_type != "IntQuant":
            g.node.append(n)
            continue
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
        bits = int(next(numpy_helper.to_array(i) for i in g.initializer if i.name == n.input[3]))
        lo = -(2 ** (bits - 1)) + a.get("narrow", 0) if a.get("signed", 1) else 0
        hi = 2 ** (bits - 1) - 1 if a.get("signed", 1) else 2**bits - 1 - a.get("narrow", 0)
        lo_n, hi_n = _const(g, f"{n.name}_lo", np.float32(lo)), _const(g, f"{n.name}_hi", np.float32(hi))
        t = n.name
        g.node.extend([helper.make_node("Div", [n.input[0], n.input[1]], [f"{t}_d"]),
                       helper.make_node("Clip", [f"{t}_d", lo_n, hi_n], [f"{t}_c"]),
                       helper.make_node("Round", [f"{t}_c"], [f"{t}_r"]),
                       helper.make_node("Mul", [f"{t}_r", n.input[1]], [n.output[0]])])
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("", 17))
    return m
