"""The Open Inference Protocol's REST API (``/v2``) as an OpenAPI 3.1 document, from the models
served now (``--enable_api_docs``: :mod:`gateway.transport.http.docs` serves it).

Server paths: ``GET /v2`` (server metadata), ``/v2/health/live``, ``/v2/health/ready``. Each
model has its own paths with schemas derived from its default signature (``gateway/v2/README.md``:
the V2 datatype of each input, the rank of its shape): ``GET /v2/models/{m}`` (metadata),
``/v2/models/{m}/ready``, and ``POST /v2/models/{m}/infer``, whose JSON body lists each input
(``name``, ``datatype`` and ``shape`` as the signature says, ``data`` as a flat array of the
datatype's JSON values) and whose answer lists the outputs likewise. The binary data extension is
not described (its bodies are not JSON). Every failure is ``{"error": "..."}`` with V2's status
(:data:`~gateway.transport.http.docs.ERRORS`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gateway.errors import NotFound
from gateway.serving.registry import Registry
from gateway.serving.signature import TensorSpec
from gateway.transport.http.docs import number_schema, operation, skeleton
from gateway.v2.datatypes import datatype_of
from gateway.v2.metadata import default_signature

OBJECT = {"type": "object"}
METADATA = {
    "type": "object",
    "required": ["name", "versions", "platform", "inputs", "outputs"],
    "properties": {
        "name": {"type": "string"},
        "versions": {"type": "array", "items": {"type": "string"}},
        "platform": {"type": "string"},
        "inputs": {"type": "array", "items": OBJECT},
        "outputs": {"type": "array", "items": OBJECT},
    },
}


def _flag(name: str) -> dict[str, Any]:
    return {"type": "object", "required": [name], "properties": {name: {"type": "boolean"}}}


def _tensor(spec: TensorSpec, *, request: bool) -> dict[str, Any]:
    """One input (``request``) or output tensor object of ``spec``."""
    if spec.dtype == "string":
        value: dict[str, Any] = {"type": "string"}
    else:
        value = number_schema(spec.dtype, answer=not request)
    if spec.shape is None:
        shape: dict[str, Any] = {"type": "array", "items": {"type": "integer", "minimum": 0}}
    else:
        dims = [{"const": d} if d >= 0 else {"type": "integer", "minimum": 1} for d in spec.shape]
        shape = {"type": "array", "prefixItems": dims, "minItems": len(dims), "items": False}
    if not request:
        shape = {"type": "array", "items": {"type": "integer", "minimum": 0}}
    return {
        "type": "object",
        "required": ["name", "datatype", "shape", "data"],
        "properties": {
            "name": {"const": spec.name},
            "datatype": {"const": datatype_of(spec.dtype)},
            "shape": shape,
            "data": {"type": "array", "items": value},
        },
    }


def _listed(specs: tuple[TensorSpec, ...], *, request: bool) -> dict[str, Any]:
    """An array of exactly one object per tensor (in any order on a request)."""
    items = [_tensor(s, request=request) for s in specs]
    if not items:
        return {"type": "array"}
    schema: dict[str, Any] = {"type": "array", "items": {"anyOf": items}}
    if request:
        schema |= {"minItems": len(items), "maxItems": len(items)}
    return schema


def document(models: Registry) -> dict[str, Any]:
    """The ``/v2`` document of the models ``models`` serves now (see the module doc)."""
    server = {"type": "object", "required": ["name", "version", "extensions"]}
    paths: dict[str, Any] = {
        "/v2": {"get": operation("Server metadata", server)},
        "/v2/health/live": {"get": operation("Server live", _flag("live"))},
        "/v2/health/ready": {"get": operation("Server ready", _flag("ready"))},
    }
    for name in models.model_names():
        try:
            servable = models.resolve(name)
        except NotFound:  # configured, no version available yet
            continue
        signature = default_signature(servable.signatures)
        base = f"/v2/models/{quote(name, safe='')}"
        paths[base] = {"get": operation("Model metadata", METADATA)}
        paths[f"{base}/ready"] = {"get": operation("Model ready", _flag("ready"))}
        if signature is None or signature.unservable:
            continue
        body = {
            "type": "object",
            "required": ["inputs"],
            "properties": {
                "id": {"type": "string"},
                "inputs": _listed(signature.inputs, request=True),
            },
        }
        answer = {
            "type": "object",
            "required": ["model_name", "outputs"],
            "properties": {
                "model_name": {"type": "string"},
                "model_version": {"type": "string"},
                "id": {"type": "string"},
                "outputs": _listed(signature.outputs, request=False),
            },
        }
        paths[f"{base}/infer"] = {"post": operation("Model infer", answer, body)}
    return skeleton(
        "Open Inference Protocol (KServe V2) REST API (tensorgate)",
        "The /v2 API: server health and metadata; metadata, readiness and inference per model.",
        paths,
    )
