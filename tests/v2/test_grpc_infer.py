"""ModelInferRequest → call and inputs; outputs → ModelInferResponse (response_wire's bytes)."""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np
import pytest

from gateway._pb.inference.grpc_service_pb2 import ModelInferRequest, ModelInferResponse
from gateway.errors import (
    Code,
    FailedPrecondition,
    InvalidArgument,
    ResourceExhausted,
    ServingError,
)
from gateway.v2 import grpc_infer, response_wire
from gateway.v2.declared import Limits
from gateway.v2.version_strings import Target
from tests.v2.conftest import signature, validate

SIG = signature(
    {"x": ("float32", (-1, 2)), "s": ("string", (-1,))},
    {"y": ("float32", (-1, 2))},
)


def _request(**raw_inputs: tuple[str, list[int], bytes]) -> ModelInferRequest:
    request = ModelInferRequest(model_name="m")
    for name, (datatype, shape, data) in raw_inputs.items():
        request.inputs.add(name=name, datatype=datatype, shape=shape)
        request.raw_input_contents.append(data)
    return request


def _bytes(*items: bytes) -> bytes:
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


def test_infer_call_reads_the_header() -> None:
    request = ModelInferRequest(model_name="m", model_version="stable", id="r7")
    request.parameters["signature_name"].string_param = "other"
    request.parameters["timeout"].int64_param = 2500
    request.parameters["my_custom"].int64_param = 1
    request.outputs.add(name="y")
    request.outputs.add(name="z")
    call = grpc_infer.infer_call(request)
    assert call.target == Target("m", label="stable")
    assert call.id == "r7"
    assert call.options.signature_name == "other"
    assert call.options.timeout_us == 2500
    assert call.output_filter() == ["y", "z"]
    assert grpc_infer.infer_call(ModelInferRequest(model_name="m", model_version="3")).target == (
        Target("m", version=3)
    )


@pytest.mark.parametrize(
    ("name", "kind", "code", "message"),
    [
        ("sequence_id", "int64_param", Code.INVALID_ARGUMENT, "sequence batching"),
        ("triton_enable_empty_final_response", "bool_param", Code.INVALID_ARGUMENT, "reserved"),
        ("timeout", "string_param", Code.INVALID_ARGUMENT, "microseconds > 0"),
        ("signature_name", "int64_param", Code.INVALID_ARGUMENT, "must be a string"),
    ],
)
def test_infer_call_refuses_reserved_parameters(
    name: str, kind: str, code: Code, message: str
) -> None:
    request = ModelInferRequest(model_name="m")
    setattr(request.parameters[name], kind, 1 if kind != "string_param" else "x")
    with pytest.raises(ServingError, match=message) as info:
        grpc_infer.infer_call(request)
    assert info.value.code == code


def test_shared_memory_and_classification_are_not_supported() -> None:
    request = ModelInferRequest(model_name="m")
    request.inputs.add(name="x").parameters["shared_memory_region"].string_param = "r"
    with pytest.raises(ServingError, match="shared-memory extension is not supported") as info:
        grpc_infer.infer_call(request)
    assert info.value.code == Code.UNIMPLEMENTED
    request = ModelInferRequest(model_name="m")
    request.outputs.add(name="y").parameters["classification"].int64_param = 3
    with pytest.raises(ServingError, match="classification extension") as info:
        grpc_infer.infer_call(request)
    assert info.value.code == Code.UNIMPLEMENTED


def test_a_parameter_without_a_value_is_invalid() -> None:
    request = ModelInferRequest(model_name="m")
    request.parameters["p"].SetInParent()
    with pytest.raises(InvalidArgument, match="parameter 'p' has no value"):
        grpc_infer.infer_call(request)


def test_raw_inputs(limits: Limits) -> None:
    request = _request(
        x=("FP32", [1, 2], struct.pack("<2f", 1.5, -2)), s=("BYTES", [2], _bytes(b"a", b"\xff"))
    )
    inputs = validate(SIG, grpc_infer.infer_inputs(request, limits))
    assert inputs["x"].dtype == np.float32 and inputs["x"].tolist() == [[1.5, -2.0]]
    assert inputs["s"].tolist() == [b"a", b"\xff"]


def test_typed_inputs_of_every_datatype(limits: Limits) -> None:
    cases = {
        "BOOL": ("bool", "bool_contents", [True, False], [True, False]),
        "UINT8": ("uint8", "uint_contents", [0, 255], [0, 255]),
        "UINT16": ("uint16", "uint_contents", [1, 65535], [1, 65535]),
        "UINT32": ("uint32", "uint_contents", [4_000_000_000, 0], [4_000_000_000, 0]),
        "UINT64": ("uint64", "uint64_contents", [2**64 - 1, 0], [2**64 - 1, 0]),
        "INT8": ("int8", "int_contents", [-128, 127], [-128, 127]),
        "INT16": ("int16", "int_contents", [-32768, 1], [-32768, 1]),
        "INT32": ("int32", "int_contents", [-(2**31), 2**31 - 1], [-(2**31), 2**31 - 1]),
        "INT64": ("int64", "int64_contents", [-(2**63), 5], [-(2**63), 5]),
        "FP32": ("float32", "fp32_contents", [0.5, -1.0], [0.5, -1.0]),
        "FP64": ("float64", "fp64_contents", [1e300, 0.25], [1e300, 0.25]),
        "BYTES": ("string", "bytes_contents", [b"", b"\x00z"], [b"", b"\x00z"]),
    }
    for datatype, (dtype_name, field, values, expected) in cases.items():
        request = ModelInferRequest(model_name="m")
        tensor = request.inputs.add(name="v", datatype=datatype, shape=[2])
        getattr(tensor.contents, field).extend(values)
        (array,) = validate(
            signature({"v": (dtype_name, (-1,))}), grpc_infer.infer_inputs(request, limits)
        ).values()
        assert array.dtype == np.dtype(object if datatype == "BYTES" else dtype_name), datatype
        assert array.tolist() == expected, datatype


@pytest.mark.parametrize(
    ("datatype", "dtype_name", "field", "values", "message"),
    [
        ("INT8", "int8", "int_contents", [128, 0], "value 128 is out of range for INT8"),
        ("UINT16", "uint16", "uint_contents", [70000, 0], "out of range for UINT16"),
        ("FP32", "float32", "fp32_contents", [1.0], "expected 2 values in contents.fp32"),
        ("FP32", "float32", "fp64_contents", [1.0, 2.0], "FP32 data goes in contents.fp32"),
        ("FP16", "float16", "fp32_contents", [1.0, 2.0], "raw_input_contents only"),
        ("FP16", "float16", None, [], "unable to find data for input tensor 'v' for model 'm'"),
    ],
)
def test_typed_input_errors(
    datatype: str,
    dtype_name: str,
    field: str | None,
    values: list[float],
    message: str,
    limits: Limits,
) -> None:
    request = ModelInferRequest(model_name="m")
    tensor = request.inputs.add(name="v", datatype=datatype, shape=[2])
    if field is not None:
        getattr(tensor.contents, field).extend(values)
    with pytest.raises(InvalidArgument, match=message):
        validate(signature({"v": (dtype_name, (-1,))}), grpc_infer.infer_inputs(request, limits))


def test_empty_tensor_needs_no_data(limits: Limits) -> None:
    request = ModelInferRequest(model_name="m")
    request.inputs.add(name="v", datatype="FP16", shape=[0, 3])
    (array,) = validate(
        signature({"v": ("float16", (-1, 3))}), grpc_infer.infer_inputs(request, limits)
    ).values()
    assert array.shape == (0, 3) and array.dtype == np.float16


def test_raw_and_typed_together_are_invalid(limits: Limits) -> None:
    request = _request(x=("FP32", [1, 2], bytes(8)), s=("BYTES", [1], _bytes(b"a")))
    request.inputs[1].contents.bytes_contents.append(b"a")
    with pytest.raises(InvalidArgument, match="contents field must not be specified when using"):
        validate(SIG, grpc_infer.infer_inputs(request, limits))
    request = _request(x=("FP32", [1, 2], bytes(8)))
    request.inputs.add(name="s", datatype="BYTES", shape=[0])
    with pytest.raises(InvalidArgument, match="raw_input_contents has 1 entries for 2 inputs"):
        validate(SIG, grpc_infer.infer_inputs(request, limits))


@pytest.mark.parametrize(
    ("inputs", "error", "message"),
    [
        ({"x": ("FP32", [1, 2], bytes(8))}, InvalidArgument, "Missing but required: {s}"),
        (
            {"x": ("FP32", [1, 2], bytes(8)), "s": ("BYTES", [0], b""), "z": ("FP32", [0], b"")},
            InvalidArgument,
            "Sent extra: {z}",
        ),
        (
            {"x": ("FP64", [1, 2], bytes(16)), "s": ("BYTES", [0], b"")},
            InvalidArgument,
            "input 'x' has datatype FP64 but the model expects FP32",
        ),
        (
            {"x": ("FP32", [1, 3], bytes(12)), "s": ("BYTES", [0], b"")},
            InvalidArgument,
            "input 'x' has shape \\[1, 3\\] but the signature expects \\[-1, 2\\]",
        ),
        (
            {"x": ("FP32", [1, 2], bytes(7)), "s": ("BYTES", [0], b"")},
            InvalidArgument,
            "expected 8 bytes",
        ),
        (
            {"x": ("FP32", [1, 2], bytes(8)), "s": ("BYTES", [2000], b"")},
            InvalidArgument,
            "over the limit of 1000",
        ),
        (
            {"x": ("FP32", [500, 2], bytes(8)), "s": ("BYTES", [1], b"")},
            ResourceExhausted,
            "once decoded, over the limit of 3000",  # checked before the bad sizes are seen
        ),
    ],
)
def test_inputs_are_checked_against_the_signature_and_bounds(
    inputs: dict[str, tuple[str, list[int], bytes]], error: type[ServingError], message: str
) -> None:
    with pytest.raises(error, match=message):
        validate(SIG, grpc_infer.infer_inputs(_request(**inputs), Limits(1000, 3000)))


def test_duplicate_inputs_are_invalid(limits: Limits) -> None:
    request = _request(x=("FP32", [1, 2], bytes(8)), s=("BYTES", [0], b""))
    request.inputs.add(name="x", datatype="FP32", shape=[1, 2])
    request.raw_input_contents.append(bytes(8))
    with pytest.raises(InvalidArgument, match="input 'x' is given more than once"):
        validate(SIG, grpc_infer.infer_inputs(request, limits))


def test_unknown_signature_name_fails_like_tf_serving() -> None:
    from gateway.v2.metadata import signature_for

    with pytest.raises(FailedPrecondition, match='Serving signature key "nope" not found'):
        signature_for("m", {"serving_default": SIG}, "nope")


def test_response_carries_raw_outputs_id_and_version() -> None:
    outputs = {
        "y": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([True, False]),
        "s": np.array([b"hi", "é"], dtype=object),
        "h": np.array([1.5], dtype=np.float16),
        "bf": np.array([2.0], dtype=ml_dtypes.bfloat16),
    }
    response = ModelInferResponse.FromString(response_wire.infer_response("m", 7, "r1", outputs))
    assert (response.model_name, response.model_version, response.id) == ("m", "7", "r1")
    assert [(o.name, o.datatype, list(o.shape)) for o in response.outputs] == [
        ("y", "FP32", [2, 3]),
        ("b", "BOOL", [2]),
        ("s", "BYTES", [2]),
        ("h", "FP16", [1]),
        ("bf", "BF16", [1]),
    ]
    assert not any(o.HasField("contents") for o in response.outputs)
    raw = list(response.raw_output_contents)
    assert raw[0] == outputs["y"].tobytes()
    assert raw[1] == b"\x01\x00"
    assert raw[2] == _bytes(b"hi", "é".encode())
    assert raw[3] == struct.pack("<e", 1.5)
    assert raw[4] == np.array([2.0], ml_dtypes.bfloat16).tobytes()
    assert not response.parameters


def test_response_refuses_complex_outputs() -> None:
    with pytest.raises(ServingError) as info:
        response_wire.infer_response("m", 1, "", {"c": np.zeros(1, np.complex64)})
    assert info.value.code == Code.UNIMPLEMENTED
