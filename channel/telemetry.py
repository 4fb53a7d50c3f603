"""The worker's side of tracing and metrics, as plain data (no OpenTelemetry, grpc or protobuf).

Tracing: a ``run`` request may carry the context of the gateway's batch span (its trace id and
span id). The worker then times its own work and returns it in the run reply as spans made here
(span ids drawn here, parented on that context, encoded by :class:`channel.span_wire.SpanForm`); the
gateway decodes them as :class:`SpanRecord` values and exports them with this process's
``process.pid``. A run without a context (or with a zero id) records nothing and costs nothing.

Metrics: :class:`Telemetry` keeps this process's own figures since it started (runs, failed runs,
wake-ups, each servable's load time) and reports them with process CPU time and resident memory as
:class:`WorkerStats` in every ``ping`` reply. A restarted worker starts from zero: the gateway
reports each live worker's figures under its index, so nothing of a dead process stays behind.
"""

from __future__ import annotations

import os
import random
import re
import time
from typing import TypedDict

from channel.logs import TRACE_IDS
from channel.span_wire import SpanForm, WorkerSpans


class SpanRecord(TypedDict):
    """A span the worker recorded: ids are integers, times Unix epoch nanoseconds; the trace is
    the run's trace context's; ``pid`` is the worker's."""

    pid: int
    name: str
    span_id: int
    parent_id: int
    start_ns: int
    end_ns: int
    attributes: dict[str, str | int | float | bool]


class WorkerStats(TypedDict):
    """A worker process's figures: ``start_time`` in Unix seconds, ``cpu_seconds`` user + system,
    ``rss_bytes`` resident memory now, ``runs`` and ``run_errors`` since start, ``wakeups`` since
    start (waits that found no request at first look, announced sleep and then took requests: each
    follows at most one submit doorbell per channel, since the gateway rings only a worker that
    announced sleep), ``load_seconds`` per loaded servable key (how long its load took in this
    process)."""

    pid: int
    start_time: float
    cpu_seconds: float
    rss_bytes: int
    runs: int
    run_errors: int
    wakeups: int
    load_seconds: dict[str, float]


_TRACEPARENT = re.compile(
    r"[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?[ \t]*"
)
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def parse_w3c(value: object) -> tuple[str, str, int] | None:
    """``(trace id, parent span id, trace flags)`` of a W3C ``traceparent`` (ids in hex), or
    None when it is not one (then there is no parent): a later version may append fields after
    a ``-``, version ``00`` may not, ``ff`` is invalid, zero ids are invalid."""
    if not isinstance(value, str):
        return None
    match = _TRACEPARENT.fullmatch(value)
    if match is None or match[1] == "ff" or (match[1] == "00" and match[5]):
        return None
    if match[2] == _ZERO_TRACE or match[3] == _ZERO_SPAN:
        return None
    return match[2], match[3], int(match[4], 16)


def new_span_id() -> int:
    """A random non-zero 64-bit span id."""
    return random.getrandbits(64) or 1


class RunTrace:
    """The span of one traced run; made by :meth:`Telemetry.trace` when the run carries a trace
    context. While it is open, log records carry its trace and span ids."""

    __slots__ = ("_token", "parent_id", "pid", "span_id", "start_ns", "trace_id")

    def __init__(self, trace_id: int, parent_id: int, pid: int) -> None:
        self.pid = pid
        self.trace_id = trace_id
        self.parent_id = parent_id
        self.span_id = new_span_id()
        self.start_ns = time.time_ns()
        self._token = TRACE_IDS.set(self)

    @property
    def ids(self) -> tuple[str, str]:
        """(trace id, this run's span id) in hex, as the log format writes them."""
        return f"{self.trace_id:032x}", f"{self.span_id:016x}"

    def finish(self, form: SpanForm) -> WorkerSpans:
        """End the run's span (of ``form``, from creation until now), encoded for the reply."""
        TRACE_IDS.reset(self._token)
        return form.spans(self.start_ns, time.time_ns(), self.span_id, self.parent_id, self.pid)

    def abandon(self) -> None:
        """The run failed before :meth:`finish`: stop tagging log records (no span is sent)."""
        TRACE_IDS.reset(self._token)


class Telemetry:
    """This worker process's figures (see the module doc) and the start of each run's trace."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.start_time = time.time()
        self.runs = 0
        self.run_errors = 0
        self.wakeups = 0
        self.load_seconds: dict[str, float] = {}

    def trace(self, context: tuple[int, int] | None) -> RunTrace | None:
        """A :class:`RunTrace` under ``context`` (a run request's ``trace``: the batch span's
        trace id and span id), or None without one."""
        if context is None or not (context[0] and context[1]):
            return None
        return RunTrace(context[0], context[1], self.pid)

    def count_run(self, ok: bool) -> None:
        self.runs += 1
        if not ok:
            self.run_errors += 1

    def count_wakeup(self) -> None:
        """The serving loop's wait announced sleep and came back with requests."""
        self.wakeups += 1

    def loaded(self, key: str, seconds: float) -> None:
        self.load_seconds[key] = seconds

    def unloaded(self, key: str) -> None:
        self.load_seconds.pop(key, None)

    def stats(self) -> WorkerStats:
        times = os.times()
        return {
            "pid": os.getpid(),
            "start_time": self.start_time,
            "cpu_seconds": round(times.user + times.system, 3),
            "rss_bytes": _rss_bytes(),
            "runs": self.runs,
            "run_errors": self.run_errors,
            "wakeups": self.wakeups,
            "load_seconds": dict(self.load_seconds),
        }


def _rss_bytes() -> int:
    """Resident memory of this process now (``/proc/self/statm``), 0 if unreadable."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0
