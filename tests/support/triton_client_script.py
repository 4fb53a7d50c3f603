"""Drive a V2 server with the OFFICIAL ``tritonclient`` (gRPC sync and aio, HTTP sync and aio).

Runs in its own process: tritonclient's protos (package ``inference``) and ours must never share
one. Usage: ``python triton_client_script.py PLAN.json OUT_DIR``. PLAN::

    {"grpc": "127.0.0.1:8001", "http": "127.0.0.1:8000",
     "ca": "/path/ca.pem",                # optional: TLS on both, trusting this CA
     "calls": [{"id": "a", "client": "grpc" | "grpc_aio" | "http" | "http_aio",
                "op": "infer" | "is_server_live" | "is_server_ready" | "is_model_ready" |
                      "server_metadata" | "model_metadata" | "statistics" | "repository_index" |
                      "load_model" | "unload_model" | "system_shm_status" | "cuda_shm_status" |
                      "system_shm_register" | "model_config",
                "model": "m", "version": "",                       # where the op takes them
                "inputs": {"x": {"datatype": "FP32", "npz": "a.x"},   # arrays in PLAN's inputs.npz
                           "s": {"datatype": "BYTES", "b64": ["aGk="], "shape": [1]}},
                "binary": true,          # HTTP: inputs as binary data (false: JSON)
                "outputs": [{"name": "y", "binary": true, "class_count": 0}],  # or all
                "request_id": "r1", "parameters": {"signature_name": "s"},
                "timeout": 200000,       # infer: the request's ``timeout`` parameter (µs)
                "client_timeout": 1.5,   # gRPC infer: the call's deadline (s)
                "kwargs": {"sequence_id": 1},                 # infer: more keyword arguments
                "headers": {"authorization": "Bearer t"}}]}      # any op

Writes ``OUT_DIR/results.json``: one entry per call id, ``{"ok": true, "result": ...}`` or
``{"ok": false, "status": ..., "message": ...}`` (the client's ``InferenceServerException``).
An infer result is ``{"response": <the response as JSON>, "outputs": {name: {"datatype",
"shape", "b64"?}}}``; numeric outputs go to ``OUT_DIR/outputs.npz`` as ``"<id>.<name>"``, BYTES
outputs inline as base64. ``inputs.npz`` sits beside PLAN.json.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

warnings.simplefilter("ignore")  # older gencode on a newer protobuf runtime warns; not ours

import tritonclient.grpc as grpcclient  # noqa: E402
import tritonclient.grpc.aio as grpcclient_aio  # noqa: E402
import tritonclient.http as httpclient  # noqa: E402
import tritonclient.http.aio as httpclient_aio  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402

_MODULES = {
    "grpc": grpcclient,
    "grpc_aio": grpcclient,
    "http": httpclient,
    "http_aio": httpclient,
}


def _input_array(spec: dict[str, Any], arrays: Any) -> np.ndarray:
    if "npz" in spec:
        return np.asarray(arrays[spec["npz"]])
    items = [base64.b64decode(item) for item in spec["b64"]]
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array.reshape(spec["shape"])


def _infer_args(call: dict[str, Any], arrays: Any) -> dict[str, Any]:
    module = _MODULES[call["client"]]
    is_http = call["client"].startswith("http")
    inputs = []
    for name, spec in call["inputs"].items():
        array = _input_array(spec, arrays)
        tensor = module.InferInput(name, list(array.shape), spec["datatype"])
        if is_http:
            tensor.set_data_from_numpy(array, binary_data=call.get("binary", True))
        else:
            tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    outputs = None
    if call.get("outputs") is not None:
        outputs = [
            module.InferRequestedOutput(
                o["name"], binary_data=o.get("binary", True), class_count=o.get("class_count", 0)
            )
            if is_http
            else module.InferRequestedOutput(o["name"], class_count=o.get("class_count", 0))
            for o in call["outputs"]
        ]
    extra = {"timeout": call["timeout"]} if "timeout" in call else {}
    if "client_timeout" in call:
        extra["client_timeout"] = call["client_timeout"]
    extra.update(call.get("kwargs", {}))
    return {
        "model_name": call["model"],
        "inputs": inputs,
        "model_version": call.get("version", ""),
        "outputs": outputs,
        "request_id": call.get("request_id", ""),
        "parameters": call.get("parameters"),
        "headers": call.get("headers"),
        **extra,
    }


def _infer_result(call_id: str, result: Any, is_http: bool, saved: dict[str, Any]) -> Any:
    response = result.get_response() if is_http else result.get_response(as_json=True)
    outputs = {}
    for output in response.get("outputs", []):
        array = result.as_numpy(output["name"])
        entry: dict[str, Any] = {"datatype": output["datatype"], "shape": list(array.shape)}
        if array.dtype == object:
            entry["b64"] = [base64.b64encode(bytes(v)).decode() for v in array.reshape(-1)]
        else:
            saved[f"{call_id}.{output['name']}"] = array
        outputs[output["name"]] = entry
    return {"response": response, "outputs": outputs}


def _op(client: Any, call: dict[str, Any], is_http: bool) -> tuple[Any, Any]:
    """The client method for a non-infer op and its keyword arguments."""
    model = {"model_name": call.get("model", "")}
    versioned = {**model, "model_version": call.get("version", "")}
    as_json = {} if is_http else {"as_json": True}
    table: dict[str, tuple[str, dict[str, Any]]] = {
        "is_server_live": ("is_server_live", {}),
        "is_server_ready": ("is_server_ready", {}),
        "is_model_ready": ("is_model_ready", versioned),
        "server_metadata": ("get_server_metadata", as_json),
        "model_metadata": ("get_model_metadata", {**versioned, **as_json}),
        "statistics": ("get_inference_statistics", {**versioned, **as_json}),
        "repository_index": ("get_model_repository_index", as_json),
        "load_model": ("load_model", model),
        "unload_model": ("unload_model", model),
        "system_shm_status": ("get_system_shared_memory_status", as_json),
        "cuda_shm_status": ("get_cuda_shared_memory_status", as_json),
        "model_config": ("get_model_config", {**versioned, **as_json}),
        "system_shm_register": (
            "register_system_shared_memory",
            {"name": "region", "key": "/tensorgate-test", "byte_size": 64},
        ),
    }
    name, kwargs = table[call["op"]]
    return getattr(client, name), {**kwargs, "headers": call.get("headers")}


def _client(kind: str, plan: dict[str, Any]) -> Any:
    url = plan["http"] if kind.startswith("http") else plan["grpc"]
    factory = {
        "grpc": grpcclient.InferenceServerClient,
        "grpc_aio": grpcclient_aio.InferenceServerClient,
        "http": httpclient.InferenceServerClient,
        "http_aio": httpclient_aio.InferenceServerClient,
    }[kind]
    ca = plan.get("ca")
    if ca is None:
        return factory(url)
    if kind.startswith("grpc"):
        return factory(url, ssl=True, root_certificates=ca)
    if kind == "http":
        return factory(url, ssl=True, ssl_options={"ca_certs": ca})
    return factory(url, ssl=True, ssl_context=ssl.create_default_context(cafile=ca))


async def _run(call: dict[str, Any], client: Any, arrays: Any, saved: dict[str, Any]) -> Any:
    is_http = call["client"].startswith("http")
    is_aio = call["client"].endswith("_aio")
    if call["op"] == "infer":
        method, kwargs = client.infer, _infer_args(call, arrays)
    else:
        method, kwargs = _op(client, call, is_http)
    value = await method(**kwargs) if is_aio else method(**kwargs)
    if call["op"] == "infer":
        return _infer_result(call["id"], value, is_http, saved)
    return value


async def run_all(
    plan: dict[str, Any], arrays: Any
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Run every call of ``plan`` in order; return (results by id, output arrays by name)."""
    clients = {kind: _client(kind, plan) for kind in {c["client"] for c in plan["calls"]}}
    results: dict[str, Any] = {}
    saved: dict[str, Any] = {}
    try:
        for call in plan["calls"]:
            try:
                result = await _run(call, clients[call["client"]], arrays, saved)
                results[call["id"]] = {"ok": True, "result": result}
            except InferenceServerException as error:
                results[call["id"]] = {
                    "ok": False,
                    "status": error.status(),
                    "message": error.message(),
                }
    finally:
        for kind, client in clients.items():
            if kind.endswith("_aio"):
                await client.close()
            else:
                client.close()
    return results, saved


def main(plan_path: str, out_dir: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    inputs_path = Path(plan_path).with_name("inputs.npz")
    arrays = dict(np.load(inputs_path)) if inputs_path.exists() else {}
    results, saved = asyncio.run(run_all(plan, arrays))
    out = Path(out_dir)
    np.savez(out / "outputs.npz", **saved)
    (out / "results.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
