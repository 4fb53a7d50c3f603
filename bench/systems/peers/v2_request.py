"""Print a KServe v2 inference request for a peer, built by its own client library.

Usage: ``python v2_request.py PROTO MODEL INPUT_NAME DIM [DIM ...] < raw_float32 > request.bin``,
run in that peer's venv. ``PROTO`` names whose generated code builds the gRPC
``inference.ModelInferRequest`` (the same message in all three): ``mlserver``
(``mlserver.grpc.dataplane_pb2``), ``triton`` (``tritonclient.grpc.service_pb2``) or ``kserve``
(``kserve.protocol.grpc.grpc_predict_v2_pb2``); the tensor travels in ``raw_input_contents``, the
fastest gRPC encoding of each. ``triton-http`` prints the body of an HTTP ``/v2/models/M/infer``
request with Triton's binary-tensor extension, as ``tritonclient.http`` sends it by default: a
JSON header, then the raw input bytes (its length is the body's minus the input's), the output
asked for in binary too.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np

MODULES = {
    "mlserver": "mlserver.grpc.dataplane_pb2",
    "triton": "tritonclient.grpc.service_pb2",
    "kserve": "kserve.protocol.grpc.grpc_predict_v2_pb2",
}


def grpc_request(proto: str, model: str, name: str, dims: list[int], raw: bytes) -> bytes:
    pb = importlib.import_module(MODULES[proto])
    request = pb.ModelInferRequest(model_name=model)
    tensor = request.inputs.add()
    tensor.name = name
    tensor.datatype = "FP32"
    tensor.shape.extend(dims)
    request.raw_input_contents.append(raw)
    return bytes(request.SerializeToString())


def triton_http_body(name: str, dims: list[int], raw: bytes) -> bytes:
    import tritonclient.http as http

    tensor = http.InferInput(name, dims, "FP32")
    tensor.set_data_from_numpy(np.frombuffer(raw, np.float32).reshape(dims), binary_data=True)
    body, _json_size = http.InferenceServerClient.generate_request_body([tensor])
    return bytes(body)


def main() -> None:
    proto, model, name, *dim_texts = sys.argv[1:]
    dims = [int(d) for d in dim_texts]
    raw = sys.stdin.buffer.read()
    if proto == "triton-http":
        body = triton_http_body(name, dims, raw)
    else:
        body = grpc_request(proto, model, name, dims, raw)
    sys.stdout.buffer.write(body)


if __name__ == "__main__":
    main()
