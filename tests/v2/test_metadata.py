"""Signatures → V2 model metadata; the default signature; server metadata and health answers."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.errors import InvalidArgument
from gateway.v2 import errors, metadata
from tests.v2.conftest import servable, signature

MAIN = signature(
    {"x": ("float32", (-1, 64)), "k": ("int64", None)},
    {"probs": ("float32", (-1, 10)), "label": ("string", (-1,))},
)
OTHER = signature({"a": ("bool", ())}, {"b": ("float16", (2,))}, name="other")


def test_model_metadata_of_the_default_signature() -> None:
    expected: dict[str, Any] = {
        "name": "m",
        "versions": ["1", "2"],
        "platform": "onnx_onnxv1",
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [-1, 64]},
            {"name": "k", "datatype": "INT64", "shape": [-1]},
        ],
        "outputs": [
            {"name": "probs", "datatype": "FP32", "shape": [-1, 10]},
            {"name": "label", "datatype": "BYTES", "shape": [-1]},
        ],
    }
    model = servable(MAIN, OTHER)
    assert metadata.model_metadata_json(model, [2, 1]) == expected
    proto = metadata.model_metadata(model, [2, 1])
    assert (proto.name, list(proto.versions), proto.platform) == ("m", ["1", "2"], "onnx_onnxv1")
    assert [(t.name, t.datatype, list(t.shape)) for t in proto.inputs] == [
        (t["name"], t["datatype"], t["shape"]) for t in expected["inputs"]
    ]
    assert [t.name for t in proto.outputs] == ["probs", "label"]
    tf_model = servable(OTHER, platform="tensorflow")
    assert metadata.model_metadata_json(tf_model, [1])["platform"] == "tensorflow_savedmodel"
    assert metadata.model_metadata_json(tf_model, [1])["inputs"] == [
        {"name": "a", "datatype": "BOOL", "shape": []}
    ]
    none = metadata.model_metadata_json(servable(OTHER, OTHER.__class__("b2", (), ())), [1])
    assert (none["inputs"], none["outputs"]) == ([], [])


def test_signature_choice() -> None:
    both = {"serving_default": MAIN, "other": OTHER}
    assert metadata.signature_for("m", both, "") is MAIN
    assert metadata.signature_for("m", both, "other") is OTHER
    assert metadata.signature_for("m", {"other": OTHER}, "") is OTHER
    two = {"other": OTHER, "b2": OTHER.__class__("b2", (), ())}
    with pytest.raises(InvalidArgument, match="choose one of \\['b2', 'other'\\] with the"):
        metadata.signature_for("m", two, "")


def test_server_metadata_and_health() -> None:
    assert metadata.server_metadata_json("0.1.0") == {
        "name": "tensorgate",
        "version": "0.1.0",
        "extensions": ["binary_tensor_data", "parameters", "statistics", "model_repository"],
    }
    proto = metadata.server_metadata("0.1.0")
    assert list(proto.extensions) == metadata.server_metadata_json("0.1.0")["extensions"]
    assert metadata.live_json(True) == {"live": True}
    assert metadata.ready_json(False) == {"ready": False}
    assert metadata.model_ready_json("m", True) == {"name": "m", "ready": True}
    assert errors.HEALTH_FALSE_STATUS == 400
