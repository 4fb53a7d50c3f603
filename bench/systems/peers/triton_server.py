"""A real Triton Inference Server 2.51 serving an ONNX model via PyTriton (``bench/.venvs/triton``).

PyTriton 0.7.0 starts the bundled ``tritonserver`` binary (C++ HTTP/gRPC front ends, dynamic
batcher) with one Python-backend stub per model instance; each stub hands its batches to an
inference function in this process, which runs its own ONNX Runtime session (one intra-op
thread). Usage::

    python triton_server.py --model PATH/model.onnx --name mlp --instances 2 \\
        --max-batch-size 32 --grpc-port P --http-port P --metrics-port P \\
        --workspace DIR --ready_fd N

Dynamic batching with ``max_queue_delay_microseconds=0`` (a batch closes as soon as an instance is
free). Writes ``{"pid", "grpc_port", "http_port"}`` to fd N once the model is ready; stops on
SIGTERM/SIGINT (stopping tritonserver and removing the workspace).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
from pytriton.decorators import batch  # type: ignore[import-not-found]
from pytriton.model_config import (  # type: ignore[import-not-found]
    DynamicBatcher,
    ModelConfig,
    Tensor,
)
from pytriton.triton import Triton, TritonConfig  # type: ignore[import-not-found]

_DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64}


def _session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _tensors(args: list[Any]) -> list[Any]:
    """PyTriton tensor specs of ONNX inputs/outputs (the leading batch dimension dropped)."""
    return [
        Tensor(name=a.name, dtype=_DTYPES[a.type], shape=tuple(int(d) for d in a.shape[1:]))
        for a in args
    ]


def _infer_function(session: ort.InferenceSession) -> Callable[..., dict[str, np.ndarray]]:
    outputs = [o.name for o in session.get_outputs()]

    @batch  # type: ignore[untyped-decorator]
    def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
        return dict(zip(outputs, session.run(outputs, inputs), strict=True))

    return infer  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="model.onnx path")
    parser.add_argument("--name", required=True)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--ready_fd", type=int, default=-1)
    args = parser.parse_args()

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    sessions = [_session(args.model) for _ in range(args.instances)]
    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=args.http_port,
        grpc_address="127.0.0.1",
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        allow_gpu_metrics=False,
        log_verbose=0,
    )
    triton = Triton(config=config, workspace=args.workspace)
    try:
        triton.bind(
            model_name=args.name,
            infer_func=[_infer_function(s) for s in sessions],
            inputs=_tensors(sessions[0].get_inputs()),
            outputs=_tensors(sessions[0].get_outputs()),
            config=ModelConfig(
                max_batch_size=args.max_batch_size,
                batcher=DynamicBatcher(max_queue_delay_microseconds=0),
            ),
            strict=False,
        )
        triton.run()  # returns once the model is ready
        if args.ready_fd >= 0:
            with os.fdopen(args.ready_fd, "w") as out:
                ready = {"pid": os.getpid(), "grpc_port": args.grpc_port}
                out.write(json.dumps({**ready, "http_port": args.http_port}) + "\n")
        stop.wait()
    finally:
        triton.stop()


if __name__ == "__main__":
    main()
