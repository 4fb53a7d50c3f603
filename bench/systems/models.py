"""The benchmark's two models, built with ``onnx.helper`` from seeded random weights.

Nothing is downloaded.

- ``mlp``: the tiny model, ``x`` float32[-1, 64] → Dense 256 → ReLU → Dense 256 → ReLU → Dense 10 →
  ``probabilities`` float32[-1, 10] (softmax).
- ``resnet50``: ResNet-50 v1.5 (torchvision layout, stride on the 3×3 convolutions, batch norm
  folded into the convolutions' biases as an exported inference graph has it), input ``images``
  float32[-1, 224, 224, 3] (NHWC like a Keras export, transposed inside the graph) →
  ``probabilities`` float32[-1, 1000]. 25.5 M parameters, ~102 MB on disk.

Layout is TF Serving's: ``<root>/<name>/1/model.onnx``. Files are rebuilt only when missing.
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


def build_mlp(path: Path, seed: int = 0) -> Path:
    """Write the tiny MLP (64→256→256→10, softmax) to ``path``."""
    rng = np.random.default_rng(seed)
    sizes = [MLP_FEATURES, 256, 256, 10]
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
