"""Whether a caller can drive an ONNX model's run cost: read from the model file itself.

A version may run inside a front end only when its cost per run depends on the number of rows
alone, which the front end then bounds (:mod:`gateway.runs.inline_cost`). That holds when:

- every input and output of the signature has a numeric dtype (no strings, no bfloat16) and a
  known rank whose dimensions past the first are fixed: a caller grows only the rows;
- no node of the graph, nor of a subgraph or a model-local function, sizes its output from the
  *values* a caller sends: ``Loop`` and ``NonZero`` never qualify, and the value-driven shape ops
  (:data:`SHAPE_INPUTS`: ``Tile``, ``Expand``, ``Range``, ``ConstantOfShape``, ``TopK``'s ``K``,
  ``Pad``, ``Resize``, ...) qualify only when the inputs that set their output's size are
  constants (initializers, ``Constant`` nodes) or derived from input *shapes* alone (``Shape``,
  ``Size``, and what is computed from those and constants), which the rule above fixes;
- every op is in ONNX's own domains or ONNX Runtime's (a custom op's cost is unknown).

:func:`check_file` reads the file's protobuf wire format directly (no ``onnx`` package: this runs
in the serving processes) and answers "" or why the model fails the rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from gateway.proto_wire import read_varint

SHAPE_INPUTS: Final = {
    "Tile": (1,),
    "Expand": (1,),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "TopK": (1,),
    "Pad": (1,),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "OneHot": (1,),
    "Col2Im": (1, 2),
    "CenterCropPad": (1,),
    "MaxUnpool": (2,),
    "DFT": (1,),
    "STFT": (1, 2, 3),
    "MelWeightMatrix": (0, 1),
    "BlackmanWindow": (0,),
    "HannWindow": (0,),
    "HammingWindow": (0,),
}
"""Ops whose output size is set by the values of these input positions."""
VALUE_SIZED: Final = frozenset({"Loop", "NonZero"})
"""Ops whose cost or output size follows the values they are fed, whatever feeds them."""
SHAPE_ONLY: Final = frozenset({"Shape", "Size"})
"""Ops whose output depends on their input's shape only, never its values."""
KNOWN_DOMAINS: Final = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})

# Field numbers of onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, FunctionProto).
_MODEL_GRAPH, _MODEL_FUNCTIONS = 7, 25
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_SPARSE_INITIALIZER = 1, 5, 15
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP_TYPE, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 4, 5, 7
_ATTRIBUTE_GRAPH, _ATTRIBUTE_GRAPHS = 6, 11
_TENSOR_NAME = 8
_SPARSE_VALUES = 1
_FUNCTION_NODE = 7


class UnreadableModel(ValueError):
    """The file is not a model this reader can follow."""


def _fields(data: memoryview) -> Iterator[tuple[int, memoryview]]:
    """The length-delimited fields of one message, (number, payload), in order; the others
    (numbers) are skipped."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(data, pos)
        elif wire == 2:
            size, pos = read_varint(data, pos)
            if pos + size > end:
                raise UnreadableModel("a field runs past the end of its message")
            yield number, data[pos : pos + size]
            pos += size
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise UnreadableModel(f"wire type {wire} is not supported")
    if pos != end:
        raise UnreadableModel("a field runs past the end of its message")


def _text(payload: memoryview) -> str:
    return bytes(payload).decode("utf-8", "replace")


@dataclass
class _Node:
    op_type: str = ""
    domain: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    subgraphs: list[memoryview] = field(default_factory=list)


def _node(payload: memoryview) -> _Node:
    node = _Node()
    for number, value in _fields(payload):
        if number == _NODE_INPUT:
            node.inputs.append(_text(value))
        elif number == _NODE_OUTPUT:
            node.outputs.append(_text(value))
        elif number == _NODE_OP_TYPE:
            node.op_type = _text(value)
        elif number == _NODE_DOMAIN:
            node.domain = _text(value)
        elif number == _NODE_ATTRIBUTE:
            for inner, graph in _fields(value):
                if inner in (_ATTRIBUTE_GRAPH, _ATTRIBUTE_GRAPHS):
                    node.subgraphs.append(graph)
    return node


def _initializer_name(payload: memoryview, sparse: bool) -> str:
    if sparse:  # SparseTensorProto: its name is its values tensor's
        for number, value in _fields(payload):
            if number == _SPARSE_VALUES:
                return _initializer_name(value, sparse=False)
        return ""
    for number, value in _fields(payload):
        if number == _TENSOR_NAME:
            return _text(value)
    return ""


def _check_nodes(nodes: Sequence[_Node], constants: set[str], outer: frozenset[str]) -> str:
    """Walk ``nodes`` in order (ONNX keeps them topologically sorted), tracking which tensors
    carry a caller's values: every name that is not a constant, a shape-only result or computed
    only from those. ``outer``: names of an enclosing graph known to be value-free."""
    value_free = set(constants) | set(outer)
    for node in nodes:
        if node.domain not in KNOWN_DOMAINS:
            return f"op {node.domain}.{node.op_type} is not one of ONNX's or ONNX Runtime's"
        if node.op_type in VALUE_SIZED:
            return f"op {node.op_type} runs as long or as large as the values it is fed"
        positions = SHAPE_INPUTS.get(node.op_type, ())
        for position in positions:
            if position < len(node.inputs):
                name = node.inputs[position]
                if name and name not in value_free:
                    return (
                        f"op {node.op_type} sizes its output from input {name!r}, which a "
                        "caller's values set"
                    )
        for graph in node.subgraphs:
            reason = _check_graph(graph, frozenset(value_free))
            if reason:
                return reason
        if node.op_type in SHAPE_ONLY or node.op_type == "Constant":
            free = True
        else:
            free = all(not name or name in value_free for name in node.inputs)
        if free:
            value_free.update(node.outputs)
    return ""


def _check_graph(payload: memoryview, outer: frozenset[str]) -> str:
    nodes: list[_Node] = []
    constants: set[str] = set()
    for number, value in _fields(payload):
        if number == _GRAPH_NODE:
            nodes.append(_node(value))
        elif number in (_GRAPH_INITIALIZER, _GRAPH_SPARSE_INITIALIZER):
            constants.add(_initializer_name(value, number == _GRAPH_SPARSE_INITIALIZER))
    return _check_nodes(nodes, constants, outer)


def check_model(data: bytes) -> str:
    """ "" when no node of the model (graph, subgraphs, local functions) lets a caller's values
    size its run; else why. Raises :class:`UnreadableModel` for bytes that are not a model."""
    graph: memoryview | None = None
    functions: list[memoryview] = []
    try:
        for number, value in _fields(memoryview(data)):
            if number == _MODEL_GRAPH:
                graph = value
            elif number == _MODEL_FUNCTIONS:
                functions.append(value)
        if graph is None:
            raise UnreadableModel("the model has no graph")
        reason = _check_graph(graph, frozenset())
        for function in functions:  # a function's inputs are its caller's: values
            nodes = [_node(v) for n, v in _fields(function) if n == _FUNCTION_NODE]
            reason = reason or _check_nodes(nodes, set(), frozenset())
    except ValueError as exc:  # read_varint's truncation included
        raise UnreadableModel(str(exc)) from None
    return reason


def check_file(path: str) -> str:
    """:func:`check_model` of the file at ``path`` (OSError when it cannot be read)."""
    with open(path, "rb") as file:
        return check_model(file.read())
