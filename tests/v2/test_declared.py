"""Declared input tensors: shapes and bounds checked before any value is read."""

from __future__ import annotations

import pytest

from gateway import decoding
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.v2 import declared
from gateway.v2.declared import Limits


def test_declare_checks_shapes_and_bounds(limits: Limits) -> None:
    header = declared.declare_input("x", "FP32", [2, 3], limits)
    assert (header.shape, header.elements, header.wire_type.name) == ((2, 3), 6, "FP32")
    assert declared.declare_input("x", "FP32", [2, 3], limits, wire_bytes=999).nbytes == 24
    with pytest.raises(InvalidArgument, match="input 'x': invalid datatype 'F32'"):
        declared.declare_input("x", "F32", [1], limits)
    with pytest.raises(InvalidArgument, match=r"input 'x': tensor shape \[-1, 3\] has a negative"):
        declared.declare_input("x", "FP32", [-1, 3], limits)
    with pytest.raises(InvalidArgument, match="over the limit of 1000"):
        declared.declare_input("x", "FP32", [1001], limits)
    with pytest.raises(InvalidArgument, match="over the limit of 1000"):
        declared.declare_input("x", "FP32", [0, 10**12], limits)  # zero elements, a huge dimension
    with pytest.raises(InvalidArgument, match="65 dimensions"):
        declared.declare_input("x", "FP32", [1] * 65, limits)


def test_decoded_bytes_of_strings_count_their_overhead(limits: Limits) -> None:
    header = declared.declare_input("s", "BYTES", [3], limits, wire_bytes=10)
    assert header.nbytes == 3 * decoding.STRING_ELEMENT_BYTES + 10


def test_check_total_is_resource_exhausted() -> None:
    decoding.check_total(100, 100)
    decoding.check_total(10**12, None)
    with pytest.raises(ResourceExhausted, match="101 bytes once decoded, over the limit of 100"):
        decoding.check_total(101, 100)
