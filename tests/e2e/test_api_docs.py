"""``--enable_api_docs`` through a real gateway: both OpenAPI 3.1 documents validate
(openapi-spec-validator) and describe each model from its signature; schemathesis, run against the
live server (bounded, derandomized), finds every answer within the documented status codes,
content types and schemas; a real headless Chromium renders each docs page's operations from the
assets tensorgate ships; with bearer tokens the pages are public and the documents need and
declare the token; without the flag nothing is served."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from openapi_spec_validator import validate

from tests.support import tools
from tests.support.gateway_proc import GatewayProcess, running_gateway

CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance"
)
MAX_EXAMPLES = 15
"""Cases per operation: the run stays within a minute or so on a loaded machine."""


@pytest.fixture(scope="module")
def gateway(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """mlp (versions 1 and 2), identities (every dtype), add_two; --enable_api_docs."""
    args = [
        f"--model_config_file={model_repo / 'models.config'}",
        "--allow_version_labels_for_unavailable_models",
        "--workers=1",
        "--rest_api_port=-1",
        "--file_system_poll_wait_seconds=0",
        "--enable_api_docs",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("api_docs")) as process:
        yield process


def _get(gateway: GatewayProcess, path: str) -> tuple[int, str, bytes]:
    url = f"http://127.0.0.1:{gateway.rest_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status), response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.headers["Content-Type"], error.read()


def _document(gateway: GatewayProcess, prefix: str) -> dict[str, Any]:
    status, content_type, body = _get(gateway, f"{prefix}/docs/openapi.json")
    assert (status, content_type) == (200, "application/json")
    return json.loads(body)


@pytest.mark.parametrize("prefix", ["/v1", "/v2"])
def test_each_document_is_valid_openapi_3_1(gateway: GatewayProcess, prefix: str) -> None:
    document = _document(gateway, prefix)
    assert document["openapi"] == "3.1.0"
    validate(document)  # raises on any violation of the OpenAPI 3.1 schema


def test_the_v1_document_describes_each_model_from_its_signature(gateway: GatewayProcess) -> None:
    paths = _document(gateway, "/v1")["paths"]
    for model in ("mlp", "identities", "add_two"):
        for suffix in ("", "/metadata", ":predict", ":classify", ":regress"):
            assert f"/v1/models/{model}{suffix}" in paths
    body = paths["/v1/models/mlp:predict"]["post"]["requestBody"]["content"]["application/json"]
    rows, columns = body["schema"]["anyOf"]
    row = rows["properties"]["instances"]["items"]  # mlp: x float32[-1, 64]
    assert row["type"] == "array" and row["minItems"] == row["maxItems"] == 64
    top = float(np.finfo(np.float32).max)
    assert row["items"] == {"type": "number", "minimum": -top, "maximum": top}
    assert columns["properties"]["inputs"]["items"] == row
    assert "/v1/models/{model_name}/versions/{version}:predict" in paths


def test_the_v2_document_describes_each_model_from_its_signature(gateway: GatewayProcess) -> None:
    paths = _document(gateway, "/v2")["paths"]
    for path in ("/v2", "/v2/health/live", "/v2/models/mlp/ready", "/v2/models/add_two/infer"):
        assert path in paths
    infer = paths["/v2/models/mlp/infer"]["post"]
    inputs = infer["requestBody"]["content"]["application/json"]["schema"]["properties"]["inputs"]
    (x,) = inputs["items"]["anyOf"]
    assert x["properties"]["name"] == {"const": "x"}
    assert x["properties"]["datatype"] == {"const": "FP32"}
    assert x["properties"]["shape"]["prefixItems"] == [
        {"type": "integer", "minimum": 1},
        {"const": 64},
    ]


@pytest.mark.parametrize("prefix", ["/v1", "/v2"])
def test_schemathesis_finds_every_answer_documented(
    gateway: GatewayProcess, prefix: str, tmp_path: Path
) -> None:
    base = f"http://127.0.0.1:{gateway.rest_port}"
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("st")),
            "run",
            f"{base}{prefix}/docs/openapi.json",
            f"--url={base}",
            f"--checks={CHECKS}",
            f"--max-examples={MAX_EXAMPLES}",
            "--seed=37",
            "--generation-deterministic",
            "--mode=positive",
            "--workers=1",
            "--request-timeout=30",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-3000:]


@pytest.mark.parametrize(
    ("prefix", "operations"),
    [
        ("/v1", ["/v1/models/mlp:predict", "/v1/models/add_two/metadata"]),
        ("/v2", ["/v2/models/mlp/infer", "/v2/health/ready"]),
    ],
)
def test_chromium_renders_the_operations_of_each_docs_page(
    gateway: GatewayProcess, prefix: str, operations: list[str], tmp_path: Path
) -> None:
    chromium = tools.executable("chromium")
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            f"http://127.0.0.1:{gateway.rest_port}{prefix}/docs",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = re.findall(r'class="opblock-summary-path"[^>]*data-path="([^"]+)"', done.stdout)
    for path in operations:
        assert path in rendered, (path, rendered[:20], done.stdout[-2000:])


def test_without_the_flag_nothing_is_described(model_repo: Path, tmp_path: Path) -> None:
    args = [
        f"--model_base_path={model_repo / 'mlp'}",
        "--model_name=mlp",
        "--workers=1",
        "--rest_api_port=-1",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path) as gateway:
        for path in ("/v1/docs", "/v1/docs/openapi.json", "/v2/docs/openapi.json"):
            assert _get(gateway, path)[0] in (400, 404)
        assert _get(gateway, "/docs/swagger-ui/swagger-ui-bundle.js")[0] == 404


def test_with_tokens_the_pages_are_public_and_the_documents_declare_the_token(
    model_repo: Path, tmp_path: Path
) -> None:
    """A browser opens the page without a token (it holds no data), then sends the token the
    page asks for; the document, which lists the models, needs it and says so."""
    tokens = tmp_path / "tokens"
    tokens.write_text("s3cret\n")
    args = [
        f"--model_base_path={model_repo / 'mlp'}",
        "--model_name=mlp",
        "--workers=1",
        "--rest_api_port=-1",
        "--enable_api_docs",
        f"--auth_token_file={tokens}",
    ]
    with running_gateway(args, tmp_path) as gateway:
        for path in ("/v1/docs", "/v2/docs", "/docs/swagger-ui/swagger-ui-bundle.js"):
            assert _get(gateway, path)[0] == 200, path
        url = f"http://127.0.0.1:{gateway.rest_port}/v1/docs/openapi.json"
        assert _get(gateway, "/v1/docs/openapi.json")[0] == 401
        request = urllib.request.Request(url, headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, timeout=30) as response:
            document = json.loads(response.read())
    validate(document)
    assert document["security"] == [{"bearerAuth": []}]
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
