"""TF Serving's REST URL grammar (pure, no server)."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidArgument
from gateway.tfserving.rest.paths import RestCall, allowed_method, is_api_path, parse, route


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("POST", "/v1/models/mlp:predict", RestCall("predict", "mlp")),
        ("POST", "/v1/models/mlp:classify", RestCall("classify", "mlp")),
        ("POST", "/v1/models/mlp:regress", RestCall("regress", "mlp")),
        ("POST", "/v1/models/mlp/versions/2:predict", RestCall("predict", "mlp", version=2)),
        (
            "POST",
            "/v1/models/mlp/labels/canary:predict",
            RestCall("predict", "mlp", label="canary"),
        ),
        ("POST", "/V1/MODELS/mlp/VERSIONS/007:PREDICT", RestCall("predict", "mlp", version=7)),
        (
            "POST",
            "/v1/Models/Mlp/Labels/Stable:Regress",
            RestCall("regress", "Mlp", label="Stable"),
        ),
        ("POST", "/v1/models/my%20model:predict", RestCall("predict", "my model")),
        ("POST", "/v1/models/a+b/labels/x%2Fy:predict", RestCall("predict", "a+b", label="x/y")),
        ("POST", "/v1/models/caf%C3%A9:predict", RestCall("predict", "café")),
        ("GET", "/v1/models/mlp", RestCall("status", "mlp")),
        ("GET", "/v1/models/mlp/versions/1", RestCall("status", "mlp", version=1)),
        ("GET", "/v1/models/mlp/labels/stable", RestCall("status", "mlp", label="stable")),
        ("GET", "/v1/models/mlp/metadata", RestCall("metadata", "mlp")),
        ("GET", "/v1/models/mlp/versions/1/metadata", RestCall("metadata", "mlp", version=1)),
        ("GET", "/v1/models/mlp/labels/x/metadata", RestCall("metadata", "mlp", label="x")),
        ("GET", "/V1/MODELS/mlp/METADATA", RestCall("metadata", "mlp")),
        ("GET", "/v1/models/metadata", RestCall("status", "metadata")),  # upstream reads it so too
        (
            "GET",
            "/v1/models/m/versions/9223372036854775807",
            RestCall("status", "m", version=2**63 - 1),
        ),
    ],
)
def test_calls_in_the_grammar(method: str, path: str, call: RestCall) -> None:
    assert parse(method, path) == call


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("GET", "/v1/models", "Missing model name in request."),
        ("GET", "/v1/models/versions/1", "Missing model name in request."),
        ("GET", "/v1/models/metadata/metadata", None),  # model "metadata", its metadata: valid
        ("POST", "/v1/models:predict", "Malformed request: POST /v1/models:predict"),
        ("POST", "/v1/models/mlp", "Malformed request: POST /v1/models/mlp"),
        ("POST", "/v1/models/mlp:explain", "Malformed request: POST /v1/models/mlp:explain"),
        ("GET", "/v1/models/mlp:predict", "Malformed request: GET /v1/models/mlp:predict"),
        (
            "POST",
            "/v1/models/mlp/versions/1/labels/x:predict",
            "Malformed request: POST /v1/models/mlp/versions/1/labels/x:predict",
        ),
        (
            "GET",
            "/v1/models/mlp/versions/1/labels/x",
            "Malformed request: GET /v1/models/mlp/versions/1/labels/x",
        ),
        ("GET", "/v1/models/mlp/versions/x", "Malformed request: GET /v1/models/mlp/versions/x"),
        ("GET", "/v1/models/mlp/versions/-1", "Malformed request: GET /v1/models/mlp/versions/-1"),
        ("GET", "/v1/models/mlp/", "Malformed request: GET /v1/models/mlp/"),
        ("GET", "/v1/models/mlp/status", "Malformed request: GET /v1/models/mlp/status"),
        ("PUT", "/v1/models/mlp", "Malformed request: PUT /v1/models/mlp"),
        ("DELETE", "/v1/models/mlp", "Malformed request: DELETE /v1/models/mlp"),
        ("OPTIONS", "/v1/models/mlp:predict", "Malformed request: OPTIONS /v1/models/mlp:predict"),
        ("HEAD", "/v1/models/mlp", "Malformed request: HEAD /v1/models/mlp"),
        (
            "GET",
            "/v1/models/m/versions/9223372036854775808",
            "Failed to convert version: 9223372036854775808 to numeric.",
        ),
        ("GET", "/v1/models/m/versions/" + "9" * 5000, "Failed to convert version: 999"),
        ("GET", "/v1/models/%FF", "Failed to decode model name: %FF"),
        ("GET", "/v1/models/m/labels/%C3", "Failed to decode model version label: %C3"),
    ],
)
def test_calls_outside_the_grammar(method: str, path: str, message: str | None) -> None:
    if message is None:
        assert parse(method, path) == RestCall("metadata", "metadata")
        return
    with pytest.raises(InvalidArgument) as info:
        parse(method, path)
    assert info.value.message.startswith(message)


@pytest.mark.parametrize(
    ("path", "api"),
    [("/v1/models/x", True), ("/V1/", True), ("/v1", False), ("/v2/models", False), ("/", False)],
)
def test_api_prefix(path: str, api: bool) -> None:
    assert is_api_path(path) is api


@pytest.mark.parametrize(
    ("method", "path", "template"),
    [
        ("POST", "/v1/models/m:predict", "/v1/models/{model_name}:predict"),
        (
            "POST",
            "/V1/MODELS/m/versions/2:Regress",
            "/v1/models/{model_name}/versions/{version}:regress",
        ),
        ("GET", "/v1/models/m/labels/x", "/v1/models/{model_name}/labels/{label}"),
        ("GET", "/v1/models/m/metadata", "/v1/models/{model_name}/metadata"),
    ],
)
def test_the_route_template_of_a_call(method: str, path: str, template: str) -> None:
    assert route(method, parse(method, path)) == template


def test_the_method_the_grammar_takes() -> None:
    assert allowed_method("/v1/models/m:predict") == "POST"
    assert allowed_method("/v1/models/m/versions/1") == "GET"
    assert allowed_method("/v1/models/m/versions/x") is None
