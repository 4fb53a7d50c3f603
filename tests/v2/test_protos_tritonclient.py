"""``gateway._pb.inference`` is wire-identical to what the official ``tritonclient`` speaks.

``tritonclient`` registers the same message names (package ``inference``) from its own file, so it
runs only in a separate process (the peer): it reports its descriptors and builds messages as
bytes; ours must match field for field and parse its bytes to the same message (and back).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, text_format

from gateway._pb.inference import grpc_service_pb2 as pb
from tests.support import tools

# Runs with tritonclient; never imports gateway.
_PEER = r"""
import base64, json, sys, warnings
warnings.simplefilter("ignore")
from google.protobuf import descriptor_pb2, text_format
from tritonclient.grpc import service_pb2 as pb

request = json.loads(sys.stdin.read())
b64 = lambda data: base64.b64encode(data).decode()
out = {"messages": {}, "methods": {}, "parsed": {}, "built": {}}
for name in request["messages"]:
    desc = pb.DESCRIPTOR.message_types_by_name.get(name)
    if desc is None:
        out["messages"][name] = None
        continue
    proto = descriptor_pb2.DescriptorProto()
    desc.CopyToProto(proto)
    out["messages"][name] = b64(proto.SerializeToString())
service = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
out["service"] = service.full_name
for method in service.methods:
    proto = descriptor_pb2.MethodDescriptorProto()
    method.CopyToProto(proto)
    out["methods"][method.name] = b64(proto.SerializeToString())
for key, (name, data) in request["parse"].items():
    msg = getattr(pb, name).FromString(base64.b64decode(data))
    out["parsed"][key] = text_format.MessageToString(msg)

req = pb.ModelInferRequest(model_name="m", model_version="3", id="r1")
req.parameters["signature_name"].string_param = "sig"
req.parameters["timeout"].int64_param = 5000
req.parameters["ratio"].double_param = 0.5
req.parameters["big"].uint64_param = 2**64 - 1
x = req.inputs.add(name="x", datatype="FP32", shape=[2, 2])
x.parameters["binary_data_size"].int64_param = 16
req.inputs.add(name="s", datatype="BYTES", shape=[1]).contents.bytes_contents.append(b"\x00hi")
req.outputs.add(name="y").parameters["binary_data"].bool_param = True
req.raw_input_contents.append(bytes(range(16)))
stats = pb.ModelStatisticsResponse()
model = stats.model_stats.add(name="m", version="1", last_inference=7, inference_count=3)
model.inference_stats.success.count = 3
model.inference_stats.queue.ns = 12
model.batch_stats.add(batch_size=2).compute_infer.count = 1
index = pb.RepositoryIndexResponse()
index.models.add(name="m", version="1", state="READY", reason="")
load = pb.RepositoryModelLoadRequest(model_name="m")
load.parameters["file:1/model.onnx"].bytes_param = b"\x08\x01"
for key, msg in {"infer_request": req, "statistics": stats, "index": index, "load": load}.items():
    out["built"][key] = [type(msg).__name__, b64(msg.SerializeToString())]
print(json.dumps(out))
"""


def _our_messages() -> dict[str, Any]:
    """Every message of ours by name, nested ones included (map entries compare inside)."""
    return dict(pb.DESCRIPTOR.message_types_by_name)


def _sent() -> dict[str, Any]:
    response = pb.ModelInferResponse(model_name="m", model_version="2", id="r1")
    out = response.outputs.add(name="y", datatype="INT64", shape=[1, 2])
    out.parameters["binary_data_size"].int64_param = 16
    response.raw_output_contents.append(bytes(16))
    response.parameters["triton_final_response"].bool_param = True
    metadata = pb.ModelMetadataResponse(name="m", versions=["1", "2"], platform="onnx_onnxv1")
    metadata.inputs.add(name="x", datatype="FP32", shape=[-1, 64])
    server = pb.ServerMetadataResponse(name="tensorgate", version="0.1.0", extensions=["a"])
    return {"infer_response": response, "metadata": metadata, "server": server}


@pytest.fixture(scope="module")
def peer() -> dict[str, Any]:
    tools.package("tritonclient")
    request = {
        "messages": sorted(_our_messages()),
        "parse": {
            key: [type(msg).__name__, base64.b64encode(msg.SerializeToString()).decode()]
            for key, msg in _sent().items()
        },
    }
    done = subprocess.run(
        [sys.executable, "-c", _PEER],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parent,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_generated_module_is_private_and_named_for_its_package() -> None:
    assert pb.ModelInferRequest.__module__ == "gateway._pb.inference.grpc_service_pb2"
    assert pb.DESCRIPTOR.package == "inference"
    assert pb.DESCRIPTOR.name == "inference/grpc_service.proto"
    service = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    assert service.full_name == "inference.GRPCInferenceService"


def test_every_message_matches_tritonclient_field_for_field(peer: dict[str, Any]) -> None:
    for name, desc in _our_messages().items():
        theirs = peer["messages"][name]
        assert theirs is not None, f"{name} is not in tritonclient"
        ours = descriptor_pb2.DescriptorProto()
        desc.CopyToProto(ours)
        assert str(ours) == str(descriptor_pb2.DescriptorProto.FromString(base64.b64decode(theirs)))


def test_every_rpc_matches_tritonclient(peer: dict[str, Any]) -> None:
    service = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    assert peer["service"] == service.full_name
    ours = {}
    for method in service.methods:
        proto = descriptor_pb2.MethodDescriptorProto()
        method.CopyToProto(proto)
        ours[method.name] = proto
    for name, proto in ours.items():
        theirs = descriptor_pb2.MethodDescriptorProto.FromString(
            base64.b64decode(peer["methods"][name])
        )
        assert str(proto) == str(theirs), name
    assert set(ours) == {
        "ServerLive",
        "ServerReady",
        "ModelReady",
        "ServerMetadata",
        "ModelMetadata",
        "ModelInfer",
        "ModelStatistics",
        "RepositoryIndex",
        "RepositoryModelLoad",
        "RepositoryModelUnload",
        "SystemSharedMemoryStatus",
        "SystemSharedMemoryRegister",
        "SystemSharedMemoryUnregister",
        "CudaSharedMemoryStatus",
        "CudaSharedMemoryRegister",
        "CudaSharedMemoryUnregister",
    }
    assert set(peer["methods"]) - set(ours) == {
        "ModelStreamInfer",
        "ModelConfig",
        "TraceSetting",
        "LogSettings",
    }


def test_tritonclient_parses_ours_identically(peer: dict[str, Any]) -> None:
    for key, msg in _sent().items():
        assert peer["parsed"][key] == text_format.MessageToString(msg), key


def test_ours_parse_tritonclient_messages(peer: dict[str, Any]) -> None:
    built = {
        key: getattr(pb, name).FromString(base64.b64decode(data))
        for key, (name, data) in peer["built"].items()
    }
    request = built["infer_request"]
    assert (request.model_name, request.model_version, request.id) == ("m", "3", "r1")
    params = request.parameters
    assert params["signature_name"].string_param == "sig"
    assert params["timeout"].int64_param == 5000
    assert params["ratio"].double_param == 0.5
    assert params["big"].uint64_param == 2**64 - 1
    x, s = request.inputs
    assert (x.name, x.datatype, list(x.shape)) == ("x", "FP32", [2, 2])
    assert x.parameters["binary_data_size"].WhichOneof("parameter_choice") == "int64_param"
    assert list(s.contents.bytes_contents) == [b"\x00hi"]
    assert request.outputs[0].parameters["binary_data"].bool_param is True
    assert list(request.raw_input_contents) == [bytes(range(16))]
    stats = built["statistics"].model_stats[0]
    assert (stats.last_inference, stats.inference_count) == (7, 3)
    assert stats.inference_stats.queue.ns == 12
    assert stats.batch_stats[0].batch_size == 2
    assert built["index"].models[0].state == "READY"
    assert built["load"].parameters["file:1/model.onnx"].bytes_param == b"\x08\x01"
