"""Span records: the spans each stands for, and their OTLP bytes written straight from the records
(the same bytes as from the ``ReadableSpan`` values). How the record exporter hands them on:
test_span_export.py."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.trace import SpanKind
from opentelemetry.trace.status import StatusCode

from channel.span_wire import WorkerSpans
from gateway.observability.otlp_wire import encode_records, encode_request
from gateway.observability.span_records import (
    BatchSpan,
    Record,
    ServerSpan,
    SpanForms,
    span_count,
)
from gateway.observability.tracing import Sampling, Tracing
from tests.observability.spans import GATEWAY, T0, TRACE, server_span


def _worker(pid: int, parent: int, **attributes: object) -> dict[str, object]:
    return {
        "pid": pid,
        "name": "compute",
        "span_id": 0x0C00 + pid,
        "parent_id": parent,
        "start_ns": T0 + 300,
        "end_ns": T0 + 700,
        "attributes": attributes,
    }


def _batch(span_id: int, *pids: int, links: tuple[tuple[int, int], ...] = ()) -> BatchSpan:
    worker = WorkerSpans.of([_worker(pid, span_id, **{"tensorgate.model": "m:1"}) for pid in pids])
    attributes = {"tensorgate.model": "m", "tensorgate.batch.rows": 2, "x.ratio": 0.5}
    return BatchSpan(TRACE, span_id, 0x51, links, T0 + 200, T0 + 800, attributes, worker)


def _server(span_id: int, **fields: object) -> ServerSpan:
    """A server span whose call ended OK."""
    fields.setdefault("attributes", {"rpc.system": "grpc", "rpc.grpc.status_code": 0, "ok": True})
    return server_span(span_id, **fields)


def _records() -> list[Record]:
    first, second = _batch(0xB1, 101), _batch(0xB2, 101, 102, links=((TRACE, 0x52),))
    unfinished = BatchSpan(TRACE, 0xB3, 0x53, (), T0 + 400)
    return [
        _server(0x51),
        _server(0x52, parent_id=0xCA11E4, trace_state="vendor=x,other=y", error="INTERNAL"),
        first,
        _server(0x53, phases=[(T0 + 100, first)], done_ns=first.end_ns, child_ids=2**190 - 7),
        second,
        _server(
            0x54,
            phases=[(T0 + 50, first), (T0 + 150, unfinished)],
            done_ns=first.end_ns,
            child_ids=(4 << 192) | (3 << 128) | (2 << 64) | 1,
        ),
        _server(0x55, phases=[(T0 + 60, unfinished)], child_ids=5),
        BatchSpan(TRACE, 0xB4, 0x55, (), T0, T0 + 1),
    ]


def test_records_encode_to_the_bytes_of_their_spans() -> None:
    forms = SpanForms(GATEWAY)
    records = _records()
    spans = [span for record in records for span in forms.spans(record)]
    assert encode_records(records, forms) == encode_request(spans)
    assert sum(span_count(r) for r in records) == len(spans)


def test_a_server_record_stands_for_its_span_and_the_children_its_phases_give() -> None:
    forms = SpanForms(GATEWAY)
    records = _records()
    by_name = [[s.name for s in forms.spans(r)] for r in records]
    predict = "tensorflow.serving.PredictionService/Predict"
    assert by_name[0] == [predict]
    assert by_name[3] == [predict, "decode", "queue wait", "encode"]
    assert by_name[5] == [predict, "decode", "queue wait", "queue wait", "encode"]
    assert by_name[6] == [predict, "decode", "queue wait"]  # its batch never ended: no encode
    assert by_name[4] == ["batch", "compute", "compute"]
    _, *children = forms.spans(records[5])
    assert [c.parent.span_id for c in children if c.parent] == [0x54] * 4
    assert [c.context.span_id for c in children if c.context] == [1, 2, 3, 4]
    assert [(c.start_time, c.end_time) for c in children] == [
        (T0, T0 + 50),
        (T0 + 50, T0 + 200),
        (T0 + 150, T0 + 400),
        (T0 + 800, T0 + 1000),
    ]
    errored = forms.spans(records[1])[0]
    assert errored.status.status_code == StatusCode.ERROR
    assert errored.status.description == "INTERNAL"
    assert errored.parent is not None and errored.parent.is_remote
    assert errored.context is not None and dict(errored.context.trace_state) == {
        "vendor": "x",
        "other": "y",
    }


def test_each_child_of_a_server_span_gets_its_own_id() -> None:
    ended: list[Record] = []
    tracing = Tracing(_Collect(ended), Sampling(True, 1.0), GATEWAY)  # type: ignore[arg-type]
    span = tracing.start("rpc", SpanKind.SERVER, T0, None, None, {})
    assert span is not None
    batch = tracing.start_batch([span], T0 + 10)
    span.phases += [(T0 + 5, batch), (T0 + 6, batch)]
    tracing.end_batch(batch, T0 + 20, {}, None)
    tracing.end(span, T0 + 30)
    assert ended == [span] and span.done_ns == T0 + 20
    ids = [child_id for _, child_id, _, _ in span.children()]
    assert len(ids) == 4 and len(set(ids)) == 4 and span.span_id not in ids


def test_a_batch_travels_in_its_owner_s_record_only_if_it_ended_first() -> None:
    ended: list[Record] = []
    tracing = Tracing(_Collect(ended), Sampling(True, 1.0), GATEWAY)  # type: ignore[arg-type]
    owner, other = (tracing.start("rpc", SpanKind.SERVER, T0, None, None, {}) for _ in "ab")
    assert owner is not None and other is not None
    early, late = (tracing.start_batch([owner, other], T0 + 10) for _ in "ab")
    for span in (owner, other):
        span.phases += [(T0 + 5, early), (T0 + 6, late)]
    tracing.end_batch(early, T0 + 20, {}, None)
    tracing.end(other, T0 + 25)  # a linked member carries nothing
    tracing.end(owner, T0 + 30)
    assert ended == [other, owner] and other.carried == () and owner.carried == (early,)
    tracing.end_batch(late, T0 + 40, {}, None)  # ends after its owner: handed on alone
    assert ended == [other, owner, late] and early.owner is None and late.owner is None
    forms = SpanForms(GATEWAY)
    names = [s.name for s in forms.spans(owner)]
    assert names == ["rpc", "decode", "queue wait", "queue wait", "encode", "batch"]
    assert span_count(owner) == len(names) and span_count(late) == 1
    assert encode_records([owner, late], forms) == encode_request(
        forms.spans(owner) + forms.spans(late)
    )


class _Collect:
    def __init__(self, into: list[Record]) -> None:
        self.on_end = into.append


def test_worker_spans_carry_their_worker_s_process_id() -> None:
    forms = SpanForms(GATEWAY)
    batch, first, second = forms.spans(_records()[4])
    assert [link.context.span_id for link in batch.links] == [0x52]
    assert first.resource.attributes["process.pid"] == 101
    assert second.resource.attributes["process.pid"] == 102
    assert first.resource.attributes["process.parent_pid"] != 1
    assert first.resource.attributes["service.name"] == "tensorgate"
    assert first.parent is not None and first.parent.span_id == 0xB2


def test_undecodable_worker_spans_are_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = BatchSpan(TRACE, 0xB9, 0x51, (), T0, T0 + 5, {}, WorkerSpans(1, b"\x00\x01"))
    forms = SpanForms(GATEWAY)
    with caplog.at_level(logging.WARNING):
        assert [s.name for s in forms.spans(broken)] == ["batch"]
        request = encode_records([broken], forms)
    assert request == encode_request(forms.spans(broken))
    assert "Dropped the worker's spans" in caplog.text


def test_a_run_s_span_encodes_alike_once_its_form_is_known() -> None:
    forms = SpanForms(GATEWAY)
    worker = WorkerSpans.of([_worker(103, 0xBA, **{"tensorgate.model": "form:1", "n": 7})])
    runs = [BatchSpan(TRACE, 0xBA, 0x51, (), T0, T0 + 9, {}, worker) for _ in "ab"]
    first, second = (encode_records([run], forms) for run in runs)  # the second from the form
    assert first == second == encode_request(forms.spans(runs[0]))
    other = WorkerSpans.of([_worker(104, 0xBB, **{"tensorgate.model": "form:1", "n": 7})])
    assert encode_records([BatchSpan(TRACE, 0xBB, 0x51, (), T0, T0 + 9, {}, other)], forms) != first


def test_a_run_s_span_that_does_not_decode_is_dropped_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = WorkerSpans.of([_worker(105, 0xBC)])
    broken = WorkerSpans(1, good.data + b"\x00")  # a byte past its one span
    batch = BatchSpan(TRACE, 0xBC, 0x51, (), T0, T0 + 5, {}, broken)
    forms = SpanForms(GATEWAY)
    with caplog.at_level(logging.WARNING):
        for _ in "ab":
            assert encode_records([batch], forms) == encode_request(forms.spans(batch))
    assert caplog.text.count("Dropped the worker's spans") == 4  # each encoding, both times
