"""The ONNX backend bounds a run's outputs (workers/backends/onnx.py, onnx_outputs.py): refused
before the run when the declared shapes size them past the bound, as it returns otherwise."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto

from channel.messages import WireTensorSpec, WorkerError
from tests.support import onnx_models
from tests.support.expand_models import expand
from workers.backends import onnx as onnx_backend
from workers.backends import onnx_outputs
from workers.backends.onnx import OnnxModel

MIB = 1 << 20
ONE = np.ones((1, 1), np.float32)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx_outputs")


def _load(path: Path, limit: int | None) -> OnnxModel:
    return onnx_backend.load(str(path), intra_op=1, inter_op=1, max_output_bytes=limit)


def _refused(model: OnnxModel, feeds: dict[str, np.ndarray], names: list[str] | None) -> str:
    with pytest.raises(WorkerError) as info:
        model.run(feeds, names)
    assert info.value.code == "RESOURCE_EXHAUSTED", info.value
    return info.value.message


def test_a_static_output_over_the_bound_is_refused_by_its_declared_size(root: Path) -> None:
    path = expand(root / "static.onnx", to=(1024, 1024))
    message = _refused(_load(path, MIB), {"x": ONE}, None)
    assert message == ("outputs of 4194304 bytes exceed the worker's output arena of 1048576 bytes")
    assert _load(path, 4 * MIB).run({"x": ONE}, None)["y"].shape == (1024, 1024)


def test_symbolic_dimensions_are_sized_by_the_inputs_and_only_asked_outputs_count(
    root: Path,
) -> None:
    path = onnx_models.add_two(root / "add_two.onnx")  # a, b [batch, 3] → sum, diff [batch, 3]
    feeds = {"a": np.ones((1000, 3), np.float32), "b": np.ones((1000, 3), np.float32)}
    both = 2 * 12032  # 12000 bytes each, 64-byte aligned
    message = _refused(_load(path, both - 1), feeds, None)
    assert (
        message == f"outputs of {both} bytes exceed the worker's output arena of {both - 1} bytes"
    )
    assert list(_load(path, both - 1).run(feeds, ["sum"])) == ["sum"]
    assert list(_load(path, both).run(feeds, None)) == ["sum", "diff"]


def test_outputs_sized_only_by_the_run_are_refused_as_it_returns_and_the_model_serves_on(
    root: Path,
) -> None:
    model = _load(expand(root / "dynamic.onnx", to=None), MIB)
    big: dict[str, np.ndarray] = {"x": ONE, "shape": np.array([1000, 1000], np.int64)}
    message = _refused(model, big, None)
    assert message == "outputs of 4000000 bytes exceed the worker's output arena of 1048576 bytes"
    small = model.run({"x": ONE, "shape": np.array([2, 3], np.int64)}, None)["y"]
    np.testing.assert_array_equal(small, np.ones((2, 3), np.float32))


def test_string_outputs_are_bounded_by_their_lengths_alone(root: Path) -> None:
    model = _load(expand(root / "strings.onnx", to=None, elem=TensorProto.STRING), MIB)
    feeds = {"x": np.array([["a"]], dtype=object), "shape": np.array([200_000, 1], np.int64)}
    message = _refused(model, feeds, None)
    assert message == (  # 8 bytes of count, 8 per length: 1600008, aligned
        "outputs of at least 1600064 bytes exceed the worker's output arena of 1048576 bytes"
    )


def test_without_a_bound_nothing_is_refused(root: Path) -> None:
    model = _load(expand(root / "unbounded.onnx", to=None), None)
    y = model.run({"x": ONE, "shape": np.array([1000, 1000], np.int64)}, None)["y"]
    assert y.nbytes == 4_000_000


def _arg(name: str, *shape: int | str | None) -> SimpleNamespace:
    return SimpleNamespace(name=name, shape=list(shape))


def test_a_symbol_several_inputs_bear_takes_their_least_size() -> None:
    inputs = [_arg("a", "n", 4), _arg("b", "n", "m")]
    outputs = [_arg("y", "n", 2), _arg("z", "m"), _arg("w", "k"), _arg("s", "n")]
    served: list[WireTensorSpec] = [
        {"name": "y", "dtype": "float64", "shape": [-1, 2]},
        {"name": "z", "dtype": "int8", "shape": [-1]},
        {"name": "w", "dtype": "float32", "shape": [-1]},  # k: no input tells it
        {"name": "s", "dtype": "string", "shape": [-1]},
    ]
    sizes = onnx_outputs.declared_sizes(inputs, outputs, served)
    assert sorted(sizes) == ["s", "y", "z"]
    feeds = {"a": np.zeros((100, 4)), "b": np.zeros((30, 7))}
    assert onnx_outputs.bound(sizes, ["y"]).least_bytes(feeds) == 512  # 30 x 2 x 8, aligned
    assert onnx_outputs.bound(sizes, ["z"]).least_bytes(feeds) == 64  # 7 x 1, aligned
    yz = onnx_outputs.bound(sizes, ["y", "z"])
    assert yz.exact and yz.least_bytes(feeds) == 512 + 64
    assert not onnx_outputs.bound(sizes, ["y", "w"]).exact  # w is left to the run
    assert not onnx_outputs.bound(sizes, ["s"]).exact  # a string's bytes are unknown
    assert onnx_outputs.bound(sizes, ["s"]).least_bytes(feeds) == 256  # 8 + 30 x 8, aligned
    assert onnx_outputs.bound(sizes, ["y"]).least_bytes({"a": feeds["a"]}) == 0  # b is missing
