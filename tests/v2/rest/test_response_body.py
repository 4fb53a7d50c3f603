"""Numpy outputs → the REST inference response: JSON, or JSON followed by binary data."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest

from gateway.errors import Code, ServingError
from gateway.v2.call import InferCall, RequestedOutput
from gateway.v2.parameters import RequestOptions
from gateway.v2.rest import response_body
from gateway.v2.rest.request_body import INFER_HEADER
from gateway.v2.version_strings import Target


def _call(*outputs: RequestedOutput, binary_data_output: bool = False, id: str = "") -> InferCall:
    return InferCall(
        Target("m"), id, RequestOptions(binary_data_output=binary_data_output), outputs
    )


def test_json_response() -> None:
    outputs: dict[str, np.ndarray] = {
        "y": np.array([[1.5, np.nan], [np.inf, -np.inf]], np.float32),
        "n": np.array([1, 2], np.int64),
        "b": np.array([True]),
        "s": np.array([b"hi"], dtype=object),
        "h": np.array([0.5], ml_dtypes.bfloat16),
    }
    response = response_body.infer_body(_call(id="42"), "m", 3, outputs)
    assert response.headers == {"Content-Type": "application/json"}
    document = json.loads(response.body)  # the standard library reads the NaN literals
    assert document["model_name"] == "m" and document["model_version"] == "3"
    assert document["id"] == "42"
    y, n, b, s, h = document["outputs"]
    assert y["datatype"] == "FP32" and y["shape"] == [2, 2]
    assert y["data"][0] == 1.5 and np.isnan(y["data"][1]) and y["data"][2:] == [np.inf, -np.inf]
    assert (n["data"], b["data"], s["data"], h["data"]) == ([1, 2], [True], ["hi"], [0.5])
    assert h["datatype"] == "BF16"
    assert "id" not in json.loads(response_body.infer_body(_call(), "m", 3, outputs).body)


def test_binary_response_by_flag_and_default() -> None:
    outputs = {"y": np.array([1.0, 2.0], np.float32), "n": np.array([5], np.int32)}
    call = _call(RequestedOutput("y", True), RequestedOutput("n", None))
    response = response_body.infer_body(call, "m", 1, outputs)
    length = int(response.headers[INFER_HEADER])
    assert response.headers["Content-Type"] == "application/octet-stream"
    document = json.loads(response.body[:length])
    assert document["outputs"][0]["parameters"] == {"binary_data_size": 8}
    assert "data" not in document["outputs"][0]
    assert document["outputs"][1]["data"] == [5]
    assert response.body[length:] == struct.pack("<2f", 1, 2)
    everything = _call(RequestedOutput("n", False), binary_data_output=True)
    document = json.loads(response_body.infer_body(everything, "m", 1, outputs).chunks[0])
    assert "parameters" in document["outputs"][0] and document["outputs"][1]["data"] == [5]


def test_bytes_that_are_not_utf8_go_as_binary() -> None:
    outputs = {"s": np.array([b"\xff", b"ok"], dtype=object)}
    response = response_body.infer_body(_call(), "m", 1, outputs)
    length = int(response.headers[INFER_HEADER])
    assert json.loads(response.body[:length])["outputs"][0]["parameters"] == {
        "binary_data_size": 11
    }
    assert response.body[length:] == struct.pack("<I", 1) + b"\xff" + struct.pack("<I", 2) + b"ok"


def test_complex_outputs_are_unimplemented() -> None:
    with pytest.raises(ServingError) as info:
        response_body.infer_body(_call(), "m", 1, {"c": np.zeros(1, np.complex128)})
    assert info.value.code == Code.UNIMPLEMENTED
