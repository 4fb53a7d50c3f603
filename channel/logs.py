"""The one log format of tensorgate's processes, the gateway and its workers (both call
:func:`configure`; records go to stderr).

``text`` (the default), one line per record::

    2026-11-22 23:20:36.123 I 4242 gateway gateway.one_process] Running gRPC ModelServer at ...
    2026-11-22 23:20:35.871 I 4250 worker-0 workers.worker] loaded mlp:1 from /m/mlp/1/model.onnx

local time with milliseconds, level letter, process id, process role (``gateway`` or
``worker-<index>``), logger, message; a traceback follows on the next lines.

``json`` (``--log_format=json``), one object per line: ``time`` (UTC, ISO 8601, milliseconds),
``level``, ``pid``, ``process``, ``logger``, ``message``, and ``trace_id`` / ``span_id`` (hex, as
in the exported spans) when the record is written while a traced request or run is handled
(:data:`TRACE_IDS`), ``exception`` (the traceback) when there is one.

TensorFlow's start-up noise is kept out (:func:`quiet_tensorflow`, called by each worker before
anything imports TensorFlow) unless ``TF_CPP_MIN_LOG_LEVEL`` is set in the environment (``0``
shows everything): it is then set to ``2`` (C++ INFO and WARNING lines dropped), the Python
loggers of ``tensorflow`` and ``absl`` keep to errors, and what native code writes to stderr while
TensorFlow loads becomes records of the ``tensorflow.native`` logger (:func:`native_stderr`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Final, Protocol

FORMATS: Final = ("text", "json")
"""The values of ``--log_format``."""


class Traced(Protocol):
    """A traced request or run: its ids, formatted only when a record is written."""

    @property
    def ids(self) -> tuple[str, str]:
        """``(trace id, span id)`` in lowercase hex."""
        ...


TRACE_IDS: ContextVar[Traced | None] = ContextVar("tensorgate_trace_ids", default=None)
"""The traced request or run being handled, else None."""

NOISY_LOGGERS: Final = ("tensorflow", "absl")
QUIET_TF_CPP_LEVEL: Final = "2"

_TEXT = "%(asctime)s.%(msecs)03d %(levelname).1s %(process)d %(role)s %(name)s] %(message)s"
_DATE = "%Y-%m-%d %H:%M:%S"


class TextFormatter(logging.Formatter):
    """The ``text`` format, for the process named ``role``."""

    def __init__(self, role: str) -> None:
        super().__init__(_TEXT, _DATE)
        self.role = role

    def format(self, record: logging.LogRecord) -> str:
        record.role = self.role
        return super().format(record)


class JsonFormatter(logging.Formatter):
    """The ``json`` format, for the process named ``role``."""

    def __init__(self, role: str) -> None:
        super().__init__()
        self.role = role

    def format(self, record: logging.LogRecord) -> str:
        utc = time.gmtime(record.created)
        millis = int(record.msecs)
        entry: dict[str, object] = {
            "time": f"{time.strftime('%Y-%m-%dT%H:%M:%S', utc)}.{millis:03d}Z",
            "level": record.levelname,
            "pid": record.process,
            "process": self.role,
            "logger": record.name,
            "message": record.getMessage(),
        }
        traced = TRACE_IDS.get()
        if traced is not None:
            entry["trace_id"], entry["span_id"] = traced.ids
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


def configure(role: str, log_format: str = "text", level: str | int = "INFO") -> None:
    """Send every record of this process to stderr in ``log_format`` (one of :data:`FORMATS`),
    at ``level`` and above."""
    if log_format not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {log_format!r}")
    # A stream of its own on stderr, so that :func:`native_stderr` never captures these records.
    handler = logging.StreamHandler(os.fdopen(os.dup(2), "w", buffering=1, errors="replace"))
    handler.setFormatter(TextFormatter(role) if log_format == "text" else JsonFormatter(role))
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)


_quiet = False


def quiet_tensorflow() -> None:
    """Keep TensorFlow's and absl's start-up lines out unless the environment asks for them."""
    global _quiet
    if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        _quiet = True
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = QUIET_TF_CPP_LEVEL
        for name in NOISY_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def native_stderr() -> Iterator[None]:
    """While the block runs, what is written to file descriptor 2 (by native code) becomes
    records of the ``tensorflow.native`` logger once it ends: ERROR for absl's ``E``/``F`` lines,
    DEBUG for the rest. Does nothing unless :func:`quiet_tensorflow` quieted TensorFlow. (A crash
    inside the block loses what was captured: set ``TF_CPP_MIN_LOG_LEVEL`` to see it live.)"""
    if not _quiet:
        yield
        return
    logger = logging.getLogger("tensorflow.native")
    saved = os.dup(2)
    # an anonymous memory file: no temporary directory needed (the root may be read-only)
    with open(os.memfd_create("tensorflow-stderr", os.MFD_CLOEXEC), "w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            for line in capture.read().decode(errors="replace").splitlines():
                if line.strip():
                    level = logging.ERROR if line[:1] in ("E", "F") else logging.DEBUG
                    logger.log(level, "%s", line)
