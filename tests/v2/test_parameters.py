"""V2 parameters ⇄ Python values; the request and tensor parameters tensorgate reads or refuses."""

from __future__ import annotations

from typing import Any

import pytest

from gateway._pb.inference.grpc_service_pb2 import ModelInferRequest
from gateway.errors import InvalidArgument, Unimplemented
from gateway.v2 import parameters
from gateway.v2.parameters import RequestOptions
from tests.support.v2_parameters import to_proto


def test_proto_values_round_trip_with_bool_before_int_and_big_ints_as_uint64() -> None:
    values: dict[str, Any] = {"b": True, "i": -3, "u": 2**63, "f": 0.5, "s": "x"}
    request = ModelInferRequest()
    to_proto(values, request.parameters)
    assert request.parameters["b"].WhichOneof("parameter_choice") == "bool_param"
    assert request.parameters["u"].WhichOneof("parameter_choice") == "uint64_param"
    assert parameters.from_proto(request.parameters) == values


def test_a_proto_parameter_without_a_value_is_invalid() -> None:
    request = ModelInferRequest()
    request.parameters["empty"].SetInParent()
    with pytest.raises(InvalidArgument, match="parameter 'empty' has no value"):
        parameters.from_proto(request.parameters)


def test_json_parameters_are_an_object_of_scalars() -> None:
    assert parameters.from_json(None, "request") == {}
    assert parameters.from_json({"a": 1, "b": "x"}, "request") == {"a": 1, "b": "x"}
    with pytest.raises(InvalidArgument, match="request: 'parameters' must be an object"):
        parameters.from_json([1], "request")
    with pytest.raises(InvalidArgument, match="parameter 'a' must be a boolean, number or string"):
        parameters.from_json({"a": [1]}, "request")


def test_request_options_read_the_known_names_and_ignore_custom_ones() -> None:
    assert parameters.request_options({}) == RequestOptions()
    values: dict[str, Any] = {
        "signature_name": "other",
        "timeout": 5,
        "binary_data_output": True,
        "priority": 2,
        "custom": "kept out",
    }
    assert parameters.request_options(values) == RequestOptions("other", 5, True)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sequence_id": 1}, "sequence batching is not supported"),
        ({"triton_x": 1}, "keys starting with 'triton_' are reserved"),
        ({"priority": -1}, "expected an integer >= 0"),
        ({"priority": True}, "expected an integer >= 0"),
        ({"timeout": 0}, "expected microseconds > 0"),
        ({"timeout": 1.5}, "expected microseconds > 0"),
        ({"signature_name": 3}, "'signature_name' must be a string, got 3"),
        ({"binary_data_output": 1}, "'binary_data_output' must be a boolean, got 1"),
    ],
)
def test_request_options_refuse_what_cannot_be_honoured(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parameters.request_options(values)


def test_tensor_parameters_of_missing_extensions_are_unimplemented() -> None:
    parameters.check_tensor({"binary_data_size": 4}, "input 'x'")
    with pytest.raises(Unimplemented, match="input 'x': parameter 'classification'"):
        parameters.check_tensor({"classification": 2}, "input 'x'")


def test_binary_flag_is_none_when_absent_and_must_be_a_boolean() -> None:
    assert parameters.binary_flag({}, "output 'y'") is None
    assert parameters.binary_flag({"binary_data": False}, "output 'y'") is False
    with pytest.raises(InvalidArgument, match="output 'y': parameter 'binary_data' must be a"):
        parameters.binary_flag({"binary_data": "yes"}, "output 'y'")
