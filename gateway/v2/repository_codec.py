"""The model repository extension's messages: index entries, load / unload requests (gRPC, REST).

The extension itself is :class:`~gateway.v2.model_control.ModelRepository`; its load and unload
are offered only with ``--enable_model_management_api`` (as TF Serving's HandleReloadConfigRequest).

**Index** (``RepositoryIndex``; REST ``POST /v2/repository/index`` with ``{"ready": bool}``,
optional): one entry per model version the lifecycle knows, its state mapped from TF Serving's::

    [{"name": "mlp", "version": "1", "state": "READY", "reason": ""},
     {"name": "broken", "version": "3", "state": "UNAVAILABLE", "reason": "load failed: ..."}]

======================  ===================  ==============================================
TF Serving state        V2 (Triton) state    reason
======================  ===================  ==============================================
START, LOADING          LOADING              ""
AVAILABLE               READY                ""
UNLOADING               UNLOADING            ""
END                     UNAVAILABLE          the error that ended it, else "unloaded"
UNKNOWN                 UNKNOWN              ""
======================  ===================  ==============================================

``ready: true`` keeps only READY entries. **Load / unload** (``RepositoryModelLoad`` /
``RepositoryModelUnload``; REST ``POST /v2/repository/models/{m}/load|unload``, body empty or
``{"parameters": {...}}``): a model name and parameters. A ``repository_name`` is UNIMPLEMENTED
(one repository: Triton's text); Triton's load overrides (``config``, ``file:<path>``) are
UNIMPLEMENTED; ``unload_dependents`` (bool) is accepted (tensorgate has no dependent models);
other parameters are INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.errors import InvalidArgument
from gateway.serving.registry import State, VersionStatus
from gateway.v2 import version_strings
from gateway.v2.errors import not_supported

_STATES: Final = {
    State.UNKNOWN: "UNKNOWN",
    State.START: "LOADING",
    State.LOADING: "LOADING",
    State.AVAILABLE: "READY",
    State.UNLOADING: "UNLOADING",
    State.END: "UNAVAILABLE",
}
READY: Final = "READY"


@dataclass(frozen=True)
class IndexEntry:
    name: str
    version: str
    state: str
    reason: str = ""


@dataclass(frozen=True)
class RepositoryCall:
    """A load or unload: which model; ``unload_dependents`` as given (unload only)."""

    model: str
    unload_dependents: bool = False


def index(models: Mapping[str, Iterable[VersionStatus]], *, ready_only: bool) -> list[IndexEntry]:
    """The index entries of ``models`` (name → its version states), in the order given."""
    entries = []
    for name, statuses in models.items():
        for status in statuses:
            state = _STATES[status.state]
            if ready_only and state != READY:
                continue
            reason = ""
            if status.state == State.END:
                reason = status.error.message if status.error is not None else "unloaded"
            entries.append(
                IndexEntry(name, version_strings.version_string(status.version), state, reason)
            )
    return entries


def index_response(entries: Iterable[IndexEntry]) -> pb.RepositoryIndexResponse:
    response = pb.RepositoryIndexResponse()
    for entry in entries:
        response.models.add(
            name=entry.name, version=entry.version, state=entry.state, reason=entry.reason
        )
    return response


def index_json(entries: Iterable[IndexEntry]) -> list[dict[str, str]]:
    return [
        {"name": e.name, "version": e.version, "state": e.state, "reason": e.reason}
        for e in entries
    ]


def index_ready_only(document: Any) -> bool:
    """The REST index body's ``ready`` (an empty body: false)."""
    if document is None:
        return False
    if not isinstance(document, dict) or not isinstance(document.get("ready", False), bool):
        raise InvalidArgument("the index request must be an object with an optional bool 'ready'")
    return bool(document.get("ready", False))


def call_from_proto(
    request: pb.RepositoryModelLoadRequest | pb.RepositoryModelUnloadRequest, *, unload: bool
) -> RepositoryCall:
    if request.repository_name:
        raise not_supported("'repository_name' specification")
    values = {}
    for name, param in request.parameters.items():
        choice = param.WhichOneof("parameter_choice")
        values[name] = None if choice is None else getattr(param, choice)
    return _call(request.model_name, values, unload=unload)


def call_from_json(model: str, document: Any, *, unload: bool) -> RepositoryCall:
    """A REST load or unload body (None for an empty body)."""
    if document is None:
        return _call(model, {}, unload=unload)
    params = document.get("parameters", {}) if isinstance(document, dict) else None
    if not isinstance(params, dict):
        raise InvalidArgument("the request must be an object with an optional 'parameters' object")
    return _call(model, params, unload=unload)


def _call(model: str, values: Mapping[str, Any], *, unload: bool) -> RepositoryCall:
    dependents = False
    for name, value in values.items():
        if not unload and (name == "config" or name.startswith("file:")):
            raise not_supported(f"load parameter '{name}' (loading a model from overrides)")
        if unload and name == "unload_dependents":
            if not isinstance(value, bool):
                raise InvalidArgument("parameter 'unload_dependents' must be a boolean")
            dependents = value
            continue
        raise InvalidArgument(f"unknown parameter '{name}' for {'unload' if unload else 'load'}")
    return RepositoryCall(model, dependents)
