"""ONNX models whose outputs are far bigger than their inputs (``Expand`` of a ``[1, 1]`` tensor),
for the tests of how workers bound and release outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tests.support.onnx_models import save_graph


def expand(path: Path, *, to: tuple[int, int] | None, elem: int = TensorProto.FLOAT) -> Path:
    """x elem[1, 1] → y = x expanded to ``to``: a static shape (ONNX Runtime's shape inference
    sizes ``y``), or, when ``to`` is None, to the int64[2] input ``shape`` (only the run does)."""
    node = helper.make_node("Expand", ["x", "shape"], ["y"])
    x = helper.make_tensor_value_info("x", elem, [1, 1])
    y = helper.make_tensor_value_info("y", elem, ["rows", "columns"])
    if to is None:
        shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
        graph = helper.make_graph([node], path.stem, [x, shape], [y])
    else:
        constant = numpy_helper.from_array(np.array(to, dtype=np.int64), "shape")
        graph = helper.make_graph([node], path.stem, [x], [y], initializer=[constant])
    return save_graph(graph, path)
