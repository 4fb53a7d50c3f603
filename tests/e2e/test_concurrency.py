"""Many concurrent requests of random sizes: each gets exactly its own answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import numpy as np

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import GatewayProcess
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.ort import run_reference

REQUESTS = 300


async def test_concurrent_requests_each_get_their_own_rows(
    gateway: GatewayProcess, model_repo: Path
) -> None:
    rng = np.random.default_rng(11)
    batches = [
        rng.standard_normal((int(rng.integers(1, 9)), 64)).astype(np.float32)
        for _ in range(REQUESTS)
    ]
    bad = {17, 123, 250}  # malformed requests between good ones must fail alone

    async with grpc.aio.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        async def one(i: int) -> object:
            x = batches[i][:, :63] if i in bad else batches[i]
            try:
                return await stub.Predict(predict_request("mlp", {"x": x}), timeout=120)
            except grpc.aio.AioRpcError as error:
                return error.code()

        responses = await asyncio.gather(*(one(i) for i in range(REQUESTS)))
    model = model_repo / "mlp" / "2" / "model.onnx"
    for i, response in enumerate(responses):
        if i in bad:
            assert response == grpc.StatusCode.INVALID_ARGUMENT
            continue
        got = outputs_of(response)  # type: ignore[arg-type]
        expected = run_reference(model, {"x": batches[i]})
        np.testing.assert_array_equal(got["logits"], expected["logits"], err_msg=f"request {i}")
