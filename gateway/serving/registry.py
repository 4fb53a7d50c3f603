"""What the request core knows of the models: a read-only registry of servables and states.

The model lifecycle (:mod:`gateway.models`) owns the registry and changes it; the request core, the
batch queues and the protocol adapters only read it through :class:`Registry` (the values here:
:class:`Servable`, :class:`VersionStatus`, :class:`State`), and ask for a new config through
:class:`ModelControl`. Nothing in :mod:`gateway.serving` imports :mod:`gateway.models`. With
several front ends, each front end's registry is a copy the supervisor pushes, and its control
forwards to the supervisor (:mod:`gateway.frontend.pushed_registry`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import InvalidArgument, ServingError, servable_not_found
from gateway.serving.signature import Signature
from gateway.worker_channel.warmup_runs import WarmupReport


class State(enum.IntEnum):
    """TF Serving's ``ModelVersionStatus.State`` values."""

    UNKNOWN = 0
    START = 10
    LOADING = 20
    AVAILABLE = 30
    UNLOADING = 40
    END = 50


@dataclass(frozen=True)
class Servable:
    """One loaded model version: what the core needs to validate and route a request."""

    model: str
    version: int
    key: str
    """``<model>:<version>``: the name the workers and the batch queues know it by."""
    platform: str
    """``onnx`` or ``tensorflow``."""
    signatures: dict[str, Signature]
    directory: str = ""
    """The version's directory (``<base_path>/<version dir>``)."""
    runtime: str = ""
    """The runtime and precision serving it when not the platform's own: ``openvino_fp32`` or
    ``openvino_bf16`` (as the worker compiled it); "" for ONNX Runtime / TensorFlow."""


@dataclass
class VersionStatus:
    """State of one version, the error that ended it, if any, and its warmup on each worker
    (``WarmupReport.runs`` as the worker counted them, ``seconds`` of wall time: the figures
    behind TF Serving's ``model_warmup_latency``)."""

    version: int
    state: State
    error: ServingError | None = None
    warmup: tuple[WarmupReport, ...] = ()


def pick_servable(
    name: str,
    servables: Mapping[int, Servable] | None,
    labels: Mapping[str, int],
    version: int | None = None,
    label: str | None = None,
) -> Servable:
    """The servable a ModelSpec names among a model's loaded ``servables`` (None: the model is
    not configured): the latest by default, a specific version, or a version ``label``.
    NotFound with TF Serving's "Servable not found for request: ..." texts; InvalidArgument for
    both a version and a label, or an unknown label."""
    if version is not None and label is not None:
        raise InvalidArgument("ModelSpec has both version and version_label set")
    if servables is None:
        raise servable_not_found(name, version, label)
    if label is not None:
        labelled = labels.get(label)
        if labelled is None:
            raise InvalidArgument(f"Unrecognized servable version label: {label}")
        version = labelled
    if version is None:
        if not servables:
            raise servable_not_found(name)
        return servables[max(servables)]
    servable = servables.get(version)
    if servable is None:
        raise servable_not_found(name, version)
    return servable


class Registry(Protocol):
    """Read-only view of the served models (kept by
    :class:`~gateway.models.manager.ModelManager`)."""

    def model_names(self) -> list[str]:
        """Every model configured since start, in config order (those a later config removed
        included: their states stay visible)."""
        ...

    def is_available(self, name: str) -> bool:
        """True when ``name`` is configured and has a version routed to a live worker."""
        ...

    def all_available(self) -> bool:
        """True when every configured model is available."""
        ...

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        """The servable a request names (latest available by default). NotFound otherwise."""
        ...

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        """Version states of ``name`` (one version's when given). NotFound otherwise."""
        ...


class ModelControl(Protocol):
    """Changes to the served models (HandleReloadConfigRequest, V2's repository extension)."""

    def specs(self) -> list[ModelSpecConfig]:
        """The config in force: the served models' specs, in config order."""
        ...

    async def apply(self, specs: Sequence[ModelSpecConfig]) -> None:
        """Serve exactly ``specs``; returns once new and changed models are available or failed
        and dropped ones unloaded. Raises ServingError when the config is refused (nothing
        changed) or names new models that did not become available."""
        ...

    async def rescan(self, name: str) -> None:
        """Poll the served model ``name``'s base path again now (new versions load, versions
        whose load failed get a fresh try); returns once those loads are done. Raises
        NotFound when ``name`` is not served, ServingError naming the versions that failed."""
        ...


class Models(Registry, ModelControl, Protocol):
    """The registry and its control together (what the request core is given)."""


def available_servables(registry: Registry) -> list[Servable]:
    """Every AVAILABLE version of every model ``registry`` knows, in model order."""
    found = []
    for name in registry.model_names():
        try:
            statuses = registry.statuses(name)
        except ServingError:
            continue
        for status in statuses:
            if status.state is State.AVAILABLE:
                try:
                    found.append(registry.resolve(name, status.version))
                except ServingError:
                    continue
    return found
