"""The Open Inference Protocol's REST URL grammar: pure functions from (method, raw path) to a call.

The API lives under ``/v2`` (case-sensitive, as Triton's routes); ``{m}`` and ``{v}`` are
percent-decoded, ``{v}`` a version string (:mod:`gateway.v2.version_strings`: digits or a label)::

    GET  /v2                                          ServerMetadata
    GET  /v2/health/live | /v2/health/ready           ServerLive | ServerReady
    GET  /v2/models/{m}[/versions/{v}]                ModelMetadata
    GET  /v2/models/{m}[/versions/{v}]/ready          ModelReady
    POST /v2/models/{m}[/versions/{v}]/infer          ModelInfer
    GET  /v2/models[/{m}[/versions/{v}]]/stats        ModelStatistics (statistics extension)
    POST /v2/repository/index                         RepositoryIndex (repository extension)
    POST /v2/repository/models/{m}/load | /unload     RepositoryModelLoad | RepositoryModelUnload

Extensions tensorgate does not have are UNIMPLEMENTED naming the extension (Triton's paths:
``/v2/systemsharedmemory/...``, ``/v2/cudasharedmemory/...``, ``/v2/models/{m}/config``,
``.../trace/setting``, ``/v2/logging``, ``.../generate[_stream]``, and a repository named in
``/v2/repository/{name}/...``); a path of the grammar asked with the other method is 405 with
``Allow``; any other path under ``/v2`` is NOT_FOUND.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from gateway.errors import InvalidArgument, NotFound
from gateway.v2.errors import not_supported

_MODEL = r"/v2/models/(?P<model>[^/]+)(?:/versions/(?P<version>[^/]+))?"
_REPOSITORY_MODEL = r"/v2/repository/models/(?P<model>[^/]+)"


@dataclass(frozen=True)
class Route:
    """One grammar rule: its method, the V2 method name it maps to, and its URL template."""

    method: str
    api: str
    pattern: re.Pattern[str]
    template: str


def _route(method: str, api: str, pattern: str, template: str) -> Route:
    return Route(method, api, re.compile(pattern), template)


ROUTES: Final = (
    _route("GET", "ServerMetadata", r"/v2/?", "/v2"),
    _route("GET", "ServerLive", r"/v2/health/live", "/v2/health/live"),
    _route("GET", "ServerReady", r"/v2/health/ready", "/v2/health/ready"),
    _route("GET", "ModelStatistics", r"/v2/models/stats", "/v2/models/stats"),
    _route("GET", "ModelMetadata", _MODEL, "/v2/models/{model_name}"),
    _route("GET", "ModelReady", _MODEL + "/ready", "/v2/models/{model_name}/ready"),
    _route("POST", "ModelInfer", _MODEL + "/infer", "/v2/models/{model_name}/infer"),
    _route("GET", "ModelStatistics", _MODEL + "/stats", "/v2/models/{model_name}/stats"),
    _route("POST", "RepositoryIndex", r"/v2/repository/index", "/v2/repository/index"),
    _route(
        "POST",
        "RepositoryModelLoad",
        _REPOSITORY_MODEL + "/load",
        "/v2/repository/models/{model_name}/load",
    ),
    _route(
        "POST",
        "RepositoryModelUnload",
        _REPOSITORY_MODEL + "/unload",
        "/v2/repository/models/{model_name}/unload",
    ),
)
"""In order: the first rule whose pattern matches the whole path is the path's."""

UNSUPPORTED: Final = (
    (re.compile(r"/v2/systemsharedmemory(?:/.*)?"), "the system shared-memory extension"),
    (re.compile(r"/v2/cudasharedmemory(?:/.*)?"), "the CUDA shared-memory extension"),
    (re.compile(_MODEL + "/config"), "the model configuration extension"),
    (re.compile(f"(?:/v2|{_MODEL})/trace/setting"), "the trace extension"),
    (re.compile(r"/v2/logging"), "the logging extension"),
    (re.compile(_MODEL + "/generate(?:_stream)?"), "the generate extension"),
    (
        re.compile(r"/v2/repository/[^/]+/(?:index|models/[^/]+/(?:load|unload))"),
        "'repository_name' specification",
    ),
)
"""Paths of the extensions tensorgate does not have, and what each is called."""


@dataclass(frozen=True)
class V2Call:
    """One parsed call: its V2 method name, model and version string ("" when none)."""

    api: str
    model: str = ""
    version: str = ""
    template: str = ""
    """The URL template (OpenTelemetry's ``http.route``)."""


def is_api_path(raw_path: str) -> bool:
    """True for ``/v2`` and every path under ``/v2/``."""
    return raw_path == "/v2" or raw_path.startswith("/v2/")


def parse(method: str, raw_path: str) -> V2Call:
    """Parse a request line (``raw_path``: percent-encoded, without the query string).

    Raises UNIMPLEMENTED for an extension tensorgate lacks, NOT_FOUND outside the grammar, and
    :class:`WrongMethod` for a path of the grammar asked with the other method."""
    allowed = []
    for route in ROUTES:
        match = route.pattern.fullmatch(raw_path)
        if match is None:
            continue
        if route.method != method:
            allowed.append(route.method)
            continue
        groups = match.groupdict()
        model = _decode(groups.get("model") or "", "model name")
        version = _decode(groups.get("version") or "", "model version")
        template = route.template
        if version and "{model_name}" in template and not template.startswith("/v2/repository"):
            template = template.replace("{model_name}", "{model_name}/versions/{model_version}")
        return V2Call(route.api, model, version, template)
    for pattern, extension in UNSUPPORTED:
        if pattern.fullmatch(raw_path):
            raise not_supported(extension)
    if allowed:
        raise WrongMethod(raw_path, method, allowed[0])
    raise NotFound(f"Not found: the /v2 API has no route for {method} on this path")


class WrongMethod(Exception):
    """A path of the grammar asked with a method it does not take (answered 405, ``Allow``)."""

    def __init__(self, path: str, method: str, allowed: str) -> None:
        self.message = f"this path answers {allowed}, not {method}"
        super().__init__(self.message)
        self.allowed = allowed


def _decode(text: str, what: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise InvalidArgument(f"Failed to decode {what}: {text}") from None
