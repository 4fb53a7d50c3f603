"""Bounded memory through a real gateway: amplifying requests are refused before they expand,
and the decoded bytes held by in-flight requests stay under ``--max_inflight_bytes``.

Memory is the gateway's anonymous RSS (``RssAnon``: the shared-memory areas written for the
workers are not the gateway's own growth), measured by the test; nothing is timed.
"""

from __future__ import annotations

import queue
from pathlib import Path

import grpc
import numpy as np

from gateway._pb.tensorflow.core.framework import tensor_pb2, types_pb2
from gateway._pb.tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
from tests.support.gateway_proc import running_gateway
from tests.support.grpc_calls import outputs_of, predict_request

MIB = 2**20
ROWS = 65536
"""Rows of one big request: 65536 × 64 float32 = 16 MiB decoded, from a 20-byte float_val."""
RECEIVE_ANY = ("grpc.max_receive_message_length", -1)


def rss_anon(pid: int) -> int:
    """The process's anonymous resident memory, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc status")


def _request(dtype: int, shape: list[int], **values: object) -> predict_pb2.PredictRequest:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "mlp"
    tensor = tensor_pb2.TensorProto(dtype=dtype, **values)  # type: ignore[arg-type]
    for size in shape:
        tensor.tensor_shape.dim.add(size=size)
    request.inputs["x"].CopyFrom(tensor)
    return request


def _send_all(
    stub: prediction_service_pb2_grpc.PredictionServiceStub,
    request: predict_pb2.PredictRequest,
    count: int,
) -> tuple[list[grpc.Future], queue.Queue[grpc.Future]]:
    """``count`` concurrent calls; each lands in the returned queue when it ends."""
    done: queue.Queue[grpc.Future] = queue.Queue()
    calls = [stub.Predict.future(request, timeout=300) for _ in range(count)]
    for call in calls:
        call.add_done_callback(done.put)
    return calls, done


def test_amplifying_requests_are_bounded(model_repo: Path, tmp_path: Path) -> None:
    # Held requests wait in one open batch (10 minutes of timeout) until a last one fills it.
    params = tmp_path / "batching.config"
    params.write_text(
        f"max_batch_size {{ value: {2 * ROWS + 1} }}\n"
        "batch_timeout_micros { value: 600000000 }\n"
        "max_enqueued_batches { value: 100 }\n"
    )
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--enable_batching",
        f"--batching_parameters_file={params}",
        f"--max_request_bytes={16 * MIB}",
        f"--max_inflight_bytes={32 * MIB + 1024}",
    ]
    with (
        running_gateway(args, tmp_path) as gateway,
        grpc.insecure_channel(gateway.target, options=[RECEIVE_ANY]) as ch,
    ):
        stub = prediction_service_pb2_grpc.PredictionServiceStub(ch)
        baseline = rss_anon(gateway.pid)

        # 36 bytes declaring 2^24 strings for a float32 input: refused on its dtype, unexpanded.
        strings = _request(types_pb2.DT_STRING, [2**24], string_val=[b"a"])
        assert strings.ByteSize() <= 48
        calls, _ = _send_all(stub, strings, 16)
        for call in calls:
            error = call.exception()
            assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "has dtype string but the signature expects float32" in error.details()
        assert rss_anon(gateway.pid) - baseline < 32 * MIB

        # 16 × 16 MiB decoded: two fit in flight, the other 14 are refused at once.
        big = _request(types_pb2.DT_FLOAT, [ROWS, 64], float_val=[1.0])
        assert big.ByteSize() <= 40
        calls, done = _send_all(stub, big, 16)
        refused = [done.get(timeout=300) for _ in range(14)]
        for call in refused:
            error = call.exception()
            assert error is not None and error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "--max_inflight_bytes" in error.details()
        held = rss_anon(gateway.pid) - baseline
        assert held < 32 * MIB + 16 * MIB + 24 * MIB, f"{held / MIB:.0f} MiB held"

        # One more row fills the batch: the held requests and it complete, with right answers.
        last = stub.Predict(predict_request("mlp", {"x": np.ones((1, 64), np.float32)}))
        assert outputs_of(last)["probs"].shape == (1, 10)
        for call in calls:
            if call not in refused:
                assert outputs_of(call.result())["probs"].shape == (ROWS, 10)
        after = rss_anon(gateway.pid) - baseline
        assert after < 48 * MIB, f"{after / MIB:.0f} MiB kept after the requests completed"
