"""One version a front end runs itself: its own ONNX Runtime session, run on the event loop.

:func:`load_session` makes the session (one thread, sequential, no memory arena: a front end
keeps no peak for good) and :meth:`InlineSession.measure` times it
(:func:`gateway.runs.inline_cost.measure`). :meth:`InlineSession.run` is one run of a batch
whose rows the caller has kept within :attr:`InlineSession.max_rows`; it answers the outputs by
name, or None when the run was stopped at the wall-clock limit (:mod:`inline_watch`) and must be
re-run on a worker. Every run's CPU time is looked at: a stall (:data:`~inline_cost.STALL_S`),
or a stop while computing, calls ``on_stall`` — the version then leaves the front end
(:class:`~gateway.runs.inline_cost.Placement`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from time import monotonic, thread_time
from typing import Any, Final

import numpy as np

from channel.dtypes import DTYPE_NAMES, STRING, dtype_name, numpy_dtype
from gateway.errors import InvalidArgument, ResourceExhausted
from gateway.runs.inline_cost import STALL_S, Measured, measure
from gateway.runs.inline_watch import InlineWatch

_CANONICAL: Final = frozenset(numpy_dtype(n).type for n in DTYPE_NAMES if n != STRING)
"""The numpy types outputs are handed out in (ONNX Runtime may answer ``longlong``)."""

OnStall = Callable[[str], None]
"""Called with the servable key when one of its runs stalled."""


def load_session(path: str) -> Any:
    """A one-thread CPU session of the ONNX model at ``path`` without a memory arena (raises
    what ONNX Runtime raises when it does not load)."""
    import onnxruntime as ort  # this process imports ONNX Runtime only when it runs a version

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = False
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


class InlineSession:
    """``session`` of servable ``key``, run under ``watch``. ``max_output_bytes``: the bound on
    one run's outputs (the workers' output area: the same bound in front)."""

    def __init__(
        self,
        key: str,
        session: Any,
        watch: InlineWatch,
        *,
        max_output_bytes: int,
        on_stall: OnStall | None = None,
    ) -> None:
        import onnxruntime as ort

        self.key = key
        self._session = session
        self._run = session.run
        self._watch = watch
        watch.start()
        self._new_options = ort.RunOptions
        """A fresh ``RunOptions`` per run: the watch may set ``terminate`` on a run's options
        after that run has ended (it read them just before), which must not stop the next run."""
        self.max_output_bytes = max_output_bytes
        self.on_stall = on_stall
        self.max_rows = 0
        """The most rows one run here may have (:meth:`measure` sets it)."""
        self.input_names = [arg.name for arg in session.get_inputs()]
        self.output_names = [arg.name for arg in session.get_outputs()]
        self.runs = 0
        self.stops = 0

    def measure(self, inputs: dict[str, tuple[np.dtype[Any], tuple[int, ...]]]) -> Measured:
        """Time this session on zeros of ``inputs`` (name → dtype and the dims past the first)
        and keep the most rows that fit the loop bound as :attr:`max_rows`."""
        row_bytes = 0
        for dtype, tail in inputs.values():
            row_bytes += dtype.itemsize * int(np.prod(tail, dtype=np.int64))
        zeros: dict[int, dict[str, np.ndarray]] = {}

        def run(rows: int) -> None:
            feeds = zeros.get(rows)
            if feeds is None:
                feeds = zeros[rows] = {
                    name: np.zeros((rows, *tail), dtype=dtype)
                    for name, (dtype, tail) in inputs.items()
                }
            self._session.run(None, feeds)

        def clocks() -> tuple[float, float]:
            return time.perf_counter(), time.thread_time()

        measured = measure(run, max(row_bytes, 1) * 2, clocks)
        self.max_rows = measured.max_rows
        return measured

    def run(self, inputs: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray] | None:
        """The outputs ``names`` of one run on ``inputs`` (rows within :attr:`max_rows`); None
        when it was stopped at the wall-clock limit (re-run it on a worker). InvalidArgument for
        what ONNX Runtime refuses; ResourceExhausted for outputs over the bound."""
        watch = self._watch
        options = self._new_options()
        cpu = thread_time()
        watch.started = monotonic()
        watch.options = options
        try:
            results = self._run(names, inputs, options)
        except Exception as exc:  # the runtime's refusal of these inputs, or the watch's stop
            watch.options = None
            self._failed(exc, thread_time() - cpu, options.terminate)
            return None
        watch.options = None
        cpu = thread_time() - cpu
        self.runs += 1
        if cpu > STALL_S and self.on_stall is not None:
            self.on_stall(self.key)
        outputs = {}
        nbytes = 0
        for name, array in zip(names, results, strict=True):
            if array.dtype.type not in _CANONICAL:
                array = array.view(numpy_dtype(dtype_name(array.dtype)))
            outputs[name] = array
            nbytes += array.nbytes
        if nbytes > self.max_output_bytes:
            raise ResourceExhausted(
                f"the outputs take {nbytes} bytes, over the limit of {self.max_output_bytes} "
                "bytes for one run"
            )
        return outputs

    def _failed(self, exc: Exception, cpu: float, stopped: bool) -> None:
        """A run that raised: a stall like any run when it computed that long; returns when
        the watch ``stopped`` it, else raises the refusal."""
        if cpu > STALL_S and self.on_stall is not None:
            self.on_stall(self.key)
        if stopped:
            self.stops += 1
            return None
        raise InvalidArgument(str(exc)) from None
