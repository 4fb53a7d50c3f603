"""Several front-end processes sharing one worker pool, as real processes: ``--frontends=2``.

Each test reaches the front ends it names through connections it knows they accepted
(:mod:`tests.support.frontends`); waits are on states the gateway publishes (``--ready_fd``,
grpc.health.v1 ``Watch``, RPC answers, processes that end), each bounded and never reached when
things work.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway._pb.tensorflow_serving.apis import (
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from tests.support.frontends import cpu_seconds, get, grpc_channels, rest_connections
from tests.support.gateway_proc import (
    GatewayProcess,
    assert_sigkill_leaves_nothing,
    front_end_pids,
    running_gateway,
    start_gateway,
    wait_gone,
    worker_pids,
)
from tests.support.grpc_calls import outputs_of, predict_request
from tests.support.lifecycle import config_text, reload
from tests.support.ort import run_reference
from tests.support.triton_gateway import sample
from tests.support.waits import until

WAIT_S = 120.0
X = np.ones((1, 64), np.float32)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
FRONT_ENDS = ["--frontends=2", "--tensorflow_intra_op_parallelism=1"]
METRICS = "/monitoring/prometheus/metrics"


def _args(model_repo: Path, *extra: str) -> list[str]:
    return [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=2",
        "--inline_runs=never",  # the fleet's tests count the runs its workers see
        "--file_system_poll_wait_seconds=0",
        *FRONT_ENDS,
        *extra,
    ]


def _predict(channel: grpc.Channel, model: str = "mlp", x: np.ndarray = X) -> np.ndarray:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    response = stub.Predict(predict_request(model, {"x": x}), timeout=WAIT_S)
    return outputs_of(response)["probs"]


def _watch_until(channel: grpc.Channel, service: str, wanted: int) -> None:
    stream = health_pb2_grpc.HealthStub(channel).Watch(
        health_pb2.HealthCheckRequest(service=service), timeout=WAIT_S
    )
    for message in stream:
        if message.status == wanted:
            stream.cancel()
            return
    raise AssertionError(f"health of {service!r} never became {wanted}")


@pytest.fixture(scope="module")
def fleet(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """Two front ends, two workers, REST and the metrics page."""
    monitoring = tmp_path_factory.mktemp("fleet") / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: true }\n")
    args = _args(model_repo, "--rest_api_port=-1", f"--monitoring_config_file={monitoring}")
    with running_gateway(args, tmp_path_factory.mktemp("fleet_logs")) as gateway:
        yield gateway


def test_the_supervisor_starts_front_ends_and_workers(fleet: GatewayProcess) -> None:
    fronts = front_end_pids(fleet.pid)
    assert len(fronts) == 2 and fleet.ready_info["frontends"] == fronts
    assert len(worker_pids(fleet.pid)) == 2


def test_every_front_end_serves_and_works_under_load(
    fleet: GatewayProcess, model_repo: Path
) -> None:
    fronts = front_end_pids(fleet.pid)
    channels = grpc_channels(fleet.target, fronts)
    own_connection = [("grpc.use_local_subchannel_pool", 1)]
    extra = [grpc.insecure_channel(fleet.target, options=own_connection) for _ in range(6)]
    before = {pid: cpu_seconds(pid) for pid in fronts}
    expected = run_reference(model_repo / "mlp" / "2" / "model.onnx", {"x": X})["probs"]
    errors: list[BaseException] = []

    def calls(channel: grpc.Channel) -> None:
        try:
            for _ in range(150):
                np.testing.assert_array_equal(_predict(channel), expected)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=calls, args=(c,)) for c in [*channels.values(), *extra]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert errors == []
    assert all(cpu_seconds(pid) > before[pid] for pid in fronts), (before, fronts)
    for channel in [*channels.values(), *extra]:
        channel.close()


def _signatures(
    response: get_model_metadata_pb2.GetModelMetadataResponse,
) -> get_model_metadata_pb2.SignatureDefMap:
    """The metadata's signatures, parsed (a map's bytes follow each process's hash order)."""
    signatures = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signatures)
    return signatures


def test_status_metadata_and_health_are_the_same_from_every_front_end(
    fleet: GatewayProcess,
) -> None:
    fronts = front_end_pids(fleet.pid)
    answers = []
    for channel in grpc_channels(fleet.target, fronts).values():
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        status = get_model_status_pb2.GetModelStatusRequest()
        status.model_spec.name = "mlp"
        predictions = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        metadata = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
        metadata.model_spec.name = "mlp"
        health = health_pb2_grpc.HealthStub(channel)
        answers.append(
            (
                models.GetModelStatus(status, timeout=WAIT_S),
                _signatures(predictions.GetModelMetadata(metadata, timeout=WAIT_S)),
                health.Check(health_pb2.HealthCheckRequest(service="mlp"), timeout=WAIT_S).status,
                health.Check(health_pb2.HealthCheckRequest(), timeout=WAIT_S).status,
            )
        )
        channel.close()
    assert answers[0] == answers[1] and answers[0][2:] == (SERVING, SERVING)
    connections = list(rest_connections(fleet.rest_port, fronts).values())
    rest = [
        [get(c, path) for path in ("/v1/models/mlp", "/v1/models/mlp/metadata", "/readyz")]
        for c in connections
    ]
    for connection in connections:
        connection.close()
    assert [code for code, _ in rest[0]] == [200, 200, 200] and rest[0][2] == rest[1][2]
    assert [json.loads(body) for _, body in rest[0][:2]] == [
        json.loads(body) for _, body in rest[1][:2]
    ]


def test_metrics_count_every_call_once_whichever_front_end_is_scraped(
    fleet: GatewayProcess,
) -> None:
    fronts = front_end_pids(fleet.pid)
    scrapers = list(rest_connections(fleet.rest_port, fronts).values())
    page = get(scrapers[0], METRICS)[1].decode()
    ok = sample(page, ":tensorflow:serving:request_count", model_name="mlp", status="OK")
    runs = sample(page, "tensorgate_worker_runs_total")
    calls = sample(page, "tensorgate_request_duration_seconds_count", api="Predict")
    sent = {pid: 7 + 5 * i for i, pid in enumerate(fronts)}
    for pid, channel in grpc_channels(fleet.target, fronts).items():
        for _ in range(sent[pid]):
            _predict(channel)
        channel.close()
    pages = [get(c, METRICS)[1].decode() for c in scrapers]
    for connection in scrapers:
        connection.close()
    total = sum(sent.values())
    for page in pages:
        got = sample(page, ":tensorflow:serving:request_count", model_name="mlp", status="OK")
        assert got == ok + total
        assert sample(page, "tensorgate_worker_runs_total") == runs + total  # one run each
        assert sample(page, "tensorgate_request_duration_seconds_count", api="Predict") == (
            calls + total
        )
    assert sample(pages[0], "tensorgate_worker_info") == 2  # the workers once


def test_one_front_end_is_one_process(model_repo: Path, tmp_path: Path) -> None:
    args = [a for a in _args(model_repo) if not a.startswith("--frontends")] + ["--frontends=1"]
    with running_gateway(args, tmp_path) as gateway:
        assert front_end_pids(gateway.pid) == [] and len(worker_pids(gateway.pid)) == 2
        with grpc.insecure_channel(gateway.target) as channel:
            assert _predict(channel).shape == (1, 10)


def test_a_model_added_by_config_poll_appears_on_every_front_end(
    model_repo: Path, tmp_path: Path
) -> None:
    config = tmp_path / "models.config"
    config.write_text(config_text(f"mlp:{model_repo / 'mlp'}"))
    args = [
        f"--model_config_file={config}",
        "--model_config_file_poll_wait_seconds=1",
        "--workers=2",
        "--inline_runs=never",  # the fleet's tests count the runs its workers see
        "--file_system_poll_wait_seconds=0",
        *FRONT_ENDS,
    ]
    with running_gateway(args, tmp_path) as gateway:
        channels = grpc_channels(gateway.target, front_end_pids(gateway.pid))
        config.write_text(
            config_text(f"mlp:{model_repo / 'mlp'}", f"add_two:{model_repo / 'add_two'}")
        )
        for channel in channels.values():
            _watch_until(channel, "add_two", SERVING)
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            ones = np.ones((2, 3), np.float32)
            request = predict_request("add_two", {"a": ones, "b": 2 * ones})
            response = stub.Predict(request, timeout=WAIT_S)
            np.testing.assert_array_equal(outputs_of(response)["sum"], np.full((2, 3), 3.0))
            channel.close()


def test_a_reload_through_either_front_end_is_in_force_on_both_when_answered(
    model_repo: Path, tmp_path: Path
) -> None:
    config = tmp_path / "models.config"
    config.write_text(config_text(f"mlp:{model_repo / 'mlp'}"))
    args = [
        f"--model_config_file={config}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={model_repo},{tmp_path}",
        "--workers=2",
        "--file_system_poll_wait_seconds=0",
        "--rest_api_port=-1",
        *FRONT_ENDS,
    ]
    with running_gateway(args, tmp_path) as gateway:
        fronts = front_end_pids(gateway.pid)
        (a, b) = grpc_channels(gateway.target, fronts).values()
        both = config_text(f"mlp:{model_repo / 'mlp'}", f"add_two:{model_repo / 'add_two'}")
        reload(a, both)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(b)
        ones = np.ones((1, 3), np.float32)
        request = predict_request("add_two", {"a": ones, "b": 2 * ones})
        response = stub.Predict(request, timeout=WAIT_S)  # no wait: b serves from it already
        assert outputs_of(response)["sum"].tolist() == [[3.0, 3.0, 3.0]]
        reload(b, config_text(f"add_two:{model_repo / 'add_two'}"))
        with pytest.raises(grpc.RpcError) as info:
            _predict(a)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        status = get_model_status_pb2.GetModelStatusRequest()
        status.model_spec.name = "mlp"
        answer = model_service_pb2_grpc.ModelServiceStub(a).GetModelStatus(status, timeout=30)
        assert {s.state for s in answer.model_version_status} == {
            get_model_status_pb2.ModelVersionStatus.State.END
        }
        a.close()
        b.close()
        # V2's repository: what an unload through one front end took out, a load through the
        # other brings back (the supervisor remembers it, once).
        rest_a, rest_b = rest_connections(gateway.rest_port, fronts).values()
        assert _post(rest_a, "/v2/repository/models/add_two/unload")[0] == 200
        assert get(rest_b, "/v2/models/add_two/ready")[0] == 400
        assert _post(rest_b, "/v2/repository/models/add_two/load")[0] == 200
        assert get(rest_a, "/v2/models/add_two/ready")[0] == 200
        rest_a.close()
        rest_b.close()


def _post(connection: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    connection.request("POST", path, body=b"", headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


def test_a_replaced_worker_gets_a_channel_from_every_front_end(
    model_repo: Path, tmp_path: Path
) -> None:
    args = [a for a in _args(model_repo) if a != "--workers=2"] + ["--workers=1"]
    with running_gateway(args, tmp_path) as gateway:
        channels = grpc_channels(gateway.target, front_end_pids(gateway.pid))
        (worker,) = worker_pids(gateway.pid)
        streams = []
        for channel in channels.values():
            stream = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service="mlp"), timeout=WAIT_S
            )
            assert next(stream).status == SERVING
            streams.append(stream)
        os.kill(worker, signal.SIGKILL)
        for stream in streams:  # every front end saw it go
            for message in stream:
                if message.status == NOT_SERVING:
                    stream.cancel()
                    break
        for channel in channels.values():
            _watch_until(channel, "mlp", SERVING)
            assert _predict(channel).shape == (1, 10)
            channel.close()
        assert worker_pids(gateway.pid) != [worker]


def test_sigkill_of_one_front_end_fails_only_its_calls(model_repo: Path, tmp_path: Path) -> None:
    """Client threads call through each front end's connection until their first failure; the
    killed front end's calls in flight fail UNAVAILABLE, the other's never fail, and a new
    front end takes the slot."""
    with running_gateway(_args(model_repo), tmp_path) as gateway:
        fronts = front_end_pids(gateway.pid)
        channels = grpc_channels(gateway.target, fronts)
        victim, survivor = fronts
        outcomes: dict[int, Counter[grpc.StatusCode]] = {pid: Counter() for pid in fronts}
        lock = threading.Lock()
        enough = threading.Event()
        stop = threading.Event()

        def client(pid: int) -> None:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channels[pid])
            while not stop.is_set():
                try:
                    stub.Predict(predict_request("mlp", {"x": X}), timeout=WAIT_S)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as error:
                    code = error.code()
                with lock:
                    outcomes[pid][code] += 1
                    if all(o[grpc.StatusCode.OK] >= 50 for o in outcomes.values()):
                        enough.set()
                if code != grpc.StatusCode.OK:
                    return

        threads = [threading.Thread(target=client, args=(p,)) for p in fronts for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            assert enough.wait(WAIT_S)
            os.kill(victim, signal.SIGKILL)
            assert wait_gone(victim)
            with lock:
                served = outcomes[survivor][grpc.StatusCode.OK]
            until(
                lambda: outcomes[victim][grpc.StatusCode.UNAVAILABLE] > 0, "a failed call", WAIT_S
            )
            until(
                lambda: outcomes[survivor][grpc.StatusCode.OK] >= served + 50, "serving on", WAIT_S
            )
        finally:
            stop.set()
            for thread in threads:
                thread.join(WAIT_S)
        assert set(outcomes[survivor]) == {grpc.StatusCode.OK}, outcomes
        failed = outcomes[victim]
        assert set(failed) == {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, outcomes
        assert failed[grpc.StatusCode.UNAVAILABLE] <= 4  # those in flight on it, at most
        until(lambda: len(set(front_end_pids(gateway.pid)) - set(fronts)) == 1, "a new one", WAIT_S)
        for channel in channels.values():
            channel.close()


def test_sigterm_drains_every_front_end_under_load_and_loses_nothing(
    model_repo: Path, tmp_path: Path
) -> None:
    gateway = start_gateway([*_args(model_repo), "--shutdown_grace_seconds=30"], tmp_path)
    fronts = front_end_pids(gateway.pid)
    channels = grpc_channels(gateway.target, fronts)
    statuses: Counter[grpc.StatusCode] = Counter()
    lock = threading.Lock()
    enough = threading.Event()
    stop = threading.Event()

    def client(channel: grpc.Channel) -> None:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        while not stop.is_set():
            try:
                stub.Predict(predict_request("mlp", {"x": X}), timeout=WAIT_S)
                code = grpc.StatusCode.OK
            except grpc.RpcError as error:
                code = error.code()
            with lock:
                statuses[code] += 1
                if statuses[grpc.StatusCode.OK] >= 200:
                    enough.set()
            if code == grpc.StatusCode.UNAVAILABLE:
                return

    threads = [threading.Thread(target=client, args=(c,)) for c in channels.values() for _ in "ab"]
    try:
        for thread in threads:
            thread.start()
        assert enough.wait(WAIT_S)
        gateway.process.send_signal(signal.SIGTERM)
        assert gateway.process.wait(WAIT_S) == 0
        assert all(wait_gone(pid) for pid in fronts)
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT_S)
        for channel in channels.values():
            channel.close()
        gateway.stop()
    assert set(statuses) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, statuses
    assert statuses[grpc.StatusCode.OK] >= 200


def test_sigkill_of_the_supervisor_leaves_no_process_and_no_shared_memory(
    model_repo: Path, tmp_path: Path
) -> None:
    gateway = start_gateway(_args(model_repo), tmp_path)
    children = front_end_pids(gateway.pid) + worker_pids(gateway.pid)
    assert len(children) == 4
    assert_sigkill_leaves_nothing(gateway, children)
