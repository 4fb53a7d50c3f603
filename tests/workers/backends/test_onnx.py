"""The ONNX Runtime backend in this process (workers/backends/onnx.py), on models built with
onnx.helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from channel.dtypes import numpy_dtype
from channel.messages import WorkerError
from tests.support import onnx_models
from workers.backends import onnx as onnx_backend
from workers.backends.onnx import OnnxModel


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx_backend")


def _load(path: Path) -> OnnxModel:
    return onnx_backend.load(str(path), intra_op=1, inter_op=1)


@pytest.fixture(scope="module")
def add_two(root: Path) -> OnnxModel:
    return _load(onnx_models.add_two(root / "add_two.onnx"))


def test_signature_comes_from_the_graph(root: Path) -> None:
    model = _load(onnx_models.mlp(root / "mlp.onnx", features=6, classes=3))
    assert model.signature == {
        "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 6]}],
        "outputs": [
            {"name": "logits", "dtype": "float32", "shape": [-1, 3]},
            {"name": "probs", "dtype": "float32", "shape": [-1, 3]},
        ],
    }
    probs = model.run({"x": np.ones((2, 6), np.float32)}, ["probs"])["probs"]
    np.testing.assert_allclose(probs.sum(axis=1), [1.0, 1.0], rtol=1e-6)


def _sample(dtype: str) -> np.ndarray[Any, Any]:
    if dtype == "string":
        return np.array([["a", "héllo"], ["", "z"]], dtype=object)  # ORT takes str
    values = np.array([[0, 1], [1, 0]]) if dtype == "bool" else np.array([[1, 2], [3, 4]])
    return values.astype(numpy_dtype(dtype))


def test_every_onnx_type_maps_to_its_canonical_name_and_runs(root: Path) -> None:
    model = _load(onnx_models.identities(root / "identities.onnx"))
    dtypes = sorted(onnx_models.IDENTITY_DTYPES)
    assert {s["name"]: s["dtype"] for s in model.signature["inputs"]} == {
        f"in_{d}": d for d in dtypes
    }
    assert {s["name"]: s["dtype"] for s in model.signature["outputs"]} == {
        f"out_{d}": d for d in dtypes
    }
    feeds = {f"in_{d}": _sample(d) for d in dtypes}
    outputs = model.run(feeds, None)
    for d in dtypes:
        assert outputs[f"out_{d}"].dtype == feeds[f"in_{d}"].dtype, d
        assert outputs[f"out_{d}"].tolist() == feeds[f"in_{d}"].tolist(), d


def test_bfloat16_goes_through_ort_values(root: Path) -> None:
    model = _load(onnx_models.identity(root / "bf16.onnx", "bfloat16"))
    assert model.signature["inputs"][0]["dtype"] == "bfloat16"
    x = np.array([[1.5, -3.0, 1e30]], dtype=np.float32).astype(ml_dtypes.bfloat16)
    y = model.run({"x": x}, None)["y"]
    assert y.dtype == ml_dtypes.bfloat16
    assert y.tobytes() == x.tobytes()


def test_outputs_come_back_in_the_order_asked(add_two: OnnxModel) -> None:
    a = np.array([[1, 2, 3]], np.float32)
    b = np.array([[0.5, 0.25, 4]], np.float32)
    outputs = add_two.run({"a": a, "b": b}, ["diff", "sum"])
    assert list(outputs) == ["diff", "sum"]
    np.testing.assert_array_equal(outputs["diff"], a - b)
    np.testing.assert_array_equal(outputs["sum"], a + b)
    assert list(add_two.run({"a": a, "b": b}, None)) == ["sum", "diff"]


@pytest.mark.parametrize(
    ("feeds", "outputs", "text"),
    [
        ({"a": np.zeros((1, 3), np.float32)}, ["nope"], "'nope' is not in the signature"),
        ({"a": np.zeros((1, 3), np.float32)}, None, "Required inputs (['b']) are missing"),
        (
            {"a": np.zeros((1, 4), np.float32), "b": np.zeros((1, 4), np.float32)},
            None,
            "Got invalid dimensions for input: ",
        ),
        (
            {"a": np.zeros((1, 3), np.float64), "b": np.zeros((1, 3), np.float32)},
            None,
            "Unexpected input data type",
        ),
    ],
)
def test_what_the_runtime_refuses_is_invalid_argument(
    add_two: OnnxModel, feeds: dict[str, Any], outputs: list[str] | None, text: str
) -> None:
    with pytest.raises(WorkerError) as info:
        add_two.run(feeds, outputs)
    assert info.value.code == "INVALID_ARGUMENT"
    assert text in info.value.message


def test_load_errors(root: Path) -> None:
    garbage = root / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    cases = [
        (str(root / "missing.onnx"), 1, "NOT_FOUND", "does not exist"),
        (str(garbage), 1, "INVALID_ARGUMENT", "cannot load ONNX model"),
        (str(garbage), 0, "INVALID_ARGUMENT", "intra_op and inter_op must be >= 1, got 0, 1"),
    ]
    for path, threads, code, text in cases:
        with pytest.raises(WorkerError) as info:
            onnx_backend.load(path, intra_op=threads, inter_op=1)
        assert info.value.code == code and text in info.value.message, info.value


def test_sessions_use_exactly_the_threads_given_and_never_spin() -> None:
    """The worker's cores are shared with the front ends: its pools' threads wait for work
    without spinning."""
    options = onnx_backend.session_options(intra_op=3, inter_op=2)
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (3, 2)
    for pool in ("intra_op", "inter_op"):
        assert options.get_session_config_entry(f"session.{pool}.allow_spinning") == "0"
