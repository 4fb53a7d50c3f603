"""A front end's models: the registry the supervisor pushes, and changes asked of it.

The request core, the queues and the protocols read the models through
:class:`~gateway.serving.registry.Models`; in a front end that is a :class:`SnapshotModels`:

- reads answer from the latest snapshot (:mod:`gateway.ipc.snapshot`), so GetModelStatus,
  metadata and resolution answer the same in every front end, with the one-process texts
  (:func:`~gateway.serving.registry.pick_servable`);
- availability is a servable routed to a live worker *on this front end's own run side* (its
  channels and the routes the supervisor sent), which is what a request here can reach;
- :meth:`~SnapshotModels.apply` (HandleReloadConfigRequest) goes to the supervisor, which
  carries it out once and answers when it is done and every front end serves from the new
  registry; the call's deadline cancels the wait, not the change. V2's repository load and
  unload go there too (:class:`ForwardedRepository`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import NotFound
from gateway.ipc.snapshot import EMPTY, Snapshot, spec_to_wire
from gateway.runs.dispatcher import Dispatcher
from gateway.serving.registry import Servable, VersionStatus, pick_servable
from gateway.v2.model_control import ModelRepository
from gateway.v2.repository_codec import RepositoryCall


class SupervisorLink(Protocol):
    """Where requests go (the front end's :class:`~gateway.ipc.link.MessageLink`)."""

    def call(self, op: str, fds: Sequence[int] = (), **fields: Any) -> Awaitable[Mapping[str, Any]]:
        """Send a request; its answer, or its error raised."""
        ...


class SnapshotModels:
    """The models as of the latest snapshot (:meth:`replace`), routed over ``dispatcher``;
    :meth:`apply` goes to ``supervisor``."""

    def __init__(self, dispatcher: Dispatcher, supervisor: SupervisorLink) -> None:
        self._dispatcher = dispatcher
        self._supervisor = supervisor
        self.snapshot: Snapshot = EMPTY

    def replace(self, snapshot: Snapshot) -> None:
        """Serve from ``snapshot`` from now on (an older one than held is ignored)."""
        if snapshot.serial >= self.snapshot.serial:
            self.snapshot = snapshot

    # -- Registry ---------------------------------------------------------------------------------
    def model_names(self) -> list[str]:
        return list(self.snapshot.models)

    def is_available(self, name: str) -> bool:
        model = self.snapshot.models.get(name)
        if model is None or not model.active:
            return False
        return any(self._routed(s.key) for s in model.servables.values())

    def all_available(self) -> bool:
        return all(self.is_available(s.name) for s in self.snapshot.specs)

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        model = self.snapshot.models.get(name)
        if model is None or not model.active:
            return pick_servable(name, None, {}, version, label)
        return pick_servable(name, model.servables, model.labels, version, label)

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        model = self.snapshot.models.get(name)
        if model is None or not model.versions:
            missing = "" if model is None else model.missing
            raise NotFound(missing or f"Could not find any versions of model {name}")
        if version is None:
            return sorted(model.versions, key=lambda s: s.version)
        found = [s for s in model.versions if s.version == version]
        if not found:
            raise NotFound(f"Could not find version {version} of model {name}")
        return found

    # -- ModelControl -----------------------------------------------------------------------------
    def specs(self) -> list[ModelSpecConfig]:
        return list(self.snapshot.specs)

    async def apply(self, specs: Sequence[ModelSpecConfig]) -> None:
        await self._supervisor.call("apply", specs=[spec_to_wire(s) for s in specs])

    async def rescan(self, name: str) -> None:
        """The supervisor polls ``name`` again (what V2's load of a served model does there)."""
        await self._supervisor.call(
            "v2_repository", action="load", model=name, unload_dependents=False
        )

    def _routed(self, key: str) -> bool:
        return any(link.alive and key in link.routed for link in self._dispatcher.links)


class ForwardedRepository(ModelRepository):
    """V2's repository extension in a front end: the index from the snapshot, load and unload
    carried out by the supervisor's own :class:`~gateway.v2.model_control.ModelRepository` (which
    remembers what a V2 unload took out, whichever front end asked) and answered once every front
    end serves from the result."""

    def __init__(self, models: SnapshotModels, supervisor: SupervisorLink) -> None:
        super().__init__(models, management=True)  # the supervisor's decides what is allowed
        self._supervisor = supervisor

    async def load(self, call: RepositoryCall) -> None:
        await self._forward("load", call)

    async def unload(self, call: RepositoryCall) -> None:
        await self._forward("unload", call)

    async def _forward(self, action: str, call: RepositoryCall) -> None:
        await self._supervisor.call(
            "v2_repository",
            action=action,
            model=call.model,
            unload_dependents=call.unload_dependents,
        )
