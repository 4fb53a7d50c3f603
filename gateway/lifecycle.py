"""What every gateway process does around serving: the ``--ready_fd`` protocol, the heap, and
the serve → stop sequence.

The process that a supervisor (Kubernetes, a test, the bench) started reports readiness once, as
one JSON line on an inherited pipe (:func:`report_ready`; :func:`wait_ready` reads it), and a
process that serves settles its heap first (:func:`settle_heap`). Used by the one-process
gateway (:mod:`gateway.one_process`), the supervisor of several front ends and each front end;
the first two run :func:`serve` (a stop signal during the start abandons it).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import select
import time
from collections.abc import Mapping
from typing import Any, Protocol

from gateway.drain import Signals

log = logging.getLogger(__name__)

YOUNG_COLLECTION_THRESHOLD = 10_000
"""Net container allocations between young-generation collections (CPython's default: 700)."""


def settle_heap() -> None:
    """Tune the cyclic garbage collector for serving, once started.

    Collect the start-up's garbage and freeze what is left (``gc.freeze``): full collections
    while serving walk only what serving made. A start-up object serving drops is still freed by
    reference counting; a reference cycle among such objects stays. The young generation is
    collected every :data:`YOUNG_COLLECTION_THRESHOLD` allocations, so objects that live a
    fraction of a second (calls in flight, span records) are mostly freed before one visits them.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


def report_ready(fd: int, info: Mapping[str, Any]) -> None:
    """The ``--ready_fd`` protocol, writer side: ``info`` as one JSON line to ``fd``, then close
    it."""
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(dict(info)) + "\n")


def wait_ready(fd: int, timeout_s: float) -> dict[str, Any] | None:
    """The ``--ready_fd`` protocol, reader side (tests, bench, supervisors that must not poll logs):
    the JSON object written to the pipe ``fd``, or None on EOF or after ``timeout_s`` in total.

    ``fd`` is not closed.
    """
    data = b""
    deadline = time.monotonic() + timeout_s
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    line = data.decode().strip()
    if not line:
        return None
    info: dict[str, Any] = json.loads(line)
    return info


class Served(Protocol):
    """A process that :func:`serve` runs: the one-process gateway or the supervisor."""

    signals: Signals

    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Drain and release everything; safe after a failed or abandoned start."""
        ...

    def report_not_ready(self) -> None:
        """Close ``--ready_fd`` without a line (whoever waits sees end-of-file at once)."""
        ...


async def serve(process: Served) -> None:
    """Install the signal handlers, start, serve until SIGTERM/SIGINT, then stop.

    A stop signal while the start is still going (a model whose first load keeps failing holds it
    through its retries: minutes) abandons the start and stops cleanly; a start that fails raises
    its error after the stop.
    """
    process.signals.install()
    try:
        try:
            started = await _start_unless_stopped(process)
        except BaseException:
            process.report_not_ready()
            raise
        if not started:
            process.report_not_ready()
            return
        settle_heap()
        await process.signals.stop.wait()
    finally:
        await process.stop()


async def _start_unless_stopped(process: Served) -> bool:
    """``process.start()``, abandoned when a stop signal arrives first; False when abandoned."""
    starting = asyncio.ensure_future(process.start())
    stopped = asyncio.ensure_future(process.signals.stop.wait())
    try:
        await asyncio.wait((starting, stopped), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if starting.done():
        starting.result()  # its error, if it failed
        return True
    log.info("stop signal before the server was ready: not starting")
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    return False
