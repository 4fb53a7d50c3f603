"""A large TF Serving REST body is read off its front end's loop: while it is being parsed, a
``/healthz`` on another connection is answered; and its numbers, read straight into a buffer
(:mod:`gateway.json_numbers`), make the tensor orjson's objects made.

A real HTTP server with the ``/v1`` routes over a real serving core (one ONNX worker, ``m``:
y = 2x, x float32 [-1, 2]). The one fake is the pause: the body's read
(:func:`gateway.json_numbers.read`) waits on an event that the test sets only once ``/healthz``
has answered. Read on the loop, the loop would wait with it, and ``/healthz`` would be answered
only after the pause gave up (``PAUSE_S``), which the test sees as the order of the two events.
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

from gateway import json_numbers
from gateway.config.model_config import ModelSpecConfig
from gateway.tfserving.rest import json_request
from tests.support import onnx_models
from tests.support.rest import tf_rest_server
from tests.support.stack import serving_stack

PAUSE_S = 15.0
ROWS = 1 << 17  # 2 x 131072 float32 values in the row format: a body of about 1.6 MB


async def test_healthz_is_answered_while_a_large_body_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx_models.scaled(tmp_path / "m" / "1" / "model.onnx", 2.0)
    spec = ModelSpecConfig(name="m", base_path=str(tmp_path / "m"))
    body = orjson.dumps({"instances": [[0.5, float(i % 7)] for i in range(ROWS)]})
    assert json_request.read_off_loop(body)
    reading, healthz_answered, pause_over = threading.Event(), threading.Event(), []
    real = json_numbers.read
    reads: list[Any] = []

    def paused(*args: Any, **kwargs: Any) -> Any:
        reading.set()
        healthz_answered.wait(PAUSE_S)
        pause_over.append(healthz_answered.is_set())
        reads.append(real(*args, **kwargs))
        return reads[-1]

    monkeypatch.setattr(json_numbers, "read", paused)

    async with serving_stack([spec]) as stack:
        server = tf_rest_server(stack.core, timeout_ms=120_000, max_body_bytes=1 << 24)
        port = await server.start("127.0.0.1", 0)
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession() as call, aiohttp.ClientSession() as probe:
                predict = asyncio.ensure_future(
                    call.post(f"{base}/v1/models/m:predict", data=io.BytesIO(body))
                )
                await asyncio.to_thread(reading.wait, PAUSE_S)
                async with probe.get(f"{base}/healthz") as health:
                    status = health.status
                answered_during_pause = not pause_over
                healthz_answered.set()
                async with await predict as response:
                    status, answered_during_pause, answer = (
                        status,
                        answered_during_pause,
                        await response.json(),
                    )
        finally:
            await server.stop(1.0)
    assert status == 200
    assert answered_during_pause, "/healthz waited for the body's read"
    assert reads and reads[0] is not None and type(reads[0]["instances"]) is json_numbers.Numbers
    predictions = answer["predictions"]
    assert len(predictions) == ROWS
    assert predictions[:3] == [[1.0, 0.0], [1.0, 2.0], [1.0, 4.0]]
