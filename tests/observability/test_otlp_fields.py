"""OTLP field primitives, checked against the protobuf runtime's own encoding of the same
``Span`` fields (the whole-request comparison with the SDK is test_otlp_wire.py)."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.trace import SpanKind

from gateway.observability import otlp_fields
from gateway.observability.otlp_fields import (  # type: ignore[attr-defined]
    attribute_fields,
    count_field,
    delimited,
    name_and_kind,
    string_field,
    varint,
)

ATTRIBUTES = 0x4A
"""``Span.attributes`` (field 9, length-delimited)."""


def _any(value: Any) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, str):
        return common_pb2.AnyValue(string_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    if isinstance(value, bytes):
        return common_pb2.AnyValue(bytes_value=value)
    if isinstance(value, list):
        return common_pb2.AnyValue(array_value=common_pb2.ArrayValue(values=map(_any, value)))
    pairs = [common_pb2.KeyValue(key=k, value=_any(v)) for k, v in value.items()]
    return common_pb2.AnyValue(kvlist_value=common_pb2.KeyValueList(values=pairs))


def _span_attributes(attributes: dict[str, Any]) -> bytes:
    pairs = [common_pb2.KeyValue(key=k, value=_any(v)) for k, v in attributes.items()]
    return trace_pb2.Span(attributes=pairs).SerializeToString()


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**63 - 1, -1, -(2**63)])
def test_varints_are_protobuf_s(value: int) -> None:
    assert common_pb2.AnyValue(int_value=value).SerializeToString() == b"\x18" + varint(value)


@pytest.mark.parametrize("size", [0, 5, 127, 128, 20_000])
def test_length_delimited_fields_of_any_size(size: int) -> None:
    text = "x" * size
    assert trace_pb2.Span(name=text).SerializeToString() == string_field(0x2A, text)
    assert delimited(0x2A, text.encode()) == (string_field(0x2A, text) or b"\x2a\x00")


def test_attributes_of_every_type_encode_as_protobuf_does() -> None:
    attributes = {
        "s": "é",
        "b": True,
        "i": -3,
        "f": 1.5,
        "raw": b"\x00\x01",
        "seq": [1, "two", False],
        "map": {"k": "v", "n": 2},
    }
    assert attribute_fields(ATTRIBUTES, attributes) == _span_attributes(attributes)
    assert attribute_fields(ATTRIBUTES, None) == attribute_fields(ATTRIBUTES, {}) == b""
    with pytest.raises(TypeError, match="Invalid type"):
        attribute_fields(ATTRIBUTES, {"x": object()})


def test_equal_values_of_other_types_are_cached_apart_and_the_cache_is_bounded() -> None:
    encodings = {attribute_fields(ATTRIBUTES, {"v": v}) for v in (1, True, 1.0, "1")}
    assert len(encodings) == 4
    otlp_fields.PAIRS.clear()
    for i in range(otlp_fields.CACHE_MAX + 1):
        attribute_fields(ATTRIBUTES, {"n": i})
    assert len(otlp_fields.PAIRS) <= otlp_fields.CACHE_MAX


def test_name_kind_and_counts() -> None:
    expected = trace_pb2.Span(name="batch", kind=trace_pb2.Span.SPAN_KIND_SERVER)
    assert name_and_kind("batch", SpanKind.SERVER) == expected.SerializeToString()
    assert name_and_kind("batch", SpanKind.SERVER) is name_and_kind("batch", SpanKind.SERVER)
    dropped = trace_pb2.Span(dropped_attributes_count=3).SerializeToString()
    assert count_field(dropped[0], 3) == dropped and count_field(dropped[0], 0) == b""
