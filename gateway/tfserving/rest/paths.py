"""TF Serving's REST URL grammar: pure functions from (HTTP method, raw path) to a call.

The API lives under ``/v1/`` (case-insensitive, as TF Serving's ``(?i)/v1/.*``)::

    POST /v1/models/{model}[/versions/{version}|/labels/{label}]:(predict|classify|regress)
    GET  /v1/models/{model}[/versions/{version}|/labels/{label}]             model status
    GET  /v1/models/{model}[/versions/{version}|/labels/{label}]/metadata    model metadata

``{model}`` and ``{label}`` are percent-decoded (``%20`` is a space; ``+`` stays ``+``);
``{version}`` is a decimal int64. The whole pattern is case-insensitive, as upstream's regexes,
the verb and ``metadata`` included (upstream answers ``:PREDICT`` "Malformed").
A path the grammar does not match is INVALID_ARGUMENT ``Malformed request: <METHOD> <path>``
(version and label together never match); a status or metadata call without a model name is
``Missing model name in request.`` — TF Serving's texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast
from urllib.parse import unquote

from gateway.errors import InvalidArgument

Verb = Literal["predict", "classify", "regress", "status", "metadata"]

API_PREFIX = "/v1/"
"""Paths starting with this (any case) belong to the TF Serving API; anything else is 404."""

INT64_MAX = 2**63 - 1

_FLAGS = re.IGNORECASE | re.ASCII
_MODEL = r"(?:/(?P<model>[^/:]+))"
_VERSION_OR_LABEL = r"(?:/versions/(?P<version>[0-9]+)|/labels/(?P<label>[^/:]+))?"
_POST = re.compile(
    rf"/v1/models{_MODEL}{_VERSION_OR_LABEL}:(?P<verb>classify|regress|predict)", _FLAGS
)
_GET = re.compile(rf"/v1/models{_MODEL}?{_VERSION_OR_LABEL}(?:/(?P<metadata>metadata))?", _FLAGS)


@dataclass(frozen=True)
class RestCall:
    """One parsed API call: what to do, on which model, version or label (never both)."""

    verb: Verb
    model: str
    version: int | None = None
    label: str | None = None


def is_api_path(raw_path: str) -> bool:
    """True for paths under ``/v1/`` (any case): TF Serving answers everything else with 404."""
    return raw_path[: len(API_PREFIX)].lower() == API_PREFIX


def allowed_method(raw_path: str) -> str | None:
    """The method the grammar takes on ``raw_path`` (``POST`` or ``GET``), None if neither."""
    if _POST.fullmatch(raw_path):
        return "POST"
    if _GET.fullmatch(raw_path):
        return "GET"
    return None


def parse(method: str, raw_path: str) -> RestCall:
    """Parse a request line (``raw_path``: percent-encoded, without the query string).

    Raises InvalidArgument with TF Serving's messages when the call is not in the grammar.
    """
    malformed = InvalidArgument(f"Malformed request: {method} {raw_path}")
    if method == "POST":
        match = _POST.fullmatch(raw_path)
    elif method == "GET":
        match = _GET.fullmatch(raw_path)
    else:
        raise malformed
    if match is None:
        raise malformed
    model = _decode(match["model"] or "", "model name")
    version = _version(match["version"])
    label = None if match["label"] is None else _decode(match["label"], "model version label")
    if method == "POST":
        verb = cast(Verb, match["verb"].lower())
    else:
        verb = "metadata" if match["metadata"] else "status"
        if not model:
            raise InvalidArgument("Missing model name in request.")
    return RestCall(verb, model, version, label)


def route(method: str, call: RestCall) -> str:
    """The URL template of a parsed call (OpenTelemetry's ``http.route``)."""
    template = "/v1/models/{model_name}"
    if call.version is not None:
        template += "/versions/{version}"
    elif call.label is not None:
        template += "/labels/{label}"
    if method == "POST":
        return f"{template}:{call.verb}"
    return template + "/metadata" if call.verb == "metadata" else template


def _decode(text: str, what: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise InvalidArgument(f"Failed to decode {what}: {text}") from None


def _version(text: str | None) -> int | None:
    if text is None:
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(INT64_MAX)) or int(digits) > INT64_MAX:
        raise InvalidArgument(f"Failed to convert version: {text} to numeric.")
    return int(digits)
