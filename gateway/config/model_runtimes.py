"""``--model_runtimes``: which runtime, at which precision, serves each model.

Text form: comma-separated ``name=RUNTIME``; ``*=RUNTIME`` sets every model not named. RUNTIME is
``onnxruntime`` (ONNX models), ``tensorflow`` (SavedModels), ``openvino`` (either; fp32) or
``openvino:bf16`` / ``openvino:fp32``. A model with no entry is served by its platform's own
runtime (ONNX Runtime for ONNX, TensorFlow for SavedModels).
Precision is only ever what is written here: OpenVINO's hardware-dependent default (bf16 on
CPUs that have it) is never inherited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gateway.config.model_workers import DEFAULT_KEY, name_values

OPENVINO: Final = "openvino"
NATIVE: Final = {"onnx": "onnxruntime", "tensorflow": "tensorflow"}
"""Each platform's own runtime."""
RUNTIMES: Final = frozenset({*NATIVE.values(), OPENVINO})
PRECISIONS: Final = ("fp32", "bf16")


@dataclass(frozen=True)
class RuntimeChoice:
    """A runtime (one of :data:`RUNTIMES`) and its precision (``fp32`` or ``bf16``)."""

    runtime: str
    precision: str = "fp32"

    def for_platform(self, platform: str) -> RuntimeChoice | None:
        """None when this choice is ``platform``'s own runtime (nothing to ask the worker);
        ValueError when the runtime cannot serve that platform."""
        if self.runtime == OPENVINO:
            return self
        if self.runtime != NATIVE.get(platform):
            raise ValueError(f"runtime {self.runtime} cannot serve {platform} models")
        return None


def parse_model_runtimes(text: str) -> Mapping[str, RuntimeChoice]:
    """``name=RUNTIME[:PRECISION],...`` → ``{name: RuntimeChoice}``. ValueError names the bad
    item: one without ``=``, an empty name, an unknown runtime or precision, a precision on a
    runtime other than OpenVINO, or a name given twice."""
    result: dict[str, RuntimeChoice] = {}
    for name, value in name_values("model_runtimes", text, "name=runtime"):
        runtime, colon, precision = value.partition(":")
        if runtime not in RUNTIMES:
            raise ValueError(
                f"model_runtimes gives {name} runtime {runtime!r}; runtimes are "
                f"{', '.join(sorted(RUNTIMES))}"
            )
        if colon and runtime != OPENVINO:
            raise ValueError(f"model_runtimes gives {name} a precision; only openvino takes one")
        if colon and precision not in PRECISIONS:
            raise ValueError(
                f"model_runtimes gives {name} precision {precision!r}; precisions are "
                f"{', '.join(PRECISIONS)}"
            )
        result[name] = RuntimeChoice(runtime, precision or "fp32")
    return result


def runtime_for(model: str, runtimes: Mapping[str, RuntimeChoice]) -> RuntimeChoice | None:
    """The choice ``runtimes`` makes for ``model``; None: its platform's own runtime."""
    return runtimes.get(model, runtimes.get(DEFAULT_KEY))
