"""Traces through a whole gateway in this process (real workers), exported to an in-memory
exporter: one connected trace per request across gateway and worker, with the right parents."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import grpc
import numpy as np
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from channel.logs import JsonFormatter
from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from gateway.config.model_config import model_server_config_from_flags, model_specs
from gateway.config.settings import Settings
from gateway.config.settings_field import OS_CHOSEN_PORT
from gateway.observability.hooks import Observability
from gateway.observability.span_export import RecordExporter
from gateway.observability.tracing import Sampling, Tracing, default_resource
from gateway.one_process import Gateway
from tests.support import onnx_models
from tests.support.grpc_calls import predict_request
from tests.support.rest import urlopen_answer

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
CALLER_SPAN = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{CALLER_SPAN:016x}-01"
PREDICT = "tensorflow.serving.PredictionService/Predict"
X = np.ones((1, 64), np.float32)


class Traced:
    def __init__(self, gateway: Gateway, exporter: InMemorySpanExporter) -> None:
        self.gateway = gateway
        self.exporter = exporter

    def traces(self) -> dict[int, list[ReadableSpan]]:
        by_trace: dict[int, list[ReadableSpan]] = {}
        for span in self.exporter.get_finished_spans():
            assert span.context is not None
            by_trace.setdefault(span.context.trace_id, []).append(span)
        return by_trace


@pytest.fixture
def model(tmp_path: Path) -> Path:
    onnx_models.mlp(tmp_path / "mlp" / "1" / "model.onnx")
    return tmp_path / "mlp"


async def start(model: Path, tmp_path: Path, roots: bool = True, **flags: object) -> Traced:
    """A gateway tracing every root (``roots``) or only sampled parents; runs go to the worker
    unless ``flags`` say ``inline_runs`` (then it has placed the model before it returns)."""
    flags.setdefault("inline_runs", "never")
    settings = Settings(
        model_name="mlp",
        model_base_path=str(model),
        port=0,
        workers=1,
        tensorflow_intra_op_parallelism=1,
        tensorflow_inter_op_parallelism=1,
        file_system_poll_wait_seconds=0,
        **flags,  # type: ignore[arg-type]
    )
    exporter = InMemorySpanExporter()
    resource = default_resource()
    processor = SimpleSpanProcessor(RecordExporter(exporter, resource))
    tracing = Tracing(processor, Sampling(True, 1.0 if roots else 0.0), resource)
    observability = Observability(page_path=None, tracing=tracing)
    specs = model_specs(model_server_config_from_flags(settings))
    gateway = Gateway(settings, specs, observability)
    await gateway.start()
    await gateway.inline.loaded()
    return Traced(gateway, exporter)


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    names = [s.name for s in spans]
    assert len(names) == len(set(names)), names
    return {s.name: s for s in spans}


def check_request_tree(spans: Sequence[ReadableSpan], server_name: str, worker_pid: int) -> None:
    """server → decode, queue wait, batch → compute (in the worker ``worker_pid``, or in this
    process for a run in the front end), encode; all one trace."""
    named = by_name(spans)
    assert set(named) == {server_name, "decode", "queue wait", "batch", "compute", "encode"}
    server = named[server_name]
    assert server.kind == SpanKind.SERVER and server.context is not None
    for child in ("decode", "queue wait", "batch", "encode"):
        parent = named[child].parent
        assert parent is not None and parent.span_id == server.context.span_id, child
    compute, batch = named["compute"], named["batch"]
    assert compute.parent is not None and batch.context is not None
    assert compute.parent.span_id == batch.context.span_id
    assert compute.resource.attributes["process.pid"] == worker_pid
    for span in spans:
        if span is not compute:
            assert span.resource.attributes["process.pid"] == os.getpid(), span.name
    assert all(span.end_time >= span.start_time for span in spans)  # type: ignore[operator]
    order = [named[n].start_time for n in ("decode", "queue wait", "batch", "encode")]
    assert order == sorted(order)  # type: ignore[type-var]
    assert batch.start_time <= compute.start_time  # type: ignore[operator]
    assert compute.end_time <= batch.end_time  # type: ignore[operator]


async def test_each_grpc_request_is_one_connected_trace_across_gateway_and_worker(
    model: Path, tmp_path: Path
) -> None:
    traced = await start(model, tmp_path)
    try:
        target = f"127.0.0.1:{traced.gateway.grpc_port}"
        async with grpc.aio.insecure_channel(target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            traceparent = (("traceparent", TRACEPARENT),)
            await stub.Predict(predict_request("mlp", {"x": X}), metadata=traceparent)
            await stub.Predict(predict_request("mlp", {"x": X}))
        (worker_pid,) = traced.gateway.pool.pids()
    finally:
        await traced.gateway.stop()
    traces = traced.traces()
    assert len(traces) == 2
    continued = traces.pop(TRACE_ID)
    check_request_tree(continued, PREDICT, worker_pid)
    server = by_name(continued)[PREDICT]
    assert server.parent is not None and server.parent.span_id == CALLER_SPAN
    assert server.parent.is_remote
    assert server.attributes is not None
    assert dict(server.attributes) == {
        "rpc.system": "grpc",
        "rpc.service": "tensorflow.serving.PredictionService",
        "rpc.method": "Predict",
        "rpc.grpc.status_code": 0,
        "tensorgate.model": "mlp",
    }
    ((_, root),) = traces.items()
    check_request_tree(root, PREDICT, worker_pid)
    assert by_name(root)[PREDICT].parent is None


async def test_a_run_in_the_front_end_keeps_its_compute_span(model: Path, tmp_path: Path) -> None:
    traced = await start(model, tmp_path, inline_runs="always")
    try:
        assert traced.gateway.inline.placed == {"mlp:1": "frontend"}
        target = f"127.0.0.1:{traced.gateway.grpc_port}"
        async with grpc.aio.insecure_channel(target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            await stub.Predict(predict_request("mlp", {"x": X}))
    finally:
        await traced.gateway.stop()
    ((_, spans),) = traced.traces().items()
    check_request_tree(spans, PREDICT, os.getpid())


async def test_at_ratio_0_only_requests_with_a_sampled_parent_are_traced(
    model: Path, tmp_path: Path
) -> None:
    traced = await start(model, tmp_path, roots=False)
    assert traced.gateway.observability.recorder is not None
    assert traced.gateway.observability.recorder.needs_parent
    try:
        target = f"127.0.0.1:{traced.gateway.grpc_port}"
        async with grpc.aio.insecure_channel(target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            await stub.Predict(predict_request("mlp", {"x": X}))
            traceparent = (("traceparent", TRACEPARENT),)
            await stub.Predict(predict_request("mlp", {"x": X}), metadata=traceparent)
            unsampled = (("traceparent", TRACEPARENT[:-2] + "00"),)
            await stub.Predict(predict_request("mlp", {"x": X}), metadata=unsampled)
        (worker_pid,) = traced.gateway.pool.pids()
    finally:
        await traced.gateway.stop()
    traces = traced.traces()
    assert list(traces) == [TRACE_ID]
    check_request_tree(traces[TRACE_ID], PREDICT, worker_pid)


async def test_a_batch_span_is_parented_by_its_first_member_and_links_the_others(
    model: Path, tmp_path: Path
) -> None:
    params = tmp_path / "batching.pbtxt"
    params.write_text(
        "max_batch_size { value: 2 }\nbatch_timeout_micros { value: 60000000 }\n"
        "num_batch_threads { value: 1 }\n"
    )

    traced = await start(
        model, tmp_path, enable_batching=True, batching_parameters_file=str(params)
    )
    try:
        target = f"127.0.0.1:{traced.gateway.grpc_port}"
        async with grpc.aio.insecure_channel(target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            # Two rows fill the batch, so it leaves at once (the timeout never fires).
            await asyncio.gather(
                stub.Predict(predict_request("mlp", {"x": X})),
                stub.Predict(predict_request("mlp", {"x": X})),
            )
    finally:
        await traced.gateway.stop()
    traces = traced.traces()
    assert len(traces) == 2
    batches = [s for spans in traces.values() for s in spans if s.name == "batch"]
    (batch,) = batches
    assert batch.attributes is not None and batch.attributes["tensorgate.batch.rows"] == 2
    assert batch.context is not None and batch.parent is not None
    first = by_name(traces[batch.context.trace_id])[PREDICT]
    assert first.context is not None and batch.parent.span_id == first.context.span_id
    ((_, other),) = [(t, s) for t, s in traces.items() if t != batch.context.trace_id]
    second = by_name(other)[PREDICT]
    assert [link.context for link in batch.links] == [second.context]
    assert {s.name for s in other} == {PREDICT, "decode", "queue wait", "encode"}


async def test_rest_calls_get_http_server_spans_and_json_logs_carry_their_ids(
    model: Path, tmp_path: Path
) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("gateway"))
    rest_log = logging.getLogger("gateway.transport.http.server")
    rest_log.addHandler(handler)
    old_level = rest_log.level
    rest_log.setLevel(logging.DEBUG)

    try:
        traced = await start(model, tmp_path, rest_api_port=OS_CHOSEN_PORT)
        port = traced.gateway.rest_port
        try:
            for path, body in (
                ("/v1/models/mlp:predict", {"instances": [[0.0] * 64]}),
                ("/v1/models/nope:predict", {"instances": [[0.0] * 64]}),
            ):
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}{path}",
                    data=json.dumps(body).encode(),
                    headers={"traceparent": TRACEPARENT},
                    method="POST",
                )
                await asyncio.to_thread(_status, request)
            (worker_pid,) = traced.gateway.pool.pids()
        finally:
            await traced.gateway.stop()
        spans = traced.traces()[TRACE_ID]
        servers = [s for s in spans if s.kind == SpanKind.SERVER]
        assert [s.name for s in servers] == ["POST /v1/models/{model_name}:predict"] * 2
        ok_server, missing_server = servers
        assert ok_server.attributes is not None and missing_server.attributes is not None
        assert ok_server.attributes["http.response.status_code"] == 200
        assert missing_server.attributes["http.response.status_code"] == 404
        assert ok_server.attributes["http.route"] == "/v1/models/{model_name}:predict"
        assert ok_server.context is not None and missing_server.context is not None
        # The unknown model fails before anything is queued: its server span has no children.
        check_request_tree(
            [s for s in spans if s is not missing_server], ok_server.name, worker_pid
        )
        started, line = [json.loads(x) for x in stream.getvalue().splitlines()]
        assert started["message"].startswith("Exporting HTTP/REST API")
        assert "trace_id" not in started  # written outside any request
        assert line["message"].startswith("REST call failed with 404")
        assert line["trace_id"] == f"{TRACE_ID:032x}"
        assert line["span_id"] == f"{missing_server.context.span_id:016x}"
        assert line["process"] == "gateway" and line["level"] == "DEBUG"
    finally:
        rest_log.removeHandler(handler)
        rest_log.setLevel(old_level)


def _status(request: urllib.request.Request) -> int:
    return urlopen_answer(request)[0]
