"""Request logging as TF Serving configures it: a model's ``logging_config``
(:class:`~gateway.config.request_logging.RequestLogging`) samples its successful calls, each
written as one ``tensorflow.serving.PredictionLog`` record, whatever the protocol the call came
by.

- **gRPC**: the gRPC hook (:mod:`~gateway.observability.grpc_hook`) offers every successful call
  of a method its protocol knows how to log
  (:attr:`GrpcService.log_as <gateway.transport.surface.GrpcService>`) to :meth:`RequestLog.offer`.
- **REST**: the REST hook (:mod:`~gateway.observability.rest_hook`) runs each API call through
  :meth:`RequestLog.logged`: for a sampled call it arms a :class:`LogSlot` (:data:`REST_LOG`, a
  context variable) that the API's handler fills once the call is served — the same record its
  gRPC twin would make (a REST predict or V2 infer as a Predict, ``:classify`` as a Classify) —
  and the record is queued when the answer is ready. A handler sees the slot only when the call
  is sampled, so unsampled calls copy nothing.

The config in force (:meth:`RequestLog.configure`, at start and on every change of the models)
decides, per call: no ``logging_config`` → nothing; else the call is sampled with probability
``sampling_rate`` (0: never, 1: always) and queued, as a job that builds its record, to the
writer of its ``filename_prefix`` (:class:`~gateway.observability.log_writer.LogWriter`, one per
prefix and process, created at the prefix's first record; a prefix no longer configured has its
writer finished: thread ended, file closed). A full queue — ``--request_log_max_pending``
records of that prefix, or ``--request_log_max_pending_bytes`` for the whole process — drops the
record, never slows the call: drops are counted per model
(``tensorgate_request_log_dropped_total`` when metrics are on, and :attr:`RequestLog.dropped`).

At exit (:meth:`RequestLog.close`) the writers get a bounded time to write what is queued; a
second signal skips it. One line then says how many records were written and dropped, and why.

A record is what TF Serving's file format holds, so a log file is also a valid
``assets.extra/tf_serving_warmup_requests`` (warmup replays each record's request).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from gateway.config.model_config import ModelSpecConfig
from gateway.config.request_logging import RequestLogging
from gateway.config.settings import Settings
from gateway.observability.cells import Counter
from gateway.observability.log_files import LogFiles
from gateway.observability.log_writer import LogWriter, PendingBytes
from gateway.serving.budget import inputs_nbytes
from gateway.serving.core import ModelRef, PredictResult
from gateway.serving.inputs import Arrays, Decoded, Expected, Header
from gateway.transport.surface import LogAs, LogRecord, Sampled

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class LogLimits:
    """What the request log may hold and write. ``max_pending``: records queued per prefix and
    process; ``max_pending_bytes``: bytes all queued records of the process hold;
    ``max_file_bytes``: size at which a file is rotated; ``max_total_bytes``: the cap on one
    prefix's files (0: none)."""

    max_pending: int
    max_pending_bytes: int
    max_file_bytes: int
    max_total_bytes: int = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> LogLimits:
        return cls(
            max_pending=settings.request_log_max_pending,
            max_pending_bytes=settings.request_log_max_pending_bytes,
            max_file_bytes=settings.request_log_max_file_bytes,
            max_total_bytes=settings.request_log_max_total_bytes,
        )


@dataclass(frozen=True, slots=True)
class TensorRequest:
    """What a tensor call over REST asked (a TF Serving predict, a V2 infer), as plain values:
    ``ref`` (model, version or label), ``signature_name`` ("" for the default), ``inputs`` (the
    decoded arrays), ``output_filter`` (the outputs asked for; empty: all)."""

    ref: ModelRef
    signature_name: str
    inputs: Mapping[str, np.ndarray]
    output_filter: tuple[str, ...] = ()


class LogSlot:
    """A sampled REST call's record to be: armed by :meth:`RequestLog.logged`, filled by the API's
    handler when it served the call (:meth:`fill`, or :meth:`capture` then :meth:`tensors`)."""

    __slots__ = ("_inputs", "nbytes", "record", "request", "response")

    def __init__(self) -> None:
        self.record: LogRecord | None = None
        self.request: Any = None
        self.response: Any = None
        self.nbytes = 0
        self._inputs: Mapping[str, np.ndarray] = {}

    def fill(self, record: LogRecord, request: Any, response: Any, nbytes: int) -> None:
        """The call was served: ``record(request, response, sampled)`` makes its record (off the
        loop, so ``request`` and ``response`` must stay unchanged: owned copies, not views of
        memory given back), and they hold about ``nbytes`` meanwhile."""
        self.record, self.request, self.response, self.nbytes = record, request, response, nbytes

    def capture(self, decoded: Decoded) -> Decoded:
        """``decoded`` (what a codec hands the core), with the arrays it gives kept for
        :meth:`tensors`."""
        return _Captured(decoded, self)

    def tensors(
        self,
        record: LogRecord,
        ref: ModelRef,
        signature_name: str,
        output_filter: Sequence[str],
        result: PredictResult,
        request_bytes: int,
    ) -> None:
        """Fill with a tensor call: its captured inputs and a copy of ``result``'s outputs (they
        view a worker's output space, given back once the answer is encoded). ``request_bytes``:
        the request body's size (strings' bytes count with it)."""
        outputs = {name: np.array(array, copy=True) for name, array in result.outputs.items()}
        owned = PredictResult(result.model, result.version, result.signature_name, outputs)
        asked = TensorRequest(ref, signature_name, self._inputs, tuple(output_filter))
        nbytes = max(request_bytes, inputs_nbytes(self._inputs)) + inputs_nbytes(outputs)
        self.fill(record, asked, owned, nbytes)


class _Captured:
    """A :class:`~gateway.serving.inputs.Decoded` whose arrays are kept in a slot."""

    __slots__ = ("_decoded", "_slot")

    def __init__(self, decoded: Decoded, slot: LogSlot) -> None:
        self._decoded = decoded
        self._slot = slot

    @property
    def names(self) -> Collection[str]:
        return self._decoded.names

    def headers(self) -> Iterator[Header]:
        return self._decoded.headers()

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = self._decoded.arrays()
        self._slot._inputs = arrays
        return arrays

    def fast_arrays(self, expected: Expected) -> tuple[Arrays, int] | None:
        fast = self._decoded.fast_arrays(expected)
        if fast is not None:
            self._slot._inputs = fast[0]
        return fast


REST_LOG: ContextVar[LogSlot | None] = ContextVar("tensorgate_rest_log", default=None)
"""The slot of the REST call being served, when the request log sampled it (else None)."""


class RequestLog:
    """Samples and queues calls for the models whose config in force has a ``logging_config``
    (see the module doc). ``specs``: the config at start; ``limits``: the queues' and files'
    bounds; ``dropped``: the metric counting drops per model (None without metrics); ``draw``: a
    uniform draw in [0, 1) (injectable for tests)."""

    def __init__(
        self,
        specs: Iterable[ModelSpecConfig],
        limits: LogLimits,
        *,
        dropped: Counter | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._limits = limits
        self._budget = PendingBytes(limits.max_pending_bytes)
        self._counter = dropped
        self._draw = draw
        self._configs: dict[str, RequestLogging] = {}
        self.writers: dict[str, LogWriter] = {}
        """filename_prefix → its writer, once it had a record (while it is configured)."""
        self._retired: list[LogWriter] = []
        self._retired_counts = (0, 0, 0)
        self.dropped = 0
        """Records dropped because their writer's queue (or the process's bytes) was full."""
        self.configure(specs)

    def configure(self, specs: Iterable[ModelSpecConfig]) -> None:
        """Log as ``specs`` (the config now in force) say; the writers of prefixes no longer
        configured finish (their thread writes what is queued, closes the file and ends)."""
        self._configs = {s.name: s.logging for s in specs if s.logging is not None}
        prefixes = {c.filename_prefix for c in self._configs.values()}
        for prefix in [p for p in self.writers if p not in prefixes]:
            writer = self.writers.pop(prefix)
            writer.finish()
            self._retired.append(writer)
        ended = [w for w in self._retired if w.ended]
        if ended:
            written, lost, failed = self._retired_counts
            self._retired_counts = (
                written + sum(w.written for w in ended),
                lost + sum(w.lost for w in ended),
                failed + sum(w.failed for w in ended),
            )
            self._retired = [w for w in self._retired if not w.ended]

    # -- gRPC -------------------------------------------------------------------------------------
    def offer(self, model: str, log_as: LogAs, request: Any, response: Any) -> None:
        """A successful call of ``model``: log it if its config says so and the draw samples it."""
        config = self._sampled(model)
        if config is None:
            return
        job = functools.partial(log_as.record, request, response, self._metadata(config))
        self._queue(model, config.filename_prefix, job, log_as.nbytes(request, response))

    # -- REST -------------------------------------------------------------------------------------
    async def logged(self, model: str, answer: Callable[[], Awaitable[T]]) -> T:
        """``await answer()`` for one REST API call naming ``model``; when the call is sampled,
        with a :class:`LogSlot` in :data:`REST_LOG` whose record, if the API's handler filled it,
        is queued once the answer is ready."""
        config = self._sampled(model) if model else None
        if config is None:
            return await answer()
        slot = LogSlot()
        token = REST_LOG.set(slot)
        try:
            response = await answer()
        finally:
            REST_LOG.reset(token)
        if slot.record is not None:
            sampled = self._metadata(config)
            job = functools.partial(slot.record, slot.request, slot.response, sampled)
            self._queue(model, config.filename_prefix, job, slot.nbytes)
        return response

    # -- the rest ---------------------------------------------------------------------------------
    def _sampled(self, model: str) -> RequestLogging | None:
        config = self._configs.get(model)
        if config is None or config.sampling_rate <= 0.0:
            return None
        rate = config.sampling_rate
        if rate < 1.0 and not self._draw() < rate:
            return None
        return config

    @staticmethod
    def _metadata(config: RequestLogging) -> Sampled:
        return Sampled(config.sampling_rate, config.attributes, int(time.time()))

    def _queue(self, model: str, prefix: str, job: Callable[[], bytes], nbytes: int) -> None:
        if not self._writer(prefix).put(job, nbytes):
            self.dropped += 1
            if self._counter is not None:
                self._counter.inc((model,))

    def _writer(self, prefix: str) -> LogWriter:
        writer = self.writers.get(prefix)
        if writer is None:
            limits = self._limits
            files = LogFiles(
                prefix,
                max_file_bytes=limits.max_file_bytes,
                max_total_bytes=limits.max_total_bytes,
            )
            writer = LogWriter(files, max_pending=limits.max_pending, budget=self._budget)
            self.writers[prefix] = writer
        return writer

    async def close(
        self, timeout_s: float | None = None, hurry: asyncio.Event | None = None
    ) -> None:
        """Let every writer write what is queued and close its files, for at most ``timeout_s``
        seconds (None: no bound) and only until ``hurry`` is set (a second signal: set already,
        nothing is written); what is still queued then is dropped. Logs one line with the
        records written and dropped."""
        writers = [*self.writers.values(), *self._retired]
        self.writers, self._retired = {}, []
        if not writers:
            return
        reason = ""
        if hurry is not None and hurry.is_set():
            reason = "the flush was skipped (second signal)"
        elif not await _finished(writers, timeout_s, hurry):
            reason = (
                "the flush was cut short (second signal)"
                if hurry is not None and hurry.is_set()
                else f"the writers did not finish within {timeout_s:g} s"
            )
        unflushed = sum(w.abandon() for w in writers)
        written, lost, failed = self._retired_counts
        written += sum(w.written for w in writers)
        lost += sum(w.lost for w in writers)
        failed += sum(w.failed for w in writers)
        dropped = self.dropped + lost + failed + unflushed
        level = logging.WARNING if unflushed else logging.INFO
        log.log(
            level,
            "request log closed: %d record(s) written, %d dropped (%d with the queue full, %d "
            "that could not be written, %d that failed to build, %d still queued at exit%s)",
            written,
            dropped,
            self.dropped,
            lost,
            failed,
            unflushed,
            f": {reason}" if reason else "",
        )


async def _finished(
    writers: Sequence[LogWriter], timeout_s: float | None, hurry: asyncio.Event | None
) -> bool:
    """Finish every writer; True once all ended within ``timeout_s`` and before ``hurry``."""
    loop = asyncio.get_running_loop()
    ends: list[asyncio.Future[None]] = []
    for writer in writers:
        end: asyncio.Future[None] = loop.create_future()
        writer.finish(functools.partial(_resolve, loop, end))
        ends.append(end)
    everything = asyncio.gather(*ends)
    waits: set[asyncio.Future[Any]] = {everything}
    hurried = None if hurry is None else asyncio.ensure_future(hurry.wait())
    if hurried is not None:
        waits.add(hurried)
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waited in (everything, hurried):
            if waited is not None:
                waited.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waited
    return all(end.done() and not end.cancelled() for end in ends)


def _resolve(loop: asyncio.AbstractEventLoop, end: asyncio.Future[None]) -> None:
    """From a writer's thread: resolve ``end`` on ``loop`` (gone already at exit: nothing)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_set_done, end)


def _set_done(end: asyncio.Future[None]) -> None:
    if not end.done():
        end.set_result(None)
