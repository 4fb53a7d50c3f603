"""Model repositories in object stores, whole-server: a gateway serving ``s3://``, ``gs://`` and
``az://`` base paths and config files from real stores on loopback (moto, gcp-storage-emulator,
Azurite: :mod:`tests.support.object_stores`), reached with the standard environment variables
only, through a proxy that cuts the store's port without stopping it.

Waits are on the gateway's answers (predictions, GetModelStatus), bounded; no log is read but
to check that no secret is in it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from gateway._pb.tensorflow_serving.apis import get_model_status_pb2
from tests.support import onnx_models
from tests.support.gateway_proc import running_gateway, start_gateway
from tests.support.lifecycle import X, predict, reload, status
from tests.support.object_stores import S3_SECRET, StoreServer, store_server
from tests.support.rest import get, post
from tests.support.waits import until

State = get_model_status_pb2.ModelVersionStatus.State
OUTAGE_S = 12.0
"""How long the store's port stays cut under load (the acceptance scenario's figure)."""
WAIT_S = 120.0


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``scaled`` ONNX versions: ``<factor>/model.onnx`` computes x × factor."""
    root = tmp_path_factory.mktemp("object-models")
    for factor in (1, 2, 3):
        onnx_models.scaled(root / str(factor) / "model.onnx", float(factor))
    return root


def put_version(server: StoreServer, models: Path, model: str, version: int, factor: int) -> None:
    server.put(f"{model}/{version}/model.onnx", (models / str(factor) / "model.onnx").read_bytes())


def env_of(server: StoreServer) -> dict[str, str]:
    """The test's environment with the store's standard variables (and no other store's)."""
    return {**os.environ, **server.env}


def answers(channel: grpc.Channel, model: str) -> float:
    """The factor the served version of ``model`` multiplies by."""
    _, y = predict(channel, model)
    return float(y[0, 0] / X[0, 0])


def serves(channel: grpc.Channel, model: str, factor: float) -> bool:
    try:
        return answers(channel, model) == factor
    except grpc.RpcError:
        return False


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreServer]:
    with store_server("s3", tmp_path_factory.mktemp("s3")) as server:
        yield server


def test_a_tf_serving_users_s3_command_polls_survives_a_cut_and_restarts_from_the_cache(
    s3: StoreServer, models: Path, tmp_path: Path
) -> None:
    """``tensorgate --model_name=m --model_base_path=s3://models/m`` with AWS_ENDPOINT_URL at a
    local S3 server: serves, picks up version 2 by polling, fails no call while the store's
    port is cut for 12 s, and after a restart with the store still cut serves the cached
    version."""
    put_version(s3, models, "m", 1, factor=1)
    args = [
        "--model_name=m",
        "--model_base_path=s3://models/m",
        f"--model_cache_dir={tmp_path / 'cache'}",
        "--rest_api_port=-1",
    ]
    env = env_of(s3)
    gateway = start_gateway(args, tmp_path, env=env)
    try:
        with grpc.insecure_channel(gateway.target) as channel:
            assert answers(channel, "m") == 1.0
            put_version(s3, models, "m", 2, factor=2)
            until(lambda: serves(channel, "m", 2.0), "version 2 served after a poll", WAIT_S)
            failed = under_load_while_cut(s3, channel, "m")
            assert failed == [], failed[:3]
            assert [(v, s) for v, s, _ in status(channel, "m")] == [
                (1, State.END), (2, State.AVAILABLE),
            ]  # fmt: skip
            s3.proxy.cut()
        assert gateway.stop() == 0  # at once, though a listing may hang on the cut store
        restarted = start_gateway(args, tmp_path, env=env)
        try:
            with grpc.insecure_channel(restarted.target) as channel:
                assert answers(channel, "m") == 2.0
        finally:
            assert restarted.stop() == 0
            s3.proxy.restore()
        for log in (gateway.log(), restarted.log()):
            assert S3_SECRET not in log
    finally:
        gateway.stop()
        s3.proxy.restore()


def under_load_while_cut(server: StoreServer, channel: grpc.Channel, model: str) -> list[str]:
    """Predict on ``model`` from two threads while the store's port is cut for OUTAGE_S
    seconds and until the gateway has tried the store at least twice meanwhile; the calls that
    failed."""
    failed: list[str] = []
    done = threading.Event()

    def load() -> None:
        while not done.is_set():
            try:
                predict(channel, model)
            except grpc.RpcError as exc:
                failed.append(f"{exc.code()}: {exc.details()}")

    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    refused_before = server.proxy.refused
    server.proxy.cut()
    try:
        ends = time.monotonic() + OUTAGE_S
        until(
            lambda: time.monotonic() > ends and server.proxy.refused >= refused_before + 2,
            "the outage lasted and the gateway tried the store twice",
            OUTAGE_S + WAIT_S,
        )
    finally:
        server.proxy.restore()
        done.set()
        for thread in threads:
            thread.join()
    return failed


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreServer]:
    with store_server("gs", tmp_path_factory.mktemp("gcs")) as server:
        yield server


def gcs_config(server: StoreServer, stable: int) -> bytes:
    return (
        "model_config_list { config { "
        f'name: "g" base_path: "{server.url("g")}" model_platform: "onnx" '
        "model_version_policy { all {} } "
        f'version_labels {{ key: "stable" value: {stable} }} }} }}'
    ).encode()


def test_a_config_file_in_gcs_is_polled_labels_move_and_a_removed_version_unloads(
    gcs: StoreServer, models: Path, tmp_path: Path
) -> None:
    put_version(gcs, models, "g", 1, factor=1)
    put_version(gcs, models, "g", 2, factor=2)
    gcs.put("config/models.config", gcs_config(gcs, stable=1))
    args = [
        f"--model_config_file={gcs.url('config', 'models.config')}",
        "--model_config_file_poll_wait_seconds=1",
        "--allow_version_labels_for_unavailable_models",
        f"--model_cache_dir={tmp_path / 'cache'}",
    ]
    with (
        running_gateway(args, tmp_path, env=env_of(gcs)) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        assert labelled(channel, "stable") == 1.0
        gcs.delete("g/1/")
        until(
            lambda: (1, State.END, "") in status(channel, "g"),
            "version 1 unloaded once a listing no longer shows it",
            WAIT_S,
        )
        gcs.put("config/models.config", gcs_config(gcs, stable=2))
        until(lambda: labelled_or_none(channel, "stable") == 2.0, "the label moved", WAIT_S)
        assert answers(channel, "g") == 2.0


def labelled(channel: grpc.Channel, label: str) -> float:
    from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
    from tests.support.grpc_calls import outputs_of, predict_request

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    response = stub.Predict(predict_request("g", {"x": X}, label=label), timeout=WAIT_S)
    return float(outputs_of(response)["y"][0, 0] / X[0, 0])


def labelled_or_none(channel: grpc.Channel, label: str) -> float | None:
    try:
        return labelled(channel, label)
    except grpc.RpcError:
        return None


@pytest.fixture(scope="module")
def azure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreServer]:
    with store_server("az", tmp_path_factory.mktemp("azure")) as server:
        yield server


def test_two_front_ends_serve_from_azure_and_show_a_half_uploaded_version(
    azure: StoreServer, models: Path, tmp_path: Path
) -> None:
    put_version(azure, models, "a", 1, factor=3)
    args = [
        "--model_name=a",
        f"--model_base_path={azure.url('a')}",
        "--frontends=2",
        "--rest_api_port=-1",
        "--max_num_load_retries=1",
        "--load_retry_interval_micros=100000",
        f"--model_cache_dir={tmp_path / 'cache'}",
    ]
    with (
        running_gateway(args, tmp_path, env=env_of(azure)) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        assert all(answers(channel, "a") == 3.0 for _ in range(8))
        azure.put("a/2/saved_model.pb", b"a SavedModel whose variables/ is not uploaded yet")

        def failed_for_good() -> str:
            found = {v: (s, e) for v, s, e in status(channel, "a")}
            state, error = found.get(2, (None, ""))
            return error if state == State.END else ""

        until(failed_for_good, "version 2 failed, its retries spent", WAIT_S)
        assert "az://models/a/2 is incomplete: it has a SavedModel but no variables/" in (
            failed_for_good()
        )
        assert answers(channel, "a") == 3.0  # version 1 serves on
        v2 = get(f"http://127.0.0.1:{gateway.rest_port}/v2/models/a/versions/2")
        assert v2.status == 404
        assert "incomplete" in v2.json()["error"]


def test_refused_credentials_are_shown_and_the_other_models_serve(
    azure: StoreServer, models: Path, tmp_path: Path
) -> None:
    from tests.support.object_stores import AZURITE_KEY

    put_version(azure, models, "denied", 1, factor=2)
    config = tmp_path / "models.config"
    config.write_text(
        "model_config_list { "
        f'config {{ name: "local" base_path: "{models / "local"}" }} '
        f'config {{ name: "denied" base_path: "{azure.url("denied")}" }} }}'
    )
    (models / "local" / "1").mkdir(parents=True, exist_ok=True)
    onnx_models.scaled(models / "local" / "1" / "model.onnx", 5.0)
    wrong = AZURITE_KEY[:-8] + "AAAAAAA="
    env = env_of(azure)
    env["AZURE_STORAGE_CONNECTION_STRING"] = env["AZURE_STORAGE_CONNECTION_STRING"].replace(
        AZURITE_KEY, wrong
    )
    args = [
        f"--model_config_file={config}",
        f"--model_cache_dir={tmp_path / 'cache'}",
        "--rest_api_port=-1",
    ]
    with (
        running_gateway(args, tmp_path, env=env) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        assert answers(channel, "local") == 5.0
        with pytest.raises(grpc.RpcError) as info:
            status(channel, "denied")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert "list on az://models failed: AuthorizationFailure (HTTP 403)" in str(
            info.value.details()
        )
        metadata = get(f"http://127.0.0.1:{gateway.rest_port}/v2/models/denied")
        assert metadata.status == 404 and "AuthorizationFailure" in metadata.json()["error"]
        log = gateway.log()
    assert wrong not in log and AZURITE_KEY not in log


def test_the_metrics_page_counts_downloads_and_hits(
    s3: StoreServer, models: Path, tmp_path: Path
) -> None:
    put_version(s3, models, "counted", 1, factor=1)
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: true }")
    args = [
        "--model_name=counted",
        "--model_base_path=s3://models/counted",
        f"--model_cache_dir={tmp_path / 'cache'}",
        f"--monitoring_config_file={monitoring}",
        "--rest_api_port=-1",
    ]
    pages = []
    for _ in range(2):  # the second start finds the version in the cache
        with running_gateway(args, tmp_path, env=env_of(s3)) as gateway:
            url = f"http://127.0.0.1:{gateway.rest_port}/monitoring/prometheus/metrics"
            pages.append(get(url).body.decode())
    for line in (
        "tensorgate_model_cache_downloads_total 1.0",
        "tensorgate_model_cache_hits_total 0.0",
    ):
        assert line in pages[0]
    for line in (
        "tensorgate_model_cache_downloads_total 0.0",
        "tensorgate_model_cache_hits_total 1.0",
    ):
        assert line in pages[1]
    assert float(_value(pages[1], "tensorgate_model_cache_bytes")) > 0


def _value(page: str, name: str) -> str:
    for line in page.splitlines():
        if line.startswith(name + " "):
            return line.split()[1]
    raise AssertionError(f"{name} not on the page")


def test_a_reload_and_a_v2_load_bring_a_model_from_a_store(
    s3: StoreServer, models: Path, tmp_path: Path
) -> None:
    """HandleReloadConfigRequest names an ``s3://`` base path the config did not have: it
    serves; V2's repository unload and load take it out and back from the store's cache."""
    put_version(s3, models, "reloaded", 1, factor=3)
    (models / "here" / "1").mkdir(parents=True, exist_ok=True)
    onnx_models.scaled(models / "here" / "1" / "model.onnx", 5.0)
    args = [
        "--model_name=here",
        f"--model_base_path={models / 'here'}",
        f"--model_cache_dir={tmp_path / 'cache'}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={models}",
        "--rest_api_port=-1",
    ]
    with (
        running_gateway(args, tmp_path, env=env_of(s3)) as gateway,
        grpc.insecure_channel(gateway.target) as channel,
    ):
        assert answers(channel, "here") == 5.0
        text = (
            "model_config_list { "
            f'config {{ name: "here" base_path: "{models / "here"}" }} '
            f'config {{ name: "reloaded" base_path: "{s3.url("reloaded")}" }} }}'
        )
        reload(channel, text)
        assert answers(channel, "reloaded") == 3.0
        rest = f"http://127.0.0.1:{gateway.rest_port}/v2/repository/models/reloaded"
        assert post(f"{rest}/unload", {}).status == 200
        with pytest.raises(grpc.RpcError):
            answers(channel, "reloaded")
        assert post(f"{rest}/load", {}).status == 200
        assert answers(channel, "reloaded") == 3.0
