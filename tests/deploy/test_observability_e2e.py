"""Every PromQL expression of deploy/ (the dashboard, the rules, prometheus-adapter's rule, the KEDA
trigger) evaluated by a real Prometheus that scrapes a real tensorgate (a supervisor, two front
ends, one worker) and evaluates the rule file, after a known sequence of calls: each returns the
series the calls made, with values that agree with what was sent.

The sequence, each step waited for in Prometheus before the next (tests/support/prometheus):

1. one call of each kind announces its series (a counter's first sample is its baseline:
   Prometheus' ``rate`` counts only what comes after it);
2. counted traffic on ``mlp``: gRPC and REST Predicts, V2 REST infers, invalid gRPC Predicts;
3. saturation on ``mlp2``, deterministically: the worker is stopped (SIGSTOP), so one call
   runs (posted to the stopped worker) and one waits (max_batch_size 1, max_enqueued_batches 1),
   and every further call is refused at once (queue full, UNAVAILABLE); the autoscaling
   expressions read 2 calls in flight; then the worker continues (SIGCONT). ``mlp2`` has never
   run before, so the hang watchdog has no expected time for it and leaves the stopped worker be;
4. one worker and one front end killed (each replaced); a model that cannot load added by
   HandleReloadConfigRequest (its version ends in END).

``rate`` extrapolates to the window's edges (up to half a scrape interval each side), so a rate ×
window agrees with the count sent within 25 %; gauges, states and ratios of the same samples
agree exactly; times are only bounded below (:func:`final_checks`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc
from gateway.observability.metrics import SECONDS_BUCKETS
from tests.deploy.test_k8s import shapes
from tests.support import onnx_models, promql_exprs
from tests.support.gateway_proc import (
    GatewayProcess,
    front_end_pids,
    running_gateway,
    worker_pids,
)
from tests.support.grpc_calls import predict_request
from tests.support.lifecycle import config_text, reload_error
from tests.support.prometheus import Prometheus, running_prometheus
from tests.support.waits import until

PATH = "/monitoring/prometheus/metrics"
LABELS = {"namespace": "tg", "pod": "tensorgate-0", "app_kubernetes_io_name": "tensorgate"}
MODELS = "mlp|mlp2|broken"
N_GRPC, N_REST, N_V2, N_INVALID, N_REFUSED = 24, 12, 12, 6, 9
X = np.ones((1, 64), np.float32)
Series = list[dict[str, Any]]
Check = Callable[[Series, float], None]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("observed")
    for name in ("mlp", "mlp2"):
        onnx_models.mlp(root / name / "1" / "model.onnx", seed=1)
    (root / "broken" / "1").mkdir(parents=True)
    (root / "broken" / "1" / "model.onnx").write_bytes(b"not an onnx model")
    (root / "models.config").write_text(config_text(f"mlp:{root / 'mlp'}", f"mlp2:{root / 'mlp2'}"))
    (root / "batching.config").write_text(
        "max_batch_size { value: 1 }\nbatch_timeout_micros { value: 0 }\n"
        "max_enqueued_batches { value: 1 }\nnum_batch_threads { value: 1 }\n"
    )
    (root / "monitoring.config").write_text(
        f'prometheus_config {{ enable: true path: "{PATH}" }}\n'
    )
    return root


@pytest.fixture(scope="module")
def gateway(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    args = [
        f"--model_config_file={repo / 'models.config'}",
        "--enable_batching",
        f"--batching_parameters_file={repo / 'batching.config'}",
        "--enable_model_management_api",
        f"--management_base_path_dirs={repo}",
        "--max_num_load_retries=0",
        "--workers=1",
        "--frontends=2",
        "--inline_runs=never",  # the saturation step holds calls behind a stopped worker
        "--rest_api_port=-1",
        f"--monitoring_config_file={repo / 'monitoring.config'}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("logs")) as process:
        yield process


def _post(gateway: GatewayProcess, path: str, body: object) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.rest_port}{path}", json.dumps(body).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
        return int(response.status)


def _calls(gateway: GatewayProcess, grpc_ok: int, rest: int, v2: int, invalid: int) -> None:
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        for _ in range(grpc_ok):
            stub.Predict(predict_request("mlp", {"x": X}), timeout=30)
        for _ in range(invalid):
            with pytest.raises(grpc.RpcError) as info:
                stub.Predict(predict_request("mlp", {"wrong": X}), timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    row = [1.0] * 64
    for _ in range(rest):
        assert _post(gateway, "/v1/models/mlp:predict", {"instances": [row]}) == 200
    infer = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 64], "data": row}]}
    for _ in range(v2):
        assert _post(gateway, "/v2/models/mlp/infer", infer) == 200


def _total(prometheus: Prometheus, selector: str, value: float) -> None:
    """Wait until Prometheus has scraped ``sum(selector) == value``."""
    prometheus.wait_for(f"sum({selector})", lambda r: bool(r) and float(r[0]["value"][1]) == value)


def _requests(status: str, model: str = "mlp") -> str:
    return f'tensorgate_requests_total{{model_name="{model}",status="{status}"}}'


OURS = {"mlp", "mlp2", "broken"}


def by(result: Series, *labels: str) -> dict[tuple[str, ...], float]:
    """Each series' value by ``labels`` (when they include the model, series of no model of
    this test left out: the reload call's, which names none)."""
    out = {}
    for series in result:
        metric = series["metric"]
        if "model_name" in labels and metric.get("model_name", "") not in OURS:
            continue
        key = tuple(metric.get(label, "") for label in labels)
        assert key not in out, f"two series for {key}: {result}"
        out[key] = float(series["value"][1])
    return out


def counted(labels: tuple[str, ...], sent: dict[tuple[str, ...], int], window_s: float) -> Check:
    """A rate per series whose rate × window is the count sent (within 25 %; 0 exactly)."""

    def check(result: Series, _: float) -> None:
        got = by(result, *labels)
        assert set(got) == set(sent), got
        for key, count in sent.items():
            assert got[key] * window_s == pytest.approx(count, rel=0.25, abs=1e-9), (key, got)

    return check


def exactly(
    labels: tuple[str, ...], want: dict[tuple[str, ...], float], rel: float = 1e-9
) -> Check:
    def check(result: Series, _: float) -> None:
        got = by(result, *labels)
        assert set(got) == set(want), got
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=rel, abs=rel), (key, got)

    return check


def bounded(labels: tuple[str, ...], want: Mapping[Any, tuple[float, float]]) -> Check:
    """Each series' value within [low, high) (NaN: the bounds are both NaN)."""

    def check(result: Series, _: float) -> None:
        got = by(result, *labels)
        assert set(got) == set(want), got
        for key, (low, high) in want.items():
            if np.isnan(low):
                assert np.isnan(got[key]), (key, got)
            else:
                assert low <= got[key] < high, (key, got)

    return check


def in_flight(calls: float) -> dict[str, Check]:
    """The autoscaling expressions, all of them the pod's calls waiting and in flight."""
    pod = ("tensorgate-0",)

    def series_query(result: Series, _: float) -> None:
        assert result and all(s["metric"]["pod"] == pod[0] for s in result)
        assert sum(float(s["value"][1]) for s in result) == calls

    return {
        "panel/Calls waiting and in flight per pod (the autoscaling signal)/A": exactly(
            ("namespace", "pod"), {("tg", *pod): calls}
        ),
        "record/tensorgate:requests_in_flight:sum_by_pod": exactly(
            ("namespace", "pod"), {("tg", *pod): calls}
        ),
        "adapter/seriesQuery": series_query,
        "adapter/metricsQuery": exactly(("pod",), {pod: calls}),
        "keda/query": exactly((), {(): calls}),
    }


def final_checks(window_s: float, held_s: float = 0.0) -> dict[str, Check]:
    """What every expression must show once the sequence is over (``window_s``: the dashboard's
    rate window; the rules' own windows are 5 and 15 minutes, longer than the whole test).

    No upper bound on a time (this machine's speed varies): times are positive, and mlp2's two
    held calls lasted at least ``held_s`` (from the second one's sending to the worker's
    SIGCONT), so a quantile that lands on them is at least the bucket bound below that, and
    when ``held_s`` exceeds the 250 ms objective they are outside it."""
    ok_tfs, refused = N_GRPC + N_REST, N_REFUSED - 1
    some = (1e-9, float("inf"))
    floor = max([0.0, *(b for b in SECONDS_BUCKETS if b < held_s)])
    fast, slow = some, (floor, float("inf"))
    nan = (float("nan"), float("nan"))
    pod = ("tg", "tensorgate-0")
    mv = ("model_name", "version")
    mp = ("model_name", "protocol")
    # at most the refusals of mlp2's counted calls are within the objective: not the held two
    mlp2_objective = (N_REFUSED - 1) / (N_REFUSED + 1) if held_s > 0.25 else 1.0
    latency = {("mlp", "tfserving"): fast, ("mlp", "v2"): fast, ("mlp2", "tfserving"): fast}
    latency_p99 = {**latency, ("mlp2", "tfserving"): slow}
    ratio = exactly(mp, {("mlp", "tfserving"): 0, ("mlp", "v2"): 0, ("mlp2", "tfserving"): 1})

    def objective(result: Series, _: float) -> None:
        got = by(result, *mp)
        assert set(got) == {("mlp", "tfserving"), ("mlp", "v2"), ("mlp2", "tfserving")}, got
        assert 0 <= got[("mlp2", "tfserving")] <= mlp2_objective + 1e-9, got
        assert all(0 < value <= 1 for value in got.values()), got

    def objective_missed(result: Series, _: float) -> None:
        got = by(result, *mp)
        if mlp2_objective < 0.99:
            assert got[("mlp2", "tfserving")] <= mlp2_objective + 1e-9, got
        assert all(0 <= value < 0.99 for value in got.values()), got

    def placement(result: Series, _: float) -> None:
        # Every served version is placed by each of the two front ends, somewhere.
        got = {
            (s["metric"]["model_name"], s["metric"]["runs_in"]): float(s["value"][1])
            for s in result
        }
        assert {m for m, _ in got} == {"mlp", "mlp2"}, result
        for model in ("mlp", "mlp2"):
            assert sum(v for (m, _), v in got.items() if m == model) == 2, got

    return {
        **in_flight(0),
        "panel/Requests/s by model, version and protocol/A": counted(
            ("model_name", "version", "protocol", "api"),
            {
                ("mlp", "", "tfserving", "Predict"): ok_tfs + N_INVALID,
                ("mlp", "", "v2", "ModelInfer"): N_V2,
                ("mlp2", "", "tfserving", "Predict"): refused,
            },
            window_s,
        ),
        "panel/Errors/s by status/A": counted(
            ("model_name", "protocol", "status"),
            {
                ("mlp", "tfserving", "INVALID_ARGUMENT"): N_INVALID,
                ("mlp2", "tfserving", "UNAVAILABLE"): refused,
            },
            window_s,
        ),
        "panel/Server-side error ratio/A": ratio,
        "record/tensorgate:request_errors:ratio_rate5m": ratio,
        "alert/TensorgateHighErrorRatio": exactly(mp, {("mlp2", "tfserving"): 1}),
        "panel/TF Serving request_count/s (TF Serving's API)/A": counted(
            ("model_name", "status"),
            {
                ("mlp", "OK"): ok_tfs,
                ("mlp", "INVALID_ARGUMENT"): N_INVALID,
                ("mlp2", "OK"): 0,
                ("mlp2", "UNAVAILABLE"): refused,
            },
            window_s,
        ),
        "record/tensorgate:requests:rate5m": counted(
            ("model_name", "version", "protocol", "status"),
            {
                ("mlp", "", "tfserving", "OK"): ok_tfs,
                ("mlp", "", "tfserving", "INVALID_ARGUMENT"): N_INVALID,
                ("mlp", "", "v2", "OK"): N_V2,
                ("mlp2", "", "tfserving", "OK"): 0,
                ("mlp2", "", "tfserving", "UNAVAILABLE"): refused,
            },
            300,
        ),
        "panel/Call latency (handler start to answer)/A": bounded(mp, latency),
        "panel/Call latency (handler start to answer)/B": bounded(mp, latency_p99),
        "panel/Call latency (handler start to answer)/C": bounded(mp, latency_p99),
        "record/tensorgate:request_duration_seconds:p99_5m": bounded(mp, latency_p99),
        "panel/Calls within the 250 ms objective/A": objective,
        "record/tensorgate:request_duration_seconds:within_objective_ratio_rate5m": objective,
        "alert/TensorgateLatencyObjectiveMissed": objective_missed,
        # mlp2's queue: the call that waited behind the stopped worker
        "panel/Queue time/A": bounded(mv, {("mlp", "1"): fast, ("mlp2", "1"): slow}),
        "panel/Queue time/B": bounded(mv, {("mlp", "1"): fast, ("mlp2", "1"): slow}),
        "record/tensorgate:queue_wait_seconds:p99_5m": bounded(
            mv, {("mlp", "1"): fast, ("mlp2", "1"): slow}
        ),
        # mlp2's two runs both ended after its series' first sample: no increase, no quantile
        "panel/Model run time in the worker/A": bounded(
            mv, {("mlp", "1"): some, ("mlp2", "1"): nan}
        ),
        "panel/Batch size (rows per batch)/A": exactly(mv, {("mlp", "1"): 1, ("mlp2", "1"): 1}),
        "panel/Batch size (rows per batch)/B": bounded(
            mv, {("mlp", "1"): (0.5, 1.0001), ("mlp2", "1"): (0.5, 1.0001)}
        ),
        "panel/Refused calls/s by reason/A": counted(
            ("model_name", "reason"), {("mlp2", "queue_full"): refused}, window_s
        ),
        "alert/TensorgateQueueSaturated": counted(
            ("namespace", "pod", "model_name"), {(*pod, "mlp2"): refused}, 300
        ),
        "panel/Worker and front-end restarts/A": counted(("pod",), {(pod[1],): 1}, 1),
        "panel/Worker and front-end restarts/B": counted(("pod",), {(pod[1],): 1}, 1),
        "alert/TensorgateWorkerRestarts": counted(("namespace", "pod"), {pod: 1}, 1),
        "alert/TensorgateFrontendRestarts": counted(("namespace", "pod"), {pod: 1}, 1),
        "panel/Shared memory in use/A": exactly(
            ("pod", "worker", "area"),
            {(pod[1], "0", "input"): 0, (pod[1], "0", "output"): 0},
        ),
        "panel/Model versions by state/A": exactly(
            ("model_name", "version", "state"),
            {
                ("mlp", "1", "AVAILABLE"): 1,
                ("mlp2", "1", "AVAILABLE"): 1,
                ("broken", "1", "END"): 1,
            },
        ),
        "alert/TensorgateModelNotAvailable": exactly(
            ("namespace", "pod", "model_name"), {(*pod, "broken"): 1}
        ),
        "variable/model": exactly(("model_name",), {("mlp",): 1, ("mlp2",): 1, ("broken",): 1}),
        "panel/Placement (front end or workers)/A": placement,
    }


def every_expression(window_s: float) -> dict[str, str]:
    return {
        **promql_exprs.dashboard(MODELS, int(window_s)),
        **promql_exprs.rules(),
        **promql_exprs.adapter(LABELS["namespace"], LABELS["pod"]),
        "keda/query": shapes.keda_query(),
    }


def evaluate(
    prometheus: Prometheus, start: float, checks: Callable[[float], dict[str, Check]]
) -> None:
    """Each check of ``checks(window_s)`` passes on its expression's value now, the dashboard's
    window reaching back to ``start`` (Unix time). Rules are evaluated every scrape interval, so a
    recorded series may lag the scrape it reads: each is polled, bounded."""
    for name in checks(1):
        _check_passes(prometheus, start, checks, name)


def _check_passes(
    prometheus: Prometheus, start: float, checks: Callable[[float], dict[str, Check]], name: str
) -> None:
    """Until the check ``name`` passes (bounded); AssertionError with its last failure."""
    failures: list[str] = []

    def passes() -> bool:
        window_s = time.time() - start
        expr = every_expression(window_s)[name]
        try:
            checks(window_s)[name](prometheus.query(expr), window_s)
        except AssertionError as error:
            failures.append(f"{name}: {expr}\n{error}")
            return False
        return True

    until(passes, lambda: f"the check passing; last {failures[-1]}", 30, poll_s=0.5)


def test_every_expression_agrees_with_the_calls_sent(
    gateway: GatewayProcess, repo: Path, tmp_path: Path
) -> None:
    assert set(final_checks(1)) == set(every_expression(1)), "an expression without a check"
    rules = [promql_exprs.RULES]
    with running_prometheus(
        f"127.0.0.1:{gateway.rest_port}",
        PATH,
        tmp_path,
        interval="2s",
        rule_files=rules,
        labels=LABELS,
    ) as prometheus:
        # 1. each series announced, its baseline scraped
        _calls(gateway, grpc_ok=1, rest=1, v2=1, invalid=1)
        _total(prometheus, 'tensorgate_requests_total{model_name="mlp"}', 4)
        start = time.time() - 1
        # 2. counted traffic
        _calls(gateway, N_GRPC, N_REST, N_V2, N_INVALID)
        _total(
            prometheus,
            'tensorgate_requests_total{model_name="mlp"}',
            4 + N_GRPC + N_REST + N_V2 + N_INVALID,
        )
        # 3. saturation on mlp2 behind a stopped worker
        held_s = _saturate(gateway, prometheus)
        # 4. a worker and a front end replaced, a model that cannot load
        _total(prometheus, _requests("OK", "mlp2"), 2)
        (worker,) = worker_pids(gateway.pid)
        os.kill(worker, signal.SIGKILL)
        _total(prometheus, "tensorgate_worker_restarts_total", 1)
        os.kill(front_end_pids(gateway.pid)[1], signal.SIGKILL)
        _total(prometheus, "tensorgate_frontend_restarts_total", 1)
        with grpc.insecure_channel(gateway.target) as channel:
            models = config_text(
                f"mlp:{repo / 'mlp'}", f"mlp2:{repo / 'mlp2'}", f"broken:{repo / 'broken'}"
            )
            assert reload_error(channel, models)[0] == grpc.StatusCode.UNKNOWN
        _total(prometheus, 'tensorgate_model_state{model_name="broken",state="END"}', 1)
        _total(prometheus, "tensorgate_model_state", 3)
        evaluate(prometheus, start, lambda window_s: final_checks(window_s, held_s))


def _saturate(gateway: GatewayProcess, prometheus: Prometheus) -> float:
    """Step 3 (the module doc): 2 calls in flight, then N_REFUSED refused, the first alone.
    Returns how long the worker stayed stopped after the second call was sent (seconds): a
    lower bound of both held calls' durations."""
    (worker,) = worker_pids(gateway.pid)
    os.kill(worker, signal.SIGSTOP)
    held: list[Future[Any]] = []
    try:
        with grpc.insecure_channel(gateway.target) as channel:  # one connection: one front end
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for calls in (1, 2):  # the first posted to the worker, the second queued behind it
                sent_at = time.monotonic()
                held.append(stub.Predict.future(predict_request("mlp2", {"x": X}), timeout=120))
                _total(prometheus, "tensorgate_requests_in_flight", calls)
            for sent in range(1, N_REFUSED + 1):
                with pytest.raises(grpc.RpcError) as info:
                    stub.Predict(predict_request("mlp2", {"x": X}), timeout=30)
                assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value.details()
                if sent == 1:  # the series' baseline
                    _total(prometheus, _requests("UNAVAILABLE", "mlp2"), 1)
            _total(prometheus, _requests("UNAVAILABLE", "mlp2"), N_REFUSED)
            evaluate(prometheus, time.time() - 300, lambda _: in_flight(2))
            os.kill(worker, signal.SIGCONT)
            held_s = time.monotonic() - sent_at
            for call in held:
                call.result(timeout=60)
            return held_s
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGCONT)
