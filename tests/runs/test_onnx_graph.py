"""The static rule of in-front-end runs: which graphs let a caller's values size their run."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gateway.runs.onnx_graph import UnreadableModel, check_model

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
R = helper.make_tensor_value_info("r", TensorProto.INT64, [2])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
CONSTANT_REPEATS = numpy_helper.from_array(np.array([2, 1], np.int64), "rc")


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    *,
    initializers: tuple[onnx.TensorProto, ...] = (),
    functions: tuple[onnx.FunctionProto, ...] = (),
) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, [Y], list(initializers))
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions))
    return bytes(model.SerializeToString())


def _branch(nodes: list[onnx.NodeProto]) -> onnx.GraphProto:
    return helper.make_graph(
        nodes, "b", [], [helper.make_tensor_value_info("by", TensorProto.FLOAT, None)]
    )


@pytest.mark.parametrize(
    ("nodes", "inputs", "initializers"),
    [
        ([helper.make_node("Relu", ["x"], ["y"])], [X], ()),
        ([helper.make_node("Tile", ["x", "rc"], ["y"])], [X], (CONSTANT_REPEATS,)),
        (
            [
                helper.make_node("Constant", [], ["c"], value=CONSTANT_REPEATS),
                helper.make_node("Tile", ["x", "c"], ["y"]),
            ],
            [X],
            (),
        ),
        (  # a shape derived from the input's shape, not its values
            [
                helper.make_node("Shape", ["x"], ["s"]),
                helper.make_node("Mul", ["s", "s"], ["s2"]),
                helper.make_node("Expand", ["x", "s2"], ["y"]),
            ],
            [X],
            (),
        ),
    ],
    ids=["plain", "tile-by-initializer", "tile-by-constant-node", "expand-by-shape"],
)
def test_graphs_whose_cost_only_rows_set(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    initializers: tuple[onnx.TensorProto, ...],
) -> None:
    assert check_model(_model(nodes, inputs, initializers=initializers)) == ""


def test_value_sized_ops_keep_a_model_out_whatever_feeds_them() -> None:
    model = _model([helper.make_node("NonZero", ["x"], ["y"])], [X])
    assert "NonZero" in check_model(model)


def test_a_shape_op_fed_by_a_caller_s_values_keeps_a_model_out() -> None:
    direct = _model([helper.make_node("Tile", ["x", "r"], ["y"])], [X, R])
    assert (
        check_model(direct)
        == "op Tile sizes its output from input 'r', which a caller's values set"
    )
    through = _model(  # values of an input through another op are still values
        [
            helper.make_node("Abs", ["r"], ["a"]),
            helper.make_node("Expand", ["x", "a"], ["y"]),
        ],
        [X, R],
    )
    assert "Expand" in check_model(through)


def test_subgraphs_and_local_functions_are_read_too() -> None:
    tile = helper.make_node("Tile", ["x", "r"], ["by"])
    branches = helper.make_node(
        "If", ["c"], ["y"], then_branch=_branch([tile]), else_branch=_branch([tile])
    )
    assert "Tile" in check_model(_model([branches], [X, R]))
    function = helper.make_function(
        "local",
        "grow",
        ["a", "b"],
        ["o"],
        [helper.make_node("Tile", ["a", "b"], ["o"])],
        [helper.make_opsetid("", 17)],
    )
    call = helper.make_node("grow", ["x", "rc"], ["y"], domain="local")
    # a function's inputs are its caller's values, even a constant at the call site
    reason = check_model(
        _model([call], [X], initializers=(CONSTANT_REPEATS,), functions=(function,))
    )
    assert "Tile" in reason or "local.grow" in reason


def test_custom_ops_and_unreadable_bytes() -> None:
    custom = helper.make_node("Mystery", ["x"], ["y"], domain="com.example")
    assert "com.example.Mystery" in check_model(_model([custom], [X]))
    with pytest.raises(UnreadableModel):
        check_model(b"\x3a\xff\xff")  # a graph field longer than the bytes
