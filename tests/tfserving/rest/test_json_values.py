"""JSON values → typed arrays (pure, no server): every dtype's rules, ranges, precision and
errors, seen through a decoded request body."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from gateway.errors import Unimplemented
from tests.support.rest_json import decode, error, sig


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
        ('{"inputs": [[1, true]]}', "inputs[0][1]: JSON Value: true Type: Bool is not of expected"),
        ('{"inputs": ["1"]}', 'inputs[0]: JSON Value: "1" Type: String is not of expected type'),
        ('{"inputs": [null]}', "inputs[0]: JSON Value: null Type: Null is not of expected type"),
        ('{"inputs": [{"b64": "AA=="}]}', "Type: Object is not of expected type: float32"),
        ('{"inputs": [16777217]}', "Cannot convert JSON value: 16777217 to float32 without loss"),
        ('{"inputs": [1e39]}', "Cannot convert JSON value: 1e+39 to float32 without loss"),
        ('{"inputs": [1.5, 16777217]}', "inputs[1]: Cannot convert JSON value: 16777217"),
    ],
)
def test_float32_values_say_what_is_wrong_and_where(body: str, message: str) -> None:
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


FLOAT_LIMITS = [  # (dtype, largest finite value, smallest magnitude that rounds to infinity)
    ("float16", 65504.0, 65520.0),
    ("bfloat16", 2.0**128 - 2.0**120, 2.0**128 - 2.0**119),
    ("float32", 2.0**128 - 2.0**104, 2.0**128 - 2.0**103),
]
PARSERS = ["", ', "n": NaN']  # orjson, or (with a NaN anywhere) the standard library's parser


@pytest.mark.parametrize("more", PARSERS, ids=["orjson", "stdlib"])
def test_float32_max_as_json_writes_it_is_accepted(more: str) -> None:
    """A hypothesis example: float32's max printed as JSON came back refused."""
    exact = int(np.finfo(np.float32).max)  # an integer literal, exact in float32
    body = f'{{"inputs": [3.4028235e+38, -3.4028235e38, {exact}]{more}}}'
    inputs, _ = decode(body)
    largest = np.finfo(np.float32).max
    np.testing.assert_array_equal(inputs["x"], np.array([largest, -largest, largest], np.float32))


@pytest.mark.parametrize("more", PARSERS, ids=["orjson", "stdlib"])
@pytest.mark.parametrize(
    ("dtype", "largest", "to_infinity"), FLOAT_LIMITS, ids=[row[0] for row in FLOAT_LIMITS]
)
def test_numbers_that_round_to_a_finite_float_are_accepted(
    dtype: str, largest: float, to_infinity: float, more: str
) -> None:
    """The boundary: the largest double that rounds to the dtype's max, then the next one."""
    below = math.nextafter(to_infinity, 0)
    inputs, _ = decode(f'{{"inputs": [{below!r}, {-below!r}]{more}}}', sig(("x", dtype)))
    assert inputs["x"].tolist() == [largest, -largest]
    for value in (to_infinity, -to_infinity, math.nextafter(to_infinity, math.inf)):
        message = error(f'{{"inputs": [1.0, {value!r}]{more}}}', sig(("x", dtype)))
        assert message == (
            f"inputs[1]: Cannot convert JSON value: {value!r} to {dtype} without loss of precision."
        )


def test_float64_takes_every_finite_double() -> None:
    largest = float(np.finfo(np.float64).max)
    inputs, _ = decode(f'{{"inputs": [{largest!r}, 5e-324]}}', sig(("x", "float64")))
    assert inputs["x"].tolist() == [largest, 5e-324]
    assert "number 1.8e308 is out of a double's range" in error('{"inputs": [1.8e308]}')


def test_integer_literals_must_still_be_exact() -> None:
    """Rounding is for numbers written with a fraction or exponent; integers must be exact."""
    assert "16777217 to float32" in error('{"inputs": [16777217]}')
    assert "65519 to float16" in error('{"inputs": [65519]}', sig(("x", "float16")))
    inputs, _ = decode('{"inputs": [16777217.0, 65519.0]}')
    assert inputs["x"].tolist() == [16777216.0, 65519.0]
    inputs, _ = decode('{"inputs": [65519.0]}', sig(("x", "float16")))
    assert inputs["x"].tolist() == [65504.0]


def test_bfloat16_rounds_once() -> None:
    """A double just above a tie rounds up (rounding through float32 first would tie to 1.0)."""
    inputs, _ = decode(
        f'{{"inputs": [{1 + 2**-8 + 2**-52!r}, {1 + 2**-8!r}]}}', sig(("x", "bfloat16"))
    )
    assert inputs["x"].tolist() == [1 + 2**-7, 1.0]


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
