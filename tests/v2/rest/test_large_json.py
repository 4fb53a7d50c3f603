"""A large V2 JSON body does not hold its front end's loop: while its values
are being converted, a ``/healthz`` on another connection is answered.

A real HTTP server with the ``/v2`` routes over a real serving core (one ONNX worker, ``m``:
y = 2x, x FP32 [-1, 2]). The one fake is the pause: the conversion of the body's values
(:func:`gateway.v2.rest.json_values.to_array`) waits on an event that the test sets only once
``/healthz`` has answered. Converted on the loop, the loop would wait with it, and ``/healthz``
would be answered only after the pause gave up (``PAUSE_S``), which the test sees as the order
of the two events. Ordering, not timing: nothing asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from gateway.config.model_config import ModelSpecConfig
from gateway.decoding import Declared
from gateway.transport.http.routes import Routes
from gateway.transport.http.server import HttpServer
from gateway.v2.dataplane import DataPlane, V2Options
from gateway.v2.rest import json_values
from gateway.v2.rest.routes import V2Rest
from tests.support import onnx_models
from tests.support.stack import serving_stack

PAUSE_S = 15.0
"""How long the conversion waits for the test's event before going on by itself."""
ROWS = 1 << 17  # 2 x 131072 FP32 values: a JSON body of 1.3 MB, over OFF_LOOP_BYTES


async def test_healthz_is_answered_while_a_large_json_body_converts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx_models.scaled(tmp_path / "m" / "1" / "model.onnx", 2.0)
    spec = ModelSpecConfig(name="m", base_path=str(tmp_path / "m"))
    data = [[0.5, float(i % 7)] for i in range(ROWS)]
    x = {"name": "x", "datatype": "FP32", "shape": [ROWS, 2], "data": data}
    body = orjson.dumps({"inputs": [x]})
    assert len(body) > 1 << 20  # request_body.OFF_LOOP_BYTES
    converting, healthz_answered, pause_over = threading.Event(), threading.Event(), []
    real = json_values.to_array

    def paused(values: Any, header: Declared[Any]) -> Any:
        converting.set()
        healthz_answered.wait(PAUSE_S)
        pause_over.append(healthz_answered.is_set())
        return real(values, header)

    monkeypatch.setattr(json_values, "to_array", paused)

    async with serving_stack([spec]) as stack:
        routes = Routes()
        routes.add_api(V2Rest(DataPlane(stack.core, V2Options(max_elements=1 << 20))))
        server = HttpServer(
            routes, ready=stack.core.ready, timeout_ms=120_000, max_body_bytes=1 << 24
        )
        port = await server.start("127.0.0.1", 0)
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as infer, aiohttp.ClientSession() as probe:
                call = asyncio.ensure_future(
                    infer.post(f"{base}/v2/models/m/infer", data=io.BytesIO(body))
                )
                await asyncio.to_thread(converting.wait, PAUSE_S)
                async with probe.get(f"{base}/healthz") as health:
                    status = health.status
                answered_during_pause = not pause_over
                healthz_answered.set()
                async with await call as response:
                    status, answered_during_pause, answer = (
                        status,
                        answered_during_pause,
                        await response.json(),
                    )
        finally:
            await server.stop(1.0)
    assert status == 200
    assert answered_during_pause, "/healthz waited for the body's conversion"
    assert answer["outputs"][0]["shape"] == [ROWS, 2]
    assert answer["outputs"][0]["data"][:4] == [1.0, 0.0, 1.0, 2.0]
