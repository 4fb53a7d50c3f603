"""ONNX Runtime sessions for the worker: load a ``model.onnx``, describe it, run it on numpy arrays.

Thread settings are exactly the ones the gateway gives (never 0, which ONNX Runtime reads as
"one thread per core"), so N workers x threads can be sized to the machine, and the pools'
threads never spin while they wait for work (:func:`session_options`): a worker never has its
cores to itself (the front ends share them), and a spinning thread takes CPU from them, or, when
preempted itself, keeps its peers spinning for it. Only tensor inputs
are supported; non-tensor outputs (e.g. scikit-learn's ZipMap) and outputs of dtypes without a
canonical name are left out of the signature and never returned. ONNX Runtime reports an
unknown rank and a scalar alike (``[]``); both become ``None`` (unknown) in the signature, and
ONNX Runtime still checks the rank when the model runs.

A run's outputs are bounded by ``max_output_bytes`` (the worker's output arena; sizes as
:mod:`workers.backends.onnx_outputs` counts them). Outputs that the declared shapes already size
past the bound are refused before the run, so the runtime never builds them. Outputs found too
big only once built (data-dependent shapes) are refused as the run returns and dropped there and
then, and the next run asks ONNX Runtime to shrink its CPU memory arena, which otherwise keeps
its peak for good (the arena stays on: it is what spares repeated runs their allocations).
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Sequence
from typing import Any, Final

import ml_dtypes
import numpy as np
import onnxruntime as ort

from channel.dtypes import DTYPE_NAMES, STRING
from channel.messages import WireSignature, WireTensorSpec, WorkerError
from workers.backends import onnx_outputs

log = logging.getLogger(__name__)

_ONNX_ELEMENTS: Final = {"float32": "float", "float64": "double"}
"""ONNX's element type names where they differ from the canonical dtype names."""
_ONNX_TYPES: Final = {f"tensor({_ONNX_ELEMENTS.get(n, n)})": n for n in sorted(DTYPE_NAMES)}
"""ONNX Runtime's type strings (``tensor(float)``) → canonical dtype names, one per name."""
_ONNX_BFLOAT16: Final = 16  # TensorProto.BFLOAT16
_BOUNDS_KEPT: Final = 64
"""How many sets of output names a model keeps the bound of (clients choose the sets)."""
_SHRINK_ARENA: Final = ("memory.enable_memory_arena_shrinkage", "cpu:0")
"""The run option that has ONNX Runtime free its CPU arena's unused regions as the run ends."""

ort.set_default_logger_severity(3)  # errors only; warnings reach clients as error messages


def _spec(arg: Any) -> WireTensorSpec | None:
    dtype = _ONNX_TYPES.get(arg.type)
    if dtype is None:
        return None
    if not arg.shape:  # ONNX Runtime reports an unknown rank as [], like a scalar: say unknown
        return {"name": arg.name, "dtype": dtype, "shape": None}
    shape = [dim if isinstance(dim, int) and dim >= 0 else -1 for dim in arg.shape]
    return {"name": arg.name, "dtype": dtype, "shape": shape}


def _bfloat16_array(value: Any) -> np.ndarray[Any, Any]:
    """A bfloat16 OrtValue copied into numpy (ONNX Runtime's ``numpy()`` refuses bfloat16)."""
    out = np.empty(value.shape(), dtype=ml_dtypes.bfloat16)
    ctypes.memmove(out.ctypes.data, value.data_ptr(), value.tensor_size_in_bytes())
    return out


class OnnxModel:
    """One ONNX Runtime session and its signature, a :class:`workers.models.Model`: one
    signature (a run's signature name is not consulted), string inputs as ``str``
    (``text_strings``). :meth:`run` is called from one thread.

    ``max_output_bytes`` bounds one run's outputs (None: unbounded)."""

    text_strings = True

    def __init__(
        self, path: str, session: ort.InferenceSession, max_output_bytes: int | None = None
    ) -> None:
        self.path = path
        self._session = session
        inputs: list[WireTensorSpec] = []
        for arg in session.get_inputs():
            spec = _spec(arg)
            if spec is None:
                raise WorkerError(
                    "INVALID_ARGUMENT",
                    f"ONNX model {path}: input {arg.name!r} has type {arg.type}, which is not "
                    "a supported tensor type",
                )
            inputs.append(spec)
        outputs: list[WireTensorSpec] = []
        for arg in session.get_outputs():
            spec = _spec(arg)
            if spec is None:
                log.warning("%s: output %r of type %s is not served", path, arg.name, arg.type)
            else:
                outputs.append(spec)
        if not outputs:
            raise WorkerError("INVALID_ARGUMENT", f"ONNX model {path} has no tensor outputs")
        self.signature: WireSignature = {"inputs": inputs, "outputs": outputs}
        self._output_names = [spec["name"] for spec in outputs]
        self._bfloat16 = {spec["name"] for spec in inputs + outputs if spec["dtype"] == "bfloat16"}
        self._max_output_bytes = max_output_bytes
        self._sizes = onnx_outputs.declared_sizes(
            session.get_inputs(), session.get_outputs(), outputs
        )
        self._bounds: dict[tuple[str, ...], onnx_outputs.Bound] = {}
        """Bounds by the output names asked for (a few sets of names: _BOUNDS_KEPT)."""
        self._strings = {spec["name"] for spec in outputs if spec["dtype"] == STRING}
        self._shrink: ort.RunOptions | None = None
        """The next run's options: the arena shrink after a refusal, else none."""

    def run(
        self,
        inputs: dict[str, np.ndarray[Any, Any]],
        output_names: Sequence[str] | None,
        signature_name: str = "",
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Outputs by name, in ``output_names`` order (None: every signature output); the model
        has one signature, whatever ``signature_name`` says.
        WorkerError INVALID_ARGUMENT for an unknown output name or anything ONNX Runtime
        rejects (shapes, dtypes, missing inputs); RESOURCE_EXHAUSTED for outputs over
        ``max_output_bytes`` (before the run when the shapes tell)."""
        names = self._output_names if output_names is None else output_names
        if names is not self._output_names:
            for name in names:
                if name not in self._output_names:
                    raise WorkerError(
                        "INVALID_ARGUMENT",
                        f"output {name!r} is not in the signature (outputs: {self._output_names})",
                    )
        limit = self._max_output_bytes
        sized = limit is None or self._refuse_before(inputs, names, limit)
        options, self._shrink = self._shrink, None
        try:
            if self._bfloat16:
                results = self._run_ort_values(inputs, names, options)
            else:
                results = self._session.run(names, inputs, options)
        except MemoryError:
            self._shrink_next()
            raise WorkerError("RESOURCE_EXHAUSTED", "out of memory running the model") from None
        except Exception as exc:  # every error out of the runtime is about the inputs
            raise WorkerError("INVALID_ARGUMENT", str(exc)) from None
        if limit is not None and not sized:
            nbytes = onnx_outputs.arena_bytes(results)
            if nbytes > limit:
                self._shrink_next()
                exact = self._strings.isdisjoint(names)
                raise onnx_outputs.refusal(nbytes, limit, exact=exact)
        return dict(zip(names, results, strict=True))

    def close(self) -> None:
        """Nothing to release early: the session goes with the object."""

    def _refuse_before(
        self, inputs: dict[str, np.ndarray[Any, Any]], names: Sequence[str], limit: int
    ) -> bool:
        """Refuse outputs ``names`` that the declared shapes size past ``limit`` on ``inputs``;
        True when they size them all, exactly (nothing is left to check after the run)."""
        bound = self._bounds.get(tuple(names))
        if bound is None:
            bound = onnx_outputs.bound(self._sizes, names)
            if len(self._bounds) < _BOUNDS_KEPT:
                self._bounds[tuple(names)] = bound
        least = bound.least_bytes(inputs)
        if least > limit:
            raise onnx_outputs.refusal(least, limit, exact=bound.exact)
        return bound.exact

    def _shrink_next(self) -> None:
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry(*_SHRINK_ARENA)

    def _run_ort_values(
        self,
        inputs: dict[str, np.ndarray[Any, Any]],
        names: Sequence[str],
        options: ort.RunOptions | None,
    ) -> list[np.ndarray[Any, Any]]:
        feeds = {}
        for name, arr in inputs.items():
            if arr.dtype == ml_dtypes.bfloat16:
                feeds[name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                    np.ascontiguousarray(arr).view(np.uint16), onnx_element_type=_ONNX_BFLOAT16
                )
            else:
                feeds[name] = ort.OrtValue.ortvalue_from_numpy(arr)
        values = self._session.run_with_ort_values(names, feeds, options)
        return [
            _bfloat16_array(value) if name in self._bfloat16 else value.numpy()
            for name, value in zip(names, values, strict=True)
        ]


_NO_SPINNING: Final = ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning")
"""ONNX Runtime's switches for its pools' threads spinning while they wait for work (on by
default). ResNet50 on two intra-op threads, two busy cores shared with other processes: spinning
took 157 ms of CPU per run against 110 without, and longer (interleaved A/B, medians)."""


def session_options(intra_op: int, inter_op: int) -> ort.SessionOptions:
    """A worker's session options: exactly ``intra_op`` / ``inter_op`` threads, which wait for
    work without spinning (one thread has no pool: nothing changes), sequential execution, full
    graph optimisation."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op
    options.inter_op_num_threads = inter_op
    for key in _NO_SPINNING:
        options.add_session_config_entry(key, "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def load(
    path: str, *, intra_op: int, inter_op: int, max_output_bytes: int | None = None
) -> OnnxModel:
    """A CPU session for the ONNX model at ``path`` with :func:`session_options` (``intra_op``
    and ``inter_op`` each >= 1); one run's outputs are bounded by ``max_output_bytes`` (None:
    unbounded).
    WorkerError NOT_FOUND if the file is missing, INVALID_ARGUMENT if it does not load."""
    if intra_op < 1 or inter_op < 1:
        raise WorkerError(
            "INVALID_ARGUMENT", f"intra_op and inter_op must be >= 1, got {intra_op}, {inter_op}"
        )
    if not os.path.isfile(path):
        raise WorkerError("NOT_FOUND", f"ONNX model file {path} does not exist")
    options = session_options(intra_op, inter_op)
    try:
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except MemoryError:
        raise WorkerError("RESOURCE_EXHAUSTED", f"out of memory loading {path}") from None
    except Exception as exc:
        raise WorkerError("INVALID_ARGUMENT", f"cannot load ONNX model {path}: {exc}") from None
    return OnnxModel(path, session, max_output_bytes)
