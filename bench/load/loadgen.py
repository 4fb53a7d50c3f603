"""A ghz-style load generator on grpcio: several client processes, merged histograms, own CPU.

Modes (ghz's options): closed loop with ``concurrency`` users each sending back to back, ended by
``total`` requests (``-n``) or ``duration_s`` (``-z``); a step concurrency schedule (ghz
``--concurrency-schedule=step``: users added ``step`` at a time every ``step_duration_s``, the
load-testing seed's ramp); open loop at a constant ``rps`` (requests are scheduled at fixed times
whatever the server does and latency runs from the *scheduled* time; ``concurrency`` does not
bound an open loop, ``max_outstanding`` per process does, and sends beyond it count as
``Dropped``).

Work is split over ``processes`` helper processes (:mod:`bench.load.child`): users and connections
round-robin, the rate divided with interleaved phases. Each process reports a histogram of OK
latencies, status and error counts, a per-second timeline and its CPU seconds; :func:`run_load`
merges them into a ghz JSON report (:mod:`bench.load.ghz_report`) plus a ``client`` section: CPU
used (in cores) and whether the generator itself was saturated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from bench.load.child import Child
from bench.load.ghz_report import build_report
from bench.load.loadgen_worker import Part, Share

READY_TIMEOUT_S = 60.0
START_DELAY_S = 0.2
SATURATED_CPU = 0.9
"""A client process using this fraction of a core (or more) is the bottleneck, not the server."""


@dataclass(frozen=True)
class StepSchedule:
    """ghz ``--concurrency-schedule=step``: ``start`` users, ``+step`` every ``step_duration_s``."""

    start: int = 1
    step: int = 1
    step_duration_s: float = 1.0
    end: int = 0
    """Last user count (0: ``concurrency``)."""


@dataclass(frozen=True)
class LoadOptions:
    """One load run (see the module docstring). Times in seconds."""

    target: str
    """gRPC ``host:port``, or HTTP base URL ``http://host:port``."""
    method: str
    """gRPC ``/pkg.Service/Method`` (see :func:`bench.load.calls.method_path`), or HTTP URL path."""
    payload: bytes
    transport: str = "grpc"
    concurrency: int = 50
    total: int = 0
    duration_s: float = 0.0
    rps: float = 0.0
    connections: int = 1
    """gRPC: TCP connections (HTTP/1.1 always uses one per concurrent request)."""
    timeout_s: float = 20.0
    processes: int = 1
    warmup_s: float = 0.0
    """Completions in the first ``warmup_s`` are not counted (they are in the timeline)."""
    schedule: StepSchedule | None = None
    metadata: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/octet-stream"
    cpus: tuple[int, ...] = ()
    """Pin the client processes to these CPUs (empty: no pinning)."""
    per_second_latency: bool = False
    max_outstanding: int = 20_000
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """Copied into the report's ``options`` (e.g. the call name as the user typed it)."""

    def validate(self) -> None:
        """Raise ValueError for contradictory or out-of-range options."""
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.processes < 1:
            raise ValueError(f"processes must be >= 1, got {self.processes}")
        if self.total < 0 or self.duration_s < 0 or self.rps < 0 or self.warmup_s < 0:
            raise ValueError("total, duration, rps and warmup must be >= 0")
        if not self.total and not self.duration_s:
            raise ValueError("give a total (-n) or a duration (-z)")
        if self.total and self.warmup_s:
            raise ValueError("warmup applies to duration runs only")
        if self.transport not in ("grpc", "http"):
            raise ValueError(f"transport must be grpc or http, got {self.transport!r}")


def user_offsets(concurrency: int, schedule: StepSchedule | None) -> list[float]:
    """Start offset in seconds of each user (all 0 without a schedule)."""
    if schedule is None:
        return [0.0] * concurrency
    end = schedule.end or concurrency
    if schedule.start < 1 or schedule.step < 1 or end < schedule.start:
        raise ValueError("step schedule needs start >= 1, step >= 1 and end >= start")
    return [
        0.0
        if k < schedule.start
        else -(-(k - schedule.start + 1) // schedule.step) * schedule.step_duration_s
        for k in range(end)
    ]


def split(options: LoadOptions) -> list[Share]:
    """Divide users, connections, the total and the rate over ``options.processes``."""
    n = options.processes
    offsets = user_offsets(options.concurrency, options.schedule)
    shares = []
    for i in range(n):
        users = offsets[i::n] if options.rps == 0 else []
        total = options.total // n + (1 if i < options.total % n else 0)
        if options.transport == "http":
            connections = len(users) if users else min(256, options.max_outstanding)
        else:
            connections = options.connections // n + (1 if i < options.connections % n else 0)
        shares.append(
            Share(
                index=i,
                users=users,
                total=total,
                rate=options.rps / n,
                phase_s=i / options.rps if options.rps else 0.0,
                connections=max(1, connections),
            )
        )
    return [s for s in shares if s.users or s.rate > 0]


def run_load(options: LoadOptions) -> dict[str, Any]:
    """Run the load described by ``options``; return the merged ghz-style report.

    Raises ValueError for bad options and RuntimeError when a client process fails (e.g. it
    cannot connect within 15 s).
    """
    options.validate()
    children = [
        Child("bench.load.loadgen_worker:worker_main", options, share) for share in split(options)
    ]
    try:
        for child in children:
            _expect(child.conn, "ready")
        start_ns = time.monotonic_ns() + int(START_DELAY_S * 1e9)
        for child in children:
            child.conn.send(start_ns)
        parts = [Part.from_dict(_expect(c.conn, "part", None)["part"]) for c in children]
        end_ns = time.monotonic_ns()
    finally:
        for child in children:
            child.close()
    return build_report(options, parts, start_ns, end_ns)


def _expect(conn: Connection, key: str, timeout_s: float | None = READY_TIMEOUT_S) -> Any:
    if timeout_s is not None and not conn.poll(timeout_s):
        raise RuntimeError(f"load generator process did not report {key} in {timeout_s:.0f} s")
    try:
        msg = conn.recv()
    except EOFError:
        raise RuntimeError("load generator process died") from None
    if "error" in msg:
        raise RuntimeError(f"load generator process failed: {msg['error']}")
    return msg
