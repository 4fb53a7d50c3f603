"""REST JSON ⇄ tensors (pure, no server): request decoding, typing, errors, response encoding."""

from __future__ import annotations

import base64
import json
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gateway.errors import Internal, InvalidArgument, ServingError, Unimplemented
from gateway.serving.models import State, VersionStatus
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.codec import messages
from gateway.tfserving.rest import json_request
from gateway.tfserving.rest.json_request import Format
from workers.dtypes import dtype_name

MAX = 10**6


def sig(*inputs: tuple[str, str], outputs: tuple[str, ...] = ("y",)) -> Signature:
    return Signature(
        "serving_default",
        tuple(TensorSpec(name, dtype, None) for name, dtype in inputs),
        tuple(TensorSpec(name, "float32", None) for name in outputs),
    )


X = sig(("x", "float32"))
AB = sig(("a", "int32"), ("b", "string"))


def decode(body: bytes | str, signature: Signature = X) -> tuple[dict[str, np.ndarray], Format]:
    raw = body.encode() if isinstance(body, str) else body
    return json_request.predict_inputs(json_request.loads(raw), signature, max_elements=MAX)


def error(body: bytes | str, signature: Signature = X, kind: type = InvalidArgument) -> str:
    with pytest.raises(ServingError) as info:
        decode(body, signature)
    assert type(info.value) is kind, info.value.message
    return info.value.message


# -- decoding ------------------------------------------------------------------------------------
def test_row_format_single_input_stacks_instances() -> None:
    inputs, fmt = decode('{"instances": [[1, 2.5], [3, 4]]}')
    assert fmt is Format.ROW
    assert inputs["x"].dtype == np.float32
    np.testing.assert_array_equal(inputs["x"], [[1, 2.5], [3, 4]])


def test_row_format_scalars_and_named_objects() -> None:
    inputs, _ = decode('{"instances": [5, 6, 7]}')
    np.testing.assert_array_equal(inputs["x"], np.array([5, 6, 7], np.float32))
    body = '{"instances": [{"a": [1, 2], "b": "x"}, {"a": [3, 4], "b": {"b64": "eQ=="}}]}'
    inputs, fmt = decode(body, AB)
    assert fmt is Format.ROW
    np.testing.assert_array_equal(inputs["a"], np.array([[1, 2], [3, 4]], np.int32))
    assert inputs["b"].tolist() == [b"x", b"y"]


def test_columnar_format_any_rank_and_named_map() -> None:
    inputs, fmt = decode('{"inputs": 2.5}')
    assert fmt is Format.COLUMNAR
    assert inputs["x"].shape == ()
    assert inputs["x"] == np.float32(2.5)
    inputs, _ = decode('{"inputs": {"a": [[1, 2, 3]], "b": ["p", "q"], "ignored": 1}}', AB)
    assert inputs["a"].shape == (1, 3)
    assert inputs["b"].shape == (2,)
    inputs, _ = decode('{"inputs": {"x": [[]]}}')
    assert inputs["x"].shape == (1, 0)
    assert inputs["x"].dtype == np.float32


def test_signature_name() -> None:
    assert json_request.signature_name({"signature_name": "sig"}) == "sig"
    assert json_request.signature_name({}) == ""
    with pytest.raises(InvalidArgument, match="'signature_name' must be a string"):
        json_request.signature_name({"signature_name": 3})


def test_nan_and_infinities_are_accepted_for_floats() -> None:
    inputs, _ = decode('{"inputs": [NaN, Infinity, -Infinity, 1.5]}')
    values = inputs["x"]
    assert np.isnan(values[0])
    assert values[1] == np.inf
    assert values[2] == -np.inf
    assert values[3] == 1.5


@pytest.mark.parametrize(
    ("dtype", "json_values", "expected"),
    [
        ("float16", "[1, 0.5, 65504, 2048]", np.array([1, 0.5, 65504, 2048], np.float16)),
        ("bfloat16", "[1, 0.5, 256, -1e38]", np.array([1, 0.5, 256, -1e38], ml_dtypes.bfloat16)),
        ("float32", "[16777216, 3e38, 0.1]", np.array([2**24, 3e38, 0.1], np.float32)),
        ("float64", "[9007199254740992, 1e300]", np.array([2**53, 1e300])),
        ("int8", "[-128, 127]", np.array([-128, 127], np.int8)),
        ("uint8", "[0, 255]", np.array([0, 255], np.uint8)),
        ("int16", "[-32768, 32767]", np.array([-32768, 32767], np.int16)),
        ("uint16", "[0, 65535]", np.array([0, 65535], np.uint16)),
        ("int32", "[-2147483648, 2147483647]", np.array([-(2**31), 2**31 - 1], np.int32)),
        ("uint32", "[0, 4294967295]", np.array([0, 2**32 - 1], np.uint32)),
        ("int64", f"[{-(2**63)}, {2**63 - 1}]", np.array([-(2**63), 2**63 - 1], np.int64)),
        ("uint64", f"[0, {2**64 - 1}]", np.array([0, 2**64 - 1], np.uint64)),
        ("bool", "[true, false]", np.array([True, False])),
    ],
)
def test_values_are_typed_through_the_signature(
    dtype: str, json_values: str, expected: np.ndarray
) -> None:
    inputs, _ = decode(f'{{"inputs": {json_values}}}', sig(("x", dtype)))
    assert inputs["x"].dtype == expected.dtype
    np.testing.assert_array_equal(inputs["x"], expected)


def test_strings_are_utf8_and_b64_is_binary() -> None:
    body = '{"inputs": ["caf\\u00e9", {"b64": "AP8="}, {"b64": "AP8"}, ""]}'
    inputs, _ = decode(body, sig(("s", "string")))
    assert inputs["s"].dtype == object
    assert inputs["s"].tolist() == ["café".encode(), b"\x00\xff", b"\x00\xff", b""]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "JSON Parse error: The document is empty"),
        ('{"instances": [1,', "JSON Parse error: Expecting value at offset: 17"),
        ('{"instances": [1e400]}', "JSON Parse error: number 1e400 is out of a double's range"),
        ("[1, 2]", "JSON Value: [1,2] Is not object"),
        ('{"signature_name": ""}', "Missing 'inputs' or 'instances' key"),
        ('{"instances": [1], "inputs": [1]}', "expecting only one of 'inputs' or 'instances'"),
        ('{"instances": {"x": 1}}', "Expecting 'instances' to be a list/array, got Object"),
        ('{"instances": []}', "No values in 'instances' array"),
        ('{"instances": [[1, 2], [3]]}', "instances[1]: list of 1 values where 2 were expected"),
        ('{"instances": [[1, 2], 3]}', "instances[1]: found 3 where a list of 2 values"),
        ('{"inputs": [[1, [2]]]}', "inputs[0][1]: found a list where a value was expected"),
        ('{"inputs": [[1, true]]}', "inputs[0][1]: JSON Value: true Type: Bool is not of expected"),
        ('{"inputs": ["1"]}', 'inputs[0]: JSON Value: "1" Type: String is not of expected type'),
        ('{"inputs": [null]}', "inputs[0]: JSON Value: null Type: Null is not of expected type"),
        ('{"inputs": [{"b64": "AA=="}]}', "Type: Object is not of expected type: float32"),
        ('{"inputs": [16777217]}', "Cannot convert JSON value: 16777217 to float32 without loss"),
        ('{"inputs": [1e39]}', "Cannot convert JSON value: 1e+39 to float32 without loss"),
        ('{"inputs": [1.5, 16777217]}', "inputs[1]: Cannot convert JSON value: 16777217"),
        ('{"inputs": [1e400000000000000]}', "JSON Parse error"),
        ('{"inputs": {"y": [1]}}', "Missing named input: x in 'inputs' object."),
        ('{"instances": [{"x": 1}, [2]]}', "Expecting object but got Array at item 1"),
        ('{"instances": [{"x": 1}, {"x": 2, "z": 3}]}', "must only have keys: x"),
        ('{"instances": [1, {"x": 2}]}', "Expecting value/list but got object at item 1"),
        ('{"inputs": ' + "[" * 70 + "1" + "]" * 70 + "}", "lists nested 65 deep, over 64"),
    ],
)
def test_malformed_requests_say_what_is_wrong(body: str, message: str) -> None:
    assert message in error(body)


@pytest.mark.parametrize(
    ("dtype", "value", "message"),
    [
        ("int8", "128", "JSON value 128 is out of range for int8 [-128, 127]"),
        ("uint8", "-1", "JSON value -1 is out of range for uint8 [0, 255]"),
        ("int32", "1.0", "JSON Value: 1.0 Type: Number is not of expected type: int32 (integers"),
        ("int64", str(2**63), f"JSON value {2**63} is out of range for int64"),
        ("int64", str(2**64), "Type: Number is not of expected type: int64 (integers must be"),
        ("uint64", "-1", "JSON value -1 is out of range for uint64"),
        ("uint64", str(2**64), "is not of expected type: uint64"),
        ("bool", "1", "JSON Value: 1 Type: Number is not of expected type: bool"),
        ("float16", "65520", "Cannot convert JSON value: 65520 to float16"),
        ("float16", "2049", "Cannot convert JSON value: 2049 to float16"),
        ("float32", "16777217", "Cannot convert JSON value: 16777217 to float32"),
        ("float32", "1e39", "Cannot convert JSON value: 1e+39 to float32"),
        ("bfloat16", "257", "Cannot convert JSON value: 257 to bfloat16"),
        ("string", "1", "JSON Value: 1 Type: Number is not of expected type: string"),
        ("string", '{"b64": "!!"}', 'inputs[0]: Unable to base64 decode "!!"'),
        ("string", '{"b64": "\\u00e9"}', "Unable to base64 decode"),
        ("string", '{"b65": "AA"}', "not formatted correctly for base64 data"),
        ("string", '"\\ud800"', "is not valid Unicode (it holds a lone surrogate"),
    ],
)
def test_wrong_types_and_huge_numbers_are_invalid(dtype: str, value: str, message: str) -> None:
    assert message in error(f'{{"inputs": [{value}]}}', sig(("x", dtype)))


def test_integers_beyond_64_bits_from_the_fallback_parser() -> None:
    """A body with NaN goes through the standard library, which reads any integer exactly."""
    big = 2**64 + 1
    message = error(f'{{"inputs": [{big}], "n": NaN}}', sig(("x", "uint64")))
    assert f"JSON value {big} is out of range for uint64" in message
    message = error(f'{{"inputs": [{2**53 + 1}], "n": NaN}}', sig(("x", "float64")))
    assert f"Cannot convert JSON value: {2**53 + 1} to float64" in message
    message = error(f'{{"inputs": [{"1" * 400}], "n": NaN}}', sig(("x", "float64")))
    assert "Cannot convert JSON value: 1111" in message
    inputs, _ = decode(f'{{"inputs": [{2**60}, 0.5], "n": NaN}}', sig(("x", "float32")))
    assert inputs["x"].tolist() == [2.0**60, 0.5]


def test_complex_inputs_are_unimplemented_as_upstream() -> None:
    message = error('{"inputs": [1]}', sig(("c", "complex64")), Unimplemented)
    assert "complex64" in message


def test_multiple_inputs_need_objects() -> None:
    assert "instances is a plain list" in error('{"instances": [1]}', AB)
    assert "inputs is a plain value/list" in error('{"inputs": [1]}', AB)
    assert "Failed to get input map" in error('{"inputs": [1]}', sig())


def test_named_object_paths_in_messages() -> None:
    message = error('{"instances": [{"a": [1, 2], "b": "x"}, {"a": [1], "b": "y"}]}', AB)
    assert message.startswith('instances[1]["a"]: list of 1 values where 2 were expected')
    message = error('{"inputs": {"a": [1, 1.5], "b": "x"}}', AB)
    assert message.startswith('inputs["a"][1]: JSON Value: 1.5')


def test_element_limit_is_checked_before_conversion() -> None:
    body = b'{"inputs": [' + b",".join([b"[1,2,3]"] * 5) + b"]}"
    with pytest.raises(InvalidArgument, match=r"shape \[5, 3\] has 15 elements, over the limit"):
        json_request.predict_inputs(json_request.loads(body), X, max_elements=14)
    # A ragged body cannot claim a huge shape: the first element alone declares [2, 10**6].
    body = b'{"inputs": [[' + b"1," * (10**6 - 1) + b"1], [1]]}"
    with pytest.raises(InvalidArgument, match="over the limit of 1000000"):
        json_request.predict_inputs(json_request.loads(body), X, max_elements=10**6)


# -- encoding ------------------------------------------------------------------------------------
def encode(outputs: dict[str, np.ndarray], fmt: Format) -> Any:
    return json.loads(json_request.predict_response(outputs, fmt))


def test_single_output_drops_its_name() -> None:
    y = np.array([[0.1, 0.2], [0.3, 0.4]], np.float32)
    assert encode({"y": y}, Format.ROW) == {"predictions": [[0.1, 0.2], [0.3, 0.4]]}
    assert encode({"y": y}, Format.COLUMNAR) == {"outputs": [[0.1, 0.2], [0.3, 0.4]]}
    assert encode({"y": np.array(7, np.int64)}, Format.COLUMNAR) == {"outputs": 7}


def test_several_outputs_are_keyed_by_name() -> None:
    outputs = {"sum": np.array([[5.0], [1.0]], np.float32), "flag": np.array([True, False])}
    assert encode(outputs, Format.ROW) == {
        "predictions": [{"sum": [5.0], "flag": True}, {"sum": [1.0], "flag": False}]
    }
    assert encode(outputs, Format.COLUMNAR) == {
        "outputs": {"sum": [[5.0], [1.0]], "flag": [True, False]}
    }


def test_float32_in_shortest_form_and_non_finite_literals() -> None:
    y = np.array([[0.1, np.nan], [np.inf, -np.inf]], np.float32)
    body = json_request.predict_response({"y": y}, Format.COLUMNAR)
    assert body == b'{"outputs":[[0.1,NaN],[Infinity,-Infinity]]}'
    two = {"y": y, "z": np.array([np.nan, 1], np.float64)}
    assert json_request.predict_response(two, Format.ROW) == (
        b'{"predictions":[{"y":[0.1,NaN],"z":NaN},{"y":[Infinity,-Infinity],"z":1.0}]}'
    )
    assert json_request.predict_response({"y": np.array(np.nan)}, Format.COLUMNAR) == (
        b'{"outputs":NaN}'
    )


def test_bytes_outputs_are_b64_and_strings_utf8() -> None:
    outputs = {
        "image_bytes": np.array([[b"\x00\xff"], [b""]], dtype=object),
        "label": np.array([["café"], [b"ok"]], dtype=object),
    }
    assert encode(outputs, Format.ROW) == {
        "predictions": [
            {"image_bytes": [{"b64": "AP8="}], "label": ["café"]},
            {"image_bytes": [{"b64": ""}], "label": ["ok"]},
        ]
    }
    with pytest.raises(Internal, match=r"not valid UTF-8; name outputs .* '_bytes' suffix"):
        json_request.predict_response({"raw": np.array([b"\xff"], object)}, Format.COLUMNAR)


def test_other_dtypes_and_layouts() -> None:
    outputs = {
        "h": np.array([0.5, 1], np.float16),
        "bf": np.array([0.5, 1], ml_dtypes.bfloat16),
        "u": np.array([2**64 - 1, 0], np.uint64),
        "t": np.arange(6, dtype=">i4").reshape(2, 3).T[:2],  # big-endian, not contiguous
    }
    assert encode(outputs, Format.ROW) == {
        "predictions": [
            {"h": 0.5, "bf": 0.5, "u": 2**64 - 1, "t": [0, 3]},
            {"h": 1.0, "bf": 1.0, "u": 0, "t": [1, 4]},
        ]
    }
    with pytest.raises(InvalidArgument, match="tensor type: complex64"):
        json_request.predict_response({"c": np.zeros(1, np.complex64)}, Format.COLUMNAR)


def test_row_format_needs_one_batch_size() -> None:
    with pytest.raises(InvalidArgument, match="has no shape information"):
        json_request.predict_response({"y": np.array(1.0)}, Format.ROW)
    with pytest.raises(InvalidArgument, match="has invalid batch size: 0"):
        json_request.predict_response({"y": np.zeros((0, 2))}, Format.ROW)
    with pytest.raises(InvalidArgument, match="inconsistent batch size: 3 expecting: 2"):
        json_request.predict_response({"y": np.zeros(2), "z": np.zeros(3)}, Format.ROW)
    with pytest.raises(InvalidArgument, match="empty tensor map"):
        json_request.predict_response({}, Format.ROW)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]),
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    )
)
def test_round_trip_through_json(array: np.ndarray) -> None:
    """Encode a tensor as a response, send it back as a request: the same values come back."""
    for fmt in Format:
        body = json_request.predict_response({"x": array}, fmt)
        value = next(iter(json.loads(body).values()))
        request = json.dumps({fmt.value: value}, allow_nan=True).encode()
        signature = sig(("x", dtype_name(array.dtype)))
        inputs, got = json_request.predict_inputs(
            json_request.loads(request), signature, max_elements=MAX
        )
        assert got is fmt
        assert inputs["x"].dtype == array.dtype
        np.testing.assert_array_equal(inputs["x"], array)


# -- other bodies --------------------------------------------------------------------------------
def test_status_json_as_tf_serving() -> None:
    statuses = [
        VersionStatus(1, State.AVAILABLE),
        VersionStatus(2, State.END, InvalidArgument("bad model")),
    ]
    body = json_request.status_body(messages.status_response("m", statuses))
    assert json.loads(body) == {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            },
            {
                "version": "2",
                "state": "END",
                "status": {"error_code": "INVALID_ARGUMENT", "error_message": "bad model"},
            },
        ]
    }


def test_metadata_json_as_tf_serving() -> None:
    signature = Signature(
        "serving_default",
        (TensorSpec("x", "float32", (-1, 2)),),
        (TensorSpec("y", "string", None),),
    )
    response = messages.metadata_response("m", 3, {"serving_default": signature})
    assert json.loads(json_request.metadata_body(response)) == {
        "model_spec": {"name": "m", "signature_name": "", "version": "3"},
        "metadata": {
            "signature_def": {
                "signature_def": {
                    "serving_default": {
                        "inputs": {
                            "x": {
                                "dtype": "DT_FLOAT",
                                "tensor_shape": {
                                    "dim": [{"size": "-1", "name": ""}, {"size": "2", "name": ""}],
                                    "unknown_rank": False,
                                },
                                "name": "x",
                            }
                        },
                        "outputs": {
                            "y": {
                                "dtype": "DT_STRING",
                                "tensor_shape": {"dim": [], "unknown_rank": True},
                                "name": "y",
                            }
                        },
                        "method_name": "tensorflow/serving/predict",
                        "defaults": {},
                    }
                }
            }
        },
    }


def test_error_body_survives_any_message() -> None:
    assert json.loads(json_request.error_body('bad "x"\n')) == {"error": 'bad "x"\n'}
    assert json.loads(json_request.error_body("lone \ud800")) == {"error": "lone \\ud800"}


def test_dumps_refuses_what_json_cannot_hold() -> None:
    assert json_request.dumps({"results": [[["a", 0.5]]]}) == b'{"results":[[["a",0.5]]]}'
    with pytest.raises(Internal, match="not JSON-serialisable"):
        json_request.dumps({"x": object()})


def test_b64_round_trip_of_random_bytes() -> None:
    data = bytes(range(256))
    text = base64.b64encode(data).decode()
    inputs, _ = decode(f'{{"inputs": [{{"b64": "{text}"}}]}}', sig(("s", "string")))
    assert inputs["s"][0] == data
    body = json_request.predict_response({"s_bytes": inputs["s"]}, Format.COLUMNAR)
    assert json.loads(body) == {"outputs": [{"b64": text}]}
