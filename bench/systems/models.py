"""The benchmark's models, built with ``onnx.helper`` from seeded random weights.

Nothing is downloaded.

- ``mlp``: the tiny model, ``x`` float32[-1, 64] → Dense 256 → ReLU → Dense 256 → ReLU → Dense 10 →
  ``probabilities`` float32[-1, 10] (softmax).
- ``resnet50``: ResNet-50 v1.5 (torchvision layout, stride on the 3×3 convolutions, batch norm
  folded into the convolutions' biases as an exported inference graph has it), input ``images``
  float32[-1, 224, 224, 3] (NHWC like a Keras export, transposed inside the graph) →
  ``probabilities`` float32[-1, 1000]. 25.5 M parameters, ~102 MB on disk.

Layout is TF Serving's: ``<root>/<name>/1/model.onnx``. Files are rebuilt only when missing.

The hostile-caller probes (``python -m bench probes``) build their own, each named for what a
caller can do with it: :func:`looped` (a run as long as a value asks), :func:`gram_squared`
(a cost cubic in a dimension the caller picks), :func:`widened` (an output as wide as a value
asks), :func:`tiled` (a fixed large answer), :func:`conv_stack` (a few ms a row from a 3.5 kB
file), :func:`external_weights` (a tiny file with large weights beside it), :func:`doubled` (the
lightest model there is); :func:`build_mlp` takes a hidden width.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

log = logging.getLogger(__name__)

OPSET = 17
MODELS = ("mlp", "resnet50")
MLP_FEATURES = 64
RESNET_SIZE = 224
INPUT_NAMES = {"mlp": "x", "resnet50": "images"}
OUTPUT_NAME = "probabilities"


def model_path(root: Path, name: str) -> Path:
    """Where model ``name`` (version 1) lives under ``root``."""
    return root / name / "1" / "model.onnx"


def input_shape(name: str, batch: int = 1) -> tuple[int, ...]:
    """The input shape of one request of ``batch`` rows for model ``name``."""
    if name == "mlp":
        return (batch, MLP_FEATURES)
    if name == "resnet50":
        return (batch, RESNET_SIZE, RESNET_SIZE, 3)
    raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")


def sample_input(name: str, batch: int = 1, seed: int = 0) -> np.ndarray:
    """A deterministic float32 input for ``name`` (values in [0, 1), like a scaled image)."""
    return np.random.default_rng(seed).random(input_shape(name, batch), dtype=np.float32)


def ensure_models(root: Path, names: tuple[str, ...] = MODELS) -> dict[str, Path]:
    """Build every model in ``names`` that is missing under ``root``; return name → model dir."""
    builders = {"mlp": build_mlp, "resnet50": build_resnet50}
    out: dict[str, Path] = {}
    for name in names:
        path = model_path(root, name)
        if not path.exists():
            log.info("building %s at %s", name, path)
            builders[name](path)
        out[name] = root / name
    return out


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


def _he(
    rng: np.random.Generator, shape: tuple[int, ...], fan_in: int, gain: float = 1.0
) -> np.ndarray:
    scale = gain * np.sqrt(2.0 / fan_in)
    return np.asarray(rng.standard_normal(shape, dtype=np.float32) * scale, dtype=np.float32)


def build_mlp(path: Path, seed: int = 0, hidden: int = 256) -> Path:
    """Write the tiny MLP (64→``hidden``→``hidden``→10, softmax) to ``path``."""
    rng = np.random.default_rng(seed)
    sizes = [MLP_FEATURES, hidden, hidden, 10]
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    x = "x"
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        inits.append(numpy_helper.from_array(_he(rng, (fan_in, fan_out), fan_in), f"w{i}"))
        inits.append(numpy_helper.from_array(np.zeros(fan_out, np.float32), f"b{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]))
        x = f"a{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes.append(helper.make_node("Softmax", [x], [OUTPUT_NAME], axis=-1))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", MLP_FEATURES])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", 10])],
        initializer=inits,
    )
    return save_graph(graph, path)


class _ResNetBuilder:
    """Accumulates nodes and initializers of a ResNet-50 graph."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def _name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def conv(
        self, x: str, cin: int, cout: int, k: int, stride: int, relu: bool, gain: float = 1.0
    ) -> str:
        w, b, y = self._name("w"), self._name("b"), self._name("conv")
        self.inits.append(
            numpy_helper.from_array(_he(self.rng, (cout, cin, k, k), cin * k * k, gain), w)
        )
        self.inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), b))
        pad = k // 2
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, w, b],
                [y],
                kernel_shape=[k, k],
                strides=[stride, stride],
                pads=[pad, pad, pad, pad],
            )
        )
        return self.relu(y) if relu else y

    def relu(self, x: str) -> str:
        y = self._name("relu")
        self.nodes.append(helper.make_node("Relu", [x], [y]))
        return y

    def bottleneck(self, x: str, cin: int, mid: int, cout: int, stride: int) -> str:
        h = self.conv(x, cin, mid, 1, 1, relu=True)
        h = self.conv(h, mid, mid, 3, stride, relu=True)
        # A small gain on the last conv keeps activations tame across 16 residual additions.
        h = self.conv(h, mid, cout, 1, 1, relu=False, gain=0.2)
        shortcut = x if (cin == cout and stride == 1) else self.conv(x, cin, cout, 1, stride, False)
        y = self._name("add")
        self.nodes.append(helper.make_node("Add", [h, shortcut], [y]))
        return self.relu(y)


def build_resnet50(path: Path, seed: int = 0) -> Path:
    """Write ResNet-50 with random weights (NHWC float32 input, 1000-way softmax) to ``path``."""
    b = _ResNetBuilder(seed)
    b.nodes.append(helper.make_node("Transpose", ["images"], ["nchw"], perm=[0, 3, 1, 2]))
    x = b.conv("nchw", 3, 64, 7, 2, relu=True)
    b.nodes.append(
        helper.make_node(
            "MaxPool", [x], ["pool0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        )
    )
    x, cin = "pool0", 64
    for mid, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            x = b.bottleneck(x, cin, mid, mid * 4, stride if i == 0 else 1)
            cin = mid * 4
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    b.nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    b.inits.append(numpy_helper.from_array(_he(b.rng, (cin, 1000), cin), "fc_w"))
    b.inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
    b.nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"]))
    b.nodes.append(helper.make_node("Softmax", ["logits"], [OUTPUT_NAME], axis=-1))
    size = RESNET_SIZE
    graph = helper.make_graph(
        b.nodes,
        "resnet50",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", size, size, 3])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", 1000])],
        initializer=b.inits,
    )
    return save_graph(graph, path)


# -- the probes' models ---------------------------------------------------------------------------
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


def gram_squared(path: Path) -> Path:
    """x float32[-1, -1] → y float32[1, 1], the sum of (xᵀx)² (a matrix product): for x of
    shape [n, L] it costs n·L² + 2·L³ multiply-adds, so a caller who picks L picks the cost."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"]),
        helper.make_node("MatMul", ["xt", "x"], ["gram"]),
        helper.make_node("MatMul", ["gram", "gram"], ["squared"]),
        helper.make_node("ReduceSum", ["squared"], ["y"], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "gram_squared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "length"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
    )
    return save_graph(graph, path)


def widened(path: Path) -> Path:
    """x float32[-1, 1], n int64[-1] → y float32[-1, max(n)]: x repeated along a width the
    caller's value sets (``Expand`` to a shape computed from ``n``)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Slice", ["x_shape", "zero", "one"], ["rows"]),
        helper.make_node("ReduceMax", ["n"], ["width"], keepdims=1),
        helper.make_node("Concat", ["rows", "width"], ["shape"], axis=0),
        helper.make_node("Expand", ["x", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "widened",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1]),
            helper.make_tensor_value_info("n", TensorProto.INT64, ["batch"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "width"])],
        initializer=[
            numpy_helper.from_array(np.array([0], np.int64), "zero"),
            numpy_helper.from_array(np.array([1], np.int64), "one"),
        ],
    )
    return save_graph(graph, path)


def tiled(path: Path, width: int) -> Path:
    """x float32[-1, 1] → y float32[-1, ``width``]: each row's value repeated (a constant
    ``Tile``): a one-row call is answered ``4 × width`` bytes of float32."""
    repeats = numpy_helper.from_array(np.array([1, width], np.int64), "repeats")
    graph = helper.make_graph(
        [helper.make_node("Tile", ["x", "repeats"], ["y"])],
        "tiled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
        initializer=[repeats],
    )
    return save_graph(graph, path)


def doubled(path: Path) -> Path:
    """x float32[-1, 1] → y = 2x: the lightest model, whose cost per row is next to nothing."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y"])],
        "doubled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1])],
        initializer=[two],
    )
    return save_graph(graph, path)


CONV_SIZE = 224
"""The side of :func:`conv_stack`'s input images."""


def conv_stack(path: Path, seed: int = 0, channels: int = 8) -> Path:
    """x float32[-1, 3, 224, 224] → two 3×3 convolutions (3→``channels``→``channels``) →
    global average → y float32[-1, ``channels``]: ~3.5 kB of file, a few ms a row, and ~1.6 MB
    of activations a row."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(_he(rng, (channels, 3, 3, 3), 27), "w1")
    w2 = numpy_helper.from_array(_he(rng, (channels, channels, 3, 3), 9 * channels), "w2")
    same = [1, 1, 1, 1]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=same),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=same),
        helper.make_node("GlobalAveragePool", ["c2"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_stack",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, CONV_SIZE, CONV_SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", channels])],
        initializer=[w1, w2],
    )
    return save_graph(graph, path)


def external_weights(path: Path, weight_bytes: int, features: int = 4096, seed: int = 0) -> Path:
    """x float32[-1, ``features``] → y = x·W, W's ``weight_bytes`` (rounded down to whole
    columns) kept in ``weights.bin`` beside a model file of a few hundred bytes (ONNX external
    data)."""
    columns = max(1, weight_bytes // (4 * features))
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal((features, columns), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "external_weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", columns])],
        initializer=[numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    return path
