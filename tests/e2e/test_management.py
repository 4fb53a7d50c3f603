"""Who may change what is served, and where a change may point, through real gateways: a serving
token cannot reload, load, unload or redirect the request log (PERMISSION_DENIED / 403); the
admin credential can; with serving tokens only, management calls are refused even with the API
on; a base path or log prefix outside the directories the operator listed is INVALID_ARGUMENT
naming the flag, never the path, and nothing is created there; reloads that move the log leave
no writer thread or file open behind."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
import pytest

from gateway._pb.inference import grpc_service_pb2 as v2_pb
from gateway._pb.inference import grpc_service_pb2_grpc as v2_grpc
from gateway._pb.tensorflow_serving.apis import (
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)
from tests.support.gateway_proc import GatewayProcess, running_gateway
from tests.support.grpc_calls import predict_request
from tests.support.lifecycle import reload_request
from tests.support.waits import until

SERVING = "serving-s3cret"
ADMIN = "admin-s3cret"
X = np.ones((1, 64), np.float32)


def _bearer(token: str | None) -> tuple[tuple[str, str], ...]:
    return () if token is None else (("authorization", f"Bearer {token}"),)


def _logging(prefix: Path) -> str:
    return (
        f'logging_config {{ log_collector_config {{ type: "file" filename_prefix: "{prefix}" }} '
        "sampling_config { sampling_rate: 1.0 } }"
    )


def _config(*models: tuple[str, Path, Path | None]) -> str:
    """A model_config_list of (name, base path, log prefix or None)."""
    entries = [
        f'config {{ name: "{name}" base_path: "{base}" {_logging(prefix) if prefix else ""} }}'
        for name, base, prefix in models
    ]
    return "model_config_list { " + " ".join(entries) + " }"


def _reload(gateway: GatewayProcess, text: str, token: str | None) -> grpc.StatusCode:
    """HandleReloadConfigRequest: its status code (the details raised on failures)."""
    with grpc.insecure_channel(gateway.target) as channel:
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        try:
            stub.HandleReloadConfigRequest(
                reload_request(text), timeout=120, metadata=_bearer(token)
            )
        except grpc.RpcError as error:
            return error.code()
    return grpc.StatusCode.OK


def _reload_error(gateway: GatewayProcess, text: str, token: str | None) -> grpc.RpcError:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.HandleReloadConfigRequest(
                reload_request(text), timeout=120, metadata=_bearer(token)
            )
    return info.value


def _v2_grpc(gateway: GatewayProcess, op: str, model: str, token: str | None) -> grpc.StatusCode:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = v2_grpc.GRPCInferenceServiceStub(channel)
        try:
            if op == "load":
                load = v2_pb.RepositoryModelLoadRequest(model_name=model)
                stub.RepositoryModelLoad(load, timeout=120, metadata=_bearer(token))
            else:
                unload = v2_pb.RepositoryModelUnloadRequest(model_name=model)
                stub.RepositoryModelUnload(unload, timeout=120, metadata=_bearer(token))
        except grpc.RpcError as error:
            return error.code()
    return grpc.StatusCode.OK


def _v2_rest(gateway: GatewayProcess, op: str, model: str, token: str | None) -> int:
    url = f"http://127.0.0.1:{gateway.rest_port}/v2/repository/models/{model}/{op}"
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, b"", headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        with error:
            assert "error" in json.loads(error.read())
            return error.code


def _predict(gateway: GatewayProcess, model: str, token: str | None = SERVING) -> str:
    """Predict once (raises unless served); the model that answered."""
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(
            predict_request(model, {"x": X}), timeout=60, metadata=_bearer(token)
        )
    return str(response.model_spec.name)


@dataclass(frozen=True)
class Guarded:
    gateway: GatewayProcess
    models: Path
    logs: Path
    outside: Path

    @property
    def in_force(self) -> str:
        return _config(("mlp", self.models / "mlp", self.logs / "mlp"))


@pytest.fixture(scope="module")
def guarded(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    """Serving and admin tokens, the management API on, models and logs each under a listed
    directory, and a writable directory outside both."""
    root = tmp_path_factory.mktemp("managed")
    models, logs, outside = root / "models", root / "logs", root / "foreign"
    for directory in (models, logs, outside):
        directory.mkdir()
    for name in ("mlp", "second"):
        shutil.copytree(model_repo / "mlp", models / name)
    (root / "serving").write_text(f"{SERVING}\n")
    (root / "admin").write_text(f"# operators\n{ADMIN}\n")
    config = root / "models.config"
    config.write_text(_config(("mlp", models / "mlp", logs / "mlp")))
    args = [
        f"--model_config_file={config}",
        "--workers=1",
        "--rest_api_port=-1",
        "--file_system_poll_wait_seconds=0",
        "--enable_model_management_api",
        f"--auth_token_file={root / 'serving'}",
        f"--auth_admin_token_file={root / 'admin'}",
        f"--management_base_path_dirs={models}",
        f"--management_log_dirs={logs}",
    ]
    with running_gateway(args, root) as gateway:
        yield Guarded(gateway, models, logs, outside)


def test_a_serving_token_cannot_reload_load_unload_or_redirect_logs(guarded: Guarded) -> None:
    gateway = guarded.gateway
    redirected = _config(("mlp", guarded.models / "mlp", guarded.logs / "redirected"))
    assert _reload(gateway, redirected, SERVING) == grpc.StatusCode.PERMISSION_DENIED
    assert _reload(gateway, redirected, None) == grpc.StatusCode.UNAUTHENTICATED
    assert _reload(gateway, redirected, "guessed") == grpc.StatusCode.UNAUTHENTICATED
    for op in ("unload", "load"):
        assert _v2_grpc(gateway, op, "mlp", SERVING) == grpc.StatusCode.PERMISSION_DENIED
        assert _v2_rest(gateway, op, "mlp", SERVING) == 403
        assert _v2_rest(gateway, op, "mlp", None) == 401
    assert _predict(gateway, "mlp") == "mlp"  # still served, and still logged where it was
    assert not list(guarded.logs.glob("redirected*"))


def test_the_admin_credential_changes_what_is_served(guarded: Guarded) -> None:
    gateway = guarded.gateway
    both = _config(
        ("mlp", guarded.models / "mlp", guarded.logs / "mlp"),
        ("second", guarded.models / "second", guarded.logs / "second"),
    )
    assert _reload(gateway, both, ADMIN) == grpc.StatusCode.OK
    assert _predict(gateway, "second") == "second"
    assert _v2_rest(gateway, "unload", "second", ADMIN) == 200
    assert _v2_grpc(gateway, "load", "second", ADMIN) == grpc.StatusCode.OK
    assert _v2_grpc(gateway, "unload", "second", ADMIN) == grpc.StatusCode.OK
    assert _v2_rest(gateway, "load", "second", ADMIN) == 200
    assert _predict(gateway, "second", ADMIN) == "second"  # an admin token serves as well
    assert _reload(gateway, guarded.in_force, ADMIN) == grpc.StatusCode.OK


def test_paths_outside_the_listed_directories_are_refused_naming_the_flag(
    guarded: Guarded,
) -> None:
    """A prefix outside (directly, through a symlink inside the listed directory, or through
    ``..``) or a base path outside (``/proc``) is INVALID_ARGUMENT naming the flag; the error
    names no path, and nothing was created outside."""
    gateway, logs, outside = guarded.gateway, guarded.logs, guarded.outside
    (logs / "link").symlink_to(outside)
    for prefix in (outside / "x", logs / "link" / "x", logs / ".." / "foreign" / "x"):
        text = _config(("mlp", guarded.models / "mlp", prefix))
        error = _reload_error(gateway, text, ADMIN)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "--management_log_dirs" in error.details()
        assert str(outside) not in error.details() and "link" not in error.details()
    assert list(outside.iterdir()) == []  # no probe file: nothing looked there
    for base in ("/proc", f"{guarded.models}/../foreign"):
        error = _reload_error(gateway, _config(("mlp", Path(base), None)), ADMIN)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "--management_base_path_dirs" in error.details()
        assert "/proc" not in error.details() and "foreign" not in error.details()
    assert _predict(gateway, "mlp") == "mlp"  # the running config stayed


def _threads_and_fds(pid: int) -> tuple[int, int]:
    return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


def test_reloads_that_move_the_log_leave_no_writer_behind(guarded: Guarded) -> None:
    """Each reload points the model's log at a new prefix and a call is logged there: the
    previous prefix's writer thread ends and its file is closed."""
    gateway = guarded.gateway
    _predict(gateway, "mlp")  # the prefix in force has its writer
    threads, fds = _threads_and_fds(gateway.pid)
    for i in range(30):
        text = _config(("mlp", guarded.models / "mlp", guarded.logs / f"moved{i}"))
        assert _reload(gateway, text, ADMIN) == grpc.StatusCode.OK
        _predict(gateway, "mlp")
    assert _reload(gateway, guarded.in_force, ADMIN) == grpc.StatusCode.OK
    _predict(gateway, "mlp")
    until(
        lambda: _threads_and_fds(gateway.pid) <= (threads, fds),
        f"at most {threads} threads and {fds} descriptors again",
    )
    assert all(len(list(guarded.logs.glob(f"moved{i}-*"))) == 1 for i in range(30))


def test_serving_tokens_alone_never_change_what_is_served(model_repo: Path, tmp_path: Path) -> None:
    """No admin credential: the management API on does not let a serving token reload, load
    or unload."""
    (tmp_path / "serving").write_text(f"{SERVING}\n")
    config = tmp_path / "models.config"
    config.write_text(_config(("mlp", model_repo / "mlp", None)))
    args = [
        f"--model_config_file={config}",
        "--workers=1",
        "--rest_api_port=-1",
        "--file_system_poll_wait_seconds=0",
        "--enable_model_management_api",
        f"--auth_token_file={tmp_path / 'serving'}",
    ]
    with running_gateway(args, tmp_path) as gateway:
        text = _config(("other", model_repo / "mlp", None))
        assert _reload(gateway, text, SERVING) == grpc.StatusCode.PERMISSION_DENIED
        assert _v2_grpc(gateway, "unload", "mlp", SERVING) == grpc.StatusCode.PERMISSION_DENIED
        assert _v2_rest(gateway, "unload", "mlp", SERVING) == 403
        assert _predict(gateway, "mlp") == "mlp"


def test_without_listed_directories_a_reload_may_only_keep_the_paths_in_force(
    model_repo: Path, tmp_path: Path
) -> None:
    """No token at all (TF Serving's open reload) and no directory listed: a reload keeping
    the model's base path works; one pointing a base path at ``/proc`` or the log at a writable
    directory is INVALID_ARGUMENT naming the flag, with no file created there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = tmp_path / "models.config"
    config.write_text(_config(("mlp", model_repo / "mlp", None)))
    args = [
        f"--model_config_file={config}",
        "--workers=1",
        "--file_system_poll_wait_seconds=0",
        "--enable_model_management_api",
    ]
    with running_gateway(args, tmp_path) as gateway:
        error = _reload_error(gateway, _config(("proc", Path("/proc"), None)), None)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "--management_base_path_dirs" in error.details()
        assert "/proc" not in error.details()
        redirected = _config(("mlp", model_repo / "mlp", elsewhere / "log"))
        error = _reload_error(gateway, redirected, None)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "--management_log_dirs" in error.details()
        assert str(elsewhere) not in error.details()
        assert list(elsewhere.iterdir()) == []
        both = _config(("mlp", model_repo / "mlp", None), ("again", model_repo / "mlp", None))
        assert _reload(gateway, both, None) == grpc.StatusCode.OK
        assert _predict(gateway, "again", None) == "again"
