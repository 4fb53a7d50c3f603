"""The generated package ``gateway._pb``: up to date, private, and wire-compatible.

Wire compatibility is checked against the real ``tensorflow-serving-api`` package. It
registers the same proto file names as ours, so it only ever runs in a separate process
(the "peer", see ``_PEER``): messages built here are parsed there and the other way round,
exchanged as bytes in JSON files. The Open Inference Protocol's ``inference`` package is checked
the same way against ``tritonclient`` (:mod:`tests.v2.test_protos_tritonclient`).
"""

from __future__ import annotations

import base64
import importlib
import importlib.machinery
import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, text_format
from google.protobuf.message import Message

from gateway._pb.tensorflow.core.example import example_pb2
from gateway._pb.tensorflow.core.framework import tensor_pb2, types_pb2
from gateway._pb.tensorflow.core.protobuf import (
    config_pb2,
    error_codes_pb2,
    meta_graph_pb2,
    named_tensor_pb2,
    saved_model_pb2,
)
from gateway._pb.tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_management_pb2,
    predict_pb2,
    prediction_log_pb2,
    session_service_pb2,
)
from gateway._pb.tensorflow_serving.config import (
    model_server_config_pb2,
    monitoring_config_pb2,
    ssl_config_pb2,
)
from gateway._pb.tensorflow_serving.servables.tensorflow import session_bundle_config_pb2
from tests.support import tools
from tests.support.paths import REPO_ROOT

GEN_SCRIPT = REPO_ROOT / "scripts" / "gen_protos.py"
PB_DIR = REPO_ROOT / "gateway" / "_pb"
PROTO_ROOTS = ("tensorflow", "tensorflow_serving", "xla", "inference")
TF_ROOTS = ("tensorflow", "tensorflow_serving", "xla")
"""The roots the tensorflow-serving-api peer knows (``inference`` is tritonclient's)."""

# Ours declare fewer fields than upstream (the rest are reserved): compared field by field.
REDUCED_MESSAGES = {
    "tensorflow.MetaGraphDef",
    "tensorflow.TensorInfo",
    "tensorflow.RunOptions",
    "tensorflow.RunMetadata",
}
# Messages the tensorflow-serving-api wheel does not ship (checked against upstream facts).
NOT_IN_CLIENT_PACKAGE = {
    "tensorflow.serving.BatchingParameters",
    "tensorflow.serving.SessionBundleConfig",
    "tensorflow.serving.ModelWarmupOptions",
    "tensorflow.serving.MonitoringConfig",
    "tensorflow.serving.PrometheusConfig",
    "tensorflow.serving.SSLConfig",
}

MODEL_CONFIG_TEXT = """
model_config_list {
  config {
    name: "resnet"
    base_path: "/models/resnet"
    model_platform: "tensorflow"
    model_version_policy { specific { versions: 1 versions: 2 } }
    version_labels { key: "stable" value: 1 }
    version_labels { key: "canary" value: 2 }
  }
  config {
    name: "mnist"
    base_path: "/models/mnist"
    model_platform: "onnx"
    model_version_policy { latest { num_versions: 2 } }
  }
}
"""

# Runs with the real tensorflow / tensorflow_serving; never imports gateway.
_PEER = r"""
import base64, json, sys, tempfile
import numpy as np
import tensorflow as tf
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, saved_model_pb2  # noqa
from tensorflow_serving.apis import (  # noqa
    classification_pb2, get_model_metadata_pb2, get_model_status_pb2, inference_pb2,
    model_management_pb2, model_service_pb2, predict_pb2, prediction_log_pb2,
    prediction_service_pb2, regression_pb2, session_service_pb2)
from tensorflow_serving.config import model_server_config_pb2, platform_config_pb2  # noqa

b64 = lambda data: base64.b64encode(data).decode()
with open(sys.argv[1]) as f:
    request = json.load(f)
pool = descriptor_pool.Default()
out = {"parsed": {}, "ndarrays": {}, "built": {}, "built_text": {}, "messages": {}, "enums": {},
       "services": {}}

for key, (type_name, data) in request["parse"].items():
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(type_name))
    msg = cls.FromString(base64.b64decode(data))
    out["parsed"][key] = {
        "text": text_format.MessageToString(msg),
        "bytes": b64(msg.SerializeToString(deterministic=True)),
    }
    if key == "predict_request":
        for name, tensor in msg.inputs.items():
            arr = tf.make_ndarray(tensor)
            if arr.dtype.kind in "biu":
                values = arr.tolist()
            elif arr.dtype.kind in "SOa":
                values = [b64(v) for v in arr.reshape(-1).tolist()]
            elif arr.dtype.kind == "c":
                values = [[v.real, v.imag] for v in arr.reshape(-1).tolist()]
            else:
                values = arr.astype(np.float64).tolist()
            out["ndarrays"][name] = {
                "dtype": tf.as_dtype(tensor.dtype).name, "shape": list(arr.shape),
                "values": values}

def descriptor_info(desc, proto_cls):
    proto = proto_cls()
    desc.CopyToProto(proto)
    return {"file": desc.file.name, "package": desc.file.package,
            "proto": b64(proto.SerializeToString())}

for full_name in request["messages"]:
    try:
        desc = pool.FindMessageTypeByName(full_name)
    except KeyError:
        out["messages"][full_name] = None
        continue
    out["messages"][full_name] = descriptor_info(desc, descriptor_pb2.DescriptorProto)
for full_name in request["enums"]:
    desc = pool.FindEnumTypeByName(full_name)
    out["enums"][full_name] = descriptor_info(desc, descriptor_pb2.EnumDescriptorProto)
for full_name in request["services"]:
    desc = pool.FindServiceByName(full_name)
    out["services"][full_name] = descriptor_info(desc, descriptor_pb2.ServiceDescriptorProto)

req = predict_pb2.PredictRequest()
req.model_spec.name = "half_plus_two"
req.model_spec.version.value = 3
req.model_spec.signature_name = "serving_default"
req.inputs["x"].CopyFrom(tf.make_tensor_proto(np.arange(6, dtype=np.float32).reshape(2, 3)))
req.inputs["s"].CopyFrom(tf.make_tensor_proto([b"a", b"bc"]))
req.output_filter.append("y")

sig = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
sig.inputs["x"].name = "x:0"
sig.inputs["x"].dtype = tf.float32.as_datatype_enum
sig.inputs["x"].tensor_shape.dim.add(size=-1)
sig.inputs["x"].tensor_shape.dim.add(size=3)
sig.inputs["sp"].coo_sparse.values_tensor_name = "v:0"
sig.inputs["sp"].coo_sparse.indices_tensor_name = "i:0"
sig.inputs["sp"].coo_sparse.dense_shape_tensor_name = "d:0"
sig.outputs["y"].name = "y:0"
sig.outputs["y"].dtype = tf.float32.as_datatype_enum
sig.outputs["y"].tensor_shape.unknown_rank = True
sigmap = get_model_metadata_pb2.SignatureDefMap()
sigmap.signature_def["serving_default"].CopyFrom(sig)
meta = get_model_metadata_pb2.GetModelMetadataResponse()
meta.model_spec.name = "half_plus_two"
meta.model_spec.version.value = 3
meta.metadata["signature_def"].Pack(sigmap)

config = model_server_config_pb2.ModelServerConfig()
text_format.Parse(request["model_config_text"], config)

log = prediction_log_pb2.PredictionLog()
log.predict_log.request.CopyFrom(req)
log.log_metadata.timestamp_secs = 1700000000

class Plus(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def serve(self, x):
        return {"y": x + 2.0}

module = Plus()
with tempfile.TemporaryDirectory() as tmp:
    tf.saved_model.save(module, tmp, signatures={"serving_default": module.serve})
    with open(tmp + "/saved_model.pb", "rb") as f:
        saved = saved_model_pb2.SavedModel.FromString(f.read())

built = {"predict_request": req, "metadata_response": meta, "model_server_config": config,
         "prediction_log": log, "saved_model": saved}
for key, msg in built.items():
    out["built"][key] = b64(msg.SerializeToString())
    out["built_text"][key] = text_format.MessageToString(msg)

with open(sys.argv[2], "w") as f:
    json.dump(out, f)
"""


def _module_for(proto: Path) -> str:
    rel = proto.relative_to(REPO_ROOT / "protos").with_suffix("")
    return "gateway._pb." + ".".join(rel.parts) + "_pb2"


def _our_modules(roots: tuple[str, ...] = TF_ROOTS) -> list[Any]:
    return [
        importlib.import_module(_module_for(p))
        for root in roots
        for p in sorted((REPO_ROOT / "protos" / root).rglob("*.proto"))
    ]


def test_every_proto_is_under_a_known_root() -> None:
    protos = sorted((REPO_ROOT / "protos").rglob("*.proto"))
    assert protos
    for proto in protos:
        assert proto.relative_to(REPO_ROOT / "protos").parts[0] in PROTO_ROOTS, proto
    assert len(_our_modules(PROTO_ROOTS)) == len(protos)


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_committed_code_matches_regeneration(tmp_path: Path) -> None:
    out = tmp_path / "pb"
    result = subprocess.run(
        [sys.executable, str(GEN_SCRIPT), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    fresh, committed = _files(out), _files(PB_DIR)
    missing = sorted(fresh.keys() - committed.keys())
    extra = sorted(committed.keys() - fresh.keys())
    assert not missing, f"not committed in gateway/_pb (run scripts/gen_protos.py): {missing}"
    assert not extra, f"stale files in gateway/_pb (run scripts/gen_protos.py): {extra}"
    for name in sorted(fresh):
        assert fresh[name] == committed[name], (
            f"gateway/_pb/{name} differs from a fresh generation (run scripts/gen_protos.py)"
        )


def test_no_top_level_proto_packages_are_importable_from_the_repo() -> None:
    search_path = [str(REPO_ROOT), str(REPO_ROOT / "gateway")]
    for name in PROTO_ROOTS:
        spec = importlib.machinery.PathFinder.find_spec(name, search_path)
        assert spec is None, f"{name!r} is importable from {spec.origin or spec.name}"


def test_importing_generated_code_loads_no_top_level_proto_package() -> None:
    code = (
        "import json, sys\n"
        "from gateway._pb.tensorflow_serving.apis import (\n"
        "    model_service_pb2_grpc, predict_pb2, prediction_log_pb2,\n"
        "    prediction_service_pb2_grpc)\n"
        "from gateway._pb.tensorflow_serving.config import model_server_config_pb2\n"
        "from gateway._pb.inference import grpc_service_pb2, grpc_service_pb2_grpc\n"
        f"roots = {set(PROTO_ROOTS)!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in roots)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_generated_modules_carry_their_private_names() -> None:
    assert predict_pb2.PredictRequest.__module__ == (
        "gateway._pb.tensorflow_serving.apis.predict_pb2"
    )
    status = get_model_status_pb2.ModelVersionStatus(
        state=get_model_status_pb2.ModelVersionStatus.END
    )
    status.status.error_code = error_codes_pb2.NOT_FOUND
    assert status.status.error_code == 5
    assert predict_pb2.DESCRIPTOR.name == "tensorflow_serving/apis/predict.proto"
    assert predict_pb2.DESCRIPTOR.package == "tensorflow.serving"


# --- Upstream facts for what the client package does not ship ------------------------------

_WRAPPER = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_BOOL = descriptor_pb2.FieldDescriptorProto.TYPE_BOOL
_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_INT64 = descriptor_pb2.FieldDescriptorProto.TYPE_INT64
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL

# name -> (number, type, label, type_name) as in TF Serving's .proto sources.
UPSTREAM_FIELDS: dict[str, dict[str, tuple[int, int, int, str]]] = {
    "tensorflow.serving.BatchingParameters": {
        "max_batch_size": (1, _WRAPPER, _OPTIONAL, ".google.protobuf.Int64Value"),
        "batch_timeout_micros": (2, _WRAPPER, _OPTIONAL, ".google.protobuf.Int64Value"),
        "max_enqueued_batches": (3, _WRAPPER, _OPTIONAL, ".google.protobuf.Int64Value"),
        "num_batch_threads": (4, _WRAPPER, _OPTIONAL, ".google.protobuf.Int64Value"),
        "thread_pool_name": (5, _WRAPPER, _OPTIONAL, ".google.protobuf.StringValue"),
        "allowed_batch_sizes": (6, _INT64, _REPEATED, ""),
        "pad_variable_length_inputs": (7, _BOOL, _OPTIONAL, ""),
        "enable_large_batch_splitting": (8, _WRAPPER, _OPTIONAL, ".google.protobuf.BoolValue"),
        "max_execution_batch_size": (9, _WRAPPER, _OPTIONAL, ".google.protobuf.Int64Value"),
    },
    "tensorflow.serving.PrometheusConfig": {
        "enable": (1, _BOOL, _OPTIONAL, ""),
        "path": (2, _STRING, _OPTIONAL, ""),
    },
    "tensorflow.serving.MonitoringConfig": {
        "prometheus_config": (1, _WRAPPER, _OPTIONAL, ".tensorflow.serving.PrometheusConfig"),
    },
    "tensorflow.serving.SSLConfig": {
        "server_key": (1, _STRING, _OPTIONAL, ""),
        "server_cert": (2, _STRING, _OPTIONAL, ""),
        "custom_ca": (3, _STRING, _OPTIONAL, ""),
        "client_verify": (4, _BOOL, _OPTIONAL, ""),
    },
}


@pytest.mark.parametrize(
    "message",
    [
        session_bundle_config_pb2.BatchingParameters,
        monitoring_config_pb2.PrometheusConfig,
        monitoring_config_pb2.MonitoringConfig,
        ssl_config_pb2.SSLConfig,
    ],
)
def test_config_messages_match_upstream_field_numbers(message: Any) -> None:
    proto = descriptor_pb2.DescriptorProto()
    message.DESCRIPTOR.CopyToProto(proto)
    ours = {f.name: (f.number, f.type, f.label, f.type_name) for f in proto.field}
    assert ours == UPSTREAM_FIELDS[message.DESCRIPTOR.full_name]


def test_config_files_in_tf_serving_text_format_parse() -> None:
    batching = text_format.Parse(
        """
        max_batch_size { value: 128 }
        batch_timeout_micros { value: 5000 }
        max_enqueued_batches { value: 100 }
        num_batch_threads { value: 4 }
        thread_pool_name { value: "batch_threads" }
        allowed_batch_sizes: 32
        allowed_batch_sizes: 128
        pad_variable_length_inputs: true
        enable_large_batch_splitting { value: true }
        max_execution_batch_size { value: 64 }
        """,
        session_bundle_config_pb2.BatchingParameters(),
    )
    assert batching.max_batch_size.value == 128
    assert batching.HasField("batch_timeout_micros")
    assert not session_bundle_config_pb2.BatchingParameters().HasField("max_batch_size")
    assert list(batching.allowed_batch_sizes) == [32, 128]
    assert batching.enable_large_batch_splitting.value is True
    monitoring = text_format.Parse(
        'prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" }',
        monitoring_config_pb2.MonitoringConfig(),
    )
    assert monitoring.prometheus_config.enable
    ssl = text_format.Parse(
        'server_key: "KEY" server_cert: "CERT" custom_ca: "CA" client_verify: true',
        ssl_config_pb2.SSLConfig(),
    )
    assert ssl.client_verify and ssl.custom_ca == "CA"
    config = text_format.Parse(MODEL_CONFIG_TEXT, model_server_config_pb2.ModelServerConfig())
    assert [c.name for c in config.model_config_list.config] == ["resnet", "mnist"]
    assert dict(config.model_config_list.config[0].version_labels) == {"stable": 1, "canary": 2}


# --- Wire compatibility with the real tensorflow-serving-api, in a peer process ------------


def _tensor(dtype: types_pb2.DataType.ValueType, shape: list[int], **values: Any) -> Any:
    tensor = tensor_pb2.TensorProto(dtype=dtype, **values)
    for size in shape:
        tensor.tensor_shape.dim.add(size=size)
    return tensor


def _predict_request() -> Any:
    req = predict_pb2.PredictRequest(output_filter=["y", "z"], client_id=b"c1")
    req.model_spec.name = "m"
    req.model_spec.version_label = "canary"
    req.model_spec.signature_name = "sig"
    req.request_options.deterministic_mode = (
        predict_pb2.PredictRequest.RequestOptions.FIXED_DECODER_SLOT
    )
    req.predict_streamed_options.request_state = predict_pb2.PredictStreamedOptions.SPLIT
    req.predict_streamed_options.split_dimensions["f"] = 0
    inputs = {
        "f": _tensor(types_pb2.DT_FLOAT, [2], float_val=[1.5, -2.0]),
        "fill": _tensor(types_pb2.DT_FLOAT, [2, 2], float_val=[3.0]),
        "zeros": _tensor(types_pb2.DT_INT32, [3]),
        "h": _tensor(types_pb2.DT_HALF, [3], half_val=[0x3800, 0x3C00, 0xC000]),
        "bf": _tensor(types_pb2.DT_BFLOAT16, [1], half_val=[0x3F80]),
        "u32": _tensor(types_pb2.DT_UINT32, [1], uint32_val=[4_000_000_000]),
        "u64": _tensor(types_pb2.DT_UINT64, [1], uint64_val=[2**64 - 1]),
        "i64": _tensor(types_pb2.DT_INT64, [2], int64_val=[-5, 7]),
        "i8": _tensor(types_pb2.DT_INT8, [2], int_val=[-128, 127]),
        "b": _tensor(types_pb2.DT_BOOL, [2], bool_val=[True, False]),
        "s": _tensor(types_pb2.DT_STRING, [2], string_val=[b"\x00\xff", b"hi"]),
        "d": _tensor(types_pb2.DT_DOUBLE, [2, 1], tensor_content=struct.pack("<2d", 0.25, -1e300)),
        "c": _tensor(types_pb2.DT_COMPLEX64, [1], scomplex_val=[1.0, -2.0]),
    }
    for name, tensor in inputs.items():
        req.inputs[name].CopyFrom(tensor)
    return req


# What tf.make_ndarray returns for each input of _predict_request().
EXPECTED_NDARRAYS: dict[str, dict[str, Any]] = {
    "f": {"dtype": "float32", "shape": [2], "values": [1.5, -2.0]},
    "fill": {"dtype": "float32", "shape": [2, 2], "values": [[3.0, 3.0], [3.0, 3.0]]},
    "zeros": {"dtype": "int32", "shape": [3], "values": [0, 0, 0]},
    "h": {"dtype": "float16", "shape": [3], "values": [0.5, 1.0, -2.0]},
    "bf": {"dtype": "bfloat16", "shape": [1], "values": [1.0]},
    "u32": {"dtype": "uint32", "shape": [1], "values": [4_000_000_000]},
    "u64": {"dtype": "uint64", "shape": [1], "values": [2**64 - 1]},
    "i64": {"dtype": "int64", "shape": [2], "values": [-5, 7]},
    "i8": {"dtype": "int8", "shape": [2], "values": [-128, 127]},
    "b": {"dtype": "bool", "shape": [2], "values": [True, False]},
    "s": {"dtype": "string", "shape": [2], "values": ["AP8=", "aGk="]},
    "d": {"dtype": "float64", "shape": [2, 1], "values": [[0.25], [-1e300]]},
    "c": {"dtype": "complex64", "shape": [1], "values": [[1.0, -2.0]]},
}


def _signature_def_map() -> Any:
    sig = meta_graph_pb2.SignatureDef(method_name="tensorflow/serving/predict")
    sig.inputs["x"].name = "serving_default_x:0"
    sig.inputs["x"].dtype = types_pb2.DT_FLOAT
    sig.inputs["x"].tensor_shape.dim.add(size=-1)
    sig.inputs["x"].tensor_shape.dim.add(size=3)
    sig.inputs["sp"].coo_sparse.values_tensor_name = "v:0"
    sig.outputs["y"].name = "StatefulPartitionedCall:0"
    sig.outputs["y"].dtype = types_pb2.DT_HALF
    sig.defaults["k"].CopyFrom(_tensor(types_pb2.DT_INT64, [], int64_val=[4]))
    sigmap = get_model_metadata_pb2.SignatureDefMap()
    sigmap.signature_def["serving_default"].CopyFrom(sig)
    return sigmap


def _messages_to_send() -> dict[str, Message]:
    request = _predict_request()
    metadata = get_model_metadata_pb2.GetModelMetadataResponse()
    metadata.model_spec.name = "m"
    metadata.model_spec.version.value = 7
    metadata.metadata["signature_def"].Pack(_signature_def_map())

    config = model_server_config_pb2.ModelServerConfig()
    model = config.model_config_list.config.add(
        name="m", base_path="/models/m", model_platform="onnx"
    )
    model.model_version_policy.all.SetInParent()
    model.version_labels["stable"] = 3
    model.logging_config.sampling_config.sampling_rate = 0.5
    model.logging_config.log_collector_config.type = "file"

    status = get_model_status_pb2.GetModelStatusResponse()
    status.model_version_status.add(version=2, state=get_model_status_pb2.ModelVersionStatus.END)
    status.model_version_status[0].status.error_code = error_codes_pb2.NOT_FOUND
    status.model_version_status[0].status.error_message = "gone"
    status.model_version_status.add(
        version=3, state=get_model_status_pb2.ModelVersionStatus.AVAILABLE
    )

    reload_request = model_management_pb2.ReloadConfigRequest(config=config, metric_names=["a"])
    reload_response = model_management_pb2.ReloadConfigResponse()
    reload_response.status.error_code = error_codes_pb2.INVALID_ARGUMENT
    reload_response.metric.add(name="a", int64_value_increase=2)

    example = example_pb2.Example()
    example.features.feature["age"].int64_list.value.append(3)
    example.features.feature["name"].bytes_list.value.append(b"x")
    example.features.feature["w"].float_list.value.append(0.5)
    classify = classification_pb2.ClassificationRequest()
    classify.model_spec.name = "m"
    classify.input.example_list_with_context.examples.append(example)
    classify.input.example_list_with_context.context.CopyFrom(example)

    multi = inference_pb2.MultiInferenceResponse()
    multi.results.add().classification_result.classifications.add().classes.add(
        label="cat", score=0.75
    )
    multi.results.add().regression_result.regressions.add(value=1.25)

    log = prediction_log_pb2.PredictionLog()
    log.log_metadata.timestamp_secs = 1_700_000_000
    log.log_metadata.sampling_config.sampling_rate = 1.0
    log.log_metadata.sampling_config.per_task_sampling_configs.add(dc="x", task_index=0)
    log.predict_log.request.CopyFrom(request)
    log.predict_log.response.outputs["y"].CopyFrom(_tensor(types_pb2.DT_FLOAT, [], float_val=[1]))

    session = session_service_pb2.SessionRunRequest(fetch=["y:0"], tensor_name_is_alias=True)
    session.feed.append(
        named_tensor_pb2.NamedTensorProto(
            name="x", tensor=_tensor(types_pb2.DT_FLOAT, [1], float_val=[2])
        )
    )
    session.options.timeout_in_ms = 5
    session.options.trace_level = config_pb2.RunOptions.FULL_TRACE
    session.options.experimental.run_handler_pool_options.priority = 2

    saved = saved_model_pb2.SavedModel(saved_model_schema_version=1)
    meta_graph = saved.meta_graphs.add()
    meta_graph.meta_info_def.tags.append("serve")
    meta_graph.signature_def["serving_default"].CopyFrom(
        _signature_def_map().signature_def["serving_default"]
    )
    return {
        "predict_request": request,
        "metadata_response": metadata,
        "model_server_config": config,
        "status_response": status,
        "reload_request": reload_request,
        "reload_response": reload_response,
        "classify_request": classify,
        "multi_inference_response": multi,
        "prediction_log": log,
        "session_run_request": session,
        "saved_model": saved,
    }


def _symbols() -> tuple[list[str], list[str], list[str]]:
    messages, enums, services = [], [], []
    for module in _our_modules():
        messages += [m.full_name for m in module.DESCRIPTOR.message_types_by_name.values()]
        enums += [e.full_name for e in module.DESCRIPTOR.enum_types_by_name.values()]
        services += [s.full_name for s in module.DESCRIPTOR.services_by_name.values()]
    return messages, enums, services


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run _PEER once with the real tensorflow-serving-api; return its JSON answer."""
    tools.package("tensorflow_serving", "`make venv` installs tensorflow-serving-api")
    workdir = tmp_path_factory.mktemp("peer")
    messages, enums, services = _symbols()
    request = {
        "parse": {
            key: [msg.DESCRIPTOR.full_name, base64.b64encode(msg.SerializeToString()).decode()]
            for key, msg in _messages_to_send().items()
        },
        "messages": messages,
        "enums": enums,
        "services": services,
        "model_config_text": MODEL_CONFIG_TEXT,
    }
    request_file, answer_file = workdir / "request.json", workdir / "answer.json"
    request_file.write_text(json.dumps(request))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-c", _PEER, str(request_file), str(answer_file)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    answer: dict[str, Any] = json.loads(answer_file.read_text())
    return answer


@pytest.mark.tfclient
@pytest.mark.parametrize("key", sorted(_messages_to_send()))
def test_ours_parse_identically_with_the_real_client(peer: dict[str, Any], key: str) -> None:
    ours = _messages_to_send()[key]
    theirs = peer["parsed"][key]
    assert text_format.MessageToString(ours) == theirs["text"]
    assert ours.SerializeToString(deterministic=True) == base64.b64decode(theirs["bytes"])


# Messages the peer builds, with our class for each (SavedModel is reduced: see below).
BUILT_BY_PEER: dict[str, type[Message]] = {
    "predict_request": predict_pb2.PredictRequest,
    "metadata_response": get_model_metadata_pb2.GetModelMetadataResponse,
    "model_server_config": model_server_config_pb2.ModelServerConfig,
    "prediction_log": prediction_log_pb2.PredictionLog,
}


@pytest.mark.tfclient
@pytest.mark.parametrize("key", sorted(BUILT_BY_PEER))
def test_real_client_messages_parse_identically_with_ours(peer: dict[str, Any], key: str) -> None:
    ours = BUILT_BY_PEER[key].FromString(base64.b64decode(peer["built"][key]))
    assert text_format.MessageToString(ours) == peer["built_text"][key]


@pytest.mark.tfclient
def test_real_client_decodes_our_tensors(peer: dict[str, Any]) -> None:
    assert peer["ndarrays"] == EXPECTED_NDARRAYS


@pytest.mark.tfclient
def test_predict_request_from_real_client(peer: dict[str, Any]) -> None:
    req = predict_pb2.PredictRequest.FromString(base64.b64decode(peer["built"]["predict_request"]))
    assert req.model_spec.name == "half_plus_two"
    assert req.model_spec.WhichOneof("version_choice") == "version"
    assert req.model_spec.version.value == 3
    assert req.model_spec.signature_name == "serving_default"
    assert list(req.output_filter) == ["y"]
    x = req.inputs["x"]
    assert x.dtype == types_pb2.DT_FLOAT
    assert [d.size for d in x.tensor_shape.dim] == [2, 3]
    assert x.tensor_content == struct.pack("<6f", *range(6))
    assert list(req.inputs["s"].string_val) == [b"a", b"bc"]


@pytest.mark.tfclient
def test_metadata_response_from_real_client(peer: dict[str, Any]) -> None:
    resp = get_model_metadata_pb2.GetModelMetadataResponse.FromString(
        base64.b64decode(peer["built"]["metadata_response"])
    )
    sigmap = get_model_metadata_pb2.SignatureDefMap()
    assert resp.metadata["signature_def"].Unpack(sigmap)
    sig = sigmap.signature_def["serving_default"]
    assert sig.method_name == "tensorflow/serving/predict"
    assert sig.inputs["x"].WhichOneof("encoding") == "name"
    assert sig.inputs["x"].dtype == types_pb2.DT_FLOAT
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 3]
    assert sig.inputs["sp"].coo_sparse.dense_shape_tensor_name == "d:0"
    assert sig.outputs["y"].tensor_shape.unknown_rank


@pytest.mark.tfclient
def test_model_server_config_from_real_client(peer: dict[str, Any]) -> None:
    config = model_server_config_pb2.ModelServerConfig.FromString(
        base64.b64decode(peer["built"]["model_server_config"])
    )
    ours = text_format.Parse(MODEL_CONFIG_TEXT, model_server_config_pb2.ModelServerConfig())
    assert config == ours
    resnet, mnist = config.model_config_list.config
    assert list(resnet.model_version_policy.specific.versions) == [1, 2]
    assert dict(resnet.version_labels) == {"stable": 1, "canary": 2}
    assert mnist.model_version_policy.latest.num_versions == 2


@pytest.mark.tfclient
def test_warmup_record_from_real_client(peer: dict[str, Any]) -> None:
    log = prediction_log_pb2.PredictionLog.FromString(
        base64.b64decode(peer["built"]["prediction_log"])
    )
    assert log.WhichOneof("log_type") == "predict_log"
    assert log.predict_log.request.model_spec.name == "half_plus_two"
    assert log.log_metadata.timestamp_secs == 1_700_000_000


@pytest.mark.tfclient
def test_saved_model_signatures_parse_without_tensorflow(peer: dict[str, Any]) -> None:
    saved = saved_model_pb2.SavedModel.FromString(base64.b64decode(peer["built"]["saved_model"]))
    (meta_graph,) = saved.meta_graphs
    assert list(meta_graph.meta_info_def.tags) == ["serve"]
    sig = meta_graph.signature_def["serving_default"]
    assert sig.method_name == "tensorflow/serving/predict"
    assert sig.inputs["x"].dtype == types_pb2.DT_FLOAT
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 3]
    assert list(sig.outputs) == ["y"]


def _assert_reduced(ours: Any, theirs: Any, path: str) -> None:
    """Every field we declare equals upstream's; every one we omit is reserved."""
    their_fields = {f.number: f for f in theirs.field}
    for field in ours.field:
        assert field == their_fields.get(field.number), f"{path}.{field.name}"
    reserved = {n for r in ours.reserved_range for n in range(r.start, r.end)}
    declared = {f.number for f in ours.field}
    for number, field in their_fields.items():
        assert number in declared or number in reserved, f"{path}: {field.name} not reserved"
    their_nested = {n.name: n for n in theirs.nested_type}
    for nested in ours.nested_type:
        _assert_reduced(nested, their_nested[nested.name], f"{path}.{nested.name}")
    assert list(ours.enum_type) == list(theirs.enum_type), path


@pytest.mark.tfclient
def test_descriptors_match_the_real_client(peer: dict[str, Any]) -> None:
    proto_classes: dict[str, type[Message]] = {
        "messages": descriptor_pb2.DescriptorProto,
        "enums": descriptor_pb2.EnumDescriptorProto,
        "services": descriptor_pb2.ServiceDescriptorProto,
    }
    absent = set()
    for module in _our_modules():
        by_kind = {
            "messages": module.DESCRIPTOR.message_types_by_name,
            "enums": module.DESCRIPTOR.enum_types_by_name,
            "services": module.DESCRIPTOR.services_by_name,
        }
        for kind, descriptors in by_kind.items():
            for desc in descriptors.values():
                theirs = peer[kind][desc.full_name]
                if theirs is None:
                    absent.add(desc.full_name)
                    continue
                where = f"{desc.full_name} ({kind})"
                assert theirs["file"] == desc.file.name, where
                assert theirs["package"] == desc.file.package, where
                ours_proto = proto_classes[kind]()
                desc.CopyToProto(ours_proto)
                their_proto = proto_classes[kind].FromString(base64.b64decode(theirs["proto"]))
                if desc.full_name in REDUCED_MESSAGES:
                    _assert_reduced(ours_proto, their_proto, desc.full_name)
                else:
                    assert str(ours_proto) == str(their_proto), where
    assert absent == NOT_IN_CLIENT_PACKAGE
