"""The gRPC hook: observed method handlers for the services a protocol describes, and the call
records they report, through a real grpc.aio server on port 0 (which handler a call finds:
tests/transport/test_grpc_services.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from gateway.observability.calls import Recorder
from gateway.observability.grpc_hook import CODES, GrpcObserver
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.tfs_metrics import TfServingMetrics
from gateway.transport.gate import Gate
from gateway.transport.grpc_services import register
from gateway.transport.surface import GrpcService


def _model_of(request: Any) -> str:
    return request.decode() if isinstance(request, bytes) else ""


# -- the records of real calls ---------------------------------------------------------------------
SERVICE = "test.Service"


async def _answer(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    """``b"<model>"`` answers OK; ``b"missing"`` fails NOT_FOUND."""
    if request == b"missing":
        await context.abort(grpc.StatusCode.NOT_FOUND, "no such model")
    return request


def _rows(request: bytes) -> int:
    return len(request)


HANDLERS = {
    name: grpc.unary_unary_rpc_method_handler(_answer) for name in ("Predict", "MultiInference")
}


async def _calls(
    service: GrpcService, calls: Callable[[grpc.aio.Channel], Awaitable[None]]
) -> tuple[TfServingMetrics, GatewayMetrics]:
    """Serve ``service`` (``_answer`` as Predict and MultiInference), observed with TF's
    metrics and tensorgate's, and make ``calls``."""
    tfs, metrics = TfServingMetrics(), GatewayMetrics()
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    recorder = Recorder(tfs, metrics, None)
    recorder.models_changed(["m", "abc"])
    register(server, [service], Gate(), GrpcObserver(recorder))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            await calls(channel)
    finally:
        await server.stop(None)
    return tfs, metrics


async def _ask(channel: grpc.aio.Channel, method: str, request: bytes) -> grpc.StatusCode:
    try:
        await channel.unary_unary(f"/{SERVICE}/{method}")(request, timeout=30)
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


async def test_each_call_reports_its_protocol_model_status_and_rows() -> None:
    service = GrpcService(
        SERVICE, "tfserving", HANDLERS, model_of=_model_of, rows_of={"MultiInference": _rows}
    )

    async def calls(channel: grpc.aio.Channel) -> None:
        assert await _ask(channel, "Predict", b"m") == grpc.StatusCode.OK
        assert await _ask(channel, "Predict", b"missing") == grpc.StatusCode.NOT_FOUND
        assert await _ask(channel, "MultiInference", b"abc") == grpc.StatusCode.OK
        assert await _ask(channel, "MultiInference", b"missing") == grpc.StatusCode.NOT_FOUND

    tfs, metrics = await _calls(service, calls)
    # a model not configured never names a series (the caller chose the name)
    assert dict(tfs.request_count.items()) == {("m", "OK"): 1, ("(unknown)", "NOT_FOUND"): 1}
    assert [labels for labels, _ in tfs.request_latency.items()] == [("m", "Predict", "GRPC")]
    assert dict(tfs.request_example_count_total.items()) == {("abc",): 3}
    durations = {labels: cell.cumulative()[-1] for labels, cell in metrics.request_duration.items()}
    assert durations == {
        ("m", "Predict", "GRPC", "tfserving"): 1,
        ("(unknown)", "Predict", "GRPC", "tfserving"): 1,
        ("abc", "MultiInference", "GRPC", "tfserving"): 1,
        ("(unknown)", "MultiInference", "GRPC", "tfserving"): 1,
    }
    assert metrics.in_flight[("GRPC", "tfserving")] == 0


async def test_tf_serving_s_metrics_count_only_its_own_protocol_s_calls() -> None:
    service = GrpcService(SERVICE, "v2", HANDLERS, model_of=_model_of)

    async def calls(channel: grpc.aio.Channel) -> None:
        assert await _ask(channel, "Predict", b"m") == grpc.StatusCode.OK

    tfs, metrics = await _calls(service, calls)
    assert not tfs.request_count.values and not tfs.request_latency.cells
    assert [labels for labels, _ in metrics.request_duration.items()] == [
        ("m", "Predict", "GRPC", "v2")
    ]


@pytest.mark.parametrize("name", ["OK", "NOT_FOUND", "UNAVAILABLE"])
def test_status_code_numbers(name: str) -> None:
    assert CODES[name] == getattr(grpc.StatusCode, name).value[0]
