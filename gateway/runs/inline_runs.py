"""Which versions a front end runs itself, kept in step with the registry (the rule is
:mod:`gateway.runs.inline_cost`'s).

:meth:`InlineRuns.sync` is called whenever what is served changes, with the versions available
now. A new candidate (an ONNX version on ONNX Runtime, not demoted, whose directory fits what is
left of the budget) is checked and measured on a thread (the loop keeps serving; the workers
serve it meanwhile): the static rule (:mod:`gateway.runs.onnx_graph`), its session loaded
without a memory arena, the memory that took counted against the budget, then timed. A version
the rule places here joins :attr:`InlineRuns.sessions`; any other is dropped at once, its memory
given back. A version no longer served is dropped. :attr:`InlineRuns.placed` says where each
version runs (metrics). A stall moves a version out at once and keeps it out for its backoff;
``on_demote`` tells the supervisor, whose records come back with :meth:`InlineRuns.merge`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from channel.dtypes import STRING, numpy_dtype
from gateway.runs.inline_cost import Measured, Placement, decide
from gateway.runs.inline_session import InlineSession, load_session
from gateway.runs.inline_watch import InlineWatch
from gateway.runs.onnx_graph import UnreadableModel, check_file

log = logging.getLogger(__name__)

FRONTEND = "frontend"
WORKERS = "workers"
_UNSUPPORTED = frozenset({STRING, "bfloat16"})
"""Dtypes whose conversion the workers own (UTF-8 text for ONNX Runtime, bfloat16 values)."""


class TensorShape(Protocol):
    """One tensor of a signature (a :class:`~gateway.serving.signature.TensorSpec`)."""

    @property
    def name(self) -> str: ...

    @property
    def dtype(self) -> str: ...

    @property
    def shape(self) -> tuple[int, ...] | None: ...


class Tensors(Protocol):
    """A signature's tensors (a :class:`~gateway.serving.signature.Signature`)."""

    @property
    def inputs(self) -> tuple[TensorShape, ...]: ...

    @property
    def outputs(self) -> tuple[TensorShape, ...]: ...


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

    @property
    def signatures(self) -> Mapping[str, Tensors]: ...


OnPlaced = Callable[[dict[str, str]], None]
"""Called with :attr:`InlineRuns.placed` whenever it changes (metrics)."""
OnDemote = Callable[[str, int, float], None]
"""Called with a version's key, stall count and ``time.monotonic()`` end of its demotion."""


class LoadOutcome:
    """What the thread hands back: the session and its measurement, or why it stays out."""

    def __init__(self, session: Any = None, measured: Measured | None = None, why: str = ""):
        self.session, self.measured, self.why = session, measured, why
        self.nbytes = 0


Loader = Callable[[Candidate, str, int], LoadOutcome]
"""Checks, loads and measures a candidate (its ``model.onnx`` path, the bytes left in the
budget) on a thread."""


class InlineRuns:
    """Keeps :attr:`sessions` in step with what is served under ``mode`` and ``budget_bytes``.
    ``hop_s()``: the worker hop's cost per run now; ``max_output_bytes``: one run's output bound;
    ``on_placed``: hears each change of :attr:`placed`; ``on_demote``: hears each stall."""

    def __init__(
        self,
        *,
        mode: str,
        budget_bytes: int,
        hop_s: Callable[[], float],
        max_output_bytes: int,
        loader: Loader | None = None,
        on_placed: OnPlaced | None = None,
        on_demote: OnDemote | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mode = mode
        self.budget_bytes = budget_bytes
        self.max_output_bytes = max_output_bytes
        self.sessions: dict[str, InlineSession] = {}
        """The versions that run here now, by servable key."""
        self.placement = Placement()
        self.watch = InlineWatch()
        self.moves = 0
        """Versions that left the front end for a stall."""
        self._keys: set[str] = set()
        """The versions available now (:meth:`sync`'s last), wherever they run."""
        self._hop_s = hop_s
        self._loader = loader or self._load_here
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._nbytes: dict[str, int] = {}
        """Budget bytes of the versions loaded or loading here."""
        self._candidates: dict[str, Candidate] = {}
        self._retry: dict[str, asyncio.TimerHandle] = {}
        self._clock = clock
        self.on_placed = on_placed
        self.on_demote = on_demote

    @property
    def placed(self) -> dict[str, str]:
        """Servable key → where its runs go from this front end."""
        here = self.sessions
        return {key: FRONTEND if key in here else WORKERS for key in self._keys}

    # -- what is served ---------------------------------------------------------------------------
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
            self._candidates[key] = candidate
            changed = True
            self._consider(candidate)
        if changed:
            self._placed_changed()

    def _consider(self, candidate: Candidate) -> None:
        key = candidate.key
        if self.mode == "never" or candidate.platform != "onnx" or candidate.runtime:
            return
        now = self._clock()
        if self.placement.demoted(key, now):
            self._retry_at(key, self.placement.stalls[key].until)
            return
        left = self.budget_bytes - sum(self._nbytes.values())
        nbytes = directory_bytes(candidate.directory)
        if nbytes > left:
            log.info("%s stays on the workers: %d bytes of files, %d left here", key, nbytes, left)
            return
        self._nbytes[key] = nbytes
        path = os.path.join(candidate.directory, "model.onnx")
        task = asyncio.get_running_loop().create_task(self._load(candidate, path, left))
        self._loading[key] = task

    async def _load(self, candidate: Candidate, path: str, left: int) -> None:
        key = candidate.key
        try:
            loaded = await asyncio.to_thread(self._loader, candidate, path, left)
        except Exception as exc:  # the workers serve it: nothing is lost
            loaded = LoadOutcome(why=f"it cannot run in the front end ({exc})")
        finally:
            self._loading.pop(key, None)
        measured = loaded.measured
        if key not in self._keys or loaded.session is None or measured is None:
            self._nbytes.pop(key, None)
            if key in self._keys:
                log.info("%s stays on the workers: %s", key, loaded.why)
            release_memory()
            return
        why = decide(self.mode, measured, self._hop_s())
        if not why and self.placement.demoted(key, self._clock()):
            self._retry_at(key, self.placement.stalls[key].until)
            why = "it stalled the front end; it stays on the workers for its backoff"
        if why:
            self._nbytes.pop(key, None)
            log.info("%s stays on the workers: %s", key, why)
            del loaded
            release_memory()
            return
        self._nbytes[key] += loaded.nbytes
        session = InlineSession(
            key,
            loaded.session,
            self.watch,
            max_output_bytes=self.max_output_bytes,
            on_stall=self.stalled,
        )
        session.max_rows = measured.max_rows
        self.sessions[key] = session
        self._placed_changed()
        log.info(
            "%s runs in the front end: one row %.1f µs, up to %d rows a run, worker hop %.0f µs",
            key,
            measured.one_row_s * 1e6,
            session.max_rows,
            self._hop_s() * 1e6,
        )

    def _load_here(self, candidate: Candidate, path: str, left: int) -> LoadOutcome:
        """The default loader (on a thread): the static rule, the session, its memory, its
        measurement."""
        inputs = fixed_inputs(candidate.signatures, strict=self.mode != "always")
        if isinstance(inputs, str):
            return LoadOutcome(why=inputs)
        if self.mode != "always":
            try:
                why = check_file(path)
            except (OSError, UnreadableModel) as exc:
                why = f"its model file cannot be read ({exc})"
            if why:
                return LoadOutcome(why=why)
        import onnxruntime  # noqa: F401  # the library's own memory is not the session's

        before = resident_bytes()
        session = load_session(path)
        loaded = LoadOutcome(session)
        loaded.nbytes = max(0, resident_bytes() - before)
        if loaded.nbytes > left - self._nbytes.get(candidate.key, 0):
            return LoadOutcome(why=f"its session takes {loaded.nbytes} bytes, over the budget left")
        probe = InlineSession(candidate.key, session, self.watch, max_output_bytes=0)
        loaded.measured = probe.measure(inputs)
        return loaded

    # -- stalls -----------------------------------------------------------------------------------
    def stalled(self, key: str) -> None:
        """One of ``key``'s runs stalled: its next runs go to the workers, until its backoff
        ends (the supervisor is told)."""
        if self.sessions.pop(key, None) is None:
            return
        self._nbytes.pop(key, None)
        self.moves += 1
        until = self.placement.stalled(key, self._clock())
        count = self.placement.stalls[key].count
        log.warning(
            "%s moves to the workers: a run stalled the front end (%d time(s)); back in %.0f s",
            key,
            count,
            until - self._clock(),
        )
        if self.on_demote is not None:
            self.on_demote(key, count, until)
        self._retry_at(key, until)
        self._placed_changed()

    def merge(self, records: Mapping[str, tuple[int, float]]) -> None:
        """The supervisor's demotions (of every front end): a version placed here that another
        front end saw stall leaves too."""
        now = self._clock()
        for key, (count, until) in records.items():
            self.placement.merge(key, count, until)
            if key in self.sessions and self.placement.demoted(key, now):
                self.sessions.pop(key)
                self._nbytes.pop(key, None)
                self._retry_at(key, until)
                self._placed_changed()

    def _retry_at(self, key: str, until: float) -> None:
        """Consider ``key`` again once its demotion ends (:meth:`retry_due`)."""
        old = self._retry.pop(key, None)
        if old is not None:
            old.cancel()
        delay = max(0.0, until - self._clock())
        self._retry[key] = asyncio.get_running_loop().call_later(delay, self.retry_due)

    def retry_due(self) -> None:
        """Consider again, measured afresh, every version whose demotion has ended."""
        now = self._clock()
        for key in list(self._retry):
            if self.placement.demoted(key, now):
                continue
            self._retry.pop(key).cancel()
            candidate = self._candidates.get(key)
            if candidate is not None and key not in self.sessions and key not in self._loading:
                self._consider(candidate)

    # -- bookkeeping ------------------------------------------------------------------------------
    def _placed_changed(self) -> None:
        if self.on_placed is not None:
            self.on_placed(self.placed)

    def _drop(self, key: str) -> None:
        self._keys.discard(key)
        self._candidates.pop(key, None)
        self._nbytes.pop(key, None)
        task = self._loading.pop(key, None)
        if task is not None:
            task.cancel()
        retry = self._retry.pop(key, None)
        if retry is not None:
            retry.cancel()
        if self.sessions.pop(key, None) is not None:
            release_memory()

    async def loaded(self) -> None:
        """Return once the loads under way have ended (placed, refused or cancelled)."""
        while self._loading:
            await asyncio.wait(list(self._loading.values()))

    def close(self) -> None:
        """Cancel the loads under way and the retries; stop the watch (the front end stops)."""
        for task in self._loading.values():
            task.cancel()
        self._loading.clear()
        for retry in self._retry.values():
            retry.cancel()
        self._retry.clear()
        self.watch.close()


def fixed_inputs(
    signatures: Mapping[str, Tensors], *, strict: bool
) -> dict[str, tuple[np.dtype[Any], tuple[int, ...]]] | str:
    """Each input's dtype and dims past the first (unknown ones as 1), or why the version's
    tensors keep it on the workers: a string or bfloat16 tensor, an unknown rank, or (when
    ``strict``) a dimension past the first that a caller may choose."""
    inputs: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {}
    for signature in signatures.values():
        for spec in (*signature.inputs, *signature.outputs):
            if spec.dtype in _UNSUPPORTED:
                return f"tensor {spec.name!r} is {spec.dtype}, which the workers convert"
            if spec.shape is None or not spec.shape:
                return f"tensor {spec.name!r} has no batch dimension"
            if strict and any(d < 0 for d in spec.shape[1:]):
                return f"tensor {spec.name!r} has a dimension past the first that callers choose"
        for spec in signature.inputs:
            tail = tuple(d if d >= 0 else 1 for d in spec.shape[1:]) if spec.shape else ()
            inputs[spec.name] = (numpy_dtype(spec.dtype), tail)
    return inputs


def directory_bytes(directory: str) -> int:
    """Bytes of every file under ``directory`` (external weights included; 0 when unreadable)."""
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
    return total


def resident_bytes() -> int:
    """This process's resident memory (bytes), from ``/proc/self/statm``."""
    try:
        with open("/proc/self/statm") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def release_memory() -> None:
    """Give freed heap back to the system (glibc keeps it otherwise)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
