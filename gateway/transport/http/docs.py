"""The REST APIs described (``--enable_api_docs``): each protocol's OpenAPI 3.1 document at
``<prefix>/docs/openapi.json`` and a Swagger UI page at ``<prefix>/docs`` (``/v1`` for TF
Serving's API, ``/v2`` for the Open Inference Protocol's).

A document is built at each request from the models served then (its protocol's builder:
:mod:`gateway.tfserving.rest.openapi`, :mod:`gateway.v2.rest.openapi`), so a model loaded later
is in the next one. The page is Swagger UI 5 (``swagger-ui-dist`` from npm, vendored in
``swagger_ui/`` with its licence: no CDN, nothing fetched at run time) pointed at the document;
its two assets are served at :data:`ASSETS`. The routes are exact routes of the HTTP server
(answered before any API, GET and HEAD only: otherwise the probes' 405,
:func:`~gateway.transport.http.front.check_probe_method`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

import ml_dtypes
import numpy as np
from aiohttp import web

from channel.dtypes import DTYPE_NAMES, numpy_dtype
from gateway.transport.http.front import check_probe_method
from gateway.transport.http.routes import ExtraRoute, Routes

Document = Callable[[], Mapping[str, Any]]
"""Builds one protocol's OpenAPI document (a JSON-ready mapping) from the models served now."""

ASSETS = "/docs/swagger-ui/"
"""Where Swagger UI's script and style sheet are served."""

_FILES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css"}

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{assets}swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{assets}swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({{url: "{url}", dom_id: "#swagger-ui", deepLinking: true}});
</script>
</body>
</html>
"""


ERRORS = {
    "4XX": {"$ref": "#/components/responses/Error"},
    "5XX": {"$ref": "#/components/responses/Error"},
}
"""The error answers of every operation (``{"error": "..."}``), by status class."""


def operation(summary: str, response: Any, body: Any = None) -> dict[str, Any]:
    """An operation answering 200 with a JSON ``response`` schema (and :data:`ERRORS`), taking a
    required JSON ``body`` schema when one is given."""
    described: dict[str, Any] = {
        "summary": summary,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": response}}},
            **ERRORS,
        },
    }
    if body is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
    return described


def skeleton(title: str, description: str, paths: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAPI 3.1 document of ``paths`` whose operations refer to :data:`ERRORS`."""
    error = {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string"}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1", "description": description},
        "paths": dict(paths),
        "components": {
            "responses": {
                "Error": {
                    "description": "The call failed; the message says why.",
                    "content": {"application/json": {"schema": error}},
                }
            }
        },
    }


_INTEGERS = {
    name: (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    for name in sorted(DTYPE_NAMES)
    if (dtype := numpy_dtype(name)).kind in "iu"
}
_FLOAT_MAX = {
    name: float(ml_dtypes.finfo(numpy_dtype(name)).max)  # type: ignore[no-untyped-call]
    for name in ("float16", "bfloat16", "float32")
}
"""The floats narrower than JSON's numbers (a float64 reads any finite one: no bound)."""
NON_FINITE = {
    "description": "A number; NaN, Infinity and -Infinity are written as those literals, which "
    "are not JSON numbers (JSON Schema has no type for them, so none is given here).",
}
"""A float in an answer: a number, or one of the literals TF Serving's JSON writes."""


def number_schema(dtype: str, *, answer: bool = False) -> dict[str, Any]:
    """The JSON schema of one non-string value of canonical dtype ``dtype`` (``float32``, ...):
    integers within their type's range, booleans, floats within their finite range — or, in an
    ``answer``, any float (:data:`NON_FINITE`)."""
    if dtype == "bool":
        return {"type": "boolean"}
    if dtype in _INTEGERS:
        low, high = _INTEGERS[dtype]
        return {"type": "integer", "minimum": low, "maximum": high}
    if answer:
        return dict(NON_FINITE)
    top = _FLOAT_MAX.get(dtype)
    if top is None:
        return {"type": "number"}
    return {"type": "number", "minimum": -top, "maximum": top}


def add_docs(routes: Routes, documents: Mapping[str, tuple[str, Document]]) -> None:
    """Route each ``prefix → (title, document)``'s page and document, and the page's assets."""
    for prefix, (title, document) in documents.items():
        url = f"{prefix}/docs/openapi.json"
        page = PAGE.format(title=title, assets=ASSETS, url=url).encode()
        routes.add_exact(f"{prefix}/docs", _static(f"{prefix}/docs", page, "text/html"))
        routes.add_exact(url, _document(url, document))
    folder = resources.files(__package__) / "swagger_ui"
    for name, content_type in _FILES.items():
        path = ASSETS + name
        routes.add_exact(path, _static(path, (folder / name).read_bytes(), content_type))


def _static(path: str, body: bytes, content_type: str) -> ExtraRoute:
    async def serve(request: web.BaseRequest) -> web.StreamResponse:
        check_probe_method(request.method, path)
        return web.Response(body=body, content_type=content_type)

    return serve


def _document(path: str, document: Document) -> ExtraRoute:
    async def serve(request: web.BaseRequest) -> web.StreamResponse:
        check_probe_method(request.method, path)
        body = json.dumps(document(), separators=(",", ":")).encode()
        return web.Response(body=body, content_type="application/json")

    return serve
