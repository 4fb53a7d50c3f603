"""Serving API envelopes ⇄ core types, in process."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from gateway._pb.tensorflow.core.framework import types_pb2
from gateway._pb.tensorflow.core.framework.tensor_pb2 import TensorProto
from gateway._pb.tensorflow_serving.apis import predict_pb2
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.serving.core import ModelRef
from gateway.serving.inputs import validated
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec import service_messages


def _decode(
    request: predict_pb2.PredictRequest,
    signature: Signature,
    *,
    max_elements: int,
    max_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """The request path's decoding: the codec's headers, validated by the core, then values."""
    decoded = service_messages.PredictInputs(
        request, signature, max_elements=max_elements, max_bytes=max_bytes
    )
    return validated(signature, decoded)


def test_model_ref_reads_the_version_choice() -> None:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    assert service_messages.model_ref(request) == ModelRef("m")
    request.model_spec.version.value = 3
    assert service_messages.model_ref(request) == ModelRef("m", version=3)
    request.model_spec.version_label = "stable"  # the oneof: the label replaces the version
    assert service_messages.model_ref(request) == ModelRef("m", label="stable")


def test_a_request_without_model_spec_is_refused_as_tf_serving_does() -> None:
    with pytest.raises(InvalidArgument, match=r"^Missing ModelSpec$"):
        service_messages.model_ref(predict_pb2.PredictRequest())


# -- decoding a PredictRequest for its signature: nothing expands before it is checked ------------

SIGNATURE = Signature(
    "serving_default",
    (TensorSpec("x", "float32", (-1, 64)),),
    (TensorSpec("y", "float32", (-1, 10)),),
)


def _request(**tensors: TensorProto) -> predict_pb2.PredictRequest:
    request = predict_pb2.PredictRequest()
    for name, proto in tensors.items():
        request.inputs[name].CopyFrom(proto)
    return request


def _tensor(data_type: int, shape: list[int], **values: object) -> TensorProto:
    proto = TensorProto(dtype=data_type, **values)  # type: ignore[arg-type]
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    return proto


def _peak_bytes_while_refused(
    request: predict_pb2.PredictRequest, error: type[Exception], match: str
) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(error, match=match):
            _decode(request, SIGNATURE, max_elements=2**26, max_bytes=64 * 2**20)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_tiny_string_tensor_declaring_millions_of_values_is_refused_before_expanding() -> None:
    """The fuzzer's 36-byte request: DT_STRING, shape [16777216], one string_val, for a float32
    input. Expanded first, it took 128 MiB; its dtype is now checked against the signature."""
    request = _request(x=_tensor(types_pb2.DT_STRING, [2**24], string_val=[b"a"]))
    assert request.ByteSize() < 40
    peak = _peak_bytes_while_refused(
        request, InvalidArgument, "input 'x' has dtype string but the signature expects float32"
    )
    assert peak < 1_000_000


def test_a_wrong_shape_is_refused_before_expanding() -> None:
    request = _request(x=_tensor(types_pb2.DT_FLOAT, [2**18, 63], float_val=[1.0]))
    peak = _peak_bytes_while_refused(
        request, InvalidArgument, r"input 'x' has shape \[262144, 63\] but the signature expects"
    )
    assert peak < 1_000_000


def test_a_request_declaring_more_decoded_bytes_than_allowed_is_resource_exhausted() -> None:
    """20 bytes of ``float_val: [1]`` with shape [262145, 64]: one row over 64 MiB."""
    request = _request(x=_tensor(types_pb2.DT_FLOAT, [2**18 + 1, 64], float_val=[1.0]))
    peak = _peak_bytes_while_refused(
        request,
        ResourceExhausted,
        "would take at least 67109120 bytes once decoded, over the limit",
    )
    assert peak < 1_000_000
    exact = _request(x=_tensor(types_pb2.DT_FLOAT, [2**18, 64], float_val=[1.0]))
    decoded = _decode(exact, SIGNATURE, max_elements=2**24, max_bytes=64 * 2**20)
    assert decoded["x"].shape == (2**18, 64)


def test_names_are_checked_before_any_tensor() -> None:
    request = _request(y=_tensor(types_pb2.DT_STRING, [2**24], string_val=[b"a"]))
    with pytest.raises(InvalidArgument, match=r"Sent extra: \{y\}. Missing but required: \{x\}"):
        _decode(request, SIGNATURE, max_elements=2**24, max_bytes=2**26)


@pytest.mark.parametrize("shape", [[0, 2**63 - 1], [2**62, 0, 64], [0, 2**24 + 1]])
def test_a_zero_dimension_beside_a_huge_one_is_invalid_argument(shape: list[int]) -> None:
    """numpy cannot even represent these empty shapes (it raised, and the client got INTERNAL)."""
    loose = Signature("serving_default", (TensorSpec("x", "float32", None),), ())
    request = _request(x=_tensor(types_pb2.DT_FLOAT, shape))
    with pytest.raises(InvalidArgument, match=r"has a dimension of .*, over the limit of 16777216"):
        _decode(request, loose, max_elements=2**24, max_bytes=2**26)
