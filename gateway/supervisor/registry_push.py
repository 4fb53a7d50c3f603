"""One model state for every front end: the registry pushed on every change, queues drained.

The supervisor's model manager calls :meth:`RegistryPush.changed` whenever a version's state
changes; the changes of one loop turn go out as one snapshot (:mod:`gateway.ipc.snapshot`) to
every joined front end, which acknowledges it once its copy is replaced. Messages on a front
end's socket keep their order, so what the supervisor sends after a snapshot (a drain, the answer
to a reload) reaches each front end after it: :meth:`~RegistryPush.drain` and
:meth:`~RegistryPush.sync` send the pending snapshot first.

Before a servable is unloaded, :meth:`~RegistryPush.drain` asks every front end to drain its
queues for it (the snapshot that no longer lists it went first, so no new request joins them)
and returns once all have: what they had queued and in flight ran. A front end that dies
meanwhile counts as drained (its calls died with it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from gateway.errors import ServingError
from gateway.ipc import snapshot
from gateway.serving.registry import Models, Servable
from gateway.supervisor.frontends import FrontEndProcess

log = logging.getLogger(__name__)


class RegistryPush:
    """Snapshots of ``models`` to the joined front ends (``front_ends``, by slot, kept by the
    :class:`~gateway.supervisor.fanout.Fanout`)."""

    def __init__(self, models: Models, front_ends: dict[int, FrontEndProcess]) -> None:
        self._models = models
        self._front_ends = front_ends
        self._serial = 0
        self._dirty = False
        self._current: dict[str, object] | None = None

    def changed(self) -> None:
        """The registry changed: push a snapshot at the end of this loop turn."""
        if not self._dirty:
            self._dirty = True
            asyncio.get_running_loop().call_soon(self._push_if_dirty)

    def _push_if_dirty(self) -> None:
        if self._dirty:
            self.push()

    def push(self) -> list[asyncio.Future[dict[str, object]]]:
        """Send a snapshot now to every joined front end; their acknowledgements."""
        self._dirty = False
        self._serial += 1
        self._current = snapshot.snapshot_to_wire(self._models, self._serial)
        return [self.send(front) for front in self._front_ends.values()]

    def send(self, front: FrontEndProcess) -> asyncio.Future[dict[str, object]]:
        """The latest snapshot to one front end (one that joined); its acknowledgement."""
        if self._current is None or self._dirty:
            self._dirty = False
            self._serial += 1
            self._current = snapshot.snapshot_to_wire(self._models, self._serial)
        return front.link.call("snapshot", snapshot=self._current)

    async def sync(self) -> None:
        """Push the registry now and return once every joined front end serves from it."""
        await _settled(self.push())

    async def drain(self, servable: Servable) -> None:
        """Every front end drains its queues of ``servable`` (see the module doc)."""
        if self._dirty:
            self.push()
        calls = [f.link.call("drain", key=servable.key) for f in self._front_ends.values()]
        await _settled(calls)


async def _settled(calls: Iterable[asyncio.Future[dict[str, object]]]) -> None:
    """Wait for every answer; a front end that died (or failed) meanwhile is logged and skipped."""
    for call in calls:
        try:
            await call
        except ServingError as exc:
            log.warning("a front end did not answer: %s", exc.message)
