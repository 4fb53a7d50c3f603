"""Spans leave a real gateway process over both OTLP protocols, configured only by ``OTEL_*``
variables, and reach a real OTLP receiver: every span of a traced gRPC and REST request, the
worker's under its own ``process.pid``."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from tests.support.gateway_proc import running_gateway, worker_pids
from tests.support.grpc_calls import predict_request
from tests.support.otlp_receiver import Received, running_receiver

GRPC_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
REST_TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"
CALLER = "00f067aa0ba902b7"
TREE = {"decode", "queue wait", "batch", "compute", "encode"}


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_spans_reach_an_otlp_receiver(protocol: str, model_repo: Path, tmp_path: Path) -> None:
    with running_receiver() as receiver:
        env = {
            **os.environ,
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint(protocol),
            "OTEL_SERVICE_NAME": "tensorgate-under-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        args = [
            "--model_name=mlp",
            f"--model_base_path={model_repo / 'mlp'}",
            "--workers=1",
            "--inline_runs=never",  # runs go to the workers this test observes
            "--rest_api_port=-1",
        ]
        with running_gateway(args, tmp_path, env) as gateway:
            (worker,) = worker_pids(gateway.pid)
            x = np.ones((1, 64), np.float32)
            with grpc.insecure_channel(gateway.target) as channel:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                metadata = (("traceparent", f"00-{GRPC_TRACE}-{CALLER}-01"),)
                stub.Predict(predict_request("mlp", {"x": x}), timeout=30, metadata=metadata)
            request = urllib.request.Request(
                f"http://127.0.0.1:{gateway.rest_port}/v1/models/mlp:predict",
                data=json.dumps({"instances": [[0.0] * 64]}).encode(),
                headers={"traceparent": f"00-{REST_TRACE}-{CALLER}-01"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200
            gateway_pid = gateway.pid
        # The gateway has exited: its shutdown exported every queued span.
        spans = list(receiver.spans)
    assert receiver.transports == {protocol}
    grpc_spans = _names([s for s in spans if s.trace_id == GRPC_TRACE])
    rest_spans = _names([s for s in spans if s.trace_id == REST_TRACE])
    assert set(grpc_spans) == TREE | {"tensorflow.serving.PredictionService/Predict"}
    assert set(rest_spans) == TREE | {"POST /v1/models/{model_name}:predict"}
    for tree in (grpc_spans, rest_spans):
        for name, span in tree.items():
            assert span.resource["service.name"] == "tensorgate-under-test"
            assert span.scope == "tensorgate"
            pid = worker if name == "compute" else gateway_pid
            assert span.resource["process.pid"] == pid, name
    server = grpc_spans["tensorflow.serving.PredictionService/Predict"]
    assert server.span.parent_span_id.hex() == CALLER
    assert server.attributes["rpc.method"] == "Predict"
    assert grpc_spans["compute"].span.parent_span_id == grpc_spans["batch"].span.span_id


def _names(spans: list[Received]) -> dict[str, Received]:
    names = [s.span.name for s in spans]
    assert len(names) == len(set(names)), names
    return {s.span.name: s for s in spans}
