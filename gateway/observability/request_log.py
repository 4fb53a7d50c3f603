"""Request logging as TF Serving configures it: a model's ``logging_config``
(:class:`~gateway.config.request_logging.RequestLogging`) samples its successful calls, each
written as one ``tensorflow.serving.PredictionLog`` record.

The gRPC hook (:mod:`~gateway.observability.grpc_hook`) offers every successful call of a method
its protocol knows how to log (:attr:`GrpcService.log_as <gateway.transport.surface.GrpcService>`)
to :meth:`RequestLog.offer`, on the loop. The config in force decides, per call: no
``logging_config`` → nothing; else the call is sampled with probability ``sampling_rate`` (0:
never, 1: always) and queued, as a job that builds its record, to the writer of its
``filename_prefix`` (:class:`~gateway.observability.log_writer.LogWriter`, one per prefix and
process, created at the prefix's first record). A full queue drops the record, never slows the
call: drops are counted per model (``tensorgate_request_log_dropped_total``, when metrics are on,
and :attr:`RequestLog.dropped`).

A record is what TF Serving's file format holds, so a log file is also a valid
``assets.extra/tf_serving_warmup_requests`` (warmup replays each record's request).
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

from gateway.config.model_config import ModelSpecConfig
from gateway.config.request_logging import RequestLogging
from gateway.observability.cells import Counter
from gateway.observability.log_writer import LogWriter
from gateway.transport.surface import LogAs, Sampled


class RequestLog:
    """Samples and queues calls for the models whose config in force (``specs()``, read per
    call) has a ``logging_config``. ``max_pending``, ``max_file_bytes``: each writer's
    (``--request_log_max_pending``, ``--request_log_max_file_bytes``). ``dropped``: the metric
    counting drops per model (None without metrics); ``draw``: a uniform draw in [0, 1)
    (injectable for tests)."""

    def __init__(
        self,
        specs: Callable[[], Iterable[ModelSpecConfig]],
        *,
        max_pending: int,
        max_file_bytes: int,
        dropped: Counter | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self._specs = specs
        self._max_pending = max_pending
        self._max_file_bytes = max_file_bytes
        self._counter = dropped
        self._draw = draw
        self.writers: dict[str, LogWriter] = {}
        """filename_prefix → its writer, once it had a record."""
        self.dropped = 0
        """Records dropped because their writer's queue was full."""

    def offer(self, model: str, log_as: LogAs, request: Any, response: Any) -> None:
        """A successful call of ``model``: log it if its config says so and the draw samples it."""
        config = self._logging_of(model)
        if config is None or config.sampling_rate <= 0.0:
            return
        rate = config.sampling_rate
        if rate < 1.0 and not self._draw() < rate:
            return
        sampled = Sampled(rate, config.attributes, int(time.time()))
        writer = self._writer(config.filename_prefix)
        if not writer.put(functools.partial(log_as, request, response, sampled)):
            self.dropped += 1
            if self._counter is not None:
                self._counter.inc((model,))

    def _logging_of(self, model: str) -> RequestLogging | None:
        for spec in self._specs():
            if spec.name == model:
                return spec.logging
        return None

    def _writer(self, prefix: str) -> LogWriter:
        writer = self.writers.get(prefix)
        if writer is None:
            writer = LogWriter(
                prefix, max_pending=self._max_pending, max_file_bytes=self._max_file_bytes
            )
            self.writers[prefix] = writer
        return writer

    async def close(self) -> None:
        """Write every queued record and close the files (off the loop)."""
        writers, self.writers = list(self.writers.values()), {}
        for writer in writers:
            await asyncio.to_thread(writer.close)
