"""Triton's model repository extension over TF Serving's model lifecycle: index, load, unload.

tensorgate has no model repository directory to scan: its models are the ``model_config_list``
(``--model_config_file``, or ``--model_name`` / ``--model_base_path``), changed as a whole by
HandleReloadConfigRequest or a re-read config file. The extension maps onto that config:

- **index** (always open, as Triton's): every model configured since start, with each known
  version's state (:func:`gateway.v2.repository_codec.index`); a model taken out shows its versions
  UNAVAILABLE, reason "unloaded".
- **load** ``m`` (``--enable_model_management_api``): if ``m`` is in the config in force, its
  base path is polled again whatever the polling flags — new versions on disk load, versions
  whose load failed are tried again, versions leaving the policy unload — as Triton reloads a
  loaded model (:meth:`ModelControl.rescan <gateway.serving.registry.ModelControl.rescan>`);
  if a V2 unload took ``m`` out, its config entry comes back as it was.
  Either way the answer comes once ``m``'s versions are available or failed: a failure is
  INVALID_ARGUMENT "load failed for model 'm': ..." (Triton's). Any other name is NOT_FOUND
  "failed to load 'm', failed to poll from model repository" (Triton's text; Triton's code is
  INTERNAL).
- **unload** ``m``: the config in force without ``m`` is applied; the answer comes once ``m``'s
  versions are unloaded (its queued and running requests done). Unloading a model that is not
  served succeeds, as in Triton.
- Without ``--enable_model_management_api`` load and unload answer Triton's own refusal:
  UNAVAILABLE "explicit model load / unload is not allowed if polling is enabled" (what Triton
  says in every mode but EXPLICIT).

Loads and unloads run one at a time. A re-read ``--model_config_file`` that changed, or a
HandleReloadConfigRequest, replaces the whole config, V2 loads and unloads included.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument, NotFound, ServingError, Unavailable
from gateway.serving.registry import Models
from gateway.v2 import repository_codec
from gateway.v2.repository_codec import IndexEntry, RepositoryCall

log = logging.getLogger(__name__)

NOT_ALLOWED = (
    "explicit model load / unload is not allowed if polling is enabled (tensorgate: start it "
    "with --enable_model_management_api to let clients load and unload models)"
)


class ModelRepository:
    """Triton's model repository extension over ``models`` (its messages:
    :mod:`gateway.v2.repository_codec`); ``management``: load and unload are allowed."""

    def __init__(self, models: Models, *, management: bool) -> None:
        self._models = models
        self._management = management
        self._unloaded: dict[str, ModelSpecConfig] = {}
        """The config entries of the models a V2 unload took out, by name."""
        self._lock = asyncio.Lock()

    def index(self, *, ready_only: bool) -> list[IndexEntry]:
        """Every model configured since start and its versions' states."""
        known = {}
        for name in self._models.model_names():
            try:
                known[name] = self._models.statuses(name)
            except NotFound:
                known[name] = []
        return repository_codec.index(known, ready_only=ready_only)

    async def load(self, call: RepositoryCall) -> None:
        self._check_allowed()
        name = call.model
        async with self._lock:
            specs = self._models.specs()
            served = any(s.name == name for s in specs)
            if not served:
                spec = self._unloaded.get(name)
                if spec is None:
                    raise NotFound(
                        f"failed to load '{name}', failed to poll from model repository: it is "
                        "neither in the served config nor a model unloaded through this API"
                    )
                specs = [*specs, spec]
            log.info("V2 repository: load %s%s", name, " (polled again)" if served else "")
            try:
                await (self._models.rescan(name) if served else self._models.apply(specs))
            except ServingError as exc:
                raise InvalidArgument(f"load failed for model '{name}': {exc.message}") from None
            finally:
                if any(s.name == name for s in self._models.specs()):
                    self._unloaded.pop(name, None)

    async def unload(self, call: RepositoryCall) -> None:
        self._check_allowed()
        name = call.model
        async with self._lock:
            specs = self._models.specs()
            gone = [s for s in specs if s.name == name]
            if not gone:
                return
            log.info("V2 repository: unload %s", name)
            await self._models.apply([s for s in specs if s.name != name])
            self._unloaded[name] = gone[0]

    def _check_allowed(self) -> None:
        if not self._management:
            raise Unavailable(NOT_ALLOWED)
