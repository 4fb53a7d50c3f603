"""The batch queues' observer: which batches get a span, and what each member notes of it."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanKind

from gateway.observability.batches import BatchNote, QueueLabels, QueueObserver
from gateway.observability.call_record import Call
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.span_records import Record, ServerSpan
from gateway.observability.tracing import Sampling, Tracing

LABELS = QueueLabels("m", "1", "ONNX", 1, None)
T0 = 1_700_000_000_000_000_000


class _Collect:
    def __init__(self) -> None:
        self.ended: list[Record] = []
        self.on_end = self.ended.append


def _observer(metrics: GatewayMetrics | None = None) -> tuple[QueueObserver, Tracing]:
    tracing = Tracing(_Collect(), Sampling(True, 1.0), Resource({}))  # type: ignore[arg-type]
    return QueueObserver(LABELS, None, metrics, tracing), tracing


def _call(tracing: Tracing | None) -> Call:
    call = Call("tfserving", "Predict", "GRPC", 0.0)
    if tracing is not None:
        call.span = tracing.start("rpc", SpanKind.SERVER, T0, None, None, {})
    return call


def test_a_batch_of_one_sampled_request_gets_a_span_the_request_notes() -> None:
    observer, tracing = _observer()
    call = _call(tracing)
    note = observer.on_batch([call], [0.25], [1], 1)
    assert isinstance(note, BatchNote) and note.span is not None
    span = call.span
    assert isinstance(span, ServerSpan)
    (enqueued, batch), *_ = span.phases
    assert batch is note.span and len(span.phases) == 1
    assert batch.parent_id == span.span_id and batch.links == () and batch.owner is span
    assert batch.start_ns - enqueued == 250_000_000
    assert note.trace == (span.trace_id, batch.span_id)


def test_a_batch_without_a_sampled_member_gets_no_span() -> None:
    observer, _ = _observer()
    assert observer.on_batch([_call(None)], [0.1], [1], 1) is None
    assert observer.on_batch([_call(None), None], [0.1, 0.2], [1, 1], 2) is None
    metered, _ = _observer(GatewayMetrics())  # metrics still need the note
    note = metered.on_batch([_call(None)], [0.1], [1], 1)
    assert isinstance(note, BatchNote) and note.span is None and note.trace is None


def test_a_batch_of_several_is_parented_by_its_first_sampled_member_and_links_the_rest() -> None:
    observer, tracing = _observer()
    first, second, unsampled = _call(tracing), _call(tracing), _call(None)
    tags = [unsampled, first, second, first]  # ``first`` split over two tasks
    note = observer.on_batch(tags, [0.1, 0.2, 0.3, 0.4], [1, 1, 1, 1], 4)
    assert note is not None and note.span is not None
    assert first.span is not None and second.span is not None
    batch = note.span
    assert batch.parent_id == first.span.span_id and batch.owner is first.span
    assert batch.links == ((second.span.trace_id, second.span.span_id),)
    assert [b for _, b in first.span.phases] == [batch, batch]
    assert [batch.start_ns - e for e, _ in first.span.phases] == [200_000_000, 400_000_000]
    assert [b for _, b in second.span.phases] == [batch]
    assert unsampled.span is None and note.rows == 4
