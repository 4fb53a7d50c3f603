"""The REST APIs described (``--enable_api_docs``): each protocol's OpenAPI 3.1 document at
``<prefix>/docs/openapi.json`` and a Swagger UI page at ``<prefix>/docs`` (``/v1`` for TF
Serving's API, ``/v2`` for the Open Inference Protocol's).

A document is built from the models served (its protocol's builder:
:mod:`gateway.tfserving.rest.openapi`, :mod:`gateway.v2.rest.openapi`) when first asked for,
and kept, encoded, until the served versions change (``served``: the versions, compared by
identity), so a GET costs a look at the registry, not a build on the loop; a model loaded later
is in the next one. The page is Swagger UI 5 (``swagger-ui-dist`` from npm, vendored in
``swagger_ui/`` with its licence: no CDN, nothing fetched at run time) pointed at the document;
its two assets are served at :data:`ASSETS`. The routes are exact routes of the HTTP server
(answered before any API, GET and HEAD only: otherwise the probes' 405,
:func:`~gateway.transport.http.front.check_probe_method`).

With bearer tokens (``bearer``), the page and its assets are public (they hold no data), the page
asks for a token and sends it, as ``Authorization: Bearer``, with every request it makes (the
document's and "Try it out"'s); the documents need the token, and declare it: an ``http`` bearer
security scheme required by every operation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import ml_dtypes
import numpy as np

from channel.dtypes import DTYPE_NAMES, numpy_dtype
from gateway.transport.http.front import check_probe_method
from gateway.transport.http.http_messages import JSON, HttpRequest, HttpResponse
from gateway.transport.http.routes import ExtraRoute, Routes

Document = Callable[[], Mapping[str, Any]]
"""Builds one protocol's OpenAPI document (a JSON-ready mapping) from the models served now."""
ServedVersions = Callable[[], Sequence[object]]
"""The versions served now (a document is rebuilt when one of them is not the same object)."""
BEARER_SCHEME = "bearerAuth"
"""The name of the documents' security scheme when tokens are required."""

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
<form id="token" hidden>
<label>Bearer token <input id="token-value" type="password" autocomplete="off"></label>
<button type="submit">Open</button>
</form>
<div id="swagger-ui"></div>
<script src="{assets}swagger-ui-bundle.js"></script>
<script>
let token = "";
function openDocs() {{
  window.ui = SwaggerUIBundle({{
    url: "{url}", dom_id: "#swagger-ui", deepLinking: true,
    requestInterceptor: (request) => {{
      if (token) request.headers["Authorization"] = "Bearer " + token;
      return request;
    }},
  }});
}}
if ({bearer}) {{
  const form = document.getElementById("token");
  form.hidden = false;
  form.addEventListener("submit", (event) => {{
    event.preventDefault();
    token = document.getElementById("token-value").value.trim();
    form.hidden = true;
    openDocs();
  }});
}} else {{
  openDocs();
}}
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


def add_docs(
    routes: Routes,
    documents: Mapping[str, tuple[str, Document]],
    *,
    served: ServedVersions,
    bearer: bool = False,
) -> None:
    """Route each ``prefix → (title, document)``'s page and document, and the page's assets
    (``served`` and ``bearer``: see the module doc)."""
    for prefix, (title, document) in documents.items():
        url = f"{prefix}/docs/openapi.json"
        flag = "true" if bearer else "false"
        page = PAGE.format(title=title, assets=ASSETS, url=url, bearer=flag).encode()
        routes.add_exact(
            f"{prefix}/docs", _static(f"{prefix}/docs", page, "text/html"), public=True
        )
        routes.add_exact(url, _Cached(url, document, served, bearer))
    folder = resources.files(__package__) / "swagger_ui"
    for name, content_type in _FILES.items():
        path = ASSETS + name
        body = (folder / name).read_bytes()
        routes.add_exact(path, _static(path, body, content_type), public=True)


def with_bearer(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` declaring bearer tokens: a security scheme every operation requires."""
    described = dict(document)
    components = dict(described.get("components", {}))
    components["securitySchemes"] = {
        BEARER_SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "A token of the server's --auth_token_file.",
        }
    }
    described["components"] = components
    described["security"] = [{BEARER_SCHEME: []}]
    return described


def _static(path: str, body: bytes, content_type: str) -> ExtraRoute:
    async def serve(request: HttpRequest) -> HttpResponse:
        check_probe_method(request.method, path)
        return HttpResponse(200, body, content_type)

    return serve


class _Cached:
    """One document's route: built when first asked for, then again only when ``served``
    changes."""

    def __init__(self, path: str, document: Document, served: ServedVersions, bearer: bool) -> None:
        self._path = path
        self._document = document
        self._served = served
        self._bearer = bearer
        self._key: tuple[object, ...] | None = None
        self._body = b""

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        check_probe_method(request.method, self._path)
        key = tuple(self._served())
        if not self._same(key):
            document = self._document()
            if self._bearer:
                document = with_bearer(document)
            self._body = json.dumps(document, separators=(",", ":")).encode()
            self._key = key
        return HttpResponse(200, self._body, JSON)

    def _same(self, key: tuple[object, ...]) -> bool:
        kept = self._key
        return (
            kept is not None
            and len(kept) == len(key)
            and all(a is b for a, b in zip(kept, key, strict=True))
        )
