"""The model registry as the supervisor pushes it to every front end: one JSON snapshot.

The supervisor's model lifecycle (:class:`~gateway.models.manager.ModelManager`) changes the
registry; each front end serves from a read-only copy. :func:`snapshot_to_wire` reads a registry
through its public protocol only (:class:`~gateway.serving.registry.Models`: names, config in force,
version states, servables) and :func:`snapshot_from_wire` gives back the same values. A snapshot
holds::

    {"serial": 7,
     "specs": [{"name": "mlp", "base_path": "/m/mlp", "platform": "onnx", "policy": "all",
                "num_versions": 0, "versions": [], "labels": {"stable": 1}}, ...],
     "models": [{"name": "mlp", "active": true, "labels": {"stable": 1},
                 "versions": [{"version": 1, "state": 30, "error": null,
                               "warmup": [[0, 2, 0.004]]}, ...],
                 "servables": [{"version": 1, "key": "mlp:1", "platform": "onnx",
                                "directory": "/m/mlp/1", "signatures": {"serving_default":
                                 {"inputs": [...], "outputs": [...], "method_name": "...",
                                  "check_shapes": true, "encoded_images": true,
                                  "unservable": "", "definition": ""}}}],
                 "missing": ""},
                ...]}

``missing`` is the registry's NOT_FOUND text for a model with no version (a base path in an
object store that cannot be listed says why).

A version is in ``servables`` exactly while it is AVAILABLE (the manager adds and removes both in
one step); ``active`` is whether the config in force lists the model. Which workers serve a
servable is not in the snapshot: the front end learns it from the routes
(:mod:`gateway.supervisor.fanout`). ``serial`` grows with every snapshot the supervisor sends.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.config.model_config import ModelSpecConfig
from gateway.config.request_logging import RequestLogging
from gateway.errors import NotFound, from_wire
from gateway.serving.registry import Models, Servable, State, VersionStatus
from gateway.serving.signature import Signature, TensorSpec
from gateway.worker_channel.warmup_runs import WarmupReport


@dataclass(frozen=True)
class ModelSnapshot:
    """One model as the snapshot holds it (what a front end sees)."""

    name: str
    active: bool
    labels: Mapping[str, int]
    versions: tuple[VersionStatus, ...]
    servables: Mapping[int, Servable]
    missing: str = ""
    """Why the model has no version, as the registry said it (its NOT_FOUND text)."""


@dataclass(frozen=True)
class Snapshot:
    """The registry at one moment: the config in force and every model configured since start."""

    serial: int
    specs: tuple[ModelSpecConfig, ...]
    models: Mapping[str, ModelSnapshot]


EMPTY = Snapshot(0, (), {})


def snapshot_to_wire(models: Models, serial: int) -> dict[str, Any]:
    """The snapshot of ``models`` (see the module doc)."""
    specs = models.specs()
    active = {s.name: s for s in specs}
    out = []
    for name in models.model_names():
        missing = ""
        try:
            statuses = models.statuses(name)
        except NotFound as exc:
            statuses, missing = [], exc.message
        spec = active.get(name)
        servables = [
            _servable(models.resolve(name, s.version))
            for s in statuses
            if s.state == State.AVAILABLE and spec is not None
        ]
        out.append(
            {
                "name": name,
                "active": spec is not None,
                "labels": dict(spec.labels) if spec is not None else {},
                "versions": [_status(s) for s in statuses],
                "servables": servables,
                "missing": missing,
            }
        )
    return {"serial": serial, "specs": [spec_to_wire(s) for s in specs], "models": out}


def snapshot_from_wire(message: Mapping[str, Any]) -> Snapshot:
    """The values :func:`snapshot_to_wire` read (KeyError / TypeError / ValueError when
    malformed)."""
    models = {}
    for model in message["models"]:
        servables = {}
        for item in model["servables"]:
            servable = Servable(
                model=model["name"],
                version=int(item["version"]),
                key=str(item["key"]),
                platform=str(item["platform"]),
                signatures={n: _signature(n, s) for n, s in item["signatures"].items()},
                directory=str(item["directory"]),
                runtime=str(item.get("runtime", "")),
            )
            servables[servable.version] = servable
        models[model["name"]] = ModelSnapshot(
            name=model["name"],
            active=bool(model["active"]),
            labels={str(k): int(v) for k, v in model["labels"].items()},
            versions=tuple(_version(v) for v in model["versions"]),
            servables=servables,
            missing=str(model.get("missing", "")),
        )
    specs = tuple(spec_from_wire(s) for s in message["specs"])
    return Snapshot(int(message["serial"]), specs, models)


def spec_to_wire(spec: ModelSpecConfig) -> dict[str, Any]:
    """A config entry as JSON (for snapshots and HandleReloadConfigRequest forwarded)."""
    fields = dataclasses.asdict(spec)
    fields["versions"] = list(spec.versions)
    fields["labels"] = dict(spec.labels)
    return fields


def spec_from_wire(data: Mapping[str, Any]) -> ModelSpecConfig:
    return ModelSpecConfig(
        name=str(data["name"]),
        base_path=str(data["base_path"]),
        platform=str(data["platform"]),
        policy=data["policy"],
        num_versions=int(data["num_versions"]),
        versions=tuple(int(v) for v in data["versions"]),
        labels={str(k): int(v) for k, v in data["labels"].items()},
        logging=None if data.get("logging") is None else RequestLogging(**data["logging"]),
    )


def _status(status: VersionStatus) -> dict[str, Any]:
    return {
        "version": status.version,
        "state": int(status.state),
        "error": None if status.error is None else status.error.to_wire(),
        "warmup": [[r.worker, r.runs, r.seconds] for r in status.warmup],
    }


def _version(data: Mapping[str, Any]) -> VersionStatus:
    error = data["error"]
    return VersionStatus(
        version=int(data["version"]),
        state=State(int(data["state"])),
        error=None if error is None else from_wire(error["code"], error["message"]),
        warmup=tuple(WarmupReport(int(w), int(r), float(s)) for w, r, s in data["warmup"]),
    )


def _servable(servable: Servable) -> dict[str, Any]:
    return {
        "version": servable.version,
        "key": servable.key,
        "platform": servable.platform,
        "directory": servable.directory,
        "runtime": servable.runtime,
        "signatures": {n: _signature_wire(s) for n, s in servable.signatures.items()},
    }


def _signature_wire(signature: Signature) -> dict[str, Any]:
    return {
        "inputs": [_tensor(t) for t in signature.inputs],
        "outputs": [_tensor(t) for t in signature.outputs],
        "method_name": signature.method_name,
        "check_shapes": signature.check_shapes,
        "encoded_images": signature.encoded_images,
        "unservable": signature.unservable,
        "definition": base64.b64encode(signature.definition).decode(),
    }


def _tensor(spec: TensorSpec) -> dict[str, Any]:
    shape = None if spec.shape is None else list(spec.shape)
    return {"name": spec.name, "dtype": spec.dtype, "shape": shape, "tensor_name": spec.tensor_name}


def _signature(name: str, data: Mapping[str, Any]) -> Signature:
    return Signature.from_wire(
        name,
        data,
        check_shapes=bool(data["check_shapes"]),
        encoded_images=bool(data["encoded_images"]),
    )
