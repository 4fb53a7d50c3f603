"""Versions and labels, errors, signatures and metadata, deadlines, statistics, repository."""

from __future__ import annotations

import json

import grpc
import pytest

from gateway.errors import Code, InvalidArgument, NotFound, ServingError
from gateway.serving.registry import State, VersionStatus
from gateway.v2 import errors, metadata, repository, statistics, versions
from gateway.v2.call import InferCall
from gateway.v2.parameters import RequestOptions
from gateway.v2.statistics import BatchFigures, Duration, ModelFigures
from gateway.v2.versions import Target
from tests.v2.conftest import servable, signature


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Target("m")),
        ("3", Target("m", version=3)),
        ("007", Target("m", version=7)),
        (str(2**63 - 1), Target("m", version=2**63 - 1)),
        ("stable", Target("m", label="stable")),
        ("-1", Target("m", label="-1")),
        ("v3", Target("m", label="v3")),
        ("٣", Target("m", label="٣")),  # a non-ASCII digit is no version number
    ],
)
def test_version_strings(text: str, expected: Target) -> None:
    assert versions.target("m", text) == expected


def test_version_out_of_int64_is_invalid() -> None:
    with pytest.raises(InvalidArgument, match="out of range"):
        versions.target("m", str(2**63))


def test_triton_not_found_texts() -> None:
    assert versions.unknown(Target("m")).message == "Request for unknown model: 'm' is not found"
    assert versions.unknown(Target("m", version=4)).message == (
        "Request for unknown model: 'm' version 4 is not found"
    )
    assert versions.unknown(Target("m", label="beta")).message == (
        "Request for unknown model: 'm' version beta is not found"
    )
    unserved = versions.unknown(Target("m"), no_versions=True)
    assert isinstance(unserved, NotFound)
    assert unserved.message == "Request for unknown model: 'm' has no available versions"
    assert versions.version_strings([10, 2]) == ["2", "10"]


def test_error_table() -> None:
    assert errors.http_status(Code.INVALID_ARGUMENT) == 400
    assert errors.http_status(Code.NOT_FOUND) == 404
    assert errors.http_status(Code.UNAVAILABLE) == 503
    assert errors.http_status(Code.UNIMPLEMENTED) == 501
    assert errors.http_status(Code.INTERNAL) == 500
    assert errors.http_status(Code.FAILED_PRECONDITION) == 400
    assert errors.http_status(Code.RESOURCE_EXHAUSTED) == 429
    assert errors.http_status(Code.DEADLINE_EXCEEDED) == 504
    assert errors.http_status(Code.CANCELLED) == 400
    assert {errors.http_status(code) for code in Code} <= {
        200,
        400,
        401,
        403,
        404,
        429,
        500,
        501,
        503,
        504,
    }
    for code in Code:
        assert errors.grpc_status(code).value[0] == int(code)
    assert errors.grpc_status(Code.NOT_FOUND) is grpc.StatusCode.NOT_FOUND
    assert json.loads(errors.error_body(InvalidArgument('bad "x"'))) == {"error": 'bad "x"'}
    unsupported = errors.not_supported("the system shared-memory extension")
    assert unsupported.code == Code.UNIMPLEMENTED
    assert unsupported.message == (
        "the system shared-memory extension is not supported by tensorgate"
    )


MAIN = signature(
    {"x": ("float32", (-1, 64)), "k": ("int64", None)},
    {"probs": ("float32", (-1, 10)), "label": ("string", (-1,))},
)
OTHER = signature({"a": ("bool", ())}, {"b": ("float16", (2,))}, name="other")


def test_model_metadata_of_the_default_signature() -> None:
    expected = {
        "name": "m",
        "versions": ["1", "2"],
        "platform": "onnx_onnxv1",
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [-1, 64]},
            {"name": "k", "datatype": "INT64", "shape": [-1]},
        ],
        "outputs": [
            {"name": "probs", "datatype": "FP32", "shape": [-1, 10]},
            {"name": "label", "datatype": "BYTES", "shape": [-1]},
        ],
    }
    model = servable(MAIN, OTHER)
    assert metadata.model_metadata_json(model, [2, 1]) == expected
    proto = metadata.model_metadata(model, [2, 1])
    assert (proto.name, list(proto.versions), proto.platform) == ("m", ["1", "2"], "onnx_onnxv1")
    assert [(t.name, t.datatype, list(t.shape)) for t in proto.inputs] == [
        (t["name"], t["datatype"], t["shape"]) for t in expected["inputs"]
    ]
    assert [t.name for t in proto.outputs] == ["probs", "label"]
    tf_model = servable(OTHER, platform="tensorflow")
    assert metadata.model_metadata_json(tf_model, [1])["platform"] == "tensorflow_savedmodel"
    assert metadata.model_metadata_json(tf_model, [1])["inputs"] == [
        {"name": "a", "datatype": "BOOL", "shape": []}
    ]
    none = metadata.model_metadata_json(servable(OTHER, OTHER.__class__("b2", (), ())), [1])
    assert (none["inputs"], none["outputs"]) == ([], [])


def test_signature_choice() -> None:
    both = {"serving_default": MAIN, "other": OTHER}
    assert metadata.signature_for("m", both, "") is MAIN
    assert metadata.signature_for("m", both, "other") is OTHER
    assert metadata.signature_for("m", {"other": OTHER}, "") is OTHER
    two = {"other": OTHER, "b2": OTHER.__class__("b2", (), ())}
    with pytest.raises(InvalidArgument, match="choose one of \\['b2', 'other'\\] with the"):
        metadata.signature_for("m", two, "")


def test_server_metadata_and_health() -> None:
    assert metadata.server_metadata_json("0.1.0") == {
        "name": "tensorgate",
        "version": "0.1.0",
        "extensions": ["binary_tensor_data", "parameters", "statistics", "model_repository"],
    }
    proto = metadata.server_metadata("0.1.0")
    assert list(proto.extensions) == metadata.server_metadata_json("0.1.0")["extensions"]
    assert metadata.live_json(True) == {"live": True}
    assert metadata.ready_json(False) == {"ready": False}
    assert metadata.model_ready_json("m", True) == {"name": "m", "ready": True}
    assert errors.HEALTH_FALSE_STATUS == 400


def test_deadline_from_the_timeout_parameter() -> None:
    plain = InferCall(Target("m"), "", RequestOptions())
    assert plain.deadline(100.0, None) is None
    assert plain.deadline(100.0, 105.0) == 105.0
    timed = InferCall(Target("m"), "", RequestOptions(timeout_us=2_000_000))
    assert timed.deadline(100.0, None) == pytest.approx(102.0)
    assert timed.deadline(100.0, 101.0) == 101.0
    assert timed.deadline(100.0, 110.0) == pytest.approx(102.0)


def test_statistics_in_both_forms() -> None:
    figures = [
        ModelFigures(
            "m",
            2,
            last_inference_ms=1_700_000_000_000,
            inference_count=64,
            execution_count=2,
            success=Duration(2, 900),
            queue=Duration(2, 100),
            compute_infer=Duration(2, 500),
            batches=(BatchFigures(32, compute_infer=Duration(2, 500)),),
        )
    ]
    document = statistics.statistics_json(figures)
    (stat,) = document["model_stats"]
    assert stat["version"] == "2" and stat["inference_count"] == 64
    assert stat["inference_stats"]["success"] == {"count": 2, "ns": 900}
    assert stat["inference_stats"]["cache_hit"] == {"count": 0, "ns": 0}
    assert set(stat["inference_stats"]) == {
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
    }
    assert stat["batch_stats"] == [
        {
            "batch_size": 32,
            "compute_input": {"count": 0, "ns": 0},
            "compute_infer": {"count": 2, "ns": 500},
            "compute_output": {"count": 0, "ns": 0},
        }
    ]
    proto = statistics.statistics_response(figures).model_stats[0]
    assert (proto.name, proto.version, proto.last_inference) == ("m", "2", 1_700_000_000_000)
    assert proto.inference_stats.queue.ns == 100 and proto.batch_stats[0].batch_size == 32
    assert proto.inference_stats.HasField("cache_miss")


def test_repository_index_states() -> None:
    failed = VersionStatus(3, State.END, error=ServingError("load failed: bad file"))
    models = {
        "m": [VersionStatus(1, State.AVAILABLE), VersionStatus(2, State.LOADING)],
        "n": [failed, VersionStatus(4, State.END), VersionStatus(5, State.UNLOADING)],
    }
    entries = repository.index(models, ready_only=False)
    assert repository.index_json(entries) == [
        {"name": "m", "version": "1", "state": "READY", "reason": ""},
        {"name": "m", "version": "2", "state": "LOADING", "reason": ""},
        {"name": "n", "version": "3", "state": "UNAVAILABLE", "reason": "load failed: bad file"},
        {"name": "n", "version": "4", "state": "UNAVAILABLE", "reason": "unloaded"},
        {"name": "n", "version": "5", "state": "UNLOADING", "reason": ""},
    ]
    ready = repository.index(models, ready_only=True)
    assert [(e.name, e.version) for e in ready] == [("m", "1")]
    assert repository.index_response(ready).models[0].state == "READY"
    assert repository.index_ready_only(None) is False
    assert repository.index_ready_only({"ready": True}) is True
    with pytest.raises(InvalidArgument):
        repository.index_ready_only({"ready": "yes"})


def test_repository_load_and_unload() -> None:
    from gateway._pb.inference import grpc_service_pb2 as pb

    assert repository.from_json("m", None, unload=False) == repository.RepositoryCall("m")
    unload = repository.from_json("m", {"parameters": {"unload_dependents": True}}, unload=True)
    assert unload == repository.RepositoryCall("m", True)
    request = pb.RepositoryModelLoadRequest(model_name="m")
    assert repository.from_proto(request, unload=False) == repository.RepositoryCall("m")
    request.parameters["config"].string_param = "{}"
    with pytest.raises(ServingError, match="load parameter 'config'") as info:
        repository.from_proto(request, unload=False)
    assert info.value.code == Code.UNIMPLEMENTED
    named = pb.RepositoryModelUnloadRequest(repository_name="r", model_name="m")
    with pytest.raises(ServingError, match="'repository_name' specification") as info:
        repository.from_proto(named, unload=True)
    assert info.value.code == Code.UNIMPLEMENTED
    with pytest.raises(InvalidArgument, match="unknown parameter 'x' for load"):
        repository.from_json("m", {"parameters": {"x": 1}}, unload=False)
    with pytest.raises(InvalidArgument, match="'unload_dependents' must be a boolean"):
        repository.from_json("m", {"parameters": {"unload_dependents": 1}}, unload=True)


def test_a_dtype_mismatch_in_v2_datatype_names() -> None:
    from gateway.serving.signature import DtypeMismatch

    said = errors.datatype_mismatch(DtypeMismatch.of("x", "float64", "string"))
    assert said.message == "input 'x' has datatype FP64 but the model expects BYTES"
    assert said.code == Code.INVALID_ARGUMENT
    unknown = errors.datatype_mismatch(DtypeMismatch.of("x", "complex64", "float32"))
    assert unknown.message == "input 'x' has datatype complex64 but the model expects FP32"
    rewrapped = DtypeMismatch("warmup record 1: input 'x' has dtype ...", Code.INVALID_ARGUMENT)
    assert errors.datatype_mismatch(rewrapped).message == rewrapped.message
