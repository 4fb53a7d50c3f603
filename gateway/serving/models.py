"""The model manager: which versions exist on disk, which are served, and their states.

Layout: ``<base_path>/<integer version>/model.onnx`` (ONNX) or ``.../saved_model.pb`` (a TensorFlow
SavedModel; ``model_platform`` in the config wins over this detection). The version policy picks
the aspired versions (``latest`` N — default 1 —, ``all``, ``specific``). Aspired versions are
loaded on every worker before versions leaving the policy are unloaded, so a swap never leaves the
model without a serving version. Version states follow TF Serving's ``ModelVersionStatus.State``
(START, LOADING, AVAILABLE, UNLOADING, END).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.config.model_config import ModelSpecConfig
from gateway.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ServingError,
    servable_not_found,
)
from gateway.parallel.pool import LoadSpec, WorkerPool
from gateway.serving.signature import DEFAULT_SIGNATURE, Signature

log = logging.getLogger(__name__)

ONNX_FILE = "model.onnx"
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")


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
    platform: str
    signatures: dict[str, Signature]


@dataclass
class VersionStatus:
    """State of one version and the error that ended it, if any."""

    version: int
    state: State
    error: ServingError | None = None


@dataclass
class _Model:
    spec: ModelSpecConfig
    versions: dict[int, VersionStatus] = field(default_factory=dict)
    servables: dict[int, Servable] = field(default_factory=dict)


class ModelManager:
    """Keeps the served versions of every configured model in line with disk and policy."""

    def __init__(
        self,
        pool: WorkerPool,
        specs: Sequence[ModelSpecConfig],
        *,
        intra_op: int,
        inter_op: int,
        saved_model_tags: Sequence[str] = ("serve",),
        on_change: Callable[[], None] | None = None,
        before_load: Callable[[str, int, str], None] | None = None,
        before_unload: Callable[[Servable], Awaitable[None]] | None = None,
    ) -> None:
        """``on_change``: called whenever a version's state changes. ``before_load``: called with
        (model, version, version directory) before a load; a ServingError it raises fails that
        version (e.g. a bad per-model batching_params.pbtxt). ``before_unload``: awaited after a
        servable stops taking new requests and before it is unloaded (its queues drain)."""
        self._pool = pool
        self._tags = tuple(saved_model_tags)
        self._intra_op = intra_op
        self._inter_op = inter_op
        self._models: dict[str, _Model] = {s.name: _Model(s) for s in specs}
        self._lock = asyncio.Lock()
        self._on_change = on_change
        self._before_load = before_load
        self._before_unload = before_unload

    # -- queries --------------------------------------------------------------------------------
    def model_names(self) -> list[str]:
        return list(self._models)

    def is_available(self, name: str) -> bool:
        """True when some version of ``name`` is loaded on at least one live worker."""
        model = self._models.get(name)
        if model is None:
            return False
        return any(self._pool.hosts(s.key) for s in model.servables.values())

    def all_available(self) -> bool:
        return all(self.is_available(name) for name in self._models)

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        """The servable for a ModelSpec: latest available, a specific version, or a label.

        Raises NotFound with TF Serving's "Servable not found for request: ..." texts.
        """
        if version is not None and label is not None:
            raise InvalidArgument("ModelSpec has both version and version_label set")
        model = self._models.get(name)
        if model is None:
            raise servable_not_found(name, version, label)
        if label is not None:
            labelled = model.spec.labels.get(label)
            if labelled is None:
                raise InvalidArgument(f"Unrecognized servable version label: {label}")
            version = labelled
        if version is None:
            if not model.servables:
                raise servable_not_found(name)
            return model.servables[max(model.servables)]
        servable = model.servables.get(version)
        if servable is None:
            raise servable_not_found(name, version)
        return servable

    def statuses(self, name: str, version: int | None = None) -> list[VersionStatus]:
        """Version states for GetModelStatus (TF Serving's NOT_FOUND texts when unknown)."""
        model = self._models.get(name)
        if model is None or not model.versions:
            raise NotFound(f"Could not find any versions of model {name}")
        if version is None:
            return [model.versions[v] for v in sorted(model.versions)]
        status = model.versions.get(version)
        if status is None:
            raise NotFound(f"Could not find version {version} of model {name}")
        return [status]

    # -- reconciliation -------------------------------------------------------------------------
    async def reconcile(self) -> None:
        """Scan disk once and load / unload versions so that each model serves its policy."""
        async with self._lock:
            for model in self._models.values():
                await self._reconcile_model(model)

    async def unload_all(self) -> None:
        """Unload every servable (shutdown)."""
        async with self._lock:
            for model in self._models.values():
                for version in sorted(model.servables):
                    await self._unload(model, version)

    async def _reconcile_model(self, model: _Model) -> None:
        on_disk = _versions_on_disk(model.spec.base_path)
        aspired = model.spec.select_versions(on_disk)
        for version in aspired:
            if version in model.servables:
                continue
            status = model.versions.get(version)
            if status is not None and status.state == State.END and status.error is not None:
                continue  # failed before; do not retry in a loop
            await self._load(model, version, on_disk[version])
        if any(v in model.servables for v in aspired) or not aspired:
            for version in sorted(model.servables):
                if version not in aspired:
                    await self._unload(model, version)

    async def _load(self, model: _Model, version: int, directory: str) -> None:
        name = model.spec.name
        status = VersionStatus(version, State.LOADING)
        model.versions[version] = status
        self._changed()
        try:
            if self._before_load is not None:
                self._before_load(name, version, directory)
            platform = _platform(model.spec.platform, directory)
            key = f"{name}:{version}"
            spec = LoadSpec(
                key=key,
                path=os.path.join(directory, ONNX_FILE) if platform == "onnx" else directory,
                platform=platform,
                intra_op=self._intra_op,
                inter_op=self._inter_op,
                tags=self._tags,
            )
            wire = await self._pool.load(spec)
        except ServingError as exc:
            log.error("failed to load %s version %d: %s", name, version, exc.message)
            status.state, status.error = State.END, exc
            self._changed()
            return
        signatures = _signatures(wire, check_shapes=platform != "tensorflow")
        model.servables[version] = Servable(name, version, key, platform, signatures)
        status.state = State.AVAILABLE
        log.info("serving %s version %d (%s)", name, version, platform)
        self._changed()

    async def _unload(self, model: _Model, version: int) -> None:
        servable = model.servables.pop(version)
        status = model.versions[version]
        status.state = State.UNLOADING
        self._changed()
        if self._before_unload is not None:
            await self._before_unload(servable)
        await self._pool.unload(servable.key)
        status.state = State.END
        log.info("unloaded %s version %d", model.spec.name, version)
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


def _versions_on_disk(base_path: str) -> dict[int, str]:
    """Integer-named subdirectories of ``base_path`` (other entries are ignored)."""
    try:
        entries = os.listdir(base_path)
    except OSError as exc:
        log.warning("cannot list model base path %s: %s", base_path, exc.strerror)
        return {}
    found: dict[int, str] = {}
    for entry in entries:
        path = os.path.join(base_path, entry)
        if entry.isdigit() and os.path.isdir(path):
            found[int(entry)] = path
    return found


def _platform(configured: str, directory: str) -> str:
    """The platform to load ``directory`` with; configured wins, else detected from files."""
    has_onnx = os.path.isfile(os.path.join(directory, ONNX_FILE))
    has_tf = any(os.path.isfile(os.path.join(directory, f)) for f in SAVED_MODEL_FILES)
    platform = configured or ("onnx" if has_onnx else "tensorflow" if has_tf else "")
    if not platform:
        raise FailedPrecondition(f"no {ONNX_FILE} or saved_model.pb in {directory}")
    if platform == "onnx" and not has_onnx:
        raise FailedPrecondition(f"model_platform is onnx but {directory} has no {ONNX_FILE}")
    if platform == "tensorflow" and not has_tf:
        raise NotFound(
            "Could not find SavedModel .pb or .pbtxt at supplied export directory path: "
            + directory
        )
    return platform


def _signatures(wire: Mapping[str, Any], *, check_shapes: bool) -> dict[str, Signature]:
    """Signatures from a worker's ``load`` reply ``signature``: one (ONNX, served as
    ``serving_default``) or, from TensorFlow, ``{"signatures": {name: {...}}}``. Input shapes
    are checked with ``check_shapes`` (see :attr:`Signature.check_shapes`)."""
    by_name = wire.get("signatures")
    if by_name is None:
        signature = Signature.from_wire(DEFAULT_SIGNATURE, wire, check_shapes=check_shapes)
        return {DEFAULT_SIGNATURE: signature}
    return {
        name: Signature.from_wire(name, data, check_shapes=check_shapes)
        for name, data in by_name.items()
    }
