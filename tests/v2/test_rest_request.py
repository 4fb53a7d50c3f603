"""REST bodies (JSON and the binary data extension) → call and inputs; outputs → responses."""

from __future__ import annotations

import json
import struct
from typing import Any

import ml_dtypes
import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gateway.errors import Code, InvalidArgument, ServingError
from gateway.v2 import json_values, rest_request, rest_response
from gateway.v2.call import InferCall, RequestedOutput
from gateway.v2.declared import Limits, declare
from gateway.v2.parameters import RequestOptions
from gateway.v2.rest_request import INFER_HEADER
from gateway.v2.versions import Target
from tests.v2.conftest import signature, validate

SIG = signature({"x": ("float32", (-1, 2)), "s": ("string", (-1,))})


def _binary_body(header: dict[str, Any], *payloads: bytes) -> tuple[bytes, str]:
    text = json.dumps(header).encode()
    return text + b"".join(payloads), str(len(text))


def _decode(body: bytes, length: str | None, sig: Any = SIG) -> dict[str, Any]:
    parsed = rest_request.parse(body, length, "m", "")
    return validate(sig, rest_request.rest_inputs(parsed, sig, Limits(1000, 100_000)))


def test_json_request_flat_and_nested() -> None:
    body = {
        "id": "42",
        "parameters": {"signature_name": "", "custom": 3},
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2.5], [3, 4]]},
            {"name": "s", "datatype": "BYTES", "shape": [2], "data": ["a", "é"]},
        ],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}, {"name": "z"}],
    }
    parsed = rest_request.parse(orjson.dumps(body), None, "m", "3")
    assert parsed.call == InferCall(
        Target("m", version=3),
        "42",
        RequestOptions(),
        (RequestedOutput("y", True), RequestedOutput("z", None)),
    )
    inputs = validate(SIG, rest_request.rest_inputs(parsed, SIG, Limits(1000)))
    assert inputs["x"].dtype == np.float32 and inputs["x"].tolist() == [[1, 2.5], [3, 4]]
    assert inputs["s"].tolist() == [b"a", "é".encode()]
    flat = dict(body, inputs=[dict(body["inputs"][0], data=[1, 2.5, 3, 4]), body["inputs"][1]])
    assert _decode(orjson.dumps(flat), None)["x"].tolist() == [[1, 2.5], [3, 4]]


def test_binary_inputs_follow_the_json() -> None:
    header = {
        "inputs": [
            {
                "name": "x",
                "datatype": "FP32",
                "shape": [1, 2],
                "parameters": {"binary_data_size": 8},
            },
            {"name": "s", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 6}},
        ]
    }
    body, length = _binary_body(header, struct.pack("<2f", 1, 2), struct.pack("<I", 2) + b"hi")
    inputs = _decode(body, length)
    assert inputs["x"].tolist() == [[1, 2]] and inputs["s"].tolist() == [b"hi"]


@pytest.mark.parametrize(
    ("inputs", "payload", "message"),
    [
        ([{"binary_data_size": 8}, {"binary_data_size": 0}], bytes(9), "unexpected additional"),
        ([{"binary_data_size": 9}, {"binary_data_size": 0}], bytes(8), "unexpected size for input"),
        ([{"binary_data_size": -1}, {"binary_data_size": 0}], b"", "must be an integer >= 0"),
        ([{"binary_data_size": 8}, None], bytes(8), "exactly one of 'data' and"),
    ],
)
def test_binary_size_errors(inputs: list[Any], payload: bytes, message: str) -> None:
    header = {
        "inputs": [
            {"name": name, "datatype": dt, "shape": shape}
            | ({} if params is None else {"parameters": params})
            for (name, dt, shape), params in zip(
                [("x", "FP32", [1, 2]), ("s", "BYTES", [0])], inputs, strict=True
            )
        ]
    }
    body, length = _binary_body(header, payload)
    with pytest.raises(InvalidArgument, match=message):
        _decode(body, length)


@pytest.mark.parametrize(
    ("value", "message"),
    [("abc", "Unable to parse Inference-Header-Content-Length, got: abc"), ("-1", "in range")],
)
def test_bad_header_length(value: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        rest_request.parse(b"{}", value, "m", "")
    with pytest.raises(InvalidArgument, match="in range \\(0, 2\\)"):
        rest_request.parse(b"{}", "3", "m", "")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1]", "must be a JSON object"),
        (b"{", "not valid JSON"),
        (b"\xff", "not valid JSON"),
        (b'{"inputs": 3}', "'inputs' must be an array of objects"),
        (b"{}", "has no 'inputs'"),
        (b'{"id": 3, "inputs": []}', "'id' must be a string"),
        (b'{"inputs": [], "parameters": []}', "'parameters' must be an object"),
        (b'{"inputs": [], "parameters": {"a": [1]}}', "parameter 'a' must be a boolean"),
        (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [true]}]}', "'shape' must"),
        (b'{"inputs": [{"datatype": "FP32", "shape": [1], "data": [1]}]}', "'name' must be"),
        (b'{"inputs": [], "outputs": [{"name": 1}]}', "outputs\\[0\\]: 'name' must be a string"),
        (b'{"inputs": [], "parameters": {"sequence_end": true}}', "sequence batching"),
    ],
)
def test_malformed_bodies_are_invalid(body: bytes, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        rest_request.parse(body, None, "m", "")


def test_nan_and_infinity_literals_are_read() -> None:
    body = (
        b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [NaN, -Infinity]},'
        b' {"name": "s", "datatype": "BYTES", "shape": [0], "data": []}]}'
    )
    x = _decode(body, None)["x"]
    assert np.isnan(x[0, 0]) and x[0, 1] == -np.inf


@pytest.mark.parametrize(
    ("datatype", "data", "expected"),
    [
        ("BOOL", [True, False], [True, False]),
        ("UINT8", [0, 255], [0, 255]),
        ("UINT64", [2**64 - 1, 0], [2**64 - 1, 0]),
        ("INT8", [-128, 127], [-128, 127]),
        ("INT64", [-(2**63), 1], [-(2**63), 1]),
        ("FP16", [0.1, 65504], [np.float16(0.1), 65504]),
        ("BF16", [1, 0.5], [1.0, 0.5]),
        ("FP64", [1e300, 2], [1e300, 2]),
        ("BYTES", ["", "x"], [b"", b"x"]),
    ],
)
def test_json_values_per_datatype(datatype: str, data: list[Any], expected: list[Any]) -> None:
    header = declare("v", datatype, [2], Limits(100))
    array = json_values.to_array(data, header)
    assert array.dtype == header.datatype.numpy
    assert array.tolist() == expected


@pytest.mark.parametrize(
    ("datatype", "data", "message"),
    [
        ("BOOL", [1, 0], "value 0 \\(1\\) of a BOOL tensor is not a boolean"),
        ("INT32", [1, 2.0], "value 1 \\(2.0\\) of a INT32 tensor is not an integer"),
        ("INT32", [True, 1], "is not an integer"),
        ("UINT8", [1, -1], "value -1 is out of range for UINT8"),
        ("INT16", [40000, 1], "out of range for INT16"),
        ("FP32", [1, "2"], 'value 1 \\("2"\\) of a FP32 tensor is not a number'),
        ("BYTES", ["a", 1], "is not a string"),
        ("FP32", [1, 2, 3], "expected 2 values for shape \\[2\\], got 3"),
        ("FP32", [[1], [2, 3]], "expected 2 values for shape \\[2\\], got 3"),
    ],
)
def test_json_value_errors(datatype: str, data: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        json_values.to_array(data, declare("v", datatype, [2], Limits(100)))


def test_scalars_and_deep_nesting() -> None:
    assert json_values.to_array(3, declare("v", "INT32", [], Limits(10))).tolist() == 3
    deep: Any = [7]
    for _ in range(5000):  # deeper than any recursion limit
        deep = [deep]
    assert json_values.flatten(deep) == [7]


def test_raw_binary_request_deduces_the_shape() -> None:
    one = signature({"x": ("float32", (-1, 2))})
    body = struct.pack("<4f", 1, 2, 3, 4)
    parsed = rest_request.parse(body, "0", "m", "")
    assert parsed.call.options.binary_data_output
    assert validate(one, rest_request.rest_inputs(parsed, one, Limits(100)))["x"].tolist() == [
        [1, 2],
        [3, 4],
    ]
    batch = signature({"x": ("float32", (-1, -1))})
    assert validate(batch, rest_request.rest_inputs(parsed, batch, Limits(100)))["x"].shape == (
        1,
        4,
    )
    strings = signature({"s": ("string", (-1,))})
    parsed = rest_request.parse(struct.pack("<I", 2) + b"ok", "0", "m", "")
    assert validate(strings, rest_request.rest_inputs(parsed, strings, Limits(100)))[
        "s"
    ].tolist() == [b"ok"]
    with pytest.raises(InvalidArgument, match="exactly one input, this one has 2"):
        validate(SIG, rest_request.rest_inputs(parsed, SIG, Limits(100)))
    three = signature({"x": ("float32", (2, -1, -1))})
    with pytest.raises(InvalidArgument, match="more than one dynamic dimension"):
        validate(three, rest_request.rest_inputs(parsed, three, Limits(100)))


def _call(*outputs: RequestedOutput, binary_data_output: bool = False, id: str = "") -> InferCall:
    return InferCall(
        Target("m"), id, RequestOptions(binary_data_output=binary_data_output), outputs
    )


def test_json_response() -> None:
    outputs = {
        "y": np.array([[1.5, np.nan], [np.inf, -np.inf]], np.float32),
        "n": np.array([1, 2], np.int64),
        "b": np.array([True]),
        "s": np.array([b"hi"], dtype=object),
        "h": np.array([0.5], ml_dtypes.bfloat16),
    }
    response = rest_response.infer_response(_call(id="42"), "m", 3, outputs)
    assert response.headers == {"Content-Type": "application/json"}
    document = json.loads(response.body)  # the standard library reads the NaN literals
    assert document["model_name"] == "m" and document["model_version"] == "3"
    assert document["id"] == "42"
    y, n, b, s, h = document["outputs"]
    assert y["datatype"] == "FP32" and y["shape"] == [2, 2]
    assert y["data"][0] == 1.5 and np.isnan(y["data"][1]) and y["data"][2:] == [np.inf, -np.inf]
    assert (n["data"], b["data"], s["data"], h["data"]) == ([1, 2], [True], ["hi"], [0.5])
    assert h["datatype"] == "BF16"
    assert "id" not in json.loads(rest_response.infer_response(_call(), "m", 3, outputs).body)


def test_binary_response_by_flag_and_default() -> None:
    outputs = {"y": np.array([1.0, 2.0], np.float32), "n": np.array([5], np.int32)}
    call = _call(RequestedOutput("y", True), RequestedOutput("n", None))
    response = rest_response.infer_response(call, "m", 1, outputs)
    length = int(response.headers[INFER_HEADER])
    assert response.headers["Content-Type"] == "application/octet-stream"
    document = json.loads(response.body[:length])
    assert document["outputs"][0]["parameters"] == {"binary_data_size": 8}
    assert "data" not in document["outputs"][0]
    assert document["outputs"][1]["data"] == [5]
    assert response.body[length:] == struct.pack("<2f", 1, 2)
    everything = _call(RequestedOutput("n", False), binary_data_output=True)
    document = json.loads(rest_response.infer_response(everything, "m", 1, outputs).chunks[0])
    assert "parameters" in document["outputs"][0] and document["outputs"][1]["data"] == [5]


def test_bytes_that_are_not_utf8_go_as_binary() -> None:
    outputs = {"s": np.array([b"\xff", b"ok"], dtype=object)}
    response = rest_response.infer_response(_call(), "m", 1, outputs)
    length = int(response.headers[INFER_HEADER])
    assert json.loads(response.body[:length])["outputs"][0]["parameters"] == {
        "binary_data_size": 11
    }
    assert response.body[length:] == struct.pack("<I", 1) + b"\xff" + struct.pack("<I", 2) + b"ok"


def test_complex_outputs_are_unimplemented() -> None:
    with pytest.raises(ServingError) as info:
        rest_response.infer_response(_call(), "m", 1, {"c": np.zeros(1, np.complex128)})
    assert info.value.code == Code.UNIMPLEMENTED


_JSON_DATATYPES = [
    "BOOL",
    "UINT8",
    "UINT32",
    "UINT64",
    "INT8",
    "INT16",
    "INT64",
    "FP16",
    "BF16",
    "FP32",
    "FP64",
]


@given(st.sampled_from(_JSON_DATATYPES), st.data())
def test_json_values_round_trip(datatype: str, data: st.DataObject) -> None:
    header = declare("v", datatype, [3], Limits(100))
    row = header.datatype
    bits = data.draw(hnp.arrays(np.uint8, (3 * row.itemsize,)))
    array = np.frombuffer(bits.tobytes(), dtype=row.numpy)
    if datatype == "BOOL":
        array = array.view(np.uint8) % 2 == 1
    text = orjson.dumps({"data": json_values.to_json(array, row)})
    back = json_values.to_array(json.loads(text)["data"], header)  # NaN literals need stdlib
    assert back.dtype == row.numpy
    if row.numpy.kind in "biu":
        assert back.tolist() == array.tolist()
    else:
        assert np.array_equal(back.astype(np.float64), array.astype(np.float64), equal_nan=True)
