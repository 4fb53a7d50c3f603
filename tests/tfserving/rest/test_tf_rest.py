"""REST ``:classify`` / ``:regress`` end to end: a real HTTP server with TF Serving's routes and the
ClassifyRegressHandler hook in front of a real ServingCore, WorkerPool and worker serving
TensorFlow and ONNX models (TF Serving's testClassifyREST / testRegressREST on half_plus_two
included)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.config.batching_options import BatchingOptions
from gateway.config.model_config import ModelSpecConfig
from gateway.tfserving.rest.examples import ClassifyRegressHandler
from tests.support.onnx_models import onnx_examples
from tests.support.rest import tf_rest_server
from tests.support.stack import serving_stack
from tests.support.tf_models_script import models_root

Reply = tuple[int, Any]


async def _post(session: aiohttp.ClientSession, url: str, body: Any) -> Reply:
    data = json.dumps(body, allow_nan=True)
    async with session.post(url, data=data) as response:
        return response.status, json.loads(await response.read())


BURST = 16
"""Concurrent requests per signature that the batcher merges (max_batch_size = BURST)."""


async def _calls(
    base: Path, onnx_dir: Path, requests: dict[str, tuple[str, Any]]
) -> tuple[dict[str, Reply], list[Reply]]:
    """POST every ``(path, body)`` of ``requests`` one after the other to a fresh stack, then
    a burst of BURST regress and BURST classify calls at once (x = 0 .. BURST-1 each); the
    replies by name, and the burst's replies in order."""
    specs = [
        ModelSpecConfig(name=name, base_path=str(base / name))
        for name in ("half_plus_two", "tf2_multi")
    ]
    specs.append(ModelSpecConfig(name="onnx_examples", base_path=str(onnx_dir)))

    options = BatchingOptions(max_batch_size=BURST, batch_timeout_micros=100_000)
    async with serving_stack(specs, batching=options) as stack:
        core = stack.core
        rest = tf_rest_server(
            core,
            timeout_ms=60_000,
            max_body_bytes=2**20,
            classify_regress=ClassifyRegressHandler(core),
        )
        port = await rest.start("127.0.0.1", 0)
        try:
            async with aiohttp.ClientSession() as session:
                url = f"http://127.0.0.1:{port}/v1/models/"
                replies = {
                    name: await _post(session, url + path, body)
                    for name, (path, body) in requests.items()
                }
                burst = [
                    _post(
                        session,
                        f"{url}half_plus_two:{method}",
                        {"signature_name": f"{method}_x_to_y", "examples": [{"x": float(i)}]},
                    )
                    for method in ("regress", "classify")
                    for i in range(BURST)
                ]
                return replies, list(await asyncio.gather(*burst))
        finally:
            await rest.stop(5)


@pytest.fixture(scope="module")
async def stack_replies(
    anyio_backend: object, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Reply], list[Reply]]:
    """Every reply of the module's calls, from one stack (``anyio_backend``: the async fixture
    runs on the tests' loop though the tests reading it are not async)."""
    onnx_dir = tmp_path_factory.mktemp("rest_onnx_examples")
    onnx_examples(onnx_dir / "1" / "model.onnx")
    x2 = [{"x": 2.0}]
    requests: dict[str, tuple[str, Any]] = {
        "classify": (
            "half_plus_two:classify",
            {"signature_name": "classify_x_to_y", "examples": x2},
        ),
        "regress": ("half_plus_two:regress", {"signature_name": "regress_x_to_y", "examples": x2}),
        "regress_version": (
            "half_plus_two/versions/123:regress",
            {"signature_name": "regress_x_to_y2", "examples": [{"x": 2.0}, {"x": 0.5}]},
        ),
        "regress_nan": (
            "half_plus_two:regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x": math.nan}, {"x": -math.inf}]},
        ),
        "classify_labels_context": (
            "tf2_multi:classify",
            {
                "signature_name": "classify_x_to_y",
                "context": {"x": 2.0},
                "examples": [{"other": "text"}, {"x": [6.0]}],
            },
        ),
        "regress_onnx": (
            "onnx_examples:regress",
            {"context": {"x": 2.0}, "examples": [{"n": 1}, {"x": 4.0, "n": True}]},
        ),
        "no_examples": ("half_plus_two:classify", {"signature_name": "classify_x_to_y"}),
        "unknown_signature": ("half_plus_two:regress", {"signature_name": "x", "examples": x2}),
        "bad_signature_name": ("half_plus_two:regress", {"signature_name": 1, "examples": x2}),
        "missing_feature": (
            "half_plus_two:regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x2": 1.0}]},
        ),
        "mixed_kinds": (
            "half_plus_two:regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x": [1.0, "a"]}]},
        ),
        "missing_model": ("nope:classify", {"examples": x2}),
    }
    return await _calls(models_root(tmp_path_factory.getbasetemp()), onnx_dir, requests)


@pytest.fixture(scope="module")
def replies(stack_replies: tuple[dict[str, Reply], list[Reply]]) -> dict[str, Reply]:
    return stack_replies[0]


def test_batched_requests_get_their_own_results(
    stack_replies: tuple[dict[str, Reply], list[Reply]],
) -> None:
    burst = stack_replies[1]
    expected = [0.5 * i + 2 for i in range(BURST)]
    assert burst[:BURST] == [(200, {"results": [y]}) for y in expected]
    assert burst[BURST:] == [(200, {"results": [[["", y]]]}) for y in expected]


def test_classify_and_regress_as_tf_serving(replies: dict[str, Reply]) -> None:
    assert replies["classify"] == (200, {"results": [[["", 3.0]]]})
    assert replies["regress"] == (200, {"results": [3.0]})
    assert replies["regress_version"] == (200, {"results": [4.0, 3.25]})


def test_non_finite_results_are_json_literals(replies: dict[str, Reply]) -> None:
    status, body = replies["regress_nan"]
    assert status == 200
    nan, minus_inf = body["results"]
    assert math.isnan(nan)
    assert minus_inf == -math.inf


def test_labels_context_and_onnx_features(replies: dict[str, Reply]) -> None:
    assert replies["classify_labels_context"] == (
        200,
        {"results": [[["neg", -3.0], ["pos", 3.0]], [["neg", -5.0], ["pos", 5.0]]]},
    )
    assert replies["regress_onnx"] == (200, {"results": [4.0, 5.0]})


def test_errors(replies: dict[str, Reply]) -> None:
    status, body = replies["no_examples"]
    assert status == 400
    assert body["error"].endswith(
        "When method is classify, key 'examples' is expected and was not found"
    )
    assert replies["unknown_signature"] == (
        400,
        {"error": "No signature was found with the name: x"},
    )
    status, body = replies["bad_signature_name"]
    assert status == 400 and "'signature_name' must be a string" in body["error"]
    status, body = replies["missing_feature"]
    assert status == 400
    assert "Feature: x (data type: float) is required but could not be found." in body["error"]
    assert replies["mixed_kinds"] == (
        400,
        {"error": "Unexpected element type in feature: x expecting type: float"},
    )
    assert replies["missing_model"] == (
        404,
        {"error": "Servable not found for request: Latest(nope)"},
    )
