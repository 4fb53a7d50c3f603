"""The ``/v2`` URL grammar: every route, its template, the extensions refused by name, wrong
methods and paths outside the grammar."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidArgument, NotFound, Unimplemented
from gateway.v2.rest import paths
from gateway.v2.rest.paths import V2Call


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("GET", "/v2", V2Call("ServerMetadata", template="/v2")),
        ("GET", "/v2/", V2Call("ServerMetadata", template="/v2")),
        ("GET", "/v2/health/live", V2Call("ServerLive", template="/v2/health/live")),
        ("GET", "/v2/health/ready", V2Call("ServerReady", template="/v2/health/ready")),
        ("GET", "/v2/models/m", V2Call("ModelMetadata", "m", "", "/v2/models/{model_name}")),
        (
            "GET",
            "/v2/models/m/versions/3",
            V2Call("ModelMetadata", "m", "3", "/v2/models/{model_name}/versions/{model_version}"),
        ),
        (
            "GET",
            "/v2/models/m/ready",
            V2Call("ModelReady", "m", "", "/v2/models/{model_name}/ready"),
        ),
        (
            "POST",
            "/v2/models/my%20model/versions/stable/infer",
            V2Call(
                "ModelInfer",
                "my model",
                "stable",
                "/v2/models/{model_name}/versions/{model_version}/infer",
            ),
        ),
        ("GET", "/v2/models/stats", V2Call("ModelStatistics", template="/v2/models/stats")),
        (
            "GET",
            "/v2/models/m/stats",
            V2Call("ModelStatistics", "m", "", "/v2/models/{model_name}/stats"),
        ),
        (
            "POST",
            "/v2/repository/index",
            V2Call("RepositoryIndex", template="/v2/repository/index"),
        ),
        (
            "POST",
            "/v2/repository/models/m/load",
            V2Call("RepositoryModelLoad", "m", "", "/v2/repository/models/{model_name}/load"),
        ),
        (
            "POST",
            "/v2/repository/models/m/unload",
            V2Call("RepositoryModelUnload", "m", "", "/v2/repository/models/{model_name}/unload"),
        ),
    ],
)
def test_routes(method: str, path: str, call: V2Call) -> None:
    assert paths.parse(method, path) == call


@pytest.mark.parametrize(
    ("path", "extension"),
    [
        ("/v2/systemsharedmemory/status", "system shared-memory"),
        ("/v2/systemsharedmemory/region/r/register", "system shared-memory"),
        ("/v2/cudasharedmemory/region/r/unregister", "CUDA shared-memory"),
        ("/v2/models/m/config", "model configuration"),
        ("/v2/models/m/versions/1/config", "model configuration"),
        ("/v2/trace/setting", "trace"),
        ("/v2/models/m/trace/setting", "trace"),
        ("/v2/logging", "logging"),
        ("/v2/models/m/generate_stream", "generate"),
        ("/v2/repository/other/index", "'repository_name' specification"),
        ("/v2/repository/other/models/m/load", "'repository_name' specification"),
    ],
)
def test_extensions_tensorgate_lacks_are_named(path: str, extension: str) -> None:
    with pytest.raises(Unimplemented, match=f"{extension}.* is not supported by tensorgate"):
        paths.parse("POST", path)


def test_wrong_methods_and_unknown_paths() -> None:
    with pytest.raises(paths.WrongMethod) as info:
        paths.parse("GET", "/v2/models/m/infer")
    assert info.value.allowed == "POST"
    assert info.value.message == "this path answers POST, not GET"  # never the caller's path
    with pytest.raises(paths.WrongMethod):
        paths.parse("DELETE", "/v2/models/m")
    for path in ("/v2/nope", "/v2/models", "/v2/models/m/versions", "/V2/models/m"):
        with pytest.raises(NotFound, match="Not found") as missing:
            paths.parse("GET", path)
        assert path not in missing.value.message
    with pytest.raises(InvalidArgument, match="Failed to decode model name: %ff"):
        paths.parse("GET", "/v2/models/%ff")
    assert paths.is_api_path("/v2") and paths.is_api_path("/v2/x")
    assert not paths.is_api_path("/v2x") and not paths.is_api_path("/v1/models/m")
