"""The batch queues of the server: one :class:`BatchScheduler` per (servable, signature).

Queues are created on first use with the options :class:`~gateway.batching.policy.BatchingPolicy`
gives the servable; a servable about to be unloaded has its queues drained (what is queued still
runs) and forgotten; at shutdown every queued request fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from gateway.batching.clock import Clock
from gateway.batching.observer import BatchObserver
from gateway.batching.policy import BatchingPolicy, VersionFolder
from gateway.batching.scheduler import BatchScheduler
from gateway.config.model_config import ConfigError
from gateway.errors import FailedPrecondition, ServingError
from gateway.runs.dispatcher import Dispatcher

log = logging.getLogger(__name__)


class QueuedServable(VersionFolder, Protocol):
    """A servable as the queues know it (a :class:`~gateway.serving.registry.Servable`): its
    key, and what the policy reads."""

    @property
    def key(self) -> str:
        """``<model>:<version>``."""
        ...


S = TypeVar("S", bound=QueuedServable)

ObserverFactory = Callable[[S, str], BatchObserver | None]
"""Gives each (servable, signature name) its batch observer (metrics, traces), or None."""


class BatchQueues(Generic[S]):
    """Every batch scheduler, keyed by (servable key, signature name), of servables ``S``.

    ``clock``: injected into each scheduler (tests). ``observer``: gives each new queue its
    :class:`BatchObserver` (metrics), or None.
    """

    def __init__(
        self,
        policy: BatchingPolicy,
        dispatcher: Dispatcher,
        *,
        clock: Clock | None = None,
        observer: ObserverFactory[S] | None = None,
    ) -> None:
        self._policy = policy
        self._dispatcher = dispatcher
        self._clock = clock
        self._observer = observer
        self._schedulers: dict[tuple[str, str], BatchScheduler] = {}

    def get(self, servable: S, signature_name: str) -> BatchScheduler:
        """The batch queue of (servable, signature), created on first use."""
        queue_key = (servable.key, signature_name)
        scheduler = self._schedulers.get(queue_key)
        if scheduler is None:
            try:
                options = self._policy.for_servable(servable)
            except ConfigError as exc:
                log.error("%s", exc)
                raise FailedPrecondition(str(exc)) from None
            observer = self._observer(servable, signature_name) if self._observer else None
            scheduler = BatchScheduler(
                servable_key=servable.key,
                signature=signature_name,
                options=options,
                dispatcher=self._dispatcher,
                clock=self._clock,
                observer=observer,
            )
            self._schedulers[queue_key] = scheduler
        return scheduler

    async def drain(self, servable: S) -> None:
        """Run what is queued for a servable about to be unloaded; then forget its queues."""
        await self.drain_key(servable.key)

    async def drain_key(self, servable_key: str) -> None:
        """:meth:`drain` by the servable's key (``<model>:<version>``)."""
        keys = [k for k in self._schedulers if k[0] == servable_key]
        for key in keys:
            await self._schedulers[key].drain()
            del self._schedulers[key]

    def flush(self) -> None:
        """Send every open batch now (the server is draining: nothing new will join them)."""
        for scheduler in self._schedulers.values():
            scheduler.flush()

    def fail_all(self, error: ServingError) -> None:
        """Fail every queued request (shutdown after the drain grace period)."""
        for scheduler in self._schedulers.values():
            scheduler.fail_all(error)
