"""The Open Inference Protocol's operations over the serving core, shared by both adapters.

Plain values in, plain values out: the gRPC servicer (:mod:`gateway.v2.grpc`) and the REST routes
(:mod:`gateway.v2.rest.routes`) read their wire forms with the codecs, call a
:class:`DataPlane` method and write the answer back. What it adds to the core is V2's reading of
a request:

- a model is one signature (the ``signature_name`` parameter's, else the default of
  :func:`gateway.v2.metadata.default_signature`); a version string is a version or a label
  (:mod:`gateway.v2.version_strings`);
- a model or version that does not serve is NOT_FOUND with Triton's texts; an input whose datatype
  is not the model's is INVALID_ARGUMENT with V2 datatype names (the core's one validation,
  said V2's way: :func:`gateway.v2.errors.datatype_mismatch`);
- readiness: the server is ready when every configured model is; a model version is ready when a
  request naming it would be routed (an unknown model is "not ready", never an error: Triton's);
- statistics come from what the batch queues' observers keep per version
  (:mod:`gateway.observability.model_stats`, on while metrics are): all zeros when off.

Inference goes through :meth:`ServingCore.predict` like TF Serving's Predict: the same batch
queue per (servable, signature), so V2 and TF Serving requests for one model share batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from gateway.errors import NotFound, ServingError
from gateway.observability.model_stats import ModelStats
from gateway.serving.core import InputsDecoder, ModelRef, PredictEncoder, ServingCore
from gateway.serving.registry import Servable, State
from gateway.serving.signature import DtypeMismatch
from gateway.transport.auth import AdminAccess
from gateway.v2 import errors, metadata, statistics, version_strings
from gateway.v2.call import InferCall
from gateway.v2.declared import Limits
from gateway.v2.model_control import ModelRepository
from gateway.v2.repository_codec import RepositoryCall
from gateway.v2.statistics import ModelFigures
from gateway.v2.version_strings import Target

R = TypeVar("R")


@dataclass(frozen=True)
class V2Options:
    """What the V2 adapters read of the flags. ``max_elements``: ``--max_tensor_elements``;
    ``max_request_bytes``: ``--max_request_bytes`` (None: unbounded); ``management``:
    ``--enable_model_management_api`` (repository load and unload); ``admin``: who may load and
    unload (``--auth_*``); ``version``: tensorgate's version, as server metadata names it."""

    max_elements: int
    max_request_bytes: int | None = None
    management: bool = False
    version: str = "unknown"
    admin: AdminAccess = field(default_factory=AdminAccess)


class DataPlane:
    """V2's operations over ``core``; ``stats``: the per-version statistics (None: metrics off);
    ``repository``: the repository extension (default: over ``core.models``; a front end of
    several forwards load and unload to the supervisor's)."""

    def __init__(
        self,
        core: ServingCore,
        options: V2Options,
        stats: ModelStats | None = None,
        repository: ModelRepository | None = None,
    ) -> None:
        self._core = core
        self.options = options
        self.limits = Limits(options.max_elements, options.max_request_bytes)
        self.repository = repository or ModelRepository(core.models, management=options.management)
        self._stats = stats

    # -- health and metadata --------------------------------------------------------------------
    def ready(self) -> bool:
        """Every configured model has an available version."""
        return self._core.ready()

    def model_ready(self, name: str, version: str) -> bool:
        try:
            self.servable(version_strings.target(name, version))
        except ServingError:
            return False
        return True

    def servable(self, target: Target) -> Servable:
        """The servable ``target`` names; NOT_FOUND with Triton's texts."""
        try:
            return self._core.servable(ModelRef(target.name, target.version, target.label))
        except NotFound:
            raise self._unknown(target) from None

    def model_metadata(self, name: str, version: str) -> tuple[Servable, list[int]]:
        """The servable and its model's available versions."""
        servable = self.servable(version_strings.target(name, version))
        return servable, self._available(servable.model)

    # -- inference ------------------------------------------------------------------------------
    async def infer(
        self,
        call: InferCall,
        decode: InputsDecoder,
        encode: PredictEncoder[R],
        deadline: float | None,
    ) -> R:
        """Run ``call`` through the core (``deadline``: ``time.monotonic()`` seconds, None: none;
        ``encode`` runs while the outputs are readable)."""
        target = call.target
        ref = ModelRef(target.name, target.version, target.label)
        try:
            servable = self._core.servable(ref)
            name = call.options.signature_name
            signature = metadata.signature_for(target.name, servable.signatures, name)
            return await self._core.run(
                servable, signature, decode, encode, call.output_filter(), deadline
            )
        except NotFound:
            raise self._unknown(target) from None
        except DtypeMismatch as exc:
            raise errors.datatype_mismatch(exc) from None

    # -- the repository extension: changes only the admin credential may make --------------------
    async def load(self, call: RepositoryCall, authorization: str | None) -> None:
        """Repository load ``call``, by a caller presenting ``authorization`` (its bearer
        token's header value; None: none)."""
        self._may_change(authorization)
        await self.repository.load(call)

    async def unload(self, call: RepositoryCall, authorization: str | None) -> None:
        """Repository unload ``call`` (as :meth:`load`)."""
        self._may_change(authorization)
        await self.repository.unload(call)

    def _may_change(self, authorization: str | None) -> None:
        """With management on, only the admin credential changes what is served (off, the
        repository answers its own refusal)."""
        if self.options.management:
            self.options.admin.check(authorization)

    # -- statistics -----------------------------------------------------------------------------
    def statistics(self, name: str, version: str) -> list[ModelFigures]:
        """Every available version's figures (``name`` ""), a model's, or one version's."""
        if not name:
            pairs = [(m, v) for m in self._core.models.model_names() for v in self._available(m)]
        else:
            target = version_strings.target(name, version)
            if target.version is None and target.label is None:
                found = self._available(name)
                if not found:
                    raise self._unknown(target)
            else:
                found = [self.servable(target).version]
            pairs = [(name, v) for v in found]
        stats = self._stats
        return [
            statistics.figures(m, v, None if stats is None else stats.get(m, str(v)))
            for m, v in pairs
        ]

    # -- helpers --------------------------------------------------------------------------------
    def _available(self, name: str) -> list[int]:
        try:
            statuses = self._core.status(name)
        except NotFound:
            return []
        return [s.version for s in statuses if s.state == State.AVAILABLE]

    def _unknown(self, target: Target) -> NotFound:
        configured = any(s.name == target.name for s in self._core.models.specs())
        unknown = version_strings.unknown(target, no_versions=configured)
        reason = self._why_not(target.name) if configured else ""
        return NotFound(f"{unknown.message}: {reason}") if reason else unknown

    def _why_not(self, name: str) -> str:
        """Why a configured model does not serve: the error of its newest version that failed
        to load, or why it has no version at all ("" when nothing says)."""
        try:
            statuses = self._core.status(name)
        except NotFound as exc:
            plain = f"Could not find any versions of model {name}"
            return "" if exc.message == plain else exc.message
        failed = [s for s in statuses if s.error is not None and s.state != State.AVAILABLE]
        if not failed:
            return ""
        newest = max(failed, key=lambda s: s.version)
        error = newest.error
        return (
            "" if error is None else f"version {newest.version}: {error.code.name}: {error.message}"
        )
