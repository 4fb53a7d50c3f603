"""TF Serving's REST API (``/v1``) as an OpenAPI 3.1 document, from the models served now
(``--enable_api_docs``: :mod:`gateway.transport.http.docs` serves it).

Each model has its own paths, with schemas derived from its signatures: ``GET
/v1/models/{m}`` (status), ``GET /v1/models/{m}/metadata``, ``POST /v1/models/{m}:predict``
(the row format ``{"instances": [...]}`` and the columnar ``{"inputs": ...}`` of each signature:
one item per input row, nested arrays of the signature's dimensions, an object of named inputs
when it has several; strings as text or ``{"b64": ...}``; the answer ``{"predictions": [...]}`` or
``{"outputs": ...}`` likewise), and ``POST /v1/models/{m}:classify`` / ``:regress`` (tf.Example
bodies). The same operations under ``/versions/{version}`` and ``/labels/{label}`` are written
once, as templates over any model. Every failure is ``{"error": "..."}`` with TF Serving's status
(:data:`~gateway.transport.http.docs.ERRORS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from gateway.errors import NotFound
from gateway.serving.registry import Registry
from gateway.serving.signature import Signature, TensorSpec
from gateway.transport.http.docs import number_schema, operation, skeleton

JSON_OBJECT = {"type": "object"}
B64 = {"type": "object", "required": ["b64"], "properties": {"b64": {"type": "string"}}}


def value_schema(spec: TensorSpec, *, answer: bool) -> dict[str, Any]:
    if spec.dtype == "string":
        return {"anyOf": [{"type": "string"}, B64]}
    return number_schema(spec.dtype, answer=answer)


def tensor_schema(spec: TensorSpec, *, row: bool, answer: bool = False) -> dict[str, Any]:
    """One tensor's JSON value (without its batch dimension when ``row``): nested arrays, one
    per dimension (a fixed one has exactly that many items; a dynamic one at least one in a
    request, any number in an ``answer``)."""
    if spec.shape is None:
        return {}
    schema = value_schema(spec, answer=answer)
    dims = spec.shape[1:] if row and spec.shape else spec.shape
    for size in reversed(dims):
        bound = {"minItems": size, "maxItems": size} if size >= 0 else {"minItems": int(not answer)}
        schema = {"type": "array", "items": schema, **bound}
    return schema


def _named(specs: Iterable[TensorSpec], *, row: bool, answer: bool = False) -> dict[str, Any]:
    specs = list(specs)
    if len(specs) == 1:
        return tensor_schema(specs[0], row=row, answer=answer)
    return {
        "type": "object",
        "required": [s.name for s in specs],
        "properties": {s.name: tensor_schema(s, row=row, answer=answer) for s in specs},
    }


def _predict_bodies(signature: Signature, default: bool) -> tuple[list[Any], list[Any]]:
    """The request and response schemas of ``signature``: row and columnar format each."""
    name = {"signature_name": {"const": signature.name}}
    required = [] if default else ["signature_name"]
    instances = {"type": "array", "minItems": 1, "items": _named(signature.inputs, row=True)}
    requests = [
        {
            "type": "object",
            "required": ["instances", *required],
            "properties": {**name, "instances": instances},
        },
        {
            "type": "object",
            "required": ["inputs", *required],
            "properties": {**name, "inputs": _named(signature.inputs, row=False)},
        },
    ]
    predictions = {"type": "array", "items": _named(signature.outputs, row=True, answer=True)}
    responses = [
        {"type": "object", "required": ["predictions"], "properties": {"predictions": predictions}},
        {
            "type": "object",
            "required": ["outputs"],
            "properties": {"outputs": _named(signature.outputs, row=False, answer=True)},
        },
    ]
    return requests, responses


EXAMPLES_BODY = {
    "type": "object",
    "required": ["examples"],
    "properties": {
        "signature_name": {"type": "string"},
        "context": JSON_OBJECT,
        "examples": {"type": "array", "items": JSON_OBJECT},
    },
}
RESULT = {"type": "object", "required": ["result"], "properties": {"result": {"type": "array"}}}
STATUS = {
    "type": "object",
    "required": ["model_version_status"],
    "properties": {"model_version_status": {"type": "array", "items": JSON_OBJECT}},
}
METADATA = {
    "type": "object",
    "required": ["model_spec", "metadata"],
    "properties": {"model_spec": JSON_OBJECT, "metadata": JSON_OBJECT},
}


def _model_paths(base: str, signatures: dict[str, Signature]) -> dict[str, Any]:
    requests: list[Any] = []
    responses: list[Any] = []
    for signature in signatures.values():
        if signature.unservable:
            continue
        asked, answered = _predict_bodies(signature, signature.name == "serving_default")
        requests += asked
        responses += answered
    predict = operation(
        "Predict",
        {"anyOf": responses} if responses else JSON_OBJECT,
        {"anyOf": requests} if requests else JSON_OBJECT,
    )
    return {
        base: {"get": operation("Model status", STATUS)},
        f"{base}/metadata": {"get": operation("Model metadata", METADATA)},
        f"{base}:predict": {"post": predict},
        f"{base}:classify": {"post": operation("Classify", RESULT, EXAMPLES_BODY)},
        f"{base}:regress": {"post": operation("Regress", RESULT, EXAMPLES_BODY)},
    }


def _templates() -> dict[str, Any]:
    model = {"name": "model_name", "in": "path", "required": True, "schema": {"type": "string"}}
    paths: dict[str, Any] = {}
    for part, schema in (
        ("versions/{version}", {"type": "integer", "minimum": 0}),
        ("labels/{label}", {"type": "string", "pattern": "^[^/:]+$"}),
    ):
        where = {"name": part.split("/")[1][1:-1], "in": "path", "required": True, "schema": schema}
        for path, item in _model_paths(f"/v1/models/{{model_name}}/{part}", {}).items():
            for described in item.values():
                described["parameters"] = [model, where]
            paths[path] = item
    return paths


def document(models: Registry) -> dict[str, Any]:
    """The ``/v1`` document of the models ``models`` serves now (see the module doc)."""
    paths: dict[str, Any] = {}
    for name in models.model_names():
        try:
            servable = models.resolve(name)
        except NotFound:  # configured, no version available yet
            continue
        base = f"/v1/models/{quote(name, safe='')}"
        paths.update(_model_paths(base, dict(servable.signatures)))
    paths.update(_templates())
    return skeleton(
        "TensorFlow Serving REST API (tensorgate)",
        "TF Serving's /v1 API: status, metadata, predict, classify and regress of each model.",
        paths,
    )
