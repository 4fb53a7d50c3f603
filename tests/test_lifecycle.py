"""What every gateway process does around serving: ``serve`` (start, serve until a stop signal,
stop; a stop signal during the start abandons it), the ``--ready_fd`` protocol, and the
collector once the gateway serves: the start-up's garbage collected, the rest frozen, the young
generation collected less often (run in a child process: settling would change this one's
collector for every later test)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.drain import Signals
from gateway.lifecycle import report_ready, serve, wait_ready
from tests.support.idle_loop import settle

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import gc, weakref
from gateway.lifecycle import YOUNG_COLLECTION_THRESHOLD, settle_heap

class Node:
    pass

first, second = Node(), Node()
first.other, second.other = second, first  # a cycle: only the collector frees it
cycle = weakref.ref(first)
del first, second
gc.disable()  # nothing but settle_heap collects
settle_heap()
print(cycle() is None, gc.get_freeze_count() > 0)
print(gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10) != (700, 10, 10))
"""


def test_settling_collects_start_up_garbage_freezes_the_rest_raises_the_threshold() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == ["True", "True", "True"]


# -- serve: start, serve until stopped, stop (the one fake: the Served process) -----------------
class FakeServed:
    """A process whose start waits for ``finish`` (set it to let the start complete), then
    raises ``error`` if given; every step is recorded in ``steps``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.signals = Signals()
        self.error = error
        self.starting = asyncio.Event()
        self.finish = asyncio.Event()
        self.steps: list[str] = []

    async def start(self) -> None:
        self.steps.append("start")
        self.starting.set()
        try:
            await self.finish.wait()
        except asyncio.CancelledError:
            self.steps.append("start abandoned")
            raise
        if self.error is not None:
            raise self.error

    async def stop(self) -> None:
        self.steps.append("stop")

    def report_not_ready(self) -> None:
        self.steps.append("not ready")


@pytest.fixture
def restored_collector() -> Iterator[None]:
    """``serve`` settles the heap once started: give this process its collector back after."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


async def test_a_stop_signal_during_a_start_abandons_it_and_stops_not_ready() -> None:
    process = FakeServed()
    serving = asyncio.create_task(serve(process))
    await process.starting.wait()
    process.signals.received()
    await serving
    assert process.steps == ["start", "start abandoned", "not ready", "stop"]


async def test_a_failing_start_raises_after_the_stop() -> None:
    process = FakeServed(RuntimeError("no port"))
    process.finish.set()
    with pytest.raises(RuntimeError, match="no port"):
        await serve(process)
    assert process.steps == ["start", "not ready", "stop"]


async def test_a_started_process_serves_until_the_stop_signal(restored_collector: None) -> None:
    process = FakeServed()
    process.finish.set()
    serving = asyncio.create_task(serve(process))
    await process.starting.wait()
    await settle()
    assert process.steps == ["start"] and not serving.done()
    process.signals.received()
    await serving
    assert process.steps == ["start", "stop"]


# -- the --ready_fd protocol ---------------------------------------------------------------------
WAIT_S = 30.0
"""Bound of every wait (never reached when things work)."""


def test_what_report_ready_writes_wait_ready_reads_and_the_writer_is_closed() -> None:
    read, write = os.pipe()
    try:
        report_ready(write, {"grpc_port": 8500, "rest_port": 8501})
        assert wait_ready(read, WAIT_S) == {"grpc_port": 8500, "rest_port": 8501}
        with pytest.raises(OSError):
            os.fstat(write)
    finally:
        os.close(read)


def test_a_pipe_closed_without_a_line_reads_as_not_ready() -> None:
    read, write = os.pipe()
    os.close(write)
    try:
        assert wait_ready(read, WAIT_S) is None
    finally:
        os.close(read)
