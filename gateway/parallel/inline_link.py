"""The front end's own run link: versions run inside this process, on the event loop.

:class:`InlineLink` answers the scheduler as a worker's :class:`~gateway.parallel.run_link.RunLink`
does (``submit`` returns a future of a :class:`~gateway.parallel.lease.RunResult`), but runs the
batch at once, on the loop, in this process's own ONNX Runtime session of the version: the batch
is sent at the end of the loop turn its calls arrived in, so one run serves them all. Its outputs
are owned arrays (no lease). The dispatcher picks it before any worker for a version in
:attr:`InlineLink.routed` whose batch :meth:`~InlineLink.fits` the loop bound
(:mod:`gateway.parallel.inline_cost`); each run's time is recorded, and a version that turns slow
leaves :attr:`~InlineLink.routed` (its next batches go to the workers, which hold it too).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from channel.dtypes import DTYPE_NAMES, STRING, dtype_name, numpy_dtype, string_items
from channel.replies import WorkerError
from channel.span_wire import SpanForm
from channel.telemetry import new_span_id
from gateway.errors import from_wire
from gateway.parallel.inline_cost import RunCost
from gateway.parallel.lease import RunResult

INLINE_INDEX = -1
"""The index an in-front-end run reports where a worker's would be."""


class Session(Protocol):
    """What runs a version here (:class:`workers.backends.onnx.OnnxModel`)."""

    def run(
        self, inputs: dict[str, np.ndarray[Any, Any]], output_names: list[str] | None
    ) -> dict[str, np.ndarray[Any, Any]]: ...


@dataclass
class InlineVersion:
    """A version this front end runs itself: its session and measured cost."""

    session: Session
    cost: RunCost
    compute_span: SpanForm


Moved = Callable[[str], None]
"""Called with the servable key when a version leaves for the workers (it turned slow)."""


class InlineLink:
    """Runs batches of the versions in :attr:`routed` in this process, on the running loop.
    ``timer``: the loop thread's CPU seconds (a run's cost, which another process taking the
    core does not inflate; tests inject one)."""

    index = INLINE_INDEX
    alive = True
    runs_in_flight = 0

    def __init__(self, *, timer: Callable[[], float] = time.thread_time) -> None:
        self.routed: set[str] = set()
        """Versions that run here now (a subset of :attr:`versions`)."""
        self.versions: dict[str, InlineVersion] = {}
        self.on_move: Moved | None = None
        """Called when a version turned slow and left :attr:`routed`."""
        self._timer = timer
        self._pid = os.getpid()

    def add(self, key: str, version: InlineVersion, *, route: bool) -> None:
        """Hold ``version``'s session; run its batches here when ``route``."""
        self.versions[key] = version
        if route:
            self.routed.add(key)

    def remove(self, key: str) -> None:
        self.routed.discard(key)
        self.versions.pop(key, None)

    def fits(self, key: str, rows: int) -> bool:
        """Whether a batch of ``rows`` of ``key``, a key in :attr:`routed` (the caller's check),
        runs here: within the loop bound."""
        return self.versions[key].cost.fits_loop(rows)

    def check_room(self, layout: Mapping[str, tuple[np.dtype[Any], tuple[int, ...]]]) -> None:
        """Nothing to check: the batch's arrays are this process's (bounded per request)."""

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
        """Run the batch now; a done future of its owned outputs, or of the run's error."""
        version = self.versions[key]
        inputs: dict[str, np.ndarray[Any, Any]] = {}
        rows = 1
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        for name, (dtype, shape) in layout.items():
            array = np.empty(shape, dtype=dtype)
            fill(name, array)
            if dtype.kind == "O":
                array = _text(array)
            inputs[name] = array
            if shape:
                rows = shape[0]
        start_ns = time.time_ns() if trace is not None else 0
        started = self._timer()
        try:
            result = version.session.run(inputs, None if outputs is None else list(outputs))
        except WorkerError as exc:
            future.set_exception(from_wire(exc.code, exc.message))
            return future
        seconds = self._timer() - started
        for name, array in result.items():
            if array.dtype.type not in _CANONICAL:
                result[name] = _canonical(array)
        spans = None
        if trace is not None:
            end_ns = time.time_ns()
            spans = version.compute_span.spans(start_ns, end_ns, new_span_id(), trace[1], self._pid)
        future.set_result(RunResult(result, seconds * 1e6, spans))
        if version.cost.record(rows, seconds) and key in self.routed:
            self.routed.discard(key)
            logging.getLogger(__name__).warning(
                "%s moves to the workers: runs take %.0f µs, %.1f× the %.0f µs measured at load",
                key,
                seconds * 1e6,
                version.cost.ratio,
                version.cost.predict(rows) * 1e6,
            )
            if self.on_move is not None:
                self.on_move(key)
        return future

    def oldest_run(self) -> None:
        """No run is ever pending here (each runs as it is submitted)."""
        return None


_CANONICAL = frozenset(numpy_dtype(name).type for name in DTYPE_NAMES if name != STRING)
"""The numpy dtypes outputs are handed out in (as a worker's outputs are read back)."""


def _text(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A string input as ONNX Runtime takes it: ``str`` elements (UTF-8 decoded, as a worker
    decodes them; the core let only UTF-8 reach an ONNX model's queue,
    :func:`~gateway.serving.inputs.check_text`)."""
    items = [x.decode("utf-8") if isinstance(x, bytes) else x for x in array.flat]
    out = np.empty(array.shape, dtype=object)
    out.flat[:] = items
    return out


def _canonical(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` in its canonical dtype: strings as an object array of bytes (``str`` encoded
    as UTF-8), platform aliases (``longlong``) as their canonical type, without a copy."""
    name = dtype_name(array.dtype)
    if name == STRING:
        items = string_items(array)
        out = np.empty(array.shape, dtype=object)
        out.flat[:] = items
        return out
    return array.view(numpy_dtype(name))
