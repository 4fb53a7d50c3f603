"""tf.Example ⇄ tensors / JSON (gateway/tfserving/codec/example.py), in process: no worker, no
TensorFlow (classify's and regress's result checks: tests/tfserving/test_inference_results.py)."""

from __future__ import annotations

import base64
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway._pb.tensorflow.core.example import example_pb2
from gateway._pb.tensorflow_serving.apis import input_pb2
from gateway.errors import InvalidArgument
from gateway.serving.signature import TensorSpec
from gateway.tfserving.codec.example import ExampleBatch, input_from_json


def batch(body: dict[str, Any]) -> ExampleBatch:
    return ExampleBatch(input_from_json(body))


def features(example: example_pb2.Example) -> dict[str, tuple[str, list[Any]]]:
    out: dict[str, tuple[str, list[Any]]] = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind") or ""
        out[name] = (kind, list(getattr(feature, kind).value) if kind else [])
    return out


# -- Input → serialized Examples ------------------------------------------------------------------
def test_serialized_examples_with_context_parse_as_the_merged_example() -> None:
    examples = batch(
        {
            "context": {"lang": "en", "x": 1.0},
            "examples": [{"x": 2.0}, {"y": [1, 2]}],
        }
    )
    assert examples.count == 2
    serialized = examples.serialized()
    assert serialized.dtype == object and serialized.shape == (2,)
    merged = [features(example_pb2.Example.FromString(item)) for item in serialized]
    assert merged[0] == {"lang": ("bytes_list", [b"en"]), "x": ("float_list", [2.0])}
    assert merged[1] == {
        "lang": ("bytes_list", [b"en"]),
        "x": ("float_list", [1.0]),
        "y": ("int64_list", [1, 2]),
    }


def test_empty_or_unset_input_has_no_examples() -> None:
    assert ExampleBatch(input_pb2.Input()).count == 0
    assert ExampleBatch(input_pb2.Input()).serialized().shape == (0,)
    with_context = input_pb2.Input()
    with_context.example_list_with_context.context.features.feature["a"].int64_list.value.append(1)
    assert ExampleBatch(with_context).count == 0


# -- REST JSON → Input ----------------------------------------------------------------------------
def test_json_feature_kinds() -> None:
    (example,) = input_from_json(
        {
            "examples": [
                {
                    "f": 1.5,
                    "fl": [1.0, -2.0],
                    "i": 7,
                    "b": [True, False],
                    "s": "héllo",
                    "raw": {"b64": base64.b64encode(b"\xff\x00").decode()},
                    "mixed_bytes": ["a", {"b64": "Yg=="}],
                    "empty": [],
                }
            ]
        }
    ).example_list.examples
    assert features(example) == {
        "f": ("float_list", [1.5]),
        "fl": ("float_list", [1.0, -2.0]),
        "i": ("int64_list", [7]),
        "b": ("int64_list", [1, 0]),
        "s": ("bytes_list", ["héllo".encode()]),
        "raw": ("bytes_list", [b"\xff\x00"]),
        "mixed_bytes": ("bytes_list", [b"a", b"b"]),
        "empty": ("", []),
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "When method is classify, key 'examples' is expected and was not found"),
        ({"examples": {}}, "Expecting 'examples' value to be an list/array"),
        ({"examples": []}, "'examples' value is an empty array"),
        ({"examples": [1]}, "Example must be JSON object but got JSON Number"),
        ({"context": None, "examples": [{}]}, "Example must be JSON object but got JSON Null"),
        ({"examples": [{"x": None}]}, "Feature: x has element with unexpected JSON type: Null"),
        ({"examples": [{"x": [[1]]}]}, "Feature: x has element with unexpected JSON type: Array"),
        ({"examples": [{"x": {"a": 1}}]}, "Feature: x has element with unexpected JSON type: Obj"),
        ({"examples": [{"x": [1, 2.5]}]}, "in feature: x expecting type: int64"),
        ({"examples": [{"x": ["a", 1.0]}]}, "in feature: x expecting type: bytes"),
        ({"examples": [{"x": 2**63}]}, "Feature: x has uint64 element. Only int64 is supported."),
        ({"examples": [{"x": 1e300}]}, "Cannot convert JSON value: 1e+300 to float without loss"),
        ({"examples": [{"x": {"b64": "!!"}}]}, "Unable to base64 decode"),
    ],
)  # fmt: skip
def test_json_errors(body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        input_from_json(body)
    assert message in info.value.message


# -- Examples → dense tensors (models that do not parse Examples) ---------------------------------
def spec(name: str, dtype: str, shape: tuple[int, ...] | None) -> TensorSpec:
    return TensorSpec(name, dtype, shape)


def test_dense_features_by_spec() -> None:
    examples = batch(
        {
            "context": {"lang": "en"},
            "examples": [
                {"x": [1.0, 2.0], "n": 3, "ok": True, "v": [1, 2, 3, 4]},
                {"x": [3.0, 4.0], "n": -1, "ok": False, "v": [5, 6, 7, 8], "lang": "fr"},
            ],
        }
    )
    dense = examples.dense_features(
        [
            spec("x", "float32", (-1, 2)),
            spec("n", "int8", (-1,)),
            spec("ok", "bool", (-1, 1)),
            spec("v", "int64", (-1, 2, -1)),
            spec("lang", "string", (-1, 1)),
            spec("x", "bfloat16", None),
        ]
    )
    np.testing.assert_array_equal(dense["n"], np.array([3, -1], np.int8))
    np.testing.assert_array_equal(dense["ok"], np.array([[True], [False]]))
    assert dense["v"].shape == (2, 2, 2) and dense["v"].dtype == np.int64
    assert dense["lang"].tolist() == [[b"en"], [b"fr"]]
    assert dense["x"].dtype == ml_dtypes.bfloat16  # the last spec of a name wins
    np.testing.assert_array_equal(dense["x"].astype(np.float32), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize(
    ("examples", "tensor", "message"),
    [
        ([{"y": 1.0}], spec("x", "float32", (-1,)),
         "Feature: x (data type: float) is required but could not be found."),
        ([{"x": 1}], spec("x", "float32", (-1,)),
         "Name: <unknown>, Key: x, Index: 0.  Data types don't match. "
         "Data type: int64 but expected type: float"),
        ([{"x": 1.0}, {"x": [1.0, 2.0]}], spec("x", "float32", (-1,)),
         "Name: <unknown>, Key: x, Index: 1.  Number of float values != expected.  "
         "Values size: 2 but output shape: []"),
        ([{"x": [1, 2]}, {"x": [1]}], spec("x", "int64", (-1, -1)),
         "Index: 1.  Number of int64 values != expected.  Values size: 1 but output shape: [2]"),
        ([{"x": 300}], spec("x", "uint8", (-1,)), "Feature: x value 300 is out of range for uint8"),
        ([{"x": [1, 2, 3]}], spec("x", "int64", (-1, 2, -1)),
         "3 values of a feature do not determine its dimensions"),
        ([{"x": 1.0}], spec("x", "complex64", (-1,)), "which no tf.Example feature can hold"),
    ],
)  # fmt: skip
def test_dense_feature_errors(examples: list[Any], tensor: TensorSpec, message: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        batch({"examples": examples}).dense_features([tensor])
    assert message in info.value.message


@given(
    st.integers(1, 4).flatmap(
        lambda width: st.lists(
            st.lists(st.floats(-1e6, 1e6, width=32), min_size=width, max_size=width),
            min_size=1,
            max_size=8,
        )
    )
)
def test_dense_floats_round_trip(rows: list[list[float]]) -> None:
    dense = batch({"examples": [{"x": row} for row in rows]}).dense_features(
        [spec("x", "float32", (-1, -1))]
    )
    np.testing.assert_array_equal(dense["x"], np.array(rows, np.float32))
