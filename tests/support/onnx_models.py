"""Small real ONNX models built with onnx.helper for the tests (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
"""The ONNX opset of every model the tests build."""


def save_graph(graph: onnx.GraphProto, path: Path) -> Path:
    """``graph`` as a checked opset-17, IR 8 model at ``path`` (its folder made; written to a
    temporary name, then renamed)."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    onnx.save(model, str(tmp))
    tmp.replace(path)
    return path


def mlp(
    path: Path, *, seed: int = 0, features: int = 64, hidden: int = 32, classes: int = 10
) -> Path:
    """x float32[-1, features] → logits float32[-1, classes], probs float32[-1, classes]."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.standard_normal((features, hidden)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(hidden).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((hidden, classes)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes]),
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes]),
        ],
        initializer=[w1, b1, w2],
    )
    return save_graph(graph, path)


IDENTITY_DTYPES = {
    "float32": TensorProto.FLOAT,
    "float64": TensorProto.DOUBLE,
    "float16": TensorProto.FLOAT16,
    "int8": TensorProto.INT8,
    "int16": TensorProto.INT16,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "uint8": TensorProto.UINT8,
    "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32,
    "uint64": TensorProto.UINT64,
    "bool": TensorProto.BOOL,
    "string": TensorProto.STRING,
}


def identities(path: Path) -> Path:
    """One Identity per dtype: input ``in_<dtype>`` [-1, -1] → output ``out_<dtype>``."""
    inputs, outputs, nodes = [], [], []
    for name, elem in IDENTITY_DTYPES.items():
        inputs.append(helper.make_tensor_value_info(f"in_{name}", elem, ["n", "m"]))
        outputs.append(helper.make_tensor_value_info(f"out_{name}", elem, ["n", "m"]))
        nodes.append(helper.make_node("Identity", [f"in_{name}"], [f"out_{name}"]))
    return save_graph(helper.make_graph(nodes, "identities", inputs, outputs), path)


def identity(path: Path, dtype: str) -> Path:
    """x <dtype>[-1, -1] → y = x; ``dtype`` is any of :data:`IDENTITY_DTYPES` or bfloat16."""
    elem = {**IDENTITY_DTYPES, "bfloat16": TensorProto.BFLOAT16}[dtype]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        f"identity_{dtype}",
        [helper.make_tensor_value_info("x", elem, ["n", "m"])],
        [helper.make_tensor_value_info("y", elem, ["n", "m"])],
    )
    return save_graph(graph, path)


def add_two(path: Path) -> Path:
    """a, b float32[-1, 3] → sum = a + b, diff = a - b (two inputs, two outputs)."""
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"]),
        helper.make_node("Sub", ["a", "b"], ["diff"]),
    ]
    spec: list[str | int | None] = ["batch", 3]
    graph = helper.make_graph(
        nodes,
        "add_two",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, spec),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, spec),
        ],
        [
            helper.make_tensor_value_info("sum", TensorProto.FLOAT, spec),
            helper.make_tensor_value_info("diff", TensorProto.FLOAT, spec),
        ],
    )
    return save_graph(graph, path)


def scaled(path: Path, factor: float) -> Path:
    """x float32[-1, 2] → y = x * factor (tells versions apart)."""
    k = numpy_helper.from_array(np.array(factor, dtype=np.float32), "k")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["y"])],
        "scaled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
        initializer=[k],
    )
    return save_graph(graph, path)


def onnx_examples(path: Path) -> Path:
    """x float32[-1, 1], n int64[-1, 1] → outputs = 0.5 x + 2 + n, scores = [outputs, -outputs]."""
    nodes = [
        helper.make_node("Mul", ["x", "half"], ["hx"]),
        helper.make_node("Add", ["hx", "two"], ["h2"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["h2", "nf"], ["outputs"]),
        helper.make_node("Neg", ["outputs"], ["neg"]),
        helper.make_node("Concat", ["outputs", "neg"], ["scores"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "examples",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("n", TensorProto.INT64, ["batch", 1]),
        ],
        [
            helper.make_tensor_value_info("outputs", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 2]),
        ],
        initializer=[
            numpy_helper.from_array(np.array(0.5, np.float32), "half"),
            numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        ],
    )
    return save_graph(graph, path)


def image_identity(path: Path, dtype: str, shape: tuple[int | str, ...]) -> Path:
    """``images`` <dtype>[shape] (NHWC) → ``pixels`` = images: what the gateway fed it."""
    elem = IDENTITY_DTYPES[dtype]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["images"], ["pixels"])],
        "image_identity",
        [helper.make_tensor_value_info("images", elem, list(shape))],
        [helper.make_tensor_value_info("pixels", elem, list(shape))],
    )
    return save_graph(graph, path)


def looped(path: Path, *, addend: bool = False) -> Path:
    """x float32[-1, 2], k int64[-1] → y: x plus 1, max(k) times (an ONNX ``Loop`` whose trip
    count is a value the caller sends: its run takes as long as the caller asks). ``addend``:
    a third input z float32[-1, -1] added to the loop's result, which fails *after* the loop
    unless z's width broadcasts (1 or 2)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond"], ["cond_out"]),
            helper.make_node("Add", ["v", "one"], ["v_out"]),
        ],
        "step",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None),
        ],
        initializer=[numpy_helper.from_array(np.array(1.0, np.float32), "one")],
    )
    nodes = [
        helper.make_node("ReduceMax", ["k"], ["trips"], keepdims=0),
        helper.make_node("Loop", ["trips", "go", "x"], ["looped" if addend else "y"], body=body),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2]),
        helper.make_tensor_value_info("k", TensorProto.INT64, ["batch"]),
    ]
    if addend:
        nodes.append(helper.make_node("Add", ["looped", "z"], ["y"]))
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", "width"]))
    graph = helper.make_graph(
        nodes,
        "looped",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
        initializer=[numpy_helper.from_array(np.array(True), "go")],
    )
    return save_graph(graph, path)
