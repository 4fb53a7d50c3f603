"""Batching through real gateways and real workers: every request gets exactly its own answer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import GatewayProcess, run_cli, running_gateway
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.onnx_models import IDENTITY_DTYPES
from tests.support.ort import run_reference

REQUESTS = 240


@pytest.fixture(scope="module")
def batching_gateway(
    model_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    logs = tmp_path_factory.mktemp("batching")
    params = logs / "batching.config"
    params.write_text(
        "max_batch_size { value: 32 }\n"
        "batch_timeout_micros { value: 2000 }\n"
        "max_enqueued_batches { value: 1000 }\n"
        "enable_large_batch_splitting { value: true }\n"
        "max_execution_batch_size { value: 16 }\n"
        "allowed_batch_sizes: 4\nallowed_batch_sizes: 8\nallowed_batch_sizes: 16\n"
    )
    args = [
        f"--model_config_file={model_repo / 'models.config'}",
        "--allow_version_labels_for_unavailable_models",  # its labels are set at start
        "--workers=2",
        "--enable_batching",
        f"--batching_parameters_file={params}",
    ]
    with running_gateway(args, logs) as process:
        yield process


async def test_concurrent_random_sizes_each_get_their_own_rows(
    batching_gateway: GatewayProcess, model_repo: Path
) -> None:
    rng = np.random.default_rng(21)
    batches = [
        rng.standard_normal((int(rng.integers(1, 25)), 64)).astype(np.float32)
        for _ in range(REQUESTS)
    ]
    bad = {5, 77, 160}  # malformed requests between good ones fail alone

    async with grpc.aio.insecure_channel(batching_gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        async def one(i: int) -> object:
            x = batches[i].astype(np.float64) if i in bad else batches[i]
            filters = ["probs"] if i % 3 == 0 else []
            request = predict_request("mlp", {"x": x}, version=1, output_filter=filters)
            try:
                return await stub.Predict(request, timeout=120)
            except grpc.aio.AioRpcError as error:
                return error.code()

        responses = await asyncio.gather(*(one(i) for i in range(REQUESTS)))
    model = model_repo / "mlp" / "1" / "model.onnx"
    for i, response in enumerate(responses):
        if i in bad:
            assert response == grpc.StatusCode.INVALID_ARGUMENT, i
            continue
        got = outputs_of(response)  # type: ignore[arg-type]
        expected = run_reference(model, {"x": batches[i]})
        assert sorted(got) == (["probs"] if i % 3 == 0 else ["logits", "probs"])
        for name, value in got.items():
            assert value.shape == expected[name].shape, (i, name)
            np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6, err_msg=str(i))


def test_request_over_max_batch_size(batching_gateway: GatewayProcess) -> None:
    with grpc.insecure_channel(batching_gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.zeros((33, 64), np.float32)
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(predict_request("mlp", {"x": x}), timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details() == "Task size 33 is larger than maximum input batch size 32"


async def test_strings_and_every_dtype_batch_too(batching_gateway: GatewayProcess) -> None:
    inputs = {
        f"in_{d}": (
            np.array([[b"x", b"yy"]], dtype=object) if d == "string" else np.ones((1, 2), dtype=d)
        )
        for d in IDENTITY_DTYPES
    }

    async with grpc.aio.insecure_channel(batching_gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        calls = [stub.Predict(predict_request("identities", inputs), timeout=60) for _ in range(8)]
        responses = await asyncio.gather(*calls)
    for response in responses:
        got = outputs_of(response)
        assert got["out_string"].tolist() == [[b"x", b"yy"]]
        assert got["out_int64"].tolist() == [[1, 1]]


def test_bad_allowed_batch_sizes_is_a_clear_startup_error(tmp_path: Path) -> None:
    params = tmp_path / "batching.config"
    params.write_text(
        "max_batch_size { value: 8 }\nallowed_batch_sizes: 2\nallowed_batch_sizes: 4\n"
    )
    done = run_cli(
        "--model_name=m",
        "--model_base_path=/m",
        "--enable_batching",
        f"--batching_parameters_file={params}",
    )
    assert done.returncode == 1
    assert "final entry in allowed_batch_sizes must equal max_batch_size" in done.stderr
    assert str(params) in done.stderr


def test_per_model_batching_parameters(tmp_path: Path) -> None:
    from tests.support import onnx_models

    onnx_models.mlp(tmp_path / "m" / "3" / "model.onnx")
    (tmp_path / "m" / "3" / "batching_params.pbtxt").write_text("max_batch_size { value: 4 }\n")
    args = [
        "--model_name=m",
        f"--model_base_path={tmp_path / 'm'}",
        "--workers=1",
        "--enable_batching",
        "--enable_per_model_batching_parameters",
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        ok = stub.Predict(predict_request("m", {"x": np.zeros((4, 64), np.float32)}), timeout=30)
        assert outputs_of(ok)["probs"].shape == (4, 10)
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(predict_request("m", {"x": np.zeros((5, 64), np.float32)}), timeout=30)
        assert info.value.details() == "Task size 5 is larger than maximum input batch size 4"


def test_bad_per_model_batching_file_fails_that_version(tmp_path: Path) -> None:
    from gateway._pb.tensorflow_serving.apis import get_model_status_pb2, model_service_pb2_grpc
    from tests.support import onnx_models

    onnx_models.mlp(tmp_path / "bad" / "1" / "model.onnx")
    bad_file = tmp_path / "bad" / "1" / "batching_params.pbtxt"
    bad_file.write_text("max_batch_size { value: 0 }\n")
    args = [
        "--model_name=bad",
        f"--model_base_path={tmp_path / 'bad'}",
        "--workers=1",
        "--enable_batching",
        "--enable_per_model_batching_parameters",
        "--max_num_load_retries=0",  # TF Serving's 5 retries a minute apart would stall start
    ]
    with running_gateway(args, tmp_path) as gateway, grpc.insecure_channel(gateway.target) as ch:
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = "bad"
        response = model_service_pb2_grpc.ModelServiceStub(ch).GetModelStatus(request, timeout=30)
        (status,) = response.model_version_status
        assert status.state == get_model_status_pb2.ModelVersionStatus.END
        assert status.status.error_code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
        assert str(bad_file) in status.status.error_message
        assert "max_batch_size must be >= 1, got 0" in status.status.error_message


def test_a_request_of_zero_rows_is_ok_with_empty_outputs(batching_gateway: GatewayProcess) -> None:
    """With batching on, shape [0, 64] was an INTERNAL KeyError; unbatched it was already OK."""
    with grpc.insecure_channel(batching_gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        x = np.zeros((0, 64), np.float32)
        outputs = outputs_of(stub.Predict(predict_request("mlp", {"x": x}), timeout=60))
        assert outputs["probs"].shape == (0, 10)
