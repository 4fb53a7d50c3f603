"""Which versions a front end runs itself: sessions loaded and measured off the loop, kept in step
with the registry (the rule is :mod:`gateway.parallel.inline_cost`'s).

:meth:`InlineRuns.sync` is called whenever what is served changes, with the versions available
now. A new ONNX version within the budget gets its own session here, loaded and timed on a
thread (the loop keeps serving; the workers serve the version meanwhile); the rule then decides
whether its batches run here. A version no longer served is dropped. :attr:`InlineRuns.placed`
says where each version runs, for the metrics.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from channel.dtypes import STRING, numpy_dtype
from channel.span_wire import SpanForm
from gateway.parallel.inline_cost import MEASURED_ROWS, REPEATS, RunCost, decide
from gateway.parallel.inline_link import InlineLink, InlineVersion

log = logging.getLogger(__name__)

FRONTEND = "frontend"
WORKERS = "workers"


class Candidate(Protocol):
    """A version available now (a :class:`~gateway.serving.registry.Servable`)."""

    @property
    def key(self) -> str:
        """``<model>:<version>``."""
        ...

    @property
    def platform(self) -> str: ...

    @property
    def directory(self) -> str: ...

    @property
    def runtime(self) -> str:
        """ "" when the platform's own runtime serves it (ONNX Runtime for ONNX); else the one the
        user chose (``--model_runtimes``), which a front end never replaces."""
        ...


Loader = Callable[[str], tuple[Any, RunCost]]
"""Loads the ONNX model at a path and measures it: (session, cost). Raises when it cannot."""

OnPlaced = Callable[[dict[str, str]], None]
"""Called with :attr:`InlineRuns.placed` whenever it changes (metrics)."""


class InlineRuns:
    """Keeps ``link``'s versions in step with what is served, under ``mode`` and
    ``budget_bytes`` of model files; ``hop_s()``: the worker hop's cost per run now;
    ``on_placed``: hears of each change of :attr:`placed` (metrics)."""

    def __init__(
        self,
        link: InlineLink,
        *,
        mode: str,
        budget_bytes: int,
        hop_s: Callable[[], float],
        loader: Loader | None = None,
        on_placed: OnPlaced | None = None,
    ) -> None:
        self.link = link
        self.mode = mode
        self.budget_bytes = budget_bytes
        self._keys: set[str] = set()
        """The versions available now (:meth:`sync`'s last), wherever they run."""
        self._hop_s = hop_s
        self._loader = loader or measured_session
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._nbytes: dict[str, int] = {}
        """Model file bytes of the versions loaded or loading here (the budget's use)."""
        self.on_placed = on_placed
        link.on_move = self.moved

    @property
    def placed(self) -> dict[str, str]:
        """Servable key → where its runs go from this front end (``frontend`` while the link
        routes it, else ``workers``)."""
        routed = self.link.routed
        return {key: FRONTEND if key in routed else WORKERS for key in self._keys}

    def sync(self, available: Iterable[Candidate]) -> None:
        """Load what is new, drop what is gone (see the module doc)."""
        wanted = {c.key: c for c in available}
        gone = self._keys - wanted.keys()
        for key in gone:
            self._drop(key)
        changed = bool(gone)
        for key, candidate in wanted.items():
            if key in self._keys:
                continue
            self._keys.add(key)
            changed = True
            if self.mode == "never" or candidate.platform != "onnx" or candidate.runtime:
                continue
            path = os.path.join(candidate.directory, "model.onnx")
            try:
                nbytes = os.path.getsize(path)
            except OSError:
                continue
            if nbytes > self.budget_bytes - sum(self._nbytes.values()):
                continue
            self._nbytes[key] = nbytes
            task = asyncio.get_running_loop().create_task(self._load(key, path))
            self._loading[key] = task
        if changed:
            self._placed_changed()

    async def _load(self, key: str, path: str) -> None:
        try:
            session, cost = await asyncio.to_thread(self._loader, path)
        except Exception as exc:  # the workers serve it: nothing is lost
            log.info("%s stays on the workers: it cannot run in the front end (%s)", key, exc)
            self._nbytes.pop(key, None)
            return
        finally:
            self._loading.pop(key, None)
        if key not in self._keys:
            return  # dropped while loading
        here = decide(self.mode, cost, self._hop_s())
        form = SpanForm.of("compute", {"tensorgate.model": key})
        self.link.add(key, InlineVersion(session, cost, form), route=here)
        self._placed_changed()
        log.info(
            "%s runs %s: %.1f µs + %.2f µs/row here, worker hop %.0f µs",
            key,
            "in the front end" if here else "on the workers",
            cost.fixed_s * 1e6,
            cost.per_row_s * 1e6,
            self._hop_s() * 1e6,
        )

    def moved(self, key: str) -> None:
        """``key`` left for the workers (it turned slow; the link no longer routes it)."""
        if key in self._keys:
            self._placed_changed()

    def _placed_changed(self) -> None:
        if self.on_placed is not None:
            self.on_placed(self.placed)

    def _drop(self, key: str) -> None:
        self._keys.discard(key)
        self._nbytes.pop(key, None)
        task = self._loading.pop(key, None)
        if task is not None:
            task.cancel()
        self.link.remove(key)

    async def loaded(self) -> None:
        """Return once the loads under way have ended (placed, failed or cancelled)."""
        while self._loading:
            await asyncio.wait(list(self._loading.values()))

    def close(self) -> None:
        """Cancel the loads under way (the front end stops)."""
        for task in self._loading.values():
            task.cancel()
        self._loading.clear()


def measured_session(path: str) -> tuple[Any, RunCost]:
    """A one-thread ONNX Runtime session of ``path`` and its run time at
    :data:`~gateway.parallel.inline_cost.MEASURED_ROWS` rows (the median of
    :data:`~gateway.parallel.inline_cost.REPEATS`, in this thread's CPU seconds). Raises when it
    does not load or run."""
    from workers.backends import onnx  # this process imports ONNX Runtime only when needed

    model = onnx.load(path, intra_op=1, inter_op=1)
    times: dict[int, float] = {}
    for rows in MEASURED_ROWS:
        inputs = {spec["name"]: _zeros(spec, rows) for spec in model.signature["inputs"]}
        runs = []
        for _ in range(REPEATS):
            started = time.thread_time()
            model.run(inputs, None)
            runs.append(time.thread_time() - started)
        times[rows] = statistics.median(runs)
    return model, RunCost.fit(times)


def _zeros(spec: Any, rows: int) -> np.ndarray[Any, Any]:
    """Zeros of an input's declared shape, ``rows`` in its first dim, 1 in other unknown dims."""
    shape = spec["shape"]
    if shape is None:
        raise ValueError(f"input {spec['name']!r} has an unknown rank")
    dims = [rows if i == 0 else (d if d >= 0 else 1) for i, d in enumerate(shape)]
    if spec["dtype"] == STRING:
        return np.full(dims, b"", dtype=object)
    return np.zeros(dims, dtype=numpy_dtype(spec["dtype"]))
