"""Request logging (a model's ``logging_config``) through a real gateway: sampling at rates 1, 0.5
and 0; every PredictionService method logged as its PredictionLog kind; the files read back by
TensorFlow's own TFRecord reader and the official ``tensorflow_serving`` protos in their own
process; a log file replayed as a model's warmup file; a writer that cannot keep up drops (and
counts) without touching a call; two front ends under load writing every record whole, once."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    prediction_log_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)
from gateway.tfserving.codec.tfrecord import read_records
from gateway.tfserving.warmup import WARMUP_FILE
from tests.support import onnx_models
from tests.support.gateway_proc import GatewayProcess, free_port, running_gateway
from tests.support.grpc_calls import predict_request
from tests.support.paths import SUPPORT

SCRIPT = SUPPORT / "request_log_read_script.py"
EVERY_CALLS = 20
HALF_CALLS = 400
HALF_BOUND = 50
"""Logged calls at rate 0.5 follow Binomial(400, 0.5): mean 200, standard deviation 10. The test
accepts 200 ± 50 (5 standard deviations): a correct sampler fails it with probability < 6e-7."""
NEVER_CALLS = 20
METRICS = "/monitoring/prometheus/metrics"


def _x(index: int) -> np.ndarray:
    """One row whose values are the call's index: tells the logged calls apart."""
    return np.full((1, 64), float(index), np.float32)


def _logging(prefix: Path, rate: float) -> str:
    return (
        f'logging_config {{ log_collector_config {{ type: "file" filename_prefix: "{prefix}" }} '
        f"sampling_config {{ sampling_rate: {rate} attributes: 1 }} }}"
    )


def _repo(root: Path, logs: Path, rates: dict[str, float]) -> Path:
    """mlp served under each name of ``rates`` (logged at that rate to ``logs/<name>``), and the
    examples model (Classify, Regress, MultiInference) logged at rate 1."""
    onnx_models.mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    onnx_models.onnx_examples(root / "examples" / "1" / "model.onnx")
    entries = [
        f'config {{ name: "{name}" base_path: "{root / "mlp"}" {_logging(logs / name, rate)} }}'
        for name, rate in rates.items()
    ]
    entries.append(
        f'config {{ name: "examples" base_path: "{root / "examples"}" '
        f"{_logging(logs / 'examples', 1.0)} }}"
    )
    config = root / "models.config"
    config.write_text("model_config_list { " + " ".join(entries) + " }\n")
    (root / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    return config


def _args(root: Path, config: Path, *extra: str) -> list[str]:
    return [
        f"--model_config_file={config}",
        "--workers=1",
        f"--rest_api_port={free_port()}",
        f"--monitoring_config_file={root / 'monitoring.config'}",
        "--file_system_poll_wait_seconds=0",
        *extra,
    ]


def _predicts(gateway: GatewayProcess, model: str, indices: Sequence[int]) -> None:
    """Predict each index's row, 16 calls in flight at a time, on 4 connections."""
    channels = [grpc.insecure_channel(gateway.target) for _ in range(4)]
    try:
        stubs = [prediction_service_pb2_grpc.PredictionServiceStub(c) for c in channels]
        for start in range(0, len(indices), 16):
            futures = [
                stubs[i % 4].Predict.future(predict_request(model, {"x": _x(i)}), timeout=60)
                for i in indices[start : start + 16]
            ]
            for future in futures:
                assert future.result().outputs["probs"].tensor_shape.dim[0].size == 1
    finally:
        for channel in channels:
            channel.close()


def _inference_calls(gateway: GatewayProcess) -> None:
    classify = classification_pb2.ClassificationRequest()
    regress = regression_pb2.RegressionRequest()
    multi = inference_pb2.MultiInferenceRequest()
    for request in (classify, regress, multi):
        if not isinstance(request, inference_pb2.MultiInferenceRequest):
            request.model_spec.name = "examples"
        for i in range(3):
            example = request.input.example_list.examples.add()
            example.features.feature["x"].float_list.value.append(float(i))
            example.features.feature["n"].int64_list.value.append(i)
    multi.tasks.add(method_name="tensorflow/serving/regress").model_spec.name = "examples"
    with grpc.insecure_channel(gateway.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        stub.Classify(classify, timeout=60)
        stub.Regress(regress, timeout=60)
        stub.MultiInference(multi, timeout=60)


def _files(logs: Path, name: str) -> list[Path]:
    return sorted(logs.glob(f"{name}-*.tfrecord"))


def _ours(paths: Sequence[Path]) -> list[prediction_log_pb2.PredictionLog]:
    """The records, read with this project's reader and protos (DATA_LOSS on a damaged one)."""
    records = []
    for path in paths:
        with path.open("rb") as stream:
            records += [
                prediction_log_pb2.PredictionLog.FromString(r) for r in read_records(stream)
            ]
    return records


def _index(record: prediction_log_pb2.PredictionLog) -> int:
    """The index of the call a Predict record logged (:func:`_x`)."""
    x = record.predict_log.request.inputs["x"]
    return int(np.frombuffer(x.tensor_content, np.float32)[0])


def _official(paths: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def _scrape(gateway: GatewayProcess) -> str:
    url = f"http://127.0.0.1:{gateway.rest_port}{METRICS}"
    with urllib.request.urlopen(url, timeout=30) as response:
        return str(response.read().decode())


@dataclass(frozen=True)
class Logged:
    root: Path
    logs: Path
    pid: int
    started: int
    ended: int


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    """One gateway's logs of: 20 Predicts of ``every`` (rate 1), 400 of ``half`` (0.5), 20 of
    ``never`` (0), and one Classify, Regress and MultiInference of ``examples`` (rate 1); read
    once the gateway stopped (it writes what is queued before it exits)."""
    root = tmp_path_factory.mktemp("request_log")
    logs = root / "logs"
    logs.mkdir()
    config = _repo(root, logs, {"every": 1.0, "half": 0.5, "never": 0.0})
    started = int(time.time())
    with running_gateway(_args(root, config), root) as gateway:
        _predicts(gateway, "every", range(EVERY_CALLS))
        _predicts(gateway, "half", range(HALF_CALLS))
        _predicts(gateway, "never", range(NEVER_CALLS))
        _inference_calls(gateway)
        pid = gateway.pid
    return Logged(root, logs, pid, started, int(time.time()))


def test_each_rate_logs_its_share_once_per_call(logged: Logged) -> None:
    every = _ours(_files(logged.logs, "every"))
    assert sorted(_index(r) for r in every) == list(range(EVERY_CALLS))
    half = [_index(r) for r in _ours(_files(logged.logs, "half"))]
    assert len(set(half)) == len(half)  # no call logged twice
    assert abs(len(half) - HALF_CALLS // 2) <= HALF_BOUND, len(half)
    assert _files(logged.logs, "never") == []
    names = {p.name for p in logged.logs.iterdir()}
    assert all(
        re.fullmatch(rf"(every|half|examples)-{logged.pid}-00000\.tfrecord", n) for n in names
    )


def test_the_official_reader_reads_every_kind_with_its_metadata(
    logged: Logged, tmp_path: Path
) -> None:
    every = _official(_files(logged.logs, "every"), tmp_path / "every.json")
    assert len(every) == EVERY_CALLS
    for record in every:
        assert record["kind"] == "predict_log"
        assert (record["model"], record["version"], record["signature"]) == (
            "every",
            1,
            "serving_default",
        )
        assert (record["rate"], record["attributes"]) == (1.0, 1)
        assert logged.started <= record["timestamp"] <= logged.ended
        assert record["outputs"] == ["logits", "probs"]
    assert sorted(r["x"][0][0] for r in every) == list(range(EVERY_CALLS))
    examples = _official(_files(logged.logs, "examples"), tmp_path / "examples.json")
    kinds = {r["kind"]: r for r in examples}
    assert sorted(kinds) == ["classify_log", "multi_inference_log", "regress_log"]
    assert kinds["classify_log"]["classifications"] == 3
    assert kinds["regress_log"]["regressions"] == 3
    assert kinds["multi_inference_log"]["results"] == 1
    assert {r["model"] for r in examples} == {"examples"}


def test_a_log_file_is_a_valid_warmup_file(logged: Logged, tmp_path: Path) -> None:
    (log_file,) = _files(logged.logs, "every")
    version = tmp_path / "warm" / "1"
    onnx_models.mlp(version / "model.onnx", seed=1)
    warmup = version / WARMUP_FILE
    warmup.parent.mkdir(parents=True)
    warmup.write_bytes(log_file.read_bytes())
    (tmp_path / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    args = [
        "--model_name=warm",
        f"--model_base_path={version.parent}",
        "--workers=1",
        f"--rest_api_port={free_port()}",
        f"--monitoring_config_file={tmp_path / 'monitoring.config'}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path) as gateway:
        page = _scrape(gateway)
    labels = f'{{model_path="{version}",status="OK"}}'
    assert f":tensorflow:serving:model_warmup_records_read{labels} {EVERY_CALLS}" in page


def test_a_writer_that_cannot_keep_up_drops_and_counts_without_touching_a_call(
    tmp_path: Path,
) -> None:
    """The first log file is a FIFO nobody reads yet: the writer blocks opening it with the first
    record, one more waits in its queue (--request_log_max_pending=1), the rest are dropped."""
    logs = tmp_path / "logs"
    logs.mkdir()
    config = _repo(tmp_path, logs, {"every": 1.0})
    calls = 30
    args = _args(tmp_path, config, "--request_log_max_pending=1")
    with running_gateway(args, tmp_path) as gateway:
        fifo = logs / f"every-{gateway.pid}-00000.tfrecord"
        os.mkfifo(fifo)
        _predicts(gateway, "every", range(calls))  # every call answered (asserted there)
        (dropped,) = re.findall(
            r'^tensorgate_request_log_dropped_total\{model_name="every"\} (\S+)$',
            _scrape(gateway),
            re.M,
        )
        assert int(float(dropped)) in (calls - 2, calls - 1)
        read: list[bytes] = []
        reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
        reader.start()  # unblocks the writer; EOF once it closes the file at stop
    reader.join(60)
    assert not reader.is_alive()
    records = list(read_records(io.BytesIO(read[0])))
    assert len(records) == calls - int(float(dropped))
    for record in records:
        assert prediction_log_pb2.PredictionLog.FromString(record).HasField("predict_log")


def test_two_front_ends_under_load_write_every_record_whole_and_once(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    config = _repo(tmp_path, logs, {"every": 1.0})
    calls = 320
    with running_gateway(_args(tmp_path, config, "--frontends=2"), tmp_path) as gateway:
        _predicts(gateway, "every", range(calls))
    files = _files(logs, "every")
    pids = {p.name.split("-")[1] for p in files}
    assert len(pids) == len(files)  # one file per front end process (no rotation here)
    records = _ours(files)  # DATA_LOSS on any damaged record
    assert sorted(_index(r) for r in records) == list(range(calls))
