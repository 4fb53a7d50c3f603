"""The hot path's PredictResponse encoder gives protobuf's own bytes for the same response."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.errors import ResourceExhausted
from gateway.tfserving.codec import response_wire, service_messages, tensor_encode

DTYPES = [
    np.float32,
    np.float64,
    np.float16,
    ml_dtypes.bfloat16,
    np.bool_,
    np.complex64,
    np.complex128,
    np.int8,
    np.uint8,
    np.int32,
    np.int64,
    np.uint64,
    object,
]


def _array(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    draw = np.random.default_rng(seed)
    if dtype is object:
        items = [
            bytes(draw.integers(0, 256, draw.integers(0, 5), dtype=np.uint8))
            for _ in range(int(np.prod(shape)))
        ]
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(shape)
    values = draw.normal(size=shape) * 100
    return values.astype(dtype)


def _protobuf(
    model: str, version: int, signature: str, outputs: dict[str, np.ndarray], content: bool
) -> bytes:
    """The same response built as a protobuf message and serialized by protobuf."""
    response = predict_pb2.PredictResponse()
    service_messages.fill_model_spec(response.model_spec, model, version, signature)
    for name, array in outputs.items():
        response.outputs[name].CopyFrom(
            tensor_encode.from_ndarray(array, as_tensor_content=content)
        )
    return response.SerializeToString()


@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
    content=st.booleans(),
    seed=st.integers(0, 2**16),
    model=st.sampled_from(["m", "", "a model"]),
    version=st.sampled_from([0, 1, 2**40]),
    signature=st.sampled_from(["serving_default", "", "σ"]),
)
def test_one_output_gives_protobuf_s_bytes(
    dtype: Any,
    shape: tuple[int, ...],
    content: bool,
    seed: int,
    model: str,
    version: int,
    signature: str,
) -> None:
    outputs = {"y": _array(dtype, shape, seed)}
    expected = _protobuf(model, version, signature, outputs, content)
    wire = response_wire.predict_response(
        model, version, signature, outputs, as_tensor_content=content
    )
    assert wire == expected


def test_several_outputs_parse_to_the_same_response() -> None:
    """protobuf writes a map's entries in an order of its own; the messages are equal."""
    outputs: dict[str, np.ndarray] = {
        "label": np.array([3, 1], np.int64),
        "probabilities": np.arange(20, dtype=np.float32).reshape(2, 10),
        "names": np.array([b"a", b"bc"], dtype=object),
    }
    for content in (False, True):
        wire = response_wire.predict_response("m", 7, "s", outputs, as_tensor_content=content)
        expected = predict_pb2.PredictResponse.FromString(_protobuf("m", 7, "s", outputs, content))
        assert predict_pb2.PredictResponse.FromString(wire) == expected


def test_views_with_strides_and_big_endian_arrays_are_written_as_values() -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = base[:, ::2]
    swapped = base.astype(">f4")
    for array in (strided, swapped):
        wire = response_wire.predict_response("m", 1, "", {"y": array}, as_tensor_content=True)
        assert wire == _protobuf("m", 1, "", {"y": np.ascontiguousarray(array, "<f4")}, True)


def test_a_tensor_over_protobuf_s_limit_is_resource_exhausted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(response_wire, "MAX_PROTO_BYTES", 64)
    monkeypatch.setattr(tensor_encode, "MAX_PROTO_BYTES", 64)
    with pytest.raises(ResourceExhausted, match="over protobuf's limit"):
        response_wire.predict_response(
            "m", 1, "", {"y": np.zeros(32, np.float32)}, as_tensor_content=False
        )
