"""A model's ``logging_config`` (TF Serving's request logging) as plain validated data.

TF Serving's ``LoggingConfig`` names a log collector (``log_collector_config { type,
filename_prefix }``) and a sampling rate (``sampling_config { sampling_rate }``). tensorgate has
one collector type, ``file``: rotating TFRecord files of ``PredictionLog`` records whose paths
start with ``filename_prefix`` (:mod:`gateway.observability.request_log`). Checked when a config is
loaded or reloaded, so a bad one never replaces the running config:

- ``type`` is ``file`` ("log collector type 'x' is unknown; tensorgate has: file");
- ``sampling_rate`` is in [0, 1] (NaN is not);
- ``filename_prefix`` is an absolute path whose directory exists and takes a new file (a probe
  file is created there and removed); in a management call's config it must first be allowed
  (:meth:`ManagementPaths.check_log_prefix
  <gateway.config.management_paths.ManagementPaths.check_log_prefix>`: nothing looks at a
  prefix outside the directories the operator listed, and the error names the flag);
- ``per_task_sampling_configs`` and ``custom_logging_config`` are refused (not supported).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gateway._pb.tensorflow_serving.config import logging_config_pb2

COLLECTORS = ("file",)
"""The log collector types tensorgate has."""


@dataclass(frozen=True)
class RequestLogging:
    """Where a model's sampled calls are logged. ``collector``: its type (``file``);
    ``filename_prefix``: what every log file's path starts with; ``sampling_rate``: the fraction
    of calls logged, in [0, 1]; ``attributes``: ``SamplingConfig.attributes`` as given (recorded
    in each record's metadata)."""

    collector: str
    filename_prefix: str
    sampling_rate: float
    attributes: int = 0


def request_logging(
    model: str,
    config: logging_config_pb2.LoggingConfig,
    invalid: Callable[[str], Exception],
    allowed: Callable[[str], str | None] | None = None,
) -> RequestLogging:
    """``config`` checked (see the module doc); ``invalid(problem)`` makes the error to raise;
    ``allowed(prefix)``: why a management call may not set ``prefix`` (None: it may; the
    argument None: the config is the operator's)."""

    def refuse(problem: str) -> Exception:
        return invalid(f"model {model}: logging_config: {problem}")

    collector = config.log_collector_config
    if collector.type not in COLLECTORS:
        known = ", ".join(COLLECTORS)
        raise refuse(f"log collector type {collector.type!r} is unknown; tensorgate has: {known}")
    sampling = config.sampling_config
    rate = float(sampling.sampling_rate)
    if math.isnan(rate) or not 0.0 <= rate <= 1.0:
        raise refuse(f"sampling_rate must be in [0, 1], got {rate}")
    if len(sampling.per_task_sampling_configs):
        raise refuse("per_task_sampling_configs is not supported")
    if config.HasField("custom_logging_config"):
        raise refuse("custom_logging_config is not supported")
    prefix = collector.filename_prefix
    problem = _not_absolute(prefix)
    if problem is None and allowed is not None:
        problem = allowed(prefix)
    if problem is None:
        problem = unwritable(prefix)
    if problem is not None:
        raise refuse(problem)
    return RequestLogging(collector.type, collector.filename_prefix, rate, sampling.attributes)


def _not_absolute(prefix: str) -> str | None:
    if not prefix:
        return "filename_prefix is empty"
    if not Path(prefix).is_absolute():
        return f"filename_prefix {prefix} is not an absolute path"
    return None


def unwritable(prefix: str) -> str | None:
    """Why log files starting with ``prefix`` cannot be created, or None when they can."""
    problem = _not_absolute(prefix)
    if problem is not None:
        return problem
    path = Path(prefix)
    directory = path.parent
    if not directory.is_dir():
        return f"filename_prefix {prefix}: directory {directory} does not exist"
    try:
        fd, probe = tempfile.mkstemp(prefix=f"{path.name}.probe-", dir=directory)
    except OSError as exc:
        return f"filename_prefix {prefix}: cannot create a file in {directory}: {exc.strerror}"
    os.close(fd)
    os.unlink(probe)
    return None
