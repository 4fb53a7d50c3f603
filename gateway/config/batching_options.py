"""Batching options: TF Serving's ``BatchingParameters``, validated, with defaults and reasons.

Read from ``--batching_parameters_file`` (text-format ``tensorflow.serving.BatchingParameters``)
and, with ``--enable_per_model_batching_parameters``, from
``<base_path>/<version>/batching_params.pbtxt``. Without ``--enable_batching`` every request is its
own batch (:meth:`BatchingOptions.unbatched`), through the same scheduler.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from gateway._pb.tensorflow_serving.servables.tensorflow import session_bundle_config_pb2
from gateway.config.model_config import ConfigError, load_batching_parameters

PER_MODEL_FILE = "batching_params.pbtxt"

UNBATCHED_QUEUE_LIMIT = 1024
"""Without batching: how many requests of one servable may wait for a worker before more are
refused with UNAVAILABLE (never an unbounded queue)."""


@dataclass(frozen=True)
class BatchingOptions:
    """One batch queue's contract (field names and defaults as TF Serving's BatchingParameters).

    - ``max_batch_size`` (1000): the most rows one batch holds; a request (task) larger than this is
      refused with INVALID_ARGUMENT, or cut into several batches when splitting is on.
    - ``batch_timeout_micros`` (0): how long a batch may wait for company after its first request.
      0 = work-conserving: a batch goes at the end of the event-loop iteration in which its first
      request arrived (so requests of the same turn share it) once a worker slot is free, and
      grows only while all slots are busy. Worst-case added latency is this timeout plus the wait
      for a slot.
    - ``max_enqueued_batches`` (10): batches (open or waiting) a queue may hold; a request that
      would need one more is refused at once with UNAVAILABLE — never blocks, never grows unbounded.
    - ``num_batch_threads`` (0 = number of workers): batches of this queue in flight at once.
    - ``allowed_batch_sizes`` (none): a batch is padded up to the next size in this increasing list,
      whose last entry must equal the execution batch size. Padding rows are never returned.
    - ``pad_variable_length_inputs`` (False): requests whose non-batch dimensions differ share a
      batch, each padded up to the largest (with its own first element) instead of batching apart.
    - ``enable_large_batch_splitting`` (False) with ``max_execution_batch_size`` (0 means
      max_batch_size): batches run with at most ``max_execution_batch_size`` rows; a larger
      request is cut across batches and its outputs reassembled in order.
    - ``solo``: tensorgate's unbatched mode (each request is its own batch).
    - ``max_queue_delay_s`` (0 = none): tensorgate's latency target (``--max_queue_delay_ms``): a
      request whose batch would start later than this, by the measured batch times ahead of it,
      is refused at once with UNAVAILABLE; worst-case added latency is then about this bound.
    """

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = 0
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False
    enable_large_batch_splitting: bool = False
    max_execution_batch_size: int = 0
    solo: bool = False
    max_queue_delay_s: float = 0.0

    def __post_init__(self) -> None:
        checks = (
            (self.max_batch_size >= 1, f"max_batch_size must be >= 1, got {self.max_batch_size}"),
            (
                self.batch_timeout_micros >= 0,
                f"batch_timeout_micros must be >= 0, got {self.batch_timeout_micros}",
            ),
            (
                self.max_enqueued_batches >= 1,
                f"max_enqueued_batches must be >= 1, got {self.max_enqueued_batches}",
            ),
            (
                self.num_batch_threads >= 0,
                f"num_batch_threads must be >= 0, got {self.num_batch_threads}",
            ),
            (
                self.max_execution_batch_size >= 0,
                f"max_execution_batch_size must be >= 0, got {self.max_execution_batch_size}",
            ),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        sizes = self.allowed_batch_sizes
        if sizes:
            if any(s < 1 for s in sizes) or any(b <= a for a, b in itertools.pairwise(sizes)):
                raise ValueError(
                    f"allowed_batch_sizes entries must be positive and monotonically increasing, "
                    f"got {list(sizes)}"
                )
            if sizes[-1] != self.execution_batch_size:
                which = (
                    "max_execution_batch_size"
                    if self.enable_large_batch_splitting
                    else "max_batch_size"
                )
                raise ValueError(
                    f"final entry in allowed_batch_sizes must equal {which} "
                    f"({self.execution_batch_size}), got {sizes[-1]}"
                )

    @property
    def execution_batch_size(self) -> int:
        """The most rows one executed batch holds."""
        if self.enable_large_batch_splitting and self.max_execution_batch_size:
            return self.max_execution_batch_size
        return self.max_batch_size

    @property
    def timeout_s(self) -> float:
        return self.batch_timeout_micros / 1e6

    def threads(self, workers: int) -> int:
        """Concurrent batches: ``num_batch_threads``, or the number of workers when 0."""
        return self.num_batch_threads or max(1, workers)

    @classmethod
    def unbatched(cls) -> BatchingOptions:
        return cls(max_enqueued_batches=UNBATCHED_QUEUE_LIMIT, solo=True)

    @classmethod
    def from_proto(
        cls, params: session_bundle_config_pb2.BatchingParameters, source: str
    ) -> BatchingOptions:
        """Options from a BatchingParameters message; ConfigError names ``source`` on bad values."""
        values: dict[str, Any] = {}
        for name in (
            "max_batch_size",
            "batch_timeout_micros",
            "max_enqueued_batches",
            "num_batch_threads",
            "max_execution_batch_size",
        ):
            if params.HasField(name):
                values[name] = int(getattr(params, name).value)
        try:
            return cls(
                allowed_batch_sizes=tuple(int(s) for s in params.allowed_batch_sizes),
                pad_variable_length_inputs=bool(params.pad_variable_length_inputs),
                enable_large_batch_splitting=bool(params.enable_large_batch_splitting.value),
                **values,
            )
        except ValueError as exc:
            message = f"Invalid tensorflow.serving.BatchingParameters in {source}: {exc}"
            raise ConfigError(message) from None


def thread_pool_name(path: str) -> str:
    """The batch thread pool's name, which TF Serving's queuing-latency metric is labelled with:
    ``model_server_batch_threads`` without a parameters file (its ``server.cc``), else the file's
    ``thread_pool_name`` (``batch_threads`` when absent, the scheduler's default)."""
    if not path:
        return "model_server_batch_threads"
    params = load_batching_parameters(path)
    return params.thread_pool_name.value if params.HasField("thread_pool_name") else "batch_threads"


def load_options(path: str) -> BatchingOptions:
    """Read a text-format BatchingParameters file (ConfigError on any problem)."""
    return BatchingOptions.from_proto(load_batching_parameters(path), path)


def per_model_options(version_dir: str, default: BatchingOptions) -> BatchingOptions:
    """``<version_dir>/batching_params.pbtxt`` when present, else ``default``."""
    path = os.path.join(version_dir, PER_MODEL_FILE)
    if not os.path.isfile(path):
        return default
    return load_options(path)
