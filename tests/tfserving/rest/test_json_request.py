"""REST request bodies → tensors (pure, no server): parsing, signature_name, row and columnar
shaping, and the errors that name the place in the request."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gateway import decoding
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.rest import json_request
from gateway.tfserving.rest.json_request import Format
from tests.support.rest_json import AB, X, decode, error, sig


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
        ('{"inputs": [1e400000000000000]}', "JSON Parse error"),
        ('{"inputs": {"y": [1]}}', "Missing named input: x in 'inputs' object."),
        ('{"instances": [{"x": 1}, [2]]}', "Expecting object but got Array at item 1"),
        ('{"instances": [{"x": 1}, {"x": 2, "z": 3}]}', "must only have keys: x"),
        ('{"instances": [1, {"x": 2}]}', "Expecting value/list but got object at item 1"),
        (
            '{"inputs": ' + "[" * 70 + "1" + "]" * 70 + "}",
            "inputs: tensor has 65 dimensions, over the limit of 64",
        ),
    ],
)
def test_malformed_requests_say_what_is_wrong(body: str, message: str) -> None:
    assert message in error(body)


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


def test_decoded_bytes_of_all_inputs_are_bounded_before_conversion() -> None:
    """``--max_request_bytes``: each tensor's bytes (from its shape) count against the request's
    bound before its values are converted; together a: 2×3 int32 (24 B) and b: 2 strings (each
    its reference and ``bytes`` header; their own bytes are not known before conversion)."""
    body = b'{"inputs": {"a": [[1, 2, 3], [4, 5, 6]], "b": ["p", "q"]}}'
    request = json_request.loads(body)
    total = 24 + 2 * decoding.STRING_ELEMENT_BYTES
    inputs, _ = json_request.predict_inputs(request, AB, max_elements=100, max_bytes=total)
    assert set(inputs) == {"a", "b"}
    with pytest.raises(
        ResourceExhausted, match=rf"at least {total} bytes .* over the limit of {total - 1}"
    ):
        json_request.predict_inputs(request, AB, max_elements=100, max_bytes=total - 1)


def test_huge_number_literals_are_refused_in_the_projects_words() -> None:
    """Python's "Exceeds the limit (4300 digits)... use sys.set_int_max_str_digits()" reached
    REST clients; a number past a double's range was echoed whole."""
    message = error(b'{"instances": [' + b"9" * 5000 + b"]}")
    assert message == (
        "JSON Parse error: an integer literal has more than 4300 digits; no tensor dtype holds "
        "such a number"
    )
    message = error(b'{"instances": [1e' + b"9" * 5000 + b"]}")
    assert message == f"JSON Parse error: number 1e{'9' * 38}... is out of a double's range"


PICS = Signature(
    "serving_default",
    (TensorSpec("pic", "float32", (-1, 8, 8, 3)), TensorSpec("k", "int32", (-1,))),
    (TensorSpec("y", "float32", None),),
    encoded_images=True,
)
PIC = Signature("serving_default", PICS.inputs[:1], PICS.outputs, encoded_images=True)


def test_an_image_input_takes_b64_images_one_a_row_in_both_formats() -> None:
    for body in (
        '{"instances": [{"b64": "AAE="}, {"b64": "AgM="}]}',
        '{"inputs": [{"b64": "AAE="}, {"b64": "AgM="}]}',
    ):
        inputs, _ = decode(body, PIC)
        assert inputs["pic"].dtype == object and inputs["pic"].tolist() == [b"\0\1", b"\2\3"]
    body = '{"instances": [{"pic": {"b64": "AAE="}, "k": 1}]}'
    inputs, _ = decode(body, PICS)
    assert inputs["pic"].tolist() == [b"\0\1"] and inputs["k"].tolist() == [1]
    inputs, _ = decode('{"inputs": {"pic": [{"b64": "AAE="}], "k": [1]}}', PICS)
    assert inputs["pic"].tolist() == [b"\0\1"]


def test_numbers_still_feed_an_image_input_and_other_inputs_keep_their_rules() -> None:
    pixels = np.zeros((1, 8, 8, 3)).tolist()
    inputs, _ = decode(json.dumps({"instances": pixels}), PIC)
    assert inputs["pic"].dtype == np.float32 and inputs["pic"].shape == (1, 8, 8, 3)
    plain = Signature("serving_default", PIC.inputs, PIC.outputs)  # a TensorFlow model's
    assert "is not of expected type: float32" in error('{"instances": [{"b64": "AAE="}]}', plain)
    mixed = '{"instances": [{"b64": "AAE="}, 1.5]}'
    assert "is not of expected type: float32" in error(mixed, PIC)
