"""OpenVINO for the worker: load a ``model.onnx`` or a SavedModel, describe it, run it on numpy.

OpenVINO is the optional second runtime (``pip install 'tensorgate[openvino]'``); it is imported
only by the first load, and a load without it is FAILED_PRECONDITION naming the extra. A
SavedModel is read by OpenVINO's TensorFlow frontend, without TensorFlow: its ``serving_default``
signature becomes the model (input and output names are the signature's aliases, dtypes and
shapes as converted); one that does not convert (a graph that parses ``tf.Example`` strings, an
input of unknown rank, which the CPU plugin cannot compile) is FAILED_PRECONDITION with
OpenVINO's reason. Other signatures of the SavedModel are not served. How ports and messages
read: :mod:`workers.backends.openvino_ports`.

Compiled for the CPU with exactly the gateway's threads: ``INFERENCE_NUM_THREADS`` = intra-op
threads, one stream (the worker runs one batch at a time), no thread pinning (several workers
share the cores the platform rule sized them for); OpenVINO has no inter-op pool. The precision
is always set (``INFERENCE_PRECISION_HINT``: ``fp32`` → ``f32``, ``bf16`` → ``bf16``), never
OpenVINO's hardware-dependent default; the precision the compiled model reports is the one
served (a CPU without bf16 runs ``f32``, logged), and the load reply's signature says it
(``"runtime": "openvino_fp32"`` or ``"openvino_bf16"``).

A run's outputs are bounded by ``max_output_bytes`` (sizes as ONNX Runtime's,
:mod:`workers.backends.onnx_outputs`): statically shaped outputs before the run, the others
as it returns; after a refusal the compiled model releases its intermediate memory.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from channel.messages import WorkerError
from channel.shm.arena import align_up
from workers.backends import onnx_outputs, openvino_ports
from workers.backends.openvino_ports import port_name, spec

log = logging.getLogger(__name__)

PRECISIONS: Final = {"fp32": "f32", "bf16": "bf16"}
"""tensorgate's precision names → OpenVINO's ``INFERENCE_PRECISION_HINT`` values."""
_SERVED: Final = {hint: name for name, hint in PRECISIONS.items()}
EXTRA: Final = "pip install 'tensorgate[openvino]'"
PREDICT_METHOD: Final = "tensorflow/serving/predict"


class OpenVinoModel:
    """One compiled model and its infer request; :meth:`run` is called from one thread.

    ``text_strings`` is False: no string tensor is served. ``signature`` is the load reply's:
    one signature (ONNX) or ``{"signatures": {"serving_default": ...}}`` (a SavedModel), with
    ``"runtime"`` naming the precision served."""

    text_strings = False

    def __init__(
        self,
        path: str,
        compiled: Any,
        names: tuple[list[str], list[str]],
        *,
        saved_model: bool,
        max_output_bytes: int,
    ) -> None:
        self.path = path
        self._compiled = compiled
        self._request = compiled.create_infer_request()
        ports = zip(compiled.inputs, names[0], strict=True)
        inputs = [spec(port, name, "input", path) for port, name in ports]
        ports = zip(compiled.outputs, names[1], strict=True)
        outputs = [spec(port, name, "output", path) for port, name in ports]
        hint = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()  # an ov.Type
        self.runtime = "openvino_" + _SERVED.get(hint, hint)
        described: dict[str, Any] = {"inputs": inputs, "outputs": outputs}
        if saved_model:
            described = {
                "signatures": {"serving_default": {**described, "method_name": PREDICT_METHOD}}
            }
        self.signature: dict[str, Any] = {**described, "runtime": self.runtime}
        self._ports = {
            spec["name"]: port for spec, port in zip(outputs, compiled.outputs, strict=True)
        }
        self._output_names = [spec["name"] for spec in outputs]
        self._feeds = {spec["name"]: index for index, spec in enumerate(inputs)}
        """Inputs by index (a name of the signature may be one of several of its tensor)."""
        self._limit = max_output_bytes
        static = [
            (spec["name"], int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize)
            for spec in outputs
            if spec["shape"] is not None and -1 not in spec["shape"]
        ]
        self._static_bytes = {name: align_up(nbytes) for name, nbytes in static}

    def run(
        self,
        inputs: dict[str, np.ndarray[Any, Any]],
        output_names: Sequence[str] | None,
        signature_name: str = "",
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Outputs by name, in ``output_names`` order (None: every output); the model has one
        signature, whatever ``signature_name`` says. WorkerError INVALID_ARGUMENT for an unknown
        output name or inputs OpenVINO refuses; RESOURCE_EXHAUSTED for outputs over
        ``max_output_bytes``."""
        names = self._output_names if output_names is None else output_names
        for name in names:
            if name not in self._ports:
                raise WorkerError(
                    "INVALID_ARGUMENT",
                    f"output {name!r} is not in the signature (outputs: {self._output_names})",
                )
        static = sum(self._static_bytes.get(name, 0) for name in names)
        if static > self._limit:
            raise onnx_outputs.refusal(static, self._limit, exact=False)
        try:
            feeds = {self._feeds.get(name, name): value for name, value in inputs.items()}
            results = self._request.infer(feeds, share_inputs=True, share_outputs=False)
        except MemoryError:
            self._compiled.release_memory()
            raise WorkerError("RESOURCE_EXHAUSTED", "out of memory running the model") from None
        except Exception as exc:  # every error out of the runtime is about the inputs
            raise WorkerError("INVALID_ARGUMENT", str(exc)) from None
        outputs = {name: results[self._ports[name]] for name in names}
        nbytes = onnx_outputs.arena_bytes(outputs.values())
        if nbytes > self._limit:
            del outputs, results
            self._compiled.release_memory()
            raise onnx_outputs.refusal(nbytes, self._limit, exact=True)
        return outputs

    def close(self) -> None:
        pass


def compile_config(precision: str, intra_op: int) -> dict[str, Any]:
    """The CPU plugin's configuration for a model served at ``precision`` (``fp32`` or ``bf16``;
    KeyError otherwise) on ``intra_op`` threads: every setting that OpenVINO would otherwise
    derive from the hardware is written out."""
    return {
        "INFERENCE_PRECISION_HINT": PRECISIONS[precision],
        "INFERENCE_NUM_THREADS": intra_op,
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": "LATENCY",
        "ENABLE_CPU_PINNING": False,
        "ENABLE_HYPER_THREADING": False,
    }


def _openvino() -> Any:
    try:
        import openvino
    except ImportError as exc:
        raise WorkerError(
            "FAILED_PRECONDITION",
            f"the OpenVINO runtime is not installed ({exc}); install it with {EXTRA}",
        ) from None
    return openvino


def load(
    path: str,
    *,
    precision: str,
    intra_op: int,
    max_output_bytes: int,
    tags: Sequence[str] = ("serve",),
) -> OpenVinoModel:
    """The model at ``path`` (a ``.onnx`` file or a SavedModel directory) compiled for the CPU
    at ``precision`` (``fp32`` or ``bf16``) with ``intra_op`` (>= 1) threads; a SavedModel's
    MetaGraph ``tags`` must be ``serve`` (the one OpenVINO's TensorFlow frontend reads).
    WorkerError INVALID_ARGUMENT for a bad precision or thread count, NOT_FOUND for a missing
    path, FAILED_PRECONDITION when OpenVINO is missing or the model does not convert."""
    if precision not in PRECISIONS:
        raise WorkerError(
            "INVALID_ARGUMENT",
            f"OpenVINO precision must be one of {sorted(PRECISIONS)}, got {precision!r}",
        )
    if intra_op < 1:
        raise WorkerError("INVALID_ARGUMENT", f"intra_op must be >= 1, got {intra_op}")
    if not os.path.exists(path):
        raise WorkerError("NOT_FOUND", f"model {path} does not exist")
    if os.path.isdir(path) and sorted(tags) != ["serve"]:
        raise WorkerError(
            "FAILED_PRECONDITION",
            f"OpenVINO reads a SavedModel's 'serve' MetaGraph only; asked for {list(tags)}",
        )
    ov = _openvino()
    core = ov.Core()
    config = compile_config(precision, intra_op)
    try:
        model = core.read_model(path)
        compiled = core.compile_model(model, "CPU", config)
    except MemoryError:
        raise WorkerError("RESOURCE_EXHAUSTED", f"out of memory loading {path}") from None
    except Exception as exc:
        reason = openvino_ports.reason(exc)
        raise WorkerError(
            "FAILED_PRECONDITION", f"model {path} does not convert to OpenVINO: {reason}"
        ) from None
    names = ([port_name(p) for p in model.inputs], [port_name(p) for p in model.outputs])
    loaded = OpenVinoModel(
        path, compiled, names, saved_model=os.path.isdir(path), max_output_bytes=max_output_bytes
    )
    if loaded.runtime != "openvino_" + precision:
        log.warning("%s: %s asked, this CPU runs it as %s", path, precision, loaded.runtime)
    return loaded
