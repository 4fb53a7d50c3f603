"""Request logging (a model's ``logging_config``) through a real gateway: sampling at rates 1, 0.5
and 0; every PredictionService method logged as its PredictionLog kind, V2 ModelInfer calls as
``predict_log`` records beside the model's Predicts, and REST calls (predict, classify, regress,
V2 infer) as their gRPC twins; the files read back by TensorFlow's own TFRecord reader and the
official ``tensorflow_serving`` protos in their own process; a log file replayed as a model's
warmup file; a writer stuck on a stalled directory drops (and counts) without touching a call or
the gateway's memory, and cannot hold the exit; a directory that disappears is one error line;
two front ends under load writing every record whole, once."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from gateway._pb.inference import grpc_service_pb2 as v2_pb
from gateway._pb.inference import grpc_service_pb2_grpc as v2_grpc
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
from tests.support.gateway_proc import GatewayProcess, running_gateway, start_gateway
from tests.support.grpc_calls import predict_request
from tests.support.paths import SUPPORT
from tests.support.stalled_dir import stalled

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
        "--rest_api_port=-1",
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
    """The index of the call a Predict record logged (:func:`_x`): sent as ``tensor_content``
    over gRPC, in typed fields from REST."""
    x = record.predict_log.request.inputs["x"]
    if x.tensor_content:
        return int(np.frombuffer(x.tensor_content, np.float32)[0])
    return int(x.float_val[0])


def _official(paths: Sequence[Path], out: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


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
        re.fullmatch(rf"(every|half|examples)-{logged.pid}-[0-9a-f]{{8}}-00000\.tfrecord", n)
        for n in names
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


def _warmup_records_read(log_file: Path, tmp_path: Path) -> str:
    """Serve the mlp with ``log_file`` as its warmup file: the ``model_warmup_records_read``
    line of its metrics (``{labels} count``)."""
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
        "--rest_api_port=-1",
        f"--monitoring_config_file={tmp_path / 'monitoring.config'}",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path) as gateway:
        page = _scrape(gateway)
    (line,) = re.findall(r"^:tensorflow:serving:model_warmup_records_read(\S+ \S+)$", page, re.M)
    labels = f'{{model_path="{version}",status="OK"}}'
    assert line.startswith(labels), line
    return str(line[len(labels) + 1 :])


def test_a_log_file_is_a_valid_warmup_file(logged: Logged, tmp_path: Path) -> None:
    (log_file,) = _files(logged.logs, "every")
    assert _warmup_records_read(log_file, tmp_path) == str(EVERY_CALLS)


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


def _v2_infer(
    stub: v2_grpc.GRPCInferenceServiceStub,
    model: str,
    version: str,
    inputs: dict[str, tuple[str, np.ndarray]],
    *,
    typed: bool = False,
) -> dict[str, tuple[str, bytes]]:
    """One ModelInfer of ``inputs`` (name → V2 datatype and array), raw or typed (FP32, BYTES);
    the answer's outputs as name → (datatype, raw bytes)."""
    request = v2_pb.ModelInferRequest(model_name=model, model_version=version)
    for name, (datatype, array) in inputs.items():
        tensor = request.inputs.add(name=name, datatype=datatype, shape=array.shape)
        if typed and datatype == "BYTES":
            tensor.contents.bytes_contents.extend(array.ravel().tolist())
        elif typed:
            tensor.contents.fp32_contents.extend(array.ravel().tolist())
        elif datatype == "BYTES":
            request.raw_input_contents.append(
                b"".join(len(b).to_bytes(4, "little") + b for b in array.ravel().tolist())
            )
        else:
            request.raw_input_contents.append(array.tobytes())
    response = stub.ModelInfer(request, timeout=60)
    assert (response.model_name, response.model_version) == (model, "1")
    return {
        out.name: (out.datatype, data)
        for out, data in zip(response.outputs, response.raw_output_contents, strict=True)
    }


def test_v2_model_infer_calls_are_logged_as_predict_logs_beside_predicts(tmp_path: Path) -> None:
    """ModelInfer of the mlp (raw and typed FP32, version "1" and latest) and of a string
    identity (BYTES), each model logged at rate 1: the official reader finds one ``predict_log``
    per call, in the same file as the model's Predict, whose tensors are what was sent and what
    was answered; that file, V2 records and all, replays as the mlp's warmup."""
    logs = tmp_path / "logs"
    logs.mkdir()
    onnx_models.mlp(tmp_path / "mlp" / "1" / "model.onnx", seed=1)
    onnx_models.identity(tmp_path / "words" / "1" / "model.onnx", "string")
    config = tmp_path / "models.config"
    entries = " ".join(
        f'config {{ name: "{name}" base_path: "{tmp_path / name}" {_logging(logs / name, 1.0)} }}'
        for name in ("mlp", "words")
    )
    config.write_text(f"model_config_list {{ {entries} }}\n")
    (tmp_path / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    words = np.array([[b"a", b"", "\u00e9t\u00e9".encode()]], dtype=object)
    with running_gateway(_args(tmp_path, config), tmp_path) as gateway:
        with grpc.insecure_channel(gateway.target) as channel:
            stub = v2_grpc.GRPCInferenceServiceStub(channel)
            raw = _v2_infer(stub, "mlp", "1", {"x": ("FP32", _x(1))})
            typed = _v2_infer(stub, "mlp", "", {"x": ("FP32", _x(2))}, typed=True)
            echoed = _v2_infer(stub, "words", "", {"x": ("BYTES", words)})
        _predicts(gateway, "mlp", [3])
    records = _official(_files(logs, "mlp"), tmp_path / "mlp.json")
    assert len(_files(logs, "mlp")) == 1  # V2 calls and Predicts share the model's file
    assert [r["kind"] for r in records] == ["predict_log"] * 3
    by_index = {int(r["x"][0][0]): r for r in records}
    assert sorted(by_index) == [1, 2, 3]
    assert [by_index[i]["request_version"] for i in (1, 2, 3)] == [1, 0, 0]
    for index, answered in ((1, raw), (2, typed)):
        record = by_index[index]
        assert (record["model"], record["version"]) == ("mlp", 1)
        assert record["tensors"]["request"] == {
            "x": {"dtype": "float32", "values": _x(index).tolist()}
        }
        response = record["tensors"]["response"]
        assert sorted(response) == sorted(answered) == ["logits", "probs"]
        for name, (datatype, data) in answered.items():
            assert datatype == "FP32"
            assert response[name]["dtype"] == "float32"
            sent = np.frombuffer(data, np.float32).reshape(1, -1)
            assert np.array_equal(np.array(response[name]["values"], np.float32), sent)
    (record,) = _official(_files(logs, "words"), tmp_path / "words.json")
    assert (record["kind"], record["model"], record["version"]) == ("predict_log", "words", 1)
    strings = [[item.decode() for item in row] for row in words.tolist()]
    assert record["tensors"]["request"] == {"x": {"dtype": "object", "values": strings}}
    assert record["tensors"]["response"] == {"y": {"dtype": "object", "values": strings}}
    assert echoed["y"][0] == "BYTES"
    (mlp_log,) = _files(logs, "mlp")
    assert _warmup_records_read(mlp_log, tmp_path / "replay") == "3"  # V2 records replayed too


def _post(gateway: GatewayProcess, path: str, body: bytes, **headers: str) -> bytes:
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.rest_port}{path}",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        return bytes(response.read())


def _rest_predicts(gateway: GatewayProcess, model: str, indices: Sequence[int]) -> list[Any]:
    """Predict each index's row over REST; the answers' ``predictions``."""
    answers = []
    for i in indices:
        body = json.dumps({"instances": _x(i).tolist()}).encode()
        answers.append(json.loads(_post(gateway, f"/v1/models/{model}:predict", body)))
    return [a["predictions"] for a in answers]


def _rest_examples(gateway: GatewayProcess) -> None:
    body = json.dumps({"examples": [{"x": float(i), "n": i} for i in range(3)]}).encode()
    for verb in ("classify", "regress"):
        answer = json.loads(_post(gateway, f"/v1/models/examples:{verb}", body))
        assert len(answer["results"]) == 3


def _v2_rest_infers(gateway: GatewayProcess, model: str, json_index: int, raw_index: int) -> None:
    """One V2 REST infer with JSON tensors, one with the binary data extension."""
    tensor = {"name": "x", "datatype": "FP32", "shape": [1, 64]}
    body = json.dumps({"inputs": [{**tensor, "data": _x(json_index).ravel().tolist()}]})
    assert json.loads(_post(gateway, f"/v2/models/{model}/infer", body.encode()))["outputs"]
    header = json.dumps({"inputs": [{**tensor, "parameters": {"binary_data_size": 256}}]})
    binary = header.encode() + _x(raw_index).tobytes()
    answer = _post(
        gateway,
        f"/v2/models/{model}/infer",
        binary,
        **{"Inference-Header-Content-Length": str(len(header))},
    )
    assert b"outputs" in answer


def test_rest_calls_are_logged_as_their_grpc_twins(tmp_path: Path) -> None:
    """With sampling 1.0, 40 gRPC and 10 REST predicts to one model write 50 records, each read
    back by TensorFlow's reader and parsed by the official protos, and the file replays as
    warmup, REST records included; REST ``:classify`` and ``:regress`` are ``classify_log`` and
    ``regress_log`` records; V2 REST infers (JSON and binary) are ``predict_log`` records."""
    logs = tmp_path / "logs"
    logs.mkdir()
    config = _repo(tmp_path, logs, {"mlp": 1.0, "v2": 1.0})
    with running_gateway(_args(tmp_path, config), tmp_path) as gateway:
        _predicts(gateway, "mlp", range(40))
        answered = _rest_predicts(gateway, "mlp", range(40, 50))
        _rest_examples(gateway)
        _v2_rest_infers(gateway, "v2", 60, 61)
    records = _official(_files(logs, "mlp"), tmp_path / "mlp.json")
    assert len(records) == 50
    assert {r["kind"] for r in records} == {"predict_log"}
    by_index = {int(r["x"][0][0]): r for r in records}
    assert sorted(by_index) == list(range(50))
    for index, predictions in zip(range(40, 50), answered, strict=True):
        record = by_index[index]
        assert (record["model"], record["version"], record["signature"]) == (
            "mlp",
            1,
            "serving_default",
        )
        assert (record["rate"], record["attributes"], record["request_version"]) == (1.0, 1, 0)
        assert record["tensors"]["request"] == {
            "x": {"dtype": "float32", "values": _x(index).tolist()}
        }
        response = record["tensors"]["response"]
        assert sorted(response) == ["logits", "probs"]
        for name in ("logits", "probs"):
            logged = np.array(response[name]["values"], np.float32)
            assert np.array_equal(logged, np.array([predictions[0][name]], np.float32))
    (mlp_log,) = _files(logs, "mlp")
    assert _warmup_records_read(mlp_log, tmp_path / "replay") == "50"
    examples = _official(_files(logs, "examples"), tmp_path / "examples.json")
    assert sorted((r["kind"], r["model"]) for r in examples) == [
        ("classify_log", "examples"),
        ("regress_log", "examples"),
    ]
    assert [r.get("classifications", r.get("regressions")) for r in examples] == [3, 3]
    v2 = _official(_files(logs, "v2"), tmp_path / "v2.json")
    assert sorted((r["kind"], int(r["x"][0][0])) for r in v2) == [
        ("predict_log", 60),
        ("predict_log", 61),
    ]
    assert {(r["model"], r["version"], r["signature"]) for r in v2} == {
        ("v2", 1, "serving_default")
    }


MIB = 1 << 20
STUCK_CALLS = 200
LOG_BUDGET = 64 * MIB
"""--request_log_max_pending_bytes (its default): what a stuck writer may hold."""
RECORD_SLACK = 64 * MIB
"""Beyond the budget: the one record the writer holds while building it (its request and
response copied, serialized and framed: about 6 x 4 MiB) and the allocator's rounding. Measured
here: +101 MiB (the same 200 calls unlogged, run first, had added 48 MiB); without the byte bound
the queue alone held ~8.5 MiB per call, +1.7 GiB over 200."""
GRACE_S = 2


def _status_bytes(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` memory figure (``VmRSS``, ``VmHWM``) in bytes."""
    text = Path(f"/proc/{pid}/status").read_text()
    (kib,) = re.findall(rf"^{field}:\s+(\d+) kB$", text, re.M)
    return int(kib) * 1024


def test_a_stuck_writer_keeps_its_memory_bound_and_cannot_hold_the_exit(tmp_path: Path) -> None:
    """The log directory stalls (every open there blocks, as on a hung mount) before the first
    record: 200 Predicts of 4 MiB are all answered, the gateway's peak RSS (after the same calls
    unlogged) grows by the log's byte budget and one record at most, the records past the budget
    are dropped and counted,
    and SIGTERM ends the process once the flush's bound (--shutdown_grace_seconds) passes, saying
    how many records were dropped."""
    logs = tmp_path / "logs"
    logs.mkdir()
    onnx_models.identity(tmp_path / "big" / "1" / "model.onnx", "float32")
    config = tmp_path / "models.config"
    config.write_text(
        "model_config_list { "
        f'config {{ name: "big" base_path: "{tmp_path / "big"}" {_logging(logs / "big", 1.0)} }} '
        f'config {{ name: "plain" base_path: "{tmp_path / "big"}" }} }}\n'
    )
    (tmp_path / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    args = _args(tmp_path, config, f"--shutdown_grace_seconds={GRACE_S}")
    gateway = start_gateway(args, tmp_path)
    x = np.ones((1024, 1024), np.float32)  # 4 MiB each way
    try:
        options = [("grpc.max_receive_message_length", 64 * MIB)]
        with grpc.insecure_channel(gateway.target, options) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for _ in range(STUCK_CALLS):  # what serving these calls takes, before the baseline
                stub.Predict(predict_request("plain", {"x": x}), timeout=60)
            baseline = _status_bytes(gateway.pid, "VmRSS")
            Path(f"/proc/{gateway.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
            with stalled(logs):
                for _ in range(STUCK_CALLS):
                    answer = stub.Predict(predict_request("big", {"x": x}), timeout=60)
                    assert answer.outputs["y"].tensor_shape.dim[0].size == 1024
                peak = _status_bytes(gateway.pid, "VmHWM")
                assert peak - baseline <= LOG_BUDGET + RECORD_SLACK, (peak - baseline) / MIB
                (dropped,) = re.findall(
                    r'^tensorgate_request_log_dropped_total\{model_name="big"\} (\S+)$',
                    _scrape(gateway),
                    re.M,
                )
                assert int(float(dropped)) >= STUCK_CALLS - LOG_BUDGET // (8 * MIB) - 1
                assert gateway.stop() == 0  # bounded: GatewayFailed if it hangs
    finally:
        if gateway.process.poll() is None:
            gateway.stop(signal.SIGKILL)
    (line,) = re.findall(r"request log closed: .*", gateway.log())
    found = re.fullmatch(
        r"request log closed: 0 record\(s\) written, (\d+) dropped \((\d+) with the queue full, "
        r"0 that could not be written, 0 that failed to build, (\d+) still queued at exit: the "
        rf"writers did not finish within {GRACE_S} s\)",
        line,
    )
    assert found is not None, line
    total, full, queued = map(int, found.groups())
    assert total == full + queued == STUCK_CALLS
    assert full == int(float(dropped))


def test_a_directory_that_disappears_is_one_error_line_not_one_per_call(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    gone = logs / "gone"
    gone.mkdir(parents=True)
    config = _repo(tmp_path, gone, {"every": 1.0})
    with running_gateway(_args(tmp_path, config), tmp_path) as gateway:
        gone.rmdir()
        _predicts(gateway, "every", range(20))  # every call answered (asserted there)
    prefix = re.escape(str(gone / "every"))
    errors = re.findall(rf"^\S+ \S+ E .*{prefix}.*$", gateway.log(), re.M)
    assert len(errors) == 1, errors
    assert "records are dropped until writing works again" in errors[0]


def test_files_planted_at_predictable_names_are_never_written(tmp_path: Path) -> None:
    """A symlink at ``<prefix>-<pid>-00000.tfrecord`` (the name a writer used to open for
    appending) and an earlier process's leftover file are left as they are: every record goes
    to files this process created."""
    logs = tmp_path / "logs"
    logs.mkdir()
    target = tmp_path / "target"
    target.write_bytes(b"")
    config = _repo(tmp_path, logs, {"every": 1.0})
    with running_gateway(_args(tmp_path, config), tmp_path) as gateway:
        (logs / f"every-{gateway.pid}-00000.tfrecord").symlink_to(target)
        leftover = logs / f"every-{gateway.pid}-00001.tfrecord"
        leftover.write_bytes(b"an earlier process's partial record")
        _predicts(gateway, "every", range(5))
    assert target.read_bytes() == b""
    assert leftover.read_bytes() == b"an earlier process's partial record"
    created = [p for p in _files(logs, "every") if not p.is_symlink() and p != leftover]
    assert sorted(_index(r) for r in _ours(created)) == list(range(5))
