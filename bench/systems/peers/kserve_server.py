"""KServe 0.21's Python ``ModelServer`` serving an ONNX model (runs in ``bench/.venvs/kserve``).

The custom-model pattern of KServe's docs: a ``kserve.Model`` whose ``predict`` runs an ONNX
Runtime session (one intra-op thread) inline, answering both of KServe's surfaces:

- v1 REST ``POST /v1/models/<name>:predict`` with ``{"instances": [...]}`` → ``{"predictions"}``;
- gRPC v2 ``inference.GRPCInferenceService/ModelInfer`` (``raw_input_contents`` in, raw out).

Usage::

    python kserve_server.py --onnx_path PATH/model.onnx --model_name mlp --http_port P --grpc_port P

(``--model_name``, ``--http_port`` and ``--grpc_port`` are KServe's own flags, read by
``kserve.model_server`` on import.)

KServe binds every interface (``0.0.0.0`` / ``[::]`` are hard-coded in 0.21); this script binds
both servers to 127.0.0.1 instead, as every system of the bench does. Latency logging is off and
the event loop is uvloop (KServe's best settings). Ready when ``GET /v1/models/<name>`` answers
200; stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import grpc
import kserve  # type: ignore[import-not-found]
import numpy as np
import onnxruntime as ort
from kserve import model_server
from kserve.protocol.infer_type import (  # type: ignore[import-not-found]
    InferOutput,
    InferRequest,
    InferResponse,
)

LOOPBACK = "127.0.0.1"


class OnnxModel(kserve.Model):  # type: ignore[misc]
    def __init__(self, name: str, path: str) -> None:
        super().__init__(name)
        self._path = path

    def load(self) -> bool:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            self._path, options, providers=["CPUExecutionProvider"]
        )
        self._input = self._session.get_inputs()[0].name
        self._outputs = [o.name for o in self._session.get_outputs()]
        self.ready = True
        return True

    async def predict(
        self,
        payload: dict[str, Any] | InferRequest,
        headers: dict[str, str] | None = None,
        response_headers: dict[str, str] | None = None,
    ) -> dict[str, Any] | InferResponse:
        if isinstance(payload, InferRequest):
            x = payload.inputs[0].as_numpy()
            results = self._session.run(self._outputs, {self._input: x})
            outputs = []
            for name, value in zip(self._outputs, results, strict=True):
                out = InferOutput(name=name, shape=list(value.shape), datatype="FP32")
                out.set_data_from_numpy(value, binary_data=True)
                outputs.append(out)
            return InferResponse(
                response_id=payload.id, model_name=self.name, infer_outputs=outputs
            )
        x = np.asarray(payload["instances"], dtype=np.float32)
        (first, *_) = self._session.run(self._outputs, {self._input: x})
        return {"predictions": first.tolist()}


def _bind_loopback() -> None:
    """Make KServe's REST and gRPC servers listen on 127.0.0.1 instead of every interface."""
    rest_server = model_server.RESTServer

    class LoopbackRESTServer(rest_server):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.config.host = LOOPBACK

    model_server.RESTServer = LoopbackRESTServer
    server_class = grpc.aio._server.Server
    add_port = server_class.add_insecure_port

    def add_loopback_port(self: Any, address: str) -> int:
        return int(add_port(self, address.replace("[::]", LOOPBACK)))

    server_class.add_insecure_port = add_loopback_port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--onnx_path", required=True, help="model.onnx path")
    ours, _ = parser.parse_known_args()
    _bind_loopback()
    model = OnnxModel(model_server.args.model_name, ours.onnx_path)
    model.load()
    server = kserve.ModelServer(
        enable_grpc=True,
        enable_latency_logging=False,
        event_loop="uvloop",
        grace_period=5,
    )
    # No log line per request (uvicorn's access log, KServe's timing trace), as for FastAPI.
    for name in ("uvicorn.access", "kserve.trace"):
        logging.getLogger(name).setLevel(logging.WARNING)
    server.start([model])


if __name__ == "__main__":
    main()
