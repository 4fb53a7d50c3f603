"""Encoded images as inputs, end to end: JPEG and PNG files made here with Pillow, sent to a real
gateway over TF Serving's gRPC (``string_val``) and REST (``{"b64": ...}``) APIs and V2's gRPC
(``bytes_contents``) and REST (binary data, base64 JSON) ones, and read back through small NHWC
ONNX models whose output is their input: the pixels must be Pillow's own decode (+ resize).

Hostile images (truncated, a 50,000 × 50,000 header, CMYK, 16-bit, animated, not an image)
each fail their own request with INVALID_ARGUMENT / 400 naming the rule, and nothing else: the
model ``held`` closes a batch only at 2 rows (a 10-minute timeout), so a valid caller queued
before the hostile one and a valid caller after it run together, in one batch, with the pixels
they sent (as in test_batch_neighbours).
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
import numpy as np
import pytest

from gateway._pb.inference import grpc_service_pb2 as v2_pb
from gateway._pb.inference import grpc_service_pb2_grpc as v2_grpc
from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc as tf_grpc
from tests.support import images, onnx_models
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import outputs_of, predict_request

SIZE = 16
HELD = "max_batch_size { value: 2 }\nbatch_timeout_micros { value: 600000000 }\n"
DEADLINE_S = 60


@dataclass(frozen=True)
class Refused:
    """A call that failed: its gRPC code name or HTTP status, and its message."""

    code: str
    message: str


Answer = np.ndarray | Refused
Send = Callable[[GatewayProcess, Any, str, list[bytes]], Awaitable[Answer]]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("images")
    rgb = ("batch", SIZE, SIZE, 3)
    onnx_models.image_identity(root / "pics" / "1" / "model.onnx", "float32", rgb)
    onnx_models.image_identity(root / "scaled" / "1" / "model.onnx", "float32", rgb)
    (root / "scaled" / "1" / "image_options.json").write_text(
        json.dumps({"channel_order": "BGR", "range": [0, 1]})
    )
    onnx_models.image_identity(root / "gray" / "1" / "model.onnx", "uint8", ("b", "h", "w", 1))
    onnx_models.image_identity(root / "held" / "1" / "model.onnx", "float32", rgb)
    (root / "held" / "1" / "batching_params.pbtxt").write_text(HELD)
    (root / "batching.config").write_text("max_batch_size { value: 8 }\n")
    names = ("pics", "scaled", "gray", "held")
    (root / "models.config").write_text(
        "model_config_list {\n"
        + "".join(f'  config {{ name: "{n}" base_path: "{root / n}" }}\n' for n in names)
        + "}\n"
    )
    args = [
        f"--model_config_file={root / 'models.config'}",
        "--workers=1",
        "--frontends=1",  # one front end holds the held batch, whichever connection a call uses
        "--inline_runs=never",
        "--enable_batching",
        f"--batching_parameters_file={root / 'batching.config'}",
        "--enable_per_model_batching_parameters",
        "--rest_api_port=-1",
    ]
    with running_gateway(args, root) as process:
        yield process


# -- the four ways in ----------------------------------------------------------------------------
async def tf_grpc_send(gw: GatewayProcess, channel: Any, model: str, items: list[bytes]) -> Answer:
    stub = tf_grpc.PredictionServiceStub(channel)
    request = predict_request(model, {"images": _strings(items)})
    try:
        response = await stub.Predict(request, timeout=DEADLINE_S)
    except grpc.aio.AioRpcError as exc:
        return Refused(exc.code().name, str(exc.details()))
    return outputs_of(response)["pixels"]


async def v2_grpc_send(gw: GatewayProcess, channel: Any, model: str, items: list[bytes]) -> Answer:
    stub = v2_grpc.GRPCInferenceServiceStub(channel)
    request = v2_pb.ModelInferRequest(model_name=model)
    tensor = request.inputs.add(name="images", datatype="BYTES", shape=[len(items)])
    tensor.contents.bytes_contents.extend(items)
    try:
        response = await stub.ModelInfer(request, timeout=DEADLINE_S)
    except grpc.aio.AioRpcError as exc:
        return Refused(exc.code().name, str(exc.details()))
    (output,) = response.outputs
    dtype = np.float32 if output.datatype == "FP32" else np.uint8
    return np.frombuffer(response.raw_output_contents[0], dtype).reshape(tuple(output.shape))


async def tf_rest_send(gw: GatewayProcess, session: Any, model: str, items: list[bytes]) -> Answer:
    body = {"instances": [{"b64": base64.b64encode(i).decode()} for i in items]}
    url = f"http://127.0.0.1:{gw.rest_port}/v1/models/{model}:predict"
    async with session.post(url, data=json.dumps(body)) as response:
        document = await response.json(content_type=None)
        if response.status != 200:
            return Refused(str(response.status), document["error"])
    return np.array(document["predictions"])


async def v2_rest_send(gw: GatewayProcess, session: Any, model: str, items: list[bytes]) -> Answer:
    data = b"".join(struct.pack("<I", len(i)) + i for i in items)
    header = {
        "inputs": [
            {
                "name": "images",
                "datatype": "BYTES",
                "shape": [len(items)],
                "parameters": {"binary_data_size": len(data)},
            }
        ]
    }
    text = json.dumps(header).encode()
    url = f"http://127.0.0.1:{gw.rest_port}/v2/models/{model}/infer"
    headers = {"Inference-Header-Content-Length": str(len(text))}
    async with session.post(url, data=text + data, headers=headers) as response:
        document = await response.json(content_type=None)
        if response.status != 200:
            return Refused(str(response.status), document["error"])
    (output,) = document["outputs"]
    return np.array(output["data"]).reshape(output["shape"])


SENDS: dict[str, tuple[Send, str, str]] = {
    "tf-grpc": (tf_grpc_send, "grpc", "INVALID_ARGUMENT"),
    "v2-grpc": (v2_grpc_send, "grpc", "INVALID_ARGUMENT"),
    "tf-rest": (tf_rest_send, "http", "400"),
    "v2-rest": (v2_rest_send, "http", "400"),
}
"""Each way in: its sender, its connection kind, and how it says INVALID_ARGUMENT."""


def _strings(items: list[bytes]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


@asynccontextmanager
async def connected(gw: GatewayProcess, how: str) -> AsyncIterator[tuple[Send, Any]]:
    """The sender of kind ``how`` and one connection of its kind (a gRPC channel or an HTTP
    session) to ``gw``."""
    send, kind, _ = SENDS[how]
    if kind == "grpc":
        async with grpc.aio.insecure_channel(gw.target) as channel:
            yield send, channel
    else:
        async with aiohttp.ClientSession() as session:
            yield send, session


async def pixels_of(gw: GatewayProcess, how: str, model: str, items: list[bytes]) -> np.ndarray:
    async with connected(gw, how) as (send, conn):
        answer = await send(gw, conn, model, items)
    assert isinstance(answer, np.ndarray), answer
    return answer


# -- tests ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", sorted(SENDS))
async def test_jpeg_and_png_rows_become_pillows_pixels(gateway: GatewayProcess, how: str) -> None:
    exact = images.encode(images.photo(SIZE, SIZE), "JPEG", quality=85)
    resized = images.encode(images.photo(40, 30, seed=1), "PNG")
    gray = images.encode(images.photo(SIZE, SIZE, seed=2, channels=1), "JPEG")
    out = await pixels_of(gateway, how, "pics", [exact, resized, gray])
    assert out.shape == (3, SIZE, SIZE, 3)
    np.testing.assert_array_equal(out[0], images.reference(exact))
    expected = images.reference(resized, size=(SIZE, SIZE)).astype(np.int16)
    assert np.abs(out[1].astype(np.int16) - expected).max() <= images.RESIZE_TOLERANCE
    np.testing.assert_array_equal(out[2], images.reference(gray, "RGB"))


@pytest.mark.parametrize("how", ["tf-grpc", "v2-rest"])
async def test_model_options_and_dynamic_sizes(gateway: GatewayProcess, how: str) -> None:
    data = images.encode(images.photo(SIZE, SIZE), "PNG")
    scaled = (await pixels_of(gateway, how, "scaled", [data]))[0]
    expected = images.reference(data)[:, :, ::-1].astype(np.float32) / np.float32(255)
    np.testing.assert_allclose(scaled, expected, rtol=1e-6)
    small, large = images.encode(images.photo(9, 7), "PNG"), images.encode(images.photo(10, 7))
    gray = await pixels_of(gateway, how, "gray", [small])
    assert gray.shape == (1, 7, 9, 1)
    np.testing.assert_array_equal(gray[0], images.reference(small, "L"))
    async with connected(gateway, how) as (send, conn):
        refused = await send(gateway, conn, "gray", [small, large])
    assert isinstance(refused, Refused) and refused.code == SENDS[how][2], refused
    assert "must share a size" in refused.message


async def test_numeric_tensors_still_feed_an_image_input_and_metadata_is_the_models(
    gateway: GatewayProcess,
) -> None:
    pixels = np.arange(SIZE * SIZE * 3, dtype=np.float32).reshape(1, SIZE, SIZE, 3)

    async with connected(gateway, "tf-grpc") as (_, channel):
        stub = tf_grpc.PredictionServiceStub(channel)
        response = await stub.Predict(predict_request("pics", {"images": pixels}))
    np.testing.assert_array_equal(outputs_of(response)["pixels"], pixels)

    async with connected(gateway, "v2-rest") as (_, session):
        url = f"http://127.0.0.1:{gateway.rest_port}/v2/models/pics"
        async with session.get(url) as answer:
            metadata = await answer.json()
    (images_input,) = metadata["inputs"]
    assert images_input == {"name": "images", "datatype": "FP32", "shape": [-1, SIZE, SIZE, 3]}


@pytest.mark.parametrize("kind", sorted(images.HOSTILE))
@pytest.mark.parametrize("how", sorted(SENDS))
async def test_a_hostile_image_fails_alone_and_its_batch_neighbours_run(
    gateway: GatewayProcess, how: str, kind: str
) -> None:
    make, words = images.HOSTILE[kind]
    first = images.encode(images.photo(SIZE, SIZE, seed=3))
    second = images.encode(images.photo(SIZE, SIZE, seed=4), "PNG")

    async with connected(gateway, how) as (send, conn):
        queuing = asyncio.ensure_future(send(gateway, conn, "held", [first]))
        hostile = await send(gateway, conn, "held", [make()])
        after = await send(gateway, conn, "held", [second])  # its batch: queued's and its own
        queued = await queuing
    assert isinstance(hostile, Refused) and hostile.code == SENDS[how][2], hostile
    assert "input 'images' image 0" in hostile.message and words in hostile.message
    assert isinstance(queued, np.ndarray) and isinstance(after, np.ndarray), (queued, after)
    np.testing.assert_array_equal(queued[0], images.reference(first))
    np.testing.assert_array_equal(after[0], images.reference(second))
