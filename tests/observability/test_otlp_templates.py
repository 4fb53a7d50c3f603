"""Packed templates: the usual records are written whole from a template of their shape, to the
bytes their spans encode to field by field; other shapes are left to the field-by-field path."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanKind

from channel.span_wire import WorkerSpans
from gateway.observability.otlp_templates import Template, batch_span, server_spans
from gateway.observability.otlp_wire import encode_records, encode_request
from gateway.observability.span_records import BatchSpan, ServerSpan, SpanForms

GATEWAY = Resource({"service.name": "tensorgate", "process.pid": 10})
T0 = 1_700_000_000_000_000_000
TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
ATTRIBUTES = {"rpc.system": "grpc", "rpc.grpc.status_code": 0, "tensorgate.model": "m"}


def _batch(**fields: Any) -> BatchSpan:
    worker = WorkerSpans.of(
        [
            {
                "pid": 7,
                "name": "compute",
                "span_id": 0xC1,
                "parent_id": fields.get("span_id", 0xB1),
                "start_ns": T0 + 30,
                "end_ns": T0 + 60,
                "attributes": {"tensorgate.model": "m:1"},
            }
        ]
    )
    values: dict[str, Any] = {
        "trace_id": TRACE,
        "span_id": 0xB1,
        "parent_id": 0x51,
        "links": (),
        "start_ns": T0 + 20,
        "end_ns": T0 + 70,
        "attributes": {"tensorgate.batch.rows": 1, "tensorgate.model": "m"},
        "worker": worker,
    }
    values.update(fields)
    return BatchSpan(**values)


def _server(batch: BatchSpan | None = None, **fields: Any) -> ServerSpan:
    batch = batch or _batch()
    values: dict[str, Any] = {
        "name": "tensorflow.serving.PredictionService/Predict",
        "kind": SpanKind.SERVER,
        "trace_id": TRACE,
        "span_id": 0x51,
        "parent_id": 0,
        "trace_state": None,
        "start_ns": T0,
        "attributes": dict(ATTRIBUTES),
        "phases": [(T0 + 10, batch)],
        "end_ns": T0 + 90,
        "done_ns": batch.end_ns,
        "carried": (batch,),
    }
    values.update(fields)
    return ServerSpan(**values)


def _fields(records: list[Any]) -> bytes:
    forms = SpanForms(GATEWAY)
    return encode_request([span for record in records for span in forms.spans(record)])


@pytest.mark.parametrize(
    "server",
    [
        _server(),
        _server(parent_id=0xCA11E4),
        _server(error="INTERNAL", attributes={**ATTRIBUTES, "rpc.grpc.status_code": 13}),
        _server(kind=SpanKind.INTERNAL, attributes={}),
        _server(batch=_batch(end_ns=T0 + 95), end_ns=T0 + 90, carried=()),  # encode ends first
        _server(start_ns=T0 + 15),  # queued before its own start: decode takes no time
    ],
    ids=["root", "remote parent", "error", "no attributes", "batch ran late", "clock step"],
)
def test_the_usual_records_are_packed_to_the_bytes_of_their_spans(server: ServerSpan) -> None:
    assert server_spans(server) is not None
    assert all(batch_span(b) is not None for b in server.carried)
    for _ in "ab":  # the second from the template the first made
        assert encode_records([server], SpanForms(GATEWAY)) == _fields([server])


def test_equal_attribute_values_of_different_types_get_templates_of_their_own() -> None:
    one, true, real = (_server(attributes={"x": value}) for value in (1, True, 1.0))
    assert len({server_spans(one), server_spans(true), server_spans(real)}) == 3
    assert encode_records([one, true, real], SpanForms(GATEWAY)) == _fields([one, true, real])


@pytest.mark.parametrize(
    "server",
    [
        _server(trace_state="vendor=x"),
        _server(phases=[(T0 + 10, _batch()), (T0 + 12, _batch(span_id=0xB2))]),
        _server(phases=[], done_ns=0, carried=()),
        _server(done_ns=0, carried=()),  # its batch has not ended
        _server(attributes={"list": ["a", "b"]}),  # does not hash: no template key
    ],
    ids=["trace state", "two queueings", "never queued", "batch running", "list value"],
)
def test_other_server_records_are_written_field_by_field(server: ServerSpan) -> None:
    assert server_spans(server) is None
    assert encode_records([server], SpanForms(GATEWAY)) == _fields([server])


def test_a_batch_with_links_is_written_field_by_field() -> None:
    linked = _batch(links=((TRACE, 0x52),))
    assert batch_span(linked) is None and batch_span(_batch()) is not None
    assert encode_records([linked], SpanForms(GATEWAY)) == _fields([linked])


ids = st.integers(1, 2**64 - 1)
times = st.integers(1, 2**63)
values = st.one_of(
    st.text(max_size=12), st.integers(-(2**63), 2**63 - 1), st.booleans(), st.floats()
)


@given(
    trace_id=st.integers(1, 2**128 - 1),
    span_ids=st.tuples(ids, st.integers(0, 2**64 - 1), ids, ids),
    child_ids=st.integers(1, 2**192 - 1),
    stamps=st.lists(times, min_size=5, max_size=5),
    attributes=st.dictionaries(st.text(max_size=8), values, max_size=4),
    error=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
    name=st.text(min_size=1, max_size=150),
)
def test_packing_matches_field_by_field_for_any_ids_times_and_attributes(
    trace_id: int,
    span_ids: tuple[int, int, int, int],
    child_ids: int,
    stamps: list[int],
    attributes: dict[str, Any],
    error: str | None,
    name: str,
) -> None:
    own, parent, batch_id, batch_parent = span_ids
    start, queued, done, end, batch_start = stamps
    batch = _batch(
        trace_id=trace_id,
        span_id=batch_id,
        parent_id=batch_parent,
        start_ns=batch_start,
        end_ns=done,
        attributes=attributes,
    )
    server = _server(
        batch,
        name=name,
        trace_id=trace_id,
        span_id=own,
        parent_id=parent,
        start_ns=start,
        phases=[(queued, batch)],
        end_ns=end,
        error=error,
        attributes=attributes,
        child_ids=child_ids,
    )
    assert server_spans(server) is not None
    assert encode_records([server], SpanForms(GATEWAY)) == _fields([server])


def test_a_template_alternates_literals_and_values() -> None:
    assert Template([b"<", "Q", b">"]).pack([1]) == b"<\x01" + bytes(7) + b">"
    with pytest.raises(ValueError, match="alternates"):
        Template([b"<", "Q"])
    with pytest.raises(ValueError, match="alternates"):
        Template([b"<", b"Q", b">"])
