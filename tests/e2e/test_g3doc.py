"""Every example of TF Serving's g3doc pages that a server can answer, against tensorgate.

- ``api_rest.md``: its end-to-end example on ``saved_model_half_plus_three`` (status, predict,
  ``regress`` on ``tensorflow/serving/regress``, the 404), its request formats (row and columnar,
  strings, nested lists, named inputs, ``b64`` classify, ``NaN`` / ``Infinity``);
- ``docker.md``: ``half_plus_two`` predict;
- ``saved_model_warmup.md``: a warmup file written by TensorFlow's ``TFRecordWriter``;
- ``signature_defs.md``: its classification, predict and regression SignatureDefs;
- ``serving_config.md``: its config files (basic list, specific versions, labels and their moves
  by HandleReloadConfigRequest, labels at start, the batching file, its monitoring file and the
  metrics path it sets).

Doc examples that are not valid as printed (a stray ``]``, ``Nan``) are sent verbatim and get
the same 400 TF Serving gives, then sent corrected.
"""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from google.protobuf import text_format
from onnx import TensorProto, helper

from gateway.config.batching_options import load_options
from gateway.config.flags import parse_flags
from gateway.config.model_config import load_model_server_config, model_specs
from gateway.observability.metrics_page import metrics_path
from tests.support import onnx_models, rest_models
from tests.support.gateway_proc import GatewayProcess, gateway_command, running_gateway
from tests.support.grpc_calls import predict_request
from tests.support.lifecycle import predict, reload, status
from tests.support.onnx_models import save_graph
from tests.support.tf_compat import Served
from tests.support.tf_compat_models_script import WARMUP_RECORDS

pytestmark = pytest.mark.tfclient

HTTP_TIMEOUT_S = 60


def call(url: str, body: str | None = None) -> tuple[int, Any, str]:
    """curl: POST ``body`` verbatim (GET when None); status, parsed JSON, Content-Type."""
    data = None if body is None else body.encode()
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=data), timeout=HTTP_TIMEOUT_S
        ) as r:
            return r.status, json.loads(r.read()), r.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers["Content-Type"]


# -- api_rest.md "Example", docker.md, saved_model_warmup.md, signature_defs.md -------------------
def test_api_rest_example_on_saved_model_half_plus_three(served: Served) -> None:
    url = f"{served.rest}/v1/models/saved_model_half_plus_three"
    assert call(url)[:2] == (
        200,
        {
            "model_version_status": [
                {
                    "version": "123",
                    "state": "AVAILABLE",
                    "status": {"error_code": "OK", "error_message": ""},
                }
            ]
        },
    )
    assert call(f"{url}:predict", '{"instances": [1.0,2.0,5.0]}')[:2] == (
        200,
        {"predictions": [3.5, 4.0, 5.5]},
    )
    body = '{"signature_name": "tensorflow/serving/regress", "examples": [{"x": 1.0}, {"x": 2.0}]}'
    assert call(f"{url}:regress", body)[:2] == (200, {"results": [3.5, 4.0]})
    assert call(f"{served.rest}/v1/models/half:predict", '{"instances": [1.0,5.0]}') == (
        404,
        {"error": "Servable not found for request: Latest(half)"},
        "application/json",
    )


def test_docker_example_on_half_plus_two(served: Served) -> None:
    url = f"{served.rest}/v1/models/half_plus_two:predict"
    assert call(url, '{"instances": [1.0, 2.0, 5.0]}')[:2] == (
        200,
        {"predictions": [2.5, 3.0, 4.5]},
    )


def test_saved_model_warmup_file_from_tensorflows_writer_is_replayed(served: Served) -> None:
    """predict + regress + a one-task multi_inference: 3 runs counted by the worker, before the
    version served (served both as half_plus_three and as saved_model_half_plus_three)."""
    log = served.process.log()
    for name in ("half_plus_three", "saved_model_half_plus_three"):
        assert f"warmed up {name} version 123: {WARMUP_RECORDS} runs on worker 0" in log


def test_signature_defs_examples(served: Served) -> None:
    url = f"{served.rest}/v1/models/signature_defs_doc"
    body = '{"signature_name": "my_classification_signature", "examples": [{"x": 2.0}]}'
    assert call(f"{url}:classify", body)[:2] == (200, {"results": [[["two", 4.0], ["one", 2.0]]]})
    body = '{"signature_name": "my_prediction_signature", "instances": [[1.5]]}'
    assert call(f"{url}:predict", body)[:2] == (200, {"predictions": [[15.0]]})
    body = '{"signature_name": "my_regression_signature", "examples": [{"x": 2.0}]}'
    assert call(f"{url}:regress", body)[:2] == (200, {"results": [4.0]})


def test_api_rest_binary_classify_example(served: Served) -> None:
    body = """{
      "signature_name": "classify_objects",
      "examples": [
        {
          "image": { "b64": "aW1hZ2UgYnl0ZXM=" },
          "caption": "seaside"
        },
        {
          "image": { "b64": "YXdlc29tZSBpbWFnZSBieXRlcw==" },
          "caption": "mountains"
        }
      ]
    }"""
    assert call(f"{served.rest}/v1/models/signature_defs_doc:classify", body)[:2] == (
        200,
        {"results": [[["image", 11.0], ["caption", 7.0]], [["image", 19.0], ["caption", 9.0]]]},
    )


# -- api_rest.md request formats, on ONNX models ---------------------------------------------------
def named_inputs(path: Path) -> Path:
    """tag string[-1], signal float32[-1, 5], sensor float32[-1, 2, 2] → *_out identities."""
    shapes: dict[str, tuple[int, list[str | int | None]]] = {
        "tag": (TensorProto.STRING, ["n"]),
        "signal": (TensorProto.FLOAT, ["n", 5]),
    }
    shapes["sensor"] = (TensorProto.FLOAT, ["n", 2, 2])
    graph = helper.make_graph(
        [helper.make_node("Identity", [n], [f"{n}_out"]) for n in shapes],
        "named_inputs",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in shapes.items()],
        [helper.make_tensor_value_info(f"{n}_out", t, s) for n, (t, s) in shapes.items()],
    )
    return save_graph(graph, path)


def pairs(path: Path) -> Path:
    """x float32[-1, 1, 2] → y (identity): "2 tensors each of [1, 2] shape"."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "pairs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, 2])],
    )
    return save_graph(graph, path)


BATCHING_FILE = """
max_batch_size { value: 128 }
batch_timeout_micros { value: 0 }
max_enqueued_batches { value: 1000000 }
num_batch_threads { value: 8 }
"""
"""serving_config.md's "Example batching parameters file", verbatim."""


@dataclass(frozen=True)
class Docs:
    process: GatewayProcess
    rest: str
    root: Path


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docs]:
    """ONNX models for the request formats and serving_config.md's versions 42 and 43; the
    management API on (labels move by reload, as the page says); the page's batching file."""
    root = tmp_path_factory.mktemp("g3doc")
    named_inputs(root / "named" / "1" / "model.onnx")
    pairs(root / "pairs" / "1" / "model.onnx")
    rest_models.strings(root / "strings" / "1" / "model.onnx")
    onnx_models.scaled(root / "canary" / "42" / "model.onnx", 2.0)
    onnx_models.scaled(root / "canary" / "43" / "model.onnx", 3.0)
    (root / "batching.config").write_text(BATCHING_FILE)
    (root / "models.config").write_text(docs_config(root, ""))
    args = [
        f"--model_config_file={root / 'models.config'}",
        "--rest_api_port=-1",
        "--enable_model_management_api",
        f"--management_base_path_dirs={root}",
        "--enable_batching",
        f"--batching_parameters_file={root / 'batching.config'}",
        "--workers=1",
        "--file_system_poll_wait_seconds=0",
    ]
    with running_gateway(args, tmp_path_factory.mktemp("g3doc_logs")) as process:
        yield Docs(process, f"http://127.0.0.1:{process.rest_port}", root)


def docs_config(root: Path, labels: str) -> str:
    """The request-format models, and serving_config.md's "Serving Multiple Versions" config
    (with ``labels``) for the model ``canary``."""
    versions = "model_version_policy {\n  specific {\n    versions: 42\n    versions: 43\n  }\n}"
    models = "".join(
        f"  config {{ name: '{name}' base_path: '{root / name}' }}\n"
        for name in ("named", "pairs", "strings")
    )
    canary = f"name: 'canary'\nbase_path: '{root / 'canary'}'\n{versions}\n{labels}"
    return (
        f"model_config_list {{\n{models}  config {{\n{textwrap.indent(canary, '    ')}\n  }}\n}}\n"
    )


def test_api_rest_row_and_columnar_formats(docs: Docs) -> None:
    named = f"{docs.rest}/v1/models/named:predict"
    printed = """{
 "instances": [
   {
     "tag": "foo",
     "signal": [1, 2, 3, 4, 5],
     "sensor": [[1, 2], [3, 4]]
   },
   {
     "tag": "bar",
     "signal": [3, 4, 1, 2, 5]],
     "sensor": [[4, 5], [6, 8]]
   }
 ]
}"""
    status_code, body, _ = call(named, printed)  # the page's stray "]": not JSON
    assert status_code == 400 and body["error"].startswith("JSON Parse error")
    status_code, body, _ = call(named, printed.replace("5]],", "5],"))
    assert status_code == 200
    assert body == {
        "predictions": [
            {
                "tag_out": "foo",
                "signal_out": [1.0, 2.0, 3.0, 4.0, 5.0],
                "sensor_out": [[1.0, 2.0], [3.0, 4.0]],
            },
            {
                "tag_out": "bar",
                "signal_out": [3.0, 4.0, 1.0, 2.0, 5.0],
                "sensor_out": [[4.0, 5.0], [6.0, 8.0]],
            },
        ]
    }
    columnar = """{
 "inputs": {
   "tag": ["foo", "bar"],
   "signal": [[1, 2, 3, 4, 5], [3, 4, 1, 2, 5]],
   "sensor": [[[1, 2], [3, 4]], [[4, 5], [6, 8]]]
 }
}"""
    status_code, body, _ = call(named, columnar)
    assert status_code == 200
    assert body["outputs"]["tag_out"] == ["foo", "bar"]
    assert body["outputs"]["sensor_out"] == [[[1.0, 2.0], [3.0, 4.0]], [[4.0, 5.0], [6.0, 8.0]]]
    strings = f"{docs.rest}/v1/models/strings:predict"
    status_code, body, _ = call(strings, '{\n  "instances": [ "foo", "bar", "baz" ]\n}')
    assert status_code == 200
    assert [p["text_out"] for p in body["predictions"]] == ["foo", "bar", "baz"]
    nested = f"{docs.rest}/v1/models/pairs:predict"
    assert call(nested, '{\n  "instances": [ [[1, 2]], [[3, 4]] ]\n}')[:2] == (
        200,
        {"predictions": [[[1.0, 2.0]], [[3.0, 4.0]]]},
    )


def test_api_rest_nan_and_infinity(docs: Docs) -> None:
    named = f"{docs.rest}/v1/models/named:predict"
    printed = '{"example": [{"sensor_readings": [ 1.0, -3.14, Nan, Infinity ]}]}'
    status_code, body, _ = call(named, printed)  # "Nan" is no token, as for TF Serving
    assert status_code == 400 and body["error"].startswith("JSON Parse error")
    corrected = (
        '{"inputs": {"tag": ["t"], "signal": [[1.0, -3.14, NaN, Infinity, -Infinity]],'
        ' "sensor": [[[0, 0], [0, 0]]]}}'
    )
    raw = urllib.request.urlopen(named, corrected.encode(), timeout=HTTP_TIMEOUT_S).read()
    assert b"[1.0,-3.14,NaN,Infinity,-Infinity]" in raw.replace(b" ", b"")


# -- serving_config.md ---------------------------------------------------------------------------
def test_serving_config_labels_move_by_reload(docs: Docs) -> None:
    labels = (
        "version_labels {\n  key: 'stable'\n  value: 42\n}\n"
        "version_labels {\n  key: 'canary'\n  value: 43\n}"
    )
    promoted = labels.replace("value: 42", "value: 43")
    with grpc.insecure_channel(docs.process.target) as channel:
        assert {v for v, _, _ in status(channel, "canary")} == {42, 43}
        reload(channel, docs_config(docs.root, labels))
        by_label = f"{docs.rest}/v1/models/canary/labels"
        assert call(f"{by_label}/stable:predict", '{"instances": [[1, 1]]}')[:2] == (
            200,
            {"predictions": [[2.0, 2.0]]},
        )
        assert call(f"{by_label}/canary:predict", '{"instances": [[1, 1]]}')[1] == {
            "predictions": [[3.0, 3.0]]
        }
        reload(channel, docs_config(docs.root, promoted))  # "ready to promote it to stable"
        assert call(f"{by_label}/stable:predict", '{"instances": [[1, 1]]}')[1] == {
            "predictions": [[3.0, 3.0]]
        }
        reload(channel, docs_config(docs.root, labels))  # "revert to the old config"
        assert call(f"{by_label}/stable:predict", '{"instances": [[1, 1]]}')[1] == {
            "predictions": [[2.0, 2.0]]
        }
        with pytest.raises(grpc.RpcError) as info:
            reload(channel, docs_config(docs.root, labels.replace("value: 43", "value: 44")))
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "not currently available for inference" in str(info.value.details())
        assert predict(channel, "canary")[0] == 43  # the running config stayed


def test_serving_config_labels_at_start_need_the_flag(docs: Docs, tmp_path: Path) -> None:
    """ "If you would like to assign a label to a version that is not yet loaded (for ex. by
    supplying both the model version and the label at startup time) then you must set the
    --allow_version_labels_for_unavailable_models flag"."""
    import subprocess

    config = tmp_path / "labels.config"
    labels = "version_labels {\n  key: 'stable'\n  value: 42\n}"
    config.write_text(docs_config(docs.root, labels))
    args = [f"--model_config_file={config}", "--port=0", "--workers=1"]
    done = subprocess.run(
        gateway_command(args), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1
    assert (
        "failed to start: Request to assign label to version 42 of model canary, which is not "
        "currently available for inference"
    ) in done.stdout + done.stderr
    flag = "--allow_version_labels_for_unavailable_models"
    args = [f"--model_config_file={config}", flag, "--workers=1"]
    with running_gateway(args, tmp_path) as gw, grpc.insecure_channel(gw.target) as channel:
        assert predict_label(channel, "canary", "stable") == 42


def predict_label(channel: grpc.Channel, model: str, label: str) -> int:
    from gateway._pb.tensorflow_serving.apis import prediction_service_pb2_grpc

    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    request = predict_request(model, {"x": np.ones((1, 2), np.float32)}, label=label)
    return int(stub.Predict(request, timeout=60).model_spec.version.value)


def test_serving_config_files_parse() -> None:
    basic = """
model_config_list {
  config {
    name: 'my_first_model'
    base_path: '/tmp/my_first_model/'
    model_platform: 'tensorflow'
  }
  config {
    name: 'my_second_model'
    base_path: '/tmp/my_second_model/'
    model_platform: 'tensorflow'
  }
}
"""
    from gateway._pb.tensorflow_serving.config import model_server_config_pb2

    config = text_format.Parse(basic, model_server_config_pb2.ModelServerConfig())
    specs = model_specs(config)
    assert [(s.name, s.platform, s.policy) for s in specs] == [
        ("my_first_model", "tensorflow", "latest"),
        ("my_second_model", "tensorflow", "latest"),
    ]
    single = "model_version_policy {\n  specific {\n    versions: 42\n  }\n}"
    config.model_config_list.config[0].MergeFrom(
        text_format.Parse(single, model_server_config_pb2.ModelConfig())
    )
    assert model_specs(config)[0].versions == (42,)


def test_serving_config_batching_and_monitoring_files(tmp_path: Path) -> None:
    path = tmp_path / "batching.config"
    path.write_text(BATCHING_FILE)
    options = load_options(str(path))
    assert (options.max_batch_size, options.batch_timeout_micros) == (128, 0)
    assert (options.max_enqueued_batches, options.num_batch_threads) == (1000000, 8)
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text(
        'prometheus_config {\n  enable: true,\n  path: "/monitoring/prometheus/metrics"\n}\n'
    )
    settings = parse_flags(["--model_base_path=/m", f"--monitoring_config_file={monitoring}"])
    assert metrics_path(settings.monitoring_config_file) == "/monitoring/prometheus/metrics"


def test_the_batching_example_serves(docs: Docs) -> None:
    rows = ", ".join("[1, 2, 3, 4, 5]" for _ in range(3))
    body = (
        '{"inputs": {"tag": ["a", "b", "c"], "signal": ['
        + rows
        + '], "sensor": [[[1,2],[3,4]],[[1,2],[3,4]],[[1,2],[3,4]]]}}'
    )
    assert call(f"{docs.rest}/v1/models/named:predict", body)[0] == 200
    assert load_model_server_config(docs.root / "models.config").model_config_list.config
