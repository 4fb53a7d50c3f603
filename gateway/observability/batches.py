"""The batch queues' side: one :class:`QueueObserver` per (servable, signature) queue.

Per request: tensorgate's queue wait; with ``--enable_batching``, TF's ``batching_session``
metrics as its ``BatchingSession`` records them (queuing latency per request, labelled with the
batch thread pool's name; input batch size per request and input tensor; processed batch size and
padding per batch; one ``wrapped_run_count`` per batch run). Per batch: tensorgate's batch size
and the worker's compute time, and the version's statistics (:mod:`model_stats`, for the Open
Inference Protocol's statistics extension). Per successful request of TF Serving's own API: TF's
``runtime_latency`` {model_name, API, runtime} — upstream times its session run, which with
batching includes the queue, so here it runs from the request's enqueueing to its batch's end;
``runtime`` is ``TF1`` for TensorFlow models (upstream's session runtime), ``ONNX`` for ONNX
ones, ``OpenVINO_FP32`` / ``OpenVINO_BF16`` for either served by OpenVINO at that precision.

Traces: a batch with sampled members gets a ``batch`` span, child of its first sampled member's
server span and linked to the others; its trace id and span id travel to the worker in the run
descriptor, and the worker's spans come back as its children. Each sampled member records when
it was queued and the batch it joined, from which its ``queue wait`` and ``encode`` spans are
made.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.observability.call_record import CURRENT, Call
from gateway.observability.cells import DEFER_LIMIT
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.model_stats import NS, Duration, record_run
from gateway.observability.server_timing import note_batch
from gateway.observability.span_records import BatchSpan
from gateway.observability.tfs_metrics import RUNTIME_APIS, TF_SERVING, TfServingMetrics
from gateway.observability.tracing import Tracing
from gateway.worker_channel.lease import RunResult

RUNTIMES = {
    "tensorflow": "TF1",
    "onnx": "ONNX",
    "openvino_fp32": "OpenVINO_FP32",
    "openvino_bf16": "OpenVINO_BF16",
}


@dataclass(frozen=True)
class QueueLabels:
    """What the series of one queue are labelled with, and what it needs to record them."""

    model: str
    version: str
    runtime: str
    inputs: int
    """Input tensors of the signature (TF records an input batch size per tensor)."""
    thread_pool: str | None
    """The batch thread pool's name with ``--enable_batching``, else None (no TF batch metrics)."""


class QueueObserver:
    """A :class:`~gateway.batching.observer.BatchObserver` recording one queue. ``timed``: each
    member's call record gets its batch's figures (``--enable_server_timing``)."""

    def __init__(
        self,
        labels: QueueLabels,
        tfs: TfServingMetrics | None,
        metrics: GatewayMetrics | None,
        tracing: Tracing | None,
        *,
        timed: bool = False,
    ) -> None:
        self.labels = labels
        self.tfs = tfs
        self.metrics = metrics
        self.tracing = tracing
        self.timed = timed
        kept = None if metrics is None else metrics.model_stats
        self.stats = None if kept is None else kept.of(labels.model, labels.version)
        """This version's statistics (:mod:`model_stats`), kept with the metrics."""
        self.sees_untagged = tfs is not None or metrics is not None
        """Without metrics, a batch none of whose members' calls were opened (every tag None:
        tracing at ratio 0, no sampled parent) has nothing to record."""

    def on_enqueue(self) -> object:
        return CURRENT.get()

    def alone(self, tag: object) -> bool:
        """Whether a run of this one call alone can be recorded by :meth:`on_alone` (no span to
        make, no timing to leave on its call record)."""
        return not self.timed and (
            self.tracing is None or not isinstance(tag, Call) or tag.span is None
        )

    def on_alone(self, tag: object, rows: int, compute_s: float | None) -> None:
        """One call run alone, at once, with no wait (a front end's run with batching off): what
        :meth:`on_batch` and its record's ``done`` record for a batch of one, in one call.
        ``compute_s``: None when the run failed."""
        labels = self.labels
        key = (labels.model, labels.version)
        metrics = self.metrics
        stats = self.stats
        if stats is not None:
            stats.queue.count += 1
        if compute_s is None:
            if stats is not None:
                stats.fail.count += 1
            return
        compute_ns = int(compute_s * NS)
        if metrics is not None:
            pending = metrics.compute.pending
            pending.append((key, compute_s))
            metrics.queue_wait.pending.append((key, 0.0))
            metrics.batch_size.pending.append((key, rows))
            if len(pending) > DEFER_LIMIT:
                metrics.compute.fold()
                metrics.queue_wait.fold()
                metrics.batch_size.fold()
        if stats is not None:
            stats.success.count += 1
            stats.success.ns += compute_ns
            stats.compute_infer.count += 1
            stats.compute_infer.ns += compute_ns
            stats.inference_count += rows
            stats.execution_count += 1
            batch = stats.batches.get(rows)
            if batch is None:
                batch = stats.batches[rows] = Duration()
            batch.count += 1
            batch.ns += compute_ns
            stats.last_inference_ms = time.time_ns() // 1_000_000
        tfs = self.tfs
        if (
            tfs is not None
            and isinstance(tag, Call)
            and tag.protocol == TF_SERVING
            and tag.api in RUNTIME_APIS
        ):
            series = (labels.model, tag.api, labels.runtime)
            runtimes = tfs.runtime_latency.pending
            runtimes.append((series, int(compute_s * 1e6)))
            if len(runtimes) > DEFER_LIMIT:
                tfs.runtime_latency.fold()

    def on_batch(
        self,
        tags: Sequence[object],
        queue_waits_s: Sequence[float],
        sizes: Sequence[int],
        padded: int,
    ) -> BatchNote | None:
        rows = sum(sizes)
        metered = self.tfs is not None or self.metrics is not None
        if metered:
            self._metrics(queue_waits_s, sizes, rows, padded)
        batch = None if self.tracing is None else self._batch_span(tags, queue_waits_s)
        if batch is None and not metered and not self.timed:
            return None
        return BatchNote(self, tags, queue_waits_s, sizes, padded, batch)

    def _metrics(
        self, queue_waits_s: Sequence[float], sizes: Sequence[int], rows: int, padded: int
    ) -> None:
        labels = self.labels
        if self.metrics is not None:
            key = (labels.model, labels.version)
            for wait in queue_waits_s:
                self.metrics.queue_wait.observe(key, wait)
            self.metrics.batch_size.observe(key, rows)
            if self.stats is not None:
                self.stats.queue.add(len(queue_waits_s), int(sum(queue_waits_s) * NS))
        tfs = self.tfs
        if tfs is not None and labels.thread_pool is not None:
            for wait, size in zip(queue_waits_s, sizes, strict=True):
                tfs.queuing_latency.observe((labels.thread_pool,), int(wait * 1e6))
                for _ in range(labels.inputs):
                    tfs.input_batch_size.observe((), size)
            tfs.padding_size.observe((str(padded),), padded - rows)
            tfs.processed_batch_size.observe((), padded)
            tfs.wrapped_run_count.inc(())

    def _batch_span(
        self, tags: Sequence[object], queue_waits_s: Sequence[float]
    ) -> BatchSpan | None:
        """The span of a batch with sampled members (None without one); each sampled member
        notes when it was queued and the batch it joined (a request split over several of the
        batch's tasks is one member, noted once per task)."""
        assert self.tracing is not None
        if len(tags) == 1:  # the usual batch, of one request
            tag = tags[0]
            span = tag.span if isinstance(tag, Call) else None
            if span is None:
                return None
            now_ns = time.time_ns()
            batch = self.tracing.start_batch((span,), now_ns)
            span.phases.append((now_ns - int(queue_waits_s[0] * 1e9), batch))
            return batch
        spans = [t.span for t in tags if isinstance(t, Call) and t.span is not None]
        if not spans:
            return None
        now_ns = time.time_ns()
        members = spans if len(spans) == 1 else list(dict.fromkeys(spans))  # by identity
        batch = self.tracing.start_batch(members, now_ns)
        for tag, wait in zip(tags, queue_waits_s, strict=True):
            if isinstance(tag, Call) and tag.span is not None:
                tag.span.phases.append((now_ns - int(wait * 1e9), batch))
        return batch

    def on_refused(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.refused.inc((self.labels.model, reason))


class BatchNote:
    """One batch in flight (a :class:`~gateway.batching.scheduler.BatchRecord`)."""

    def __init__(
        self,
        queue: QueueObserver,
        tags: Sequence[object],
        queue_waits_s: Sequence[float],
        sizes: Sequence[int],
        padded: int,
        span: BatchSpan | None,
    ) -> None:
        self.queue = queue
        self.tags = tags
        self.waits = queue_waits_s
        self.sizes = sizes
        """Each member's own rows."""
        self.rows = sum(sizes)
        self.padded = padded
        self.span = span
        self.sent = time.perf_counter()
        self.trace = None if span is None else (span.trace_id, span.span_id)

    def done(self, result: RunResult | None) -> None:
        queue, labels = self.queue, self.queue.labels
        run_s = time.perf_counter() - self.sent
        if queue.stats is not None:
            compute_us = None if result is None else result.compute_us
            record_run(queue.stats, self.waits, run_s, self.rows, self.padded, compute_us)
        if result is not None and queue.metrics is not None:
            queue.metrics.compute.observe((labels.model, labels.version), result.compute_us / 1e6)
        if result is not None and queue.timed:  # each member is told its own rows, never others'
            for tag, wait, size in zip(self.tags, self.waits, self.sizes, strict=True):
                if isinstance(tag, Call):
                    note_batch(tag, wait, size, result.compute_us / 1e6)
        if result is not None and queue.tfs is not None:
            for tag, wait in zip(self.tags, self.waits, strict=True):
                # TF Serving's runtime_latency: its own API's calls only
                if isinstance(tag, Call) and tag.protocol == TF_SERVING and tag.api in RUNTIME_APIS:
                    series = (labels.model, tag.api, labels.runtime)
                    queue.tfs.runtime_latency.observe(series, int((wait + run_s) * 1e6))
        if self.span is None or queue.tracing is None:
            return
        attributes = {
            "tensorgate.model": labels.model,
            "tensorgate.model.version": labels.version,
            "tensorgate.batch.rows": self.rows,
            "tensorgate.batch.padded_rows": self.padded,
            "tensorgate.batch.requests": len(self.tags),
        }
        if result is None:
            attributes["error.type"] = "run failed"
        worker = None if result is None else result.spans
        queue.tracing.end_batch(self.span, time.time_ns(), attributes, worker)
