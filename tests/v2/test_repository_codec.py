"""Triton's model repository extension: index entries, load and unload requests."""

from __future__ import annotations

import pytest

from gateway.errors import Code, InvalidArgument, ServingError
from gateway.serving.registry import State, VersionStatus
from gateway.v2 import repository_codec


def test_repository_index_states() -> None:
    failed = VersionStatus(3, State.END, error=ServingError("load failed: bad file"))
    models = {
        "m": [VersionStatus(1, State.AVAILABLE), VersionStatus(2, State.LOADING)],
        "n": [failed, VersionStatus(4, State.END), VersionStatus(5, State.UNLOADING)],
    }
    entries = repository_codec.index(models, ready_only=False)
    assert repository_codec.index_json(entries) == [
        {"name": "m", "version": "1", "state": "READY", "reason": ""},
        {"name": "m", "version": "2", "state": "LOADING", "reason": ""},
        {"name": "n", "version": "3", "state": "UNAVAILABLE", "reason": "load failed: bad file"},
        {"name": "n", "version": "4", "state": "UNAVAILABLE", "reason": "unloaded"},
        {"name": "n", "version": "5", "state": "UNLOADING", "reason": ""},
    ]
    ready = repository_codec.index(models, ready_only=True)
    assert [(e.name, e.version) for e in ready] == [("m", "1")]
    assert repository_codec.index_response(ready).models[0].state == "READY"
    assert repository_codec.index_ready_only(None) is False
    assert repository_codec.index_ready_only({"ready": True}) is True
    with pytest.raises(InvalidArgument):
        repository_codec.index_ready_only({"ready": "yes"})


def test_repository_load_and_unload() -> None:
    from gateway._pb.inference import grpc_service_pb2 as pb

    assert repository_codec.call_from_json(
        "m", None, unload=False
    ) == repository_codec.RepositoryCall("m")
    unload = repository_codec.call_from_json(
        "m", {"parameters": {"unload_dependents": True}}, unload=True
    )
    assert unload == repository_codec.RepositoryCall("m", True)
    request = pb.RepositoryModelLoadRequest(model_name="m")
    assert repository_codec.call_from_proto(
        request, unload=False
    ) == repository_codec.RepositoryCall("m")
    request.parameters["config"].string_param = "{}"
    with pytest.raises(ServingError, match="load parameter 'config'") as info:
        repository_codec.call_from_proto(request, unload=False)
    assert info.value.code == Code.UNIMPLEMENTED
    named = pb.RepositoryModelUnloadRequest(repository_name="r", model_name="m")
    with pytest.raises(ServingError, match="'repository_name' specification") as info:
        repository_codec.call_from_proto(named, unload=True)
    assert info.value.code == Code.UNIMPLEMENTED
    with pytest.raises(InvalidArgument, match="unknown parameter 'x' for load"):
        repository_codec.call_from_json("m", {"parameters": {"x": 1}}, unload=False)
    with pytest.raises(InvalidArgument, match="'unload_dependents' must be a boolean"):
        repository_codec.call_from_json("m", {"parameters": {"unload_dependents": 1}}, unload=True)
