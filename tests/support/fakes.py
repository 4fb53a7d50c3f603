"""The seams of unit tests: an injected clock, a grpc.aio servicer context, run links that block
on purpose (behind a real dispatcher), and a worker pool that loads nothing."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np

from gateway.errors import ServingError
from gateway.runs.dispatcher import Dispatcher
from gateway.worker_channel.lease import OutputLease, RunResult
from gateway.worker_channel.warmup_runs import WarmupReport
from gateway.worker_pool.hosting import Loaded


class FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """Time moves only when the test calls :meth:`advance`; due timers then fire in order."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self._timers: list[tuple[float, int, Callable[[], None], FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.t

    def call_at(self, when: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer()
        heapq.heappush(self._timers, (when, next(self._seq), callback, timer))
        return timer

    def advance(self, seconds: float) -> None:
        self.t += seconds
        while self._timers and self._timers[0][0] <= self.t:
            _, _, callback, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                callback()


class FakeContext:
    """A grpc.aio servicer context: the time left it reports, the status an abort sets (abort
    raises grpc.aio.AbortError, as grpc.aio's does), and the callbacks for the call's end, kept
    until :meth:`end` (until then the answer is unsent: its client does not read)."""

    def __init__(self, remaining: float | None = None, broken: bool = False) -> None:
        self.remaining = remaining
        self.broken = broken
        self.status: tuple[grpc.StatusCode, str] | None = None
        self.callbacks: list[Callable[[FakeContext], object]] = []

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def time_remaining(self) -> float | None:
        if self.broken:
            raise RuntimeError("context broke")
        return self.remaining

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.status = (code, details)
        raise grpc.aio.AbortError()

    def add_done_callback(self, callback: Callable[[FakeContext], object]) -> None:
        self.callbacks.append(callback)

    def end(self) -> None:
        for callback in self.callbacks:
            callback(self)


@dataclass
class SentBatch:
    """One batch a fake worker received: its materialised inputs and its pending result."""

    inputs: dict[str, np.ndarray]
    outputs: list[str]
    deadline: float | None
    future: asyncio.Future[RunResult]
    trace: tuple[int, int] | None = None
    key: str = ""
    signature: str = ""


@dataclass
class FakeLink:
    """A run link that accepts batches and holds them until the test completes or fails them."""

    index: int
    routed: set[str] = field(default_factory=lambda: {"m:1"})
    alive: bool = True
    runs_in_flight: int = 0
    on_run_done: Callable[[], None] | None = None
    sent: list[SentBatch] = field(default_factory=list)

    def submit(
        self,
        key: str,
        layout: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]],
        fill: Callable[[str, np.ndarray], None],
        outputs: Sequence[str] | None,
        deadline: float | None,
        signature: str = "",
        trace: tuple[int, int] | None = None,
    ) -> asyncio.Future[RunResult]:
        inputs = {}
        for name, (dtype, shape) in layout.items():
            inputs[name] = np.empty(shape, dtype=dtype)
            fill(name, inputs[name])
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        sent = SentBatch(inputs, list(outputs or []), deadline, future, trace, key, signature)
        self.sent.append(sent)
        self.runs_in_flight += 1
        return future

    def check_room(self, layout: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]]) -> None:
        """A fake worker always has room."""

    def oldest_run(self) -> tuple[str, int, float] | None:
        """The first batch not yet completed, computing since 0.0 (``time.monotonic()``'s
        origin: long ago)."""
        for batch in self.sent:
            if not batch.future.done():
                rows = next((len(a) for a in batch.inputs.values() if a.ndim), 0)
                return batch.key, rows, 0.0
        return None

    def complete(
        self,
        i: int,
        compute: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]],
        lease: OutputLease | None = None,
    ) -> None:
        """Resolve batch ``i`` with ``compute``'s outputs (held by ``lease``, if given)."""
        batch = self.sent[i]
        self._done()
        batch.future.set_result(RunResult(compute(batch.inputs), 1.0, lease=lease))

    def fail(self, i: int, error: ServingError) -> None:
        self._done()
        self.sent[i].future.set_exception(error)

    def _done(self) -> None:
        self.runs_in_flight -= 1
        if self.on_run_done is not None:
            self.on_run_done()


def fake_dispatcher(links: int = 1, max_in_flight: int = 1) -> tuple[Dispatcher, list[FakeLink]]:
    dispatcher = Dispatcher(max_in_flight=max_in_flight)
    fakes = [FakeLink(i, on_run_done=dispatcher.wake) for i in range(links)]
    for fake in fakes:
        dispatcher.add_link(fake)  # type: ignore[arg-type]
    return dispatcher, fakes


MLP_WIRE_SIGNATURE = {
    "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 4]}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": [-1, 2]}],
}
"""A ``load`` reply's signature, as an ONNX worker would send it."""


@dataclass
class FakePool:
    """The model manager's seam: records loads and unloads in order; ``fail`` names servable keys
    whose load fails with its exception — a ServingError, or any other as a bug or a dead
    channel would raise (``fail_times``: only that many times, then they load; absent:
    always). A load plans its warmup and counts the planned runs (``warmed``) as a worker
    would, and records its LoadSpec (``specs``). ``gate``: when set, each load waits for it
    (``entered`` is set once a load is waiting). ``loading``: loads under way now; ``peak``:
    the most there ever were at once."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    loaded: set[str] = field(default_factory=set)
    fail: dict[str, Exception] = field(default_factory=dict)
    fail_times: dict[str, int] = field(default_factory=dict)
    warmed: dict[str, int] = field(default_factory=dict)
    specs: dict[str, Any] = field(default_factory=dict)
    gate: asyncio.Event | None = None
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    loading: int = 0
    peak: int = 0

    async def load(self, spec: Any, warmup: Any = None) -> Loaded:
        self.loading += 1
        self.peak = max(self.peak, self.loading)
        try:
            return await self._load(spec, warmup)
        finally:
            self.loading -= 1

    async def _load(self, spec: Any, warmup: Any) -> Loaded:
        self.calls.append(("load", spec.key))
        self.specs[spec.key] = spec
        if self.gate is not None:
            self.entered.set()
            await self.gate.wait()
        if spec.key in self.fail:
            left = self.fail_times.get(spec.key)
            if left is None or left > 0:
                if left is not None:
                    self.fail_times[spec.key] = left - 1
                raise self.fail[spec.key]
        runs = [] if warmup is None else await warmup(MLP_WIRE_SIGNATURE)
        self.warmed[spec.key] = sum(run.iterations for run in runs)
        self.loaded.add(spec.key)
        report = WarmupReport(0, self.warmed[spec.key], 0.0)
        return Loaded(dict(MLP_WIRE_SIGNATURE), (report,))

    async def unload(self, key: str) -> None:
        self.calls.append(("unload", key))
        self.loaded.discard(key)

    def hosts(self, key: str) -> bool:
        return key in self.loaded
