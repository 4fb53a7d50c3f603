"""ONNX models for the REST tests: string inputs, a `*_bytes` output, a scalar output."""

from __future__ import annotations

from pathlib import Path

from onnx import TensorProto, helper

from tests.support.onnx_models import save_graph


def strings(path: Path) -> Path:
    """text string[-1] → ``text_out`` and ``text_bytes``, both the same strings (REST sends the
    second as ``{"b64": ...}``)."""
    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["text"], ["text_out"]),
            helper.make_node("Identity", ["text"], ["text_bytes"]),
        ],
        "strings",
        [helper.make_tensor_value_info("text", TensorProto.STRING, ["batch"])],
        [
            helper.make_tensor_value_info("text_out", TensorProto.STRING, ["batch"]),
            helper.make_tensor_value_info("text_bytes", TensorProto.STRING, ["batch"]),
        ],
    )
    return save_graph(graph, path)


def scalar_sum(path: Path) -> Path:
    """x float32[-1] → total float32[] (a rank-0 output: columnar format only)."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0)],
        "scalar_sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, [])],
    )
    return save_graph(graph, path)
