"""The REST APIs' OpenAPI documents from signatures (the e2e tests run them against a live
server): value ranges per dtype, one array level per dimension, answers that allow what requests
may not, a model with no version available left out, and both documents valid OpenAPI 3.1; the
docs routes answer GET and HEAD, and any other method the probes' 405; a document is built once
until the served versions change; with tokens the page is public and the documents declare
them."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from openapi_spec_validator import validate

from gateway.errors import NotFound
from gateway.serving.registry import Servable
from gateway.serving.signature import Signature, TensorSpec
from gateway.tfserving.rest import openapi as v1
from gateway.transport.http.docs import (
    ASSETS,
    BEARER_SCHEME,
    NON_FINITE,
    add_docs,
    number_schema,
    with_bearer,
)
from gateway.transport.http.front import HttpError
from gateway.transport.http.routes import Routes
from gateway.v2.rest import openapi as v2
from tests.support.rest import made_request

PAIR = Signature(
    "serving_default",
    (TensorSpec("a", "float32", (-1, 3)), TensorSpec("b", "string", (-1,))),
    (TensorSpec("y", "int8", (-1, 2, -1)),),
    "tensorflow/serving/predict",
)


class _Models:
    """Two models: ``pair`` serving, ``loading`` with no version available yet."""

    def model_names(self) -> list[str]:
        return ["pair", "loading"]

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Any:
        if name != "pair":
            raise NotFound(f"no version of {name}")
        return Servable("pair", 1, "pair:1", "onnx", {"serving_default": PAIR})


def test_values_stay_within_their_dtype() -> None:
    top = float(np.finfo(np.float32).max)
    assert number_schema("float32") == {"type": "number", "minimum": -top, "maximum": top}
    assert number_schema("uint8") == {"type": "integer", "minimum": 0, "maximum": 255}
    assert number_schema("int64")["minimum"] == -(2**63)
    assert number_schema("bool") == {"type": "boolean"}
    assert number_schema("float64") == {"type": "number"}
    assert number_schema("float32", answer=True) == NON_FINITE  # NaN / Infinity literals


def test_a_tensor_is_one_array_level_per_dimension() -> None:
    y = PAIR.outputs[0]
    row = v1.tensor_schema(y, row=True)
    assert (row["minItems"], row["maxItems"]) == (2, 2)
    assert row["items"]["minItems"] == 1  # a dynamic dimension of a request
    assert row["items"]["items"] == number_schema("int8")
    assert v1.tensor_schema(y, row=True, answer=True)["items"]["minItems"] == 0
    assert v1.tensor_schema(TensorSpec("any", "float32", None), row=False) == {}


def test_the_v1_document_has_each_serving_model_and_is_valid() -> None:
    document = v1.document(_Models())  # type: ignore[arg-type]
    validate(document)
    paths = document["paths"]
    assert "/v1/models/pair:predict" in paths and "/v1/models/loading" not in paths
    body = paths["/v1/models/pair:predict"]["post"]["requestBody"]["content"]["application/json"]
    rows, _ = body["schema"]["anyOf"]
    item = rows["properties"]["instances"]["items"]
    assert item["required"] == ["a", "b"]
    assert item["properties"]["b"] == v1.value_schema(PAIR.inputs[1], answer=False)


def test_the_v2_document_has_each_serving_model_and_is_valid() -> None:
    document = v2.document(_Models())  # type: ignore[arg-type]
    validate(document)
    paths = document["paths"]
    assert "/v2/models/pair/infer" in paths and "/v2/models/loading" not in paths
    schema = paths["/v2/models/pair/infer"]["post"]["requestBody"]["content"]["application/json"]
    inputs = schema["schema"]["properties"]["inputs"]
    assert (inputs["minItems"], inputs["maxItems"]) == (2, 2)
    names = [item["properties"]["name"] for item in inputs["items"]["anyOf"]]
    assert names == [{"const": "a"}, {"const": "b"}]


@pytest.mark.parametrize("path", ["/v2/docs", "/v2/docs/openapi.json", f"{ASSETS}swagger-ui.css"])
async def test_the_docs_routes_answer_get_and_head_and_refuse_other_methods(path: str) -> None:
    routes = Routes()
    add_docs(routes, {"/v2": ("V2", lambda: {"openapi": "3.1.0"})}, served=list)
    found = routes.exact(path)
    assert found is not None
    route, _ = found
    for method in ("GET", "HEAD"):
        assert (await route(made_request(method, path))).status == 200
    with pytest.raises(HttpError) as refused:
        await route(made_request("POST", path))
    response = refused.value.response()
    assert response.headers is not None
    assert (response.status, response.headers["Allow"]) == (405, "GET, HEAD")
    assert json.loads(response.body) == {"error": f"{path} answers GET and HEAD, not POST"}


async def test_a_document_is_built_once_until_the_served_versions_change() -> None:
    """Building a document walks every model's signatures on the loop: a GET must not."""
    served: list[object] = [object()]
    builds: list[int] = []

    def document() -> dict[str, Any]:
        builds.append(1)
        return {"openapi": "3.1.0", "info": {"title": str(len(builds))}}

    routes = Routes()
    add_docs(routes, {"/v1": ("V1", document)}, served=lambda: list(served))
    found = routes.exact("/v1/docs/openapi.json")
    assert found is not None
    route, public = found
    assert not public  # the document lists the models: it needs a token when tokens are on

    async def title() -> str:
        answer = await route(made_request("GET", "/v1/docs/openapi.json"))
        return str(json.loads(answer.body)["info"]["title"])

    assert [await title(), await title(), await title()] == ["1", "1", "1"]
    served.append(object())  # a version loaded
    assert [await title(), await title()] == ["2", "2"]
    served[0] = object()  # another version in its place
    assert await title() == "3"


async def test_with_tokens_the_page_is_public_and_the_documents_declare_bearer_auth() -> None:
    routes = Routes()
    add_docs(routes, {"/v1": ("V1", lambda: v1.document(_Models()))}, served=list, bearer=True)  # type: ignore[arg-type]
    for path in ("/v1/docs", f"{ASSETS}swagger-ui-bundle.js", f"{ASSETS}swagger-ui.css"):
        found = routes.exact(path)
        assert found is not None and found[1], f"{path} needs no token"
    page_route, _ = routes.exact("/v1/docs") or (None, False)
    assert page_route is not None
    page = (await page_route(made_request("GET", "/v1/docs"))).body.decode()
    assert 'request.headers["Authorization"] = "Bearer " + token' in page
    assert "if (true)" in page  # the page asks for the token before it fetches the document
    document_route, _ = routes.exact("/v1/docs/openapi.json") or (None, False)
    assert document_route is not None
    answer = await document_route(made_request("GET", "/v1/docs/openapi.json"))
    document = json.loads(answer.body)
    validate(document)
    assert document["security"] == [{BEARER_SCHEME: []}]
    assert document["components"]["securitySchemes"][BEARER_SCHEME] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A token of the server's --auth_token_file.",
    }
    assert "Error" in document["components"]["responses"]
    assert "security" not in with_bearer({"openapi": "3.1.0"})["components"]
