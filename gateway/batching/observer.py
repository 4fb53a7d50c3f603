"""What a batch queue lets an observer (metrics, traces) see of its requests and batches.

The scheduler calls its :class:`BatchObserver` on the loop, at four points: a request joins the
queue, a request leaves without running, a batch is about to be posted, and (through the
:class:`BatchRecord` the observer returned) the batch's run has finished or failed. The observer
never changes what the queue does; :mod:`gateway.observability.batches` implements it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gateway.worker_channel.lease import RunResult


class BatchRecord(Protocol):
    """What an observer keeps of one batch: the trace context its run carries to the worker
    (the batch span's trace id and span id; None: untraced), and :meth:`done` once the run has
    finished or failed."""

    trace: tuple[int, int] | None

    def done(self, result: RunResult | None) -> None: ...


class BatchObserver(Protocol):
    """Sees one queue's requests and batches (metrics, traces); every call is on the loop.

    ``on_enqueue`` runs in the submitting request's task as it joins the queue; its value becomes
    the request's :attr:`Task.tag <gateway.batching.formation.Task.tag>`. ``on_batch`` runs once per
    batch before its run is posted, with the members' tags, queue waits (seconds) and rows, and
    the batch's padded rows. ``on_refused`` names why a request left without running:
    ``queue_full``, ``deadline`` (refused: it would wait past its deadline) or ``expired``
    (dropped in the queue). ``sees_untagged``: False when ``on_batch`` has no use for a batch
    whose members' tags are all None (it is then not called for one: tracing that records only
    sampled requests).
    """

    sees_untagged: bool

    def on_enqueue(self) -> object: ...

    def on_batch(
        self,
        tags: Sequence[object],
        queue_waits_s: Sequence[float],
        sizes: Sequence[int],
        padded_rows: int,
    ) -> BatchRecord | None: ...

    def on_refused(self, reason: str) -> None: ...

    def alone(self, tag: object) -> bool:
        """Whether a call run alone at once (no queue) can be recorded by :meth:`on_alone`
        instead of :meth:`on_batch` and its record (no span to make, no timing to note)."""
        ...

    def on_alone(self, tag: object, rows: int, compute_s: float | None) -> None:
        """A call of ``tag`` run alone at once: its ``rows`` and the run's seconds (None: it
        failed)."""
        ...
