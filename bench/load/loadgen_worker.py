"""One load-generator process: its share of users (closed loop) or of the rate (open loop).

Runs on uvloop. The parent sends a start time (``time.monotonic_ns``, which is system-wide on
Linux, so every process shares one time base); the worker records each request that *completes*
inside the measurement window ``[start + warmup, end)`` and sends back its :class:`Part` as a dict.
Latency is measured from the actual send (closed loop) or from the scheduled send time (open loop,
so a server that falls behind cannot hide its queueing: no coordinated omission).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import uvloop

from bench.load.histogram import Histogram

MAX_ERROR_KINDS = 32
"""Distinct error messages kept per process (the rest count as "other errors")."""

Sender = Callable[[], Awaitable[tuple[str, str]]]
"""Sends one request; returns ``(status, error message or "")``."""


@dataclass(frozen=True)
class Share:
    """This process's share of the work (see :func:`bench.load.loadgen.split`)."""

    index: int
    users: list[float]
    """Closed loop: each user's start offset in seconds from the run start (empty: open loop)."""
    total: int
    """Requests to complete (0: run until the duration ends)."""
    rate: float
    """Open loop: requests per second for this process (0: closed loop)."""
    phase_s: float
    """Open loop: offset of this process's first send, so processes interleave evenly."""
    connections: int


@dataclass
class Part:
    """What one process measured."""

    latency: Histogram = field(default_factory=Histogram)
    send_lag: Histogram = field(default_factory=Histogram)
    statuses: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    timeline: dict[int, list[int]] = field(default_factory=dict)
    """second index → [completed, errors] (all completions, warmup included)."""
    timeline_latency: dict[int, Histogram] = field(default_factory=dict)
    first_ns: int = 0
    last_ns: int = 0
    cpu_s: float = 0.0
    dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "latency": self.latency.to_dict(),
            "send_lag": self.send_lag.to_dict(),
            "statuses": self.statuses,
            "errors": self.errors,
            "timeline": {str(k): v for k, v in self.timeline.items()},
            "timeline_latency": {str(k): h.to_dict() for k, h in self.timeline_latency.items()},
            "first_ns": self.first_ns,
            "last_ns": self.last_ns,
            "cpu_s": self.cpu_s,
            "dropped": self.dropped,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Part:
        return cls(
            latency=Histogram.from_dict(d["latency"]),
            send_lag=Histogram.from_dict(d["send_lag"]),
            statuses=dict(d["statuses"]),
            errors=dict(d["errors"]),
            timeline={int(k): list(v) for k, v in d["timeline"].items()},
            timeline_latency={
                int(k): Histogram.from_dict(v) for k, v in d["timeline_latency"].items()
            },
            first_ns=int(d["first_ns"]),
            last_ns=int(d["last_ns"]),
            cpu_s=float(d["cpu_s"]),
            dropped=int(d["dropped"]),
        )


class Recorder:
    """Counts completions into a :class:`Part`, only inside the measurement window."""

    def __init__(self, start_ns: int, warm_ns: int, end_ns: int, per_second_latency: bool) -> None:
        self.part = Part()
        self.start_ns = start_ns
        self.warm_ns = warm_ns
        self.end_ns = end_ns
        self.per_second_latency = per_second_latency

    def add(self, sent_ns: int, done_ns: int, status: str, error: str) -> None:
        part = self.part
        second = (done_ns - self.start_ns) // 1_000_000_000
        slot = part.timeline.get(second)
        if slot is None:
            slot = part.timeline[second] = [0, 0]
        slot[0] += 1
        ok = status == "OK"
        if not ok:
            slot[1] += 1
        if self.per_second_latency and ok:
            hist = part.timeline_latency.get(second)
            if hist is None:
                hist = part.timeline_latency[second] = Histogram()
            hist.record(done_ns - sent_ns)
        if not self.warm_ns <= done_ns < self.end_ns:
            return
        if part.first_ns == 0:
            part.first_ns = done_ns
        part.last_ns = done_ns
        part.statuses[status] = part.statuses.get(status, 0) + 1
        if ok:
            part.latency.record(done_ns - sent_ns)
        else:
            key = error if error in part.errors or len(part.errors) < MAX_ERROR_KINDS else "other"
            part.errors[key] = part.errors.get(key, 0) + 1


async def _closed_loop(
    senders: list[Sender], share: Share, rec: Recorder, start_ns: int, timeout_s: float
) -> None:
    remaining = [share.total]
    end_ns = rec.end_ns

    async def user(sender: Sender, offset_s: float) -> None:
        begin = start_ns + int(offset_s * 1e9)
        delay = (begin - time.monotonic_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        while True:
            if share.total:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            sent = time.monotonic_ns()
            if sent >= end_ns:
                return
            status, error = await sender()
            rec.add(sent, time.monotonic_ns(), status, error)

    tasks = [user(senders[i % len(senders)], offset) for i, offset in enumerate(share.users)]
    await asyncio.gather(*tasks)


async def _open_loop(
    senders: list[Sender], share: Share, rec: Recorder, start_ns: int, max_outstanding: int
) -> None:
    loop = asyncio.get_running_loop()
    interval_ns = 1e9 / share.rate
    first_ns = start_ns + int(share.phase_s * 1e9)
    pending: set[asyncio.Task[None]] = set()
    part = rec.part

    async def one(sender: Sender, scheduled: int) -> None:
        part.send_lag.record(time.monotonic_ns() - scheduled)
        status, error = await sender()
        rec.add(scheduled, time.monotonic_ns(), status, error)

    k = 0
    while True:
        now = time.monotonic_ns()
        scheduled = first_ns + int(k * interval_ns)
        if scheduled >= rec.end_ns or (share.total and k >= share.total):
            break
        if scheduled > now:
            await asyncio.sleep((scheduled - now) / 1e9)
            continue
        while scheduled <= now and scheduled < rec.end_ns:
            if len(pending) >= max_outstanding:
                part.dropped += 1
                rec.add(scheduled, now, "Dropped", "client: too many outstanding requests")
            else:
                task = loop.create_task(one(senders[k % len(senders)], scheduled))
                pending.add(task)
                task.add_done_callback(pending.discard)
            k += 1
            scheduled = first_ns + int(k * interval_ns)
        await asyncio.sleep(0)
    if pending:
        await asyncio.wait(pending)


async def _run(conn: Connection, options: Any, share: Share) -> Part:
    from bench.load import transports

    # Build the connections before reporting ready: the run measures requests, not dials.
    pool = await transports.open_pool(options, share.connections)
    try:
        conn.send({"ready": True})
        start_ns = int(conn.recv())
        warm_ns = start_ns + int(options.warmup_s * 1e9)
        end_ns = start_ns + int(options.duration_s * 1e9) if options.duration_s else 2**62
        rec = Recorder(start_ns, warm_ns, end_ns, options.per_second_latency)
        cpu0 = time.process_time()
        if share.rate > 0:
            await _open_loop(pool.senders, share, rec, start_ns, options.max_outstanding)
        else:
            await _closed_loop(pool.senders, share, rec, start_ns, options.timeout_s)
        rec.part.cpu_s = time.process_time() - cpu0
        return rec.part
    finally:
        await pool.close()


def worker_main(conn: Connection, options: Any, share: Share) -> None:
    """Entry point of a spawned generator process; sends ``Part.to_dict()`` (or an error)."""
    if options.cpus:
        os.sched_setaffinity(0, options.cpus)
    try:
        part = uvloop.run(_run(conn, options, share))
        conn.send({"part": part.to_dict()})
    except Exception as exc:  # reported to the parent, which raises it
        with contextlib.suppress(OSError):
            conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()
