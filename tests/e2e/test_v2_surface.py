"""What applies to TF Serving's API applies to the Open Inference Protocol unchanged, through real
gateways: TLS and bearer tokens, the repository extension behind ``--enable_model_management_api``
(Triton's refusal without it), traces, deadlines (gRPC's and the ``timeout`` parameter) and the
drain. The official ``tritonclient`` drives it in its own process; where the test must hold
calls in flight, the project's generated V2 stub does, in the test's process."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway._pb.inference import grpc_service_pb2_grpc as pb_grpc
from tests.support.certs import make_pki, ssl_config_text
from tests.support.gateway_proc import running_gateway, start_gateway
from tests.support.grpc_calls import in_flight_but_the_busy_one
from tests.support.otlp_receiver import Received, running_receiver
from tests.support.rest import http
from tests.support.triton_gateway import (
    Calls,
    V2Gateway,
    sample,
    scrape,
    v2_gateway,  # noqa: F401 (the session fixture)
)

X = np.ones((1, 64), np.float32)
TOKEN = "s3cret"
BEARER = {"authorization": f"Bearer {TOKEN}"}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
REST_TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"
CALLER = "00f067aa0ba902b7"
TREE = {"decode", "queue wait", "batch", "compute", "encode"}


# -- TLS, tokens, traces, and no management API -------------------------------------------------
@pytest.fixture(scope="module")
def secured(
    model_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, Any], list[Received]]]:
    """A session over TLS with tokens against a traced gateway without the management API; the
    gateway has exited (its spans exported) when the fixture yields."""
    tmp = tmp_path_factory.mktemp("v2_secured")
    pki = make_pki()
    (tmp / "ssl.config").write_text(ssl_config_text(pki, client_verify=False))
    (tmp / "ca.pem").write_bytes(pki.ca)
    (tmp / "tokens").write_text(TOKEN + "\n")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        f"--ssl_config_file={tmp / 'ssl.config'}",
        "--rest_api_port=-1",
        "--rest_api_enable_tls",
        f"--auth_token_file={tmp / 'tokens'}",
    ]
    traced = {"traceparent": f"00-{TRACE}-{CALLER}-01", **BEARER}
    rest_traced = {"traceparent": f"00-{REST_TRACE}-{CALLER}-01", **BEARER}
    plan = Calls()
    for client in ("grpc", "http_aio"):
        plan.infer(f"infer_{client}", client, "mlp", {"x": ("FP32", X)}, headers=BEARER)
        plan.infer(f"no_token_{client}", client, "mlp", {"x": ("FP32", X)})
        plan.op(f"load_{client}", client, "load_model", model="mlp", headers=BEARER)
        plan.op(f"unload_{client}", client, "unload_model", model="mlp", headers=BEARER)
        plan.op(f"index_{client}", client, "repository_index", headers=BEARER)
    plan.infer("traced", "grpc", "mlp", {"x": ("FP32", X)}, headers=traced)
    plan.infer("rest_traced", "http", "mlp", {"x": ("FP32", X)}, headers=rest_traced)
    with running_receiver() as receiver:
        env = {
            **os.environ,
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint("grpc"),
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        }
        with running_gateway(args, tmp, env) as gateway:
            results, _ = plan.run(gateway, tmp, ca=str(tmp / "ca.pem"))
        yield results, list(receiver.spans)


@pytest.mark.parametrize("client", ["grpc", "http_aio"])
def test_tls_and_bearer_tokens(secured: tuple[dict[str, Any], list[Received]], client: str) -> None:
    results, _ = secured
    assert results[f"infer_{client}"]["ok"], results[f"infer_{client}"]
    refused = results[f"no_token_{client}"]
    assert refused["status"] == ("StatusCode.UNAUTHENTICATED" if client == "grpc" else "401")
    assert "bearer token" in refused["message"]


@pytest.mark.parametrize("client", ["grpc", "http_aio"])
def test_load_and_unload_need_the_management_api(
    secured: tuple[dict[str, Any], list[Received]], client: str
) -> None:
    """Triton's own answer outside its EXPLICIT mode; the index stays open (as Triton's)."""
    results, _ = secured
    for op in ("load", "unload"):
        refused = results[f"{op}_{client}"]
        assert refused["status"] == ("StatusCode.UNAVAILABLE" if client == "grpc" else "503")
        assert refused["message"].startswith(
            "explicit model load / unload is not allowed if polling is enabled"
        )
        assert "--enable_model_management_api" in refused["message"]
    index = results[f"index_{client}"]["result"]
    entries = index["models"] if client == "grpc" else index
    assert [(e["name"], e["state"]) for e in entries] == [("mlp", "READY")]


def _tree(spans: list[Received], trace: str) -> dict[str, Received]:
    return {s.span.name: s for s in spans if s.trace_id == trace}


def test_a_v2_call_is_traced_like_a_tf_serving_call(
    secured: tuple[dict[str, Any], list[Received]],
) -> None:
    results, spans = secured
    assert results["traced"]["ok"] and results["rest_traced"]["ok"]
    grpc_tree = _tree(spans, TRACE)
    server = grpc_tree.pop("inference.GRPCInferenceService/ModelInfer")
    assert set(grpc_tree) == TREE
    assert server.span.parent_span_id.hex() == CALLER
    assert server.attributes["rpc.system"] == "grpc"
    assert server.attributes["rpc.service"] == "inference.GRPCInferenceService"
    assert server.attributes["rpc.method"] == "ModelInfer"
    assert server.attributes["rpc.grpc.status_code"] == 0
    assert server.attributes["tensorgate.model"] == "mlp"
    rest_tree = _tree(spans, REST_TRACE)
    rest = rest_tree.pop("POST /v2/models/{model_name}/infer")
    assert set(rest_tree) == TREE
    assert rest.attributes["http.route"] == "/v2/models/{model_name}/infer"
    assert rest.attributes["http.response.status_code"] == 200
    assert rest.attributes["url.scheme"] == "https"


# -- the repository extension, with the management API ------------------------------------------
def test_unload_and_load_a_model(v2_gateway: V2Gateway, tmp_path: Path) -> None:  # noqa: F811
    """``spare`` leaves the served config and comes back with its entry; an unknown name is
    Triton's NOT_FOUND for a load and a no-op for an unload."""
    x = {"a": ("FP32", np.ones((1, 3), np.float32)), "b": ("FP32", np.ones((1, 3), np.float32))}
    plan = (
        Calls()
        .op("unload", "http", "unload_model", model="spare")
        .op("ready_after_unload", "grpc", "is_model_ready", model="spare")
        .op("index_after_unload", "http", "repository_index")
        .infer("infer_after_unload", "grpc", "spare", x)
        .op("server_ready", "http", "is_server_ready")
        .op("load", "grpc", "load_model", model="spare")
        .op("ready_after_load", "http", "is_model_ready", model="spare")
        .infer("infer_after_load", "http", "spare", x)
        .op("reload", "http", "load_model", model="spare")
        .op("load_unknown", "grpc", "load_model", model="nope")
        .op("load_unknown_http", "http", "load_model", model="nope")
        .op("unload_unknown", "grpc_aio", "unload_model", model="nope")
    )
    results, outputs = plan.run(v2_gateway.process, tmp_path)
    value = {k: r.get("result") for k, r in results.items()}
    assert results["unload"]["ok"] and value["ready_after_unload"] is False
    spare = [e for e in value["index_after_unload"] if e["name"] == "spare"]
    assert spare == [
        {"name": "spare", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"}
    ]
    assert results["infer_after_unload"]["status"] == "StatusCode.NOT_FOUND"
    assert value["server_ready"] is True  # every model still configured serves
    assert results["load"]["ok"] and value["ready_after_load"] is True
    np.testing.assert_array_equal(outputs["infer_after_load.sum"], [[2.0, 2.0, 2.0]])
    assert results["reload"]["ok"]
    assert results["load_unknown"]["status"] == "StatusCode.NOT_FOUND"
    assert (
        "failed to load 'nope', failed to poll from model repository"
        in (results["load_unknown"]["message"])
    )
    assert results["load_unknown_http"]["status"] == "404"
    assert results["unload_unknown"]["ok"]


# -- deadlines ----------------------------------------------------------------------------------
def test_deadlines_drop_a_queued_request(v2_gateway: V2Gateway, tmp_path: Path) -> None:  # noqa: F811
    """A request alone in ``held``'s open batch waits for a partner: gRPC's deadline and the
    ``timeout`` parameter (µs) each end it with DEADLINE_EXCEEDED and drop it from the queue —
    else the next request would have been its partner, and their batch would have run."""
    x = {"x": ("FP32", X)}
    plan = (
        Calls()
        .infer("grpc_deadline", "grpc", "held", x, client_timeout=0.5)
        .infer("grpc_timeout", "grpc_aio", "held", x, timeout=200_000)
        .infer("http_timeout", "http", "held", x, timeout=200_000)
    )
    before = scrape(v2_gateway.process)
    results, _ = plan.run(v2_gateway.process, tmp_path)
    after = scrape(v2_gateway.process)
    assert results["grpc_deadline"]["status"] == "StatusCode.DEADLINE_EXCEEDED"
    assert results["grpc_timeout"]["status"] == "StatusCode.DEADLINE_EXCEEDED"
    assert results["http_timeout"]["status"] == "504"
    assert "Deadline exceeded" in results["http_timeout"]["message"]
    runs = "tensorgate_worker_runs_total"
    assert sample(after, runs) == sample(before, runs)
    # The two ``timeout`` parameters ended the calls on the server (the first call's may count
    # as cancelled instead: its client gives up at the same moment as the server's timer). Each
    # is refused either in the queue ("expired") or, when the batches measured so far say it
    # cannot finish in 0.2 s on a loaded machine, at the door ("deadline"): never run either way.
    refused = "tensorgate_requests_refused_total"
    ended = sum(
        sample(after, refused, model_name="held", reason=reason)
        - sample(before, refused, model_name="held", reason=reason)
        for reason in ("expired", "deadline")
    )
    assert ended >= 2


# -- the drain ----------------------------------------------------------------------------------
HELD = 2


def _hold(stub: pb_grpc.GRPCInferenceServiceStub) -> list[grpc.Future]:
    """``HELD`` V2 calls in flight (in an open batch): the call past ``--max_concurrent_requests``
    is refused busy, which proves the others are in flight — and that V2 counts against it."""
    request = pb.ModelInferRequest(model_name="mlp")
    request.inputs.add(name="x", datatype="FP32", shape=[1, 64])
    request.raw_input_contents.append(X.tobytes())
    calls = [stub.ModelInfer.future(request, timeout=120) for _ in range(HELD + 1)]
    return in_flight_but_the_busy_one(calls)


def test_sigterm_finishes_v2_calls_in_flight_and_refuses_new_ones(
    model_repo: Path, tmp_path: Path
) -> None:
    params = tmp_path / "batching.config"
    params.write_text("max_batch_size { value: 64 }\nbatch_timeout_micros { value: 600000000 }\n")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--enable_batching",
        f"--batching_parameters_file={params}",
        f"--max_concurrent_requests={HELD}",
        "--shutdown_grace_seconds=60",
        "--rest_api_port=-1",
    ]
    gateway = start_gateway(args, tmp_path)
    try:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            held = _hold(stub)
            gateway.process.send_signal(signal.SIGTERM)
            health = health_pb2_grpc.HealthStub(channel)
            watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=60)
            for message in watch:
                if message.status == health_pb2.HealthCheckResponse.NOT_SERVING:
                    watch.cancel()
                    break
            with pytest.raises(grpc.RpcError) as info:
                stub.ServerLive(pb.ServerLiveRequest(), timeout=30)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "shutting down" in (info.value.details() or "")
            ready = http("GET", f"http://127.0.0.1:{gateway.rest_port}/v2/health/ready")
            assert ready.status == 503 and "shutting down" in ready.error()
            for call in held:  # the open batch left at once: each held call gets its rows
                response = call.result(timeout=60)
                assert list(response.outputs[1].shape) == [1, 10]
                assert len(response.raw_output_contents[1]) == 40
        assert gateway.process.wait(timeout=60) == 0
    finally:
        gateway.stop()
