"""REST infer bodies (JSON and the binary data extension) → an InferCall and numpy inputs."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import orjson
import pytest

from gateway import decoding
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.serving.signature import Signature, TensorSpec
from gateway.v2.call import InferCall, RequestedOutput
from gateway.v2.declared import Limits
from gateway.v2.parameters import RequestOptions
from gateway.v2.rest import request_body
from gateway.v2.version_strings import Target
from tests.v2.conftest import signature, validate

SIG = signature({"x": ("float32", (-1, 2)), "s": ("string", (-1,))})


def _binary_body(header: dict[str, Any], *payloads: bytes) -> tuple[bytes, str]:
    text = json.dumps(header).encode()
    return text + b"".join(payloads), str(len(text))


def _decode(body: bytes, header: str | None, sig: Any = SIG) -> dict[str, Any]:
    """``body`` read as the route reads it, ``header`` the inference header's value."""
    parsed = request_body.parse_infer(body, request_body.header_length(header, len(body)), "m", "")
    return validate(sig, request_body.rest_inputs(parsed, sig, Limits(1000, 100_000)))


def test_json_request_flat_and_nested() -> None:
    body: dict[str, Any] = {
        "id": "42",
        "parameters": {"signature_name": "", "custom": 3},
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [[1, 2.5], [3, 4]]},
            {"name": "s", "datatype": "BYTES", "shape": [2], "data": ["a", "é"]},
        ],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}, {"name": "z"}],
    }
    parsed = request_body.parse_infer(orjson.dumps(body), None, "m", "3")
    assert parsed.call == InferCall(
        Target("m", version=3),
        "42",
        RequestOptions(),
        (RequestedOutput("y", True), RequestedOutput("z", None)),
    )
    inputs = validate(SIG, request_body.rest_inputs(parsed, SIG, Limits(1000)))
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
        request_body.header_length(value, 2)
    with pytest.raises(InvalidArgument, match="in range \\(0, 2\\)"):
        request_body.header_length("3", 2)


@pytest.mark.parametrize(
    ("value", "length"),
    [(None, None), ("0", 0), ("00", 0), ("+0", 0), ("-0", 0), (" 2 ", 2), ("+2", 2), ("02", 2)],
)
def test_header_length_is_read_once_for_every_use(value: str | None, length: int | None) -> None:
    """One reading of the header: what parse, the JSON bound and the off-loop test all take
    (header 0 in any spelling is a raw binary request, served on the loop)."""
    assert request_body.header_length(value, 2) == length
    big = bytes(request_body.OFF_LOOP_BYTES + 1)
    assert request_body.read_off_loop(big, request_body.header_length(value, len(big))) == (
        length != 0
    )


@pytest.mark.parametrize("value", ["", "1_0", "\u0663", "0x1", "1.0", "1" * 5000])
def test_a_header_that_is_no_decimal_integer_is_refused(value: str) -> None:
    with pytest.raises(InvalidArgument, match="Unable to parse Inference-Header-Content-Length"):
        request_body.header_length(value, 100)


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
        request_body.parse_infer(body, None, "m", "")


def test_nan_and_infinity_literals_are_read() -> None:
    body = (
        b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [NaN, -Infinity]},'
        b' {"name": "s", "datatype": "BYTES", "shape": [0], "data": []}]}'
    )
    x = _decode(body, None)["x"]
    assert np.isnan(x[0, 0]) and x[0, 1] == -np.inf


def test_raw_binary_request_deduces_the_shape() -> None:
    one = signature({"x": ("float32", (-1, 2))})
    body = struct.pack("<4f", 1, 2, 3, 4)
    parsed = request_body.parse_infer(body, 0, "m", "")
    assert parsed.call.options.binary_data_output
    assert validate(one, request_body.rest_inputs(parsed, one, Limits(100)))["x"].tolist() == [
        [1, 2],
        [3, 4],
    ]
    batch = signature({"x": ("float32", (-1, -1))})
    assert validate(batch, request_body.rest_inputs(parsed, batch, Limits(100)))["x"].shape == (
        1,
        4,
    )
    strings = signature({"s": ("string", (-1,))})
    parsed = request_body.parse_infer(struct.pack("<I", 2) + b"ok", 0, "m", "")
    assert validate(strings, request_body.rest_inputs(parsed, strings, Limits(100)))[
        "s"
    ].tolist() == [b"ok"]
    with pytest.raises(InvalidArgument, match="exactly one input, this one has 2"):
        validate(SIG, request_body.rest_inputs(parsed, SIG, Limits(100)))
    three = signature({"x": ("float32", (2, -1, -1))})
    with pytest.raises(InvalidArgument, match="more than one dynamic dimension"):
        validate(three, request_body.rest_inputs(parsed, three, Limits(100)))


def _nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


X_ONLY = signature({"x": ("float32", (-1, 2))})
X = '{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": %s}'
HOSTILE_BODIES = {
    # id: (body, message) — each refused by the parse or the values' conversion, before a run
    "data_nested_1100_deep": ('{"inputs": [%s]}' % (X % _nested(1100)), "nested"),
    "parameters_nested_1100_deep": (
        '{"inputs": [%s], "parameters": {"p": %s}}' % (X % "[1, 2]", _nested(1100)),  # noqa: UP031
        "nested",
    ),
    "401_digit_fp32": (
        '{"inputs": [%s]}' % (X % f"[{'9' * 401}, 1]"),
        "value 0 .* is out of range for FP32",
    ),
    "401_digit_timeout": (
        '{"inputs": [%s], "parameters": {"timeout": %s}}' % (X % "[1, 2]", "9" * 401),  # noqa: UP031
        "invalid value for 'timeout'",
    ),
    "lone_surrogate_id": (
        '{"id": "a\\ud800b", "inputs": [%s]}' % (X % "[1, 2]"),
        "'id' must be valid Unicode",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_BODIES))
def test_hostile_json_is_invalid_before_any_run(case: str) -> None:
    """RecursionError, OverflowError and an unencodable ``id`` were once 500s."""
    body, message = HOSTILE_BODIES[case]
    with pytest.raises(InvalidArgument, match=message):
        _decode(body.encode(), None, X_ONLY)


def test_an_empty_body_is_no_raw_request() -> None:
    """Without the header an empty body is no JSON; with header 0 it holds no input bytes
    (Triton: 400 for both)."""
    with pytest.raises(InvalidArgument, match="the inference request is empty"):
        request_body.parse_infer(b"", None, "m", "")
    one = signature({"x": ("float32", (-1, 4))})
    with pytest.raises(InvalidArgument, match="input byte size mismatch for input 'x'"):
        _decode(b"", "0", one)


def test_a_large_body_converts_ahead_and_keeps_errors_for_the_core() -> None:
    """:func:`request_body.parse_converted` (a thread's work for a large body): the arrays the
    core would convert, and a value error kept until the core asks for the arrays."""
    good = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [1, 2, 3, 4]}]}
    parsed = request_body.parse_converted(orjson.dumps(good), None, "m", "", Limits(100))
    assert parsed.inputs[0].data is None
    assert validate(X_ONLY, request_body.rest_inputs(parsed, X_ONLY, Limits(100)))[
        "x"
    ].tolist() == [[1, 2], [3, 4]]
    bad = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, "a"]}]}
    parsed = request_body.parse_converted(orjson.dumps(bad), None, "m", "", Limits(100))
    with pytest.raises(InvalidArgument, match="is not a number"):
        validate(X_ONLY, request_body.rest_inputs(parsed, X_ONLY, Limits(100)))
    assert request_body.read_off_loop(bytes(request_body.OFF_LOOP_BYTES + 1), None)
    assert not request_body.read_off_loop(bytes(request_body.OFF_LOOP_BYTES + 1), 0)
    assert not request_body.read_off_loop(b"{}", None)


def test_a_large_body_counts_its_strings_bytes_with_the_conversion() -> None:
    """A converted BYTES input carries its elements' byte count (counted in the thread); the
    core's byte bound then reads the same total as for a body parsed on the loop (ASCII here: on
    the loop a string counts its characters, at least its bytes)."""
    strings = signature({"s": ("string", (-1,))})
    body = orjson.dumps(
        {"inputs": [{"name": "s", "datatype": "BYTES", "shape": [3], "data": ["ab", "c", ""]}]}
    )
    converted = request_body.parse_converted(body, None, "m", "", Limits(100))
    assert converted.inputs[0].data is None and converted.inputs[0].converted_bytes == 3
    exact = Limits(100, 3 * decoding.STRING_ELEMENT_BYTES + 3)
    under = Limits(100, 3 * decoding.STRING_ELEMENT_BYTES + 2)
    for parsed in (converted, request_body.parse_infer(body, None, "m", "")):
        assert validate(strings, request_body.rest_inputs(parsed, strings, exact))[
            "s"
        ].tolist() == [b"ab", b"c", b""]
        with pytest.raises(ResourceExhausted):
            validate(strings, request_body.rest_inputs(parsed, strings, under))


PIC = Signature(
    "serving_default",
    (TensorSpec("pic", "float32", (-1, 8, 8, 3)),),
    (TensorSpec("y", "float32", None),),
    encoded_images=True,
)


def test_an_image_input_takes_bytes_as_binary_data_or_base64_json() -> None:
    header = {
        "inputs": [
            {
                "name": "pic",
                "datatype": "BYTES",
                "shape": [2],
                "parameters": {"binary_data_size": 12},
            }
        ]
    }
    body, length = _binary_body(
        header, struct.pack("<I", 2) + b"\xff\xd8" + struct.pack("<I", 2) + b"\x89P"
    )
    assert _decode(body, length, PIC)["pic"].tolist() == [b"\xff\xd8", b"\x89P"]
    document = {"inputs": [{"name": "pic", "datatype": "BYTES", "shape": [1], "data": ["/9g="]}]}
    assert _decode(orjson.dumps(document), None, PIC)["pic"].tolist() == [b"\xff\xd8"]
    document["inputs"][0]["data"] = ["not base64!"]
    with pytest.raises(InvalidArgument, match="element 0 is not base64: an image input takes"):
        _decode(orjson.dumps(document), None, PIC)
