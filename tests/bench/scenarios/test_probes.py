"""bench.scenarios.probes' pieces against a real gateway: the models it serves, a gateway started
from their config with metrics and tokens, the holders of connection slots, the token holder's
calls, and the command's refusals. The probes themselves run in ``python -m bench probes``."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bench.load.calls import predict_payload
from bench.scenarios.probe_gateway import ProbeGateway, model_config, samples, start_gateway
from bench.scenarios.probes import PROBES, run, summary_text
from bench.scenarios.probes_front import (
    RestHolders,
    WatchHolders,
    grpc_token_predict,
    token_predict,
)
from bench.scenarios.probes_http import parked_answers
from bench.scenarios.probes_inline import in_front, placement, worker_runs
from bench.scenarios.probes_plan import ProbesPlan, build_models, models_folder
from tests.support import waits

PLAN = ProbesPlan(mlp_count=2, external_mib=1)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_models(tmp_path_factory.mktemp("probe-models"), PLAN)


@pytest.fixture(scope="module")
def gateway(
    models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProbeGateway]:
    served = {name: models[name] for name in ("mlp", "light", "looped")}
    started = start_gateway(
        tmp_path_factory.mktemp("probe-gateway"), "smoke", served, metrics=True, tokens=True
    )
    try:
        yield started
    finally:
        started.stop()


def test_every_model_the_probes_serve_is_built(models: dict[str, Path]) -> None:
    expected = {"mlp", "light", "looped", "failing", "gram", "doubled", "widened", "tiled",
                "conv", "external", "small0", "small1"}  # fmt: skip
    assert set(models) == expected
    for name, base in models.items():
        assert (base / "1" / "model.onnx").is_file(), name
    assert (models["external"] / "1" / "weights.bin").stat().st_size == 2**20


def test_models_are_kept_apart_by_the_sizes_that_change_them() -> None:
    assert models_folder(PLAN) == models_folder(ProbesPlan(mlp_count=50, external_mib=1))
    assert models_folder(PLAN) != models_folder(ProbesPlan(external_mib=2))
    assert models_folder(PLAN) != models_folder(ProbesPlan(answer_mib=8))


def test_a_config_serves_every_model_named() -> None:
    text = model_config({"a": Path("/m/a"), "b": Path("/m/b")})
    assert text.count("config {") == 2 and 'name: "b" base_path: "/m/b"' in text


def test_samples_are_read_by_name_and_labels() -> None:
    page = (
        "# HELP tensorgate_model_runs_in where\n"
        'tensorgate_model_runs_in{model_name="a",version="1",runs_in="frontend"} 1\n'
        'tensorgate_model_runs_in_other{model_name="b"} 7\n'
        "tensorgate_worker_runs_total 3.0\n"
    )
    assert samples(page, "tensorgate_model_runs_in") == [
        ({"model_name": "a", "version": "1", "runs_in": "frontend"}, 1.0)
    ]
    assert samples(page, "tensorgate_worker_runs_total") == [({}, 3.0)]


def test_the_gateway_reports_where_versions_run(gateway: ProbeGateway) -> None:
    assert gateway.front_ends() == [gateway.pid]  # one process: it is the front end
    assert gateway.front_end_rss_mb()[0] > 10
    waits.until(lambda: "looped" in placement(gateway), "the placement gauge")
    where = placement(gateway)
    assert not in_front(where["looped"])  # a Loop whose trip count is the caller's value
    assert worker_runs(gateway) >= 0


def test_a_token_holder_is_served_beside_held_connections(gateway: ProbeGateway) -> None:
    request = predict_payload("mlp", {"x": np.zeros((1, 64), np.float32)})
    with RestHolders(gateway.rest_port, 4, every_s=60.0) as holders:
        assert holders.open_count() == 4 and holders.answered == 4
        assert token_predict(gateway.rest_port)[0] == 200
    with WatchHolders(gateway.grpc_port, 4, reopen=True) as watchers:
        waits.until(lambda: watchers.watching() == 4, "four watches held")
        assert grpc_token_predict(gateway.target, request)[0] == "OK"
    assert grpc_token_predict(gateway.target, b"\xff")[0] == "INVALID_ARGUMENT"


def test_the_command_refuses_unknown_probes_and_prints_its_goals(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown probe"):
        run(PLAN, tmp_path, ["stalls", "nope"])
    assert {"stalls", "kills", "unread_answers", "unread_rest"} <= set(PROBES)
    text = summary_text({"run": {"plan": vars(PLAN)}, "probes": {}})
    assert text.count("[n/a]") == len(text.splitlines()) > 10  # nothing measured


def test_parked_connections_are_read_all_at_once_for_how_they_were_answered() -> None:
    pairs = [socket.socketpair() for _ in range(4)]
    ours = [mine for mine, _ in pairs]
    try:
        for mine, _ in pairs:
            mine.setblocking(False)
        pairs[0][1].sendall(b"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n")
        pairs[1][1].sendall(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")
        pairs[2][1].close()  # closed without an answer
        assert parked_answers(ours, 0.0) == {"431": 1, "503": 1, "closed": 1, "open": 1}
    finally:
        for mine, theirs in pairs:
            mine.close()
            theirs.close()
