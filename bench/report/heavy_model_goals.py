"""ResNet50 at the runtimes' own speed: tensorgate's workers against the raw runtimes, in the same
rounds (the ``resnet50`` scenario), on one pinned core (``1-core:`` keys) and on two.

- on ONNX Runtime: ≥ 0.97× the best raw ONNX Runtime configuration (``raw ...`` keys);
- on OpenVINO fp32: ≥ 0.97× raw OpenVINO fp32 at the same threads (``openvino_fp32 ...`` keys);
- on OpenVINO bf16: ≥ 1.85× raw ONNX Runtime fp32, on a CPU with AVX512_BF16 or AMX (the run's
  ``cpu_flags``); on a CPU with neither, bf16 runs as fp32 and the row says so, unjudged (n/a):
  the fp32 rows stand. A run that did not record its CPU's flags falls back on what OpenVINO
  compiled (the ``openvino-accuracy`` section's ``served``);
- reported: OpenVINO bf16 against raw OpenVINO bf16 at the same threads (where a bf16 gap lies:
  in the runtime or in the serving).
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import HEAVY_MODELS
from bench.report.tiny_rows import raw_ort_rows, resnet_layouts, versus

RAW_LEAST = 0.97
"""tensorgate against its runtime run raw, same threads (ONNX Runtime and OpenVINO fp32)."""
BF16_LEAST = 1.85
"""OpenVINO bf16 through tensorgate against raw ONNX Runtime fp32."""
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""/proc/cpuinfo flags of the instructions bf16 inference needs (either)."""
OURS = {"1 pinned core": "tensorgate", "2 cores": "tensorgate-2w"}
"""tensorgate's OpenVINO systems per layout, before the precision's suffix (``-ov``,
``-ov-bf16``): one 1-thread worker, two."""
RAW_THREADS = {"1 pinned core": "1p×1t b1", "2 cores": "2p×1t b1"}
"""The raw OpenVINO configuration at tensorgate's threads per layout."""


def heavy_model_rows(sc: dict[str, Any], machine: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows in order: ONNX Runtime, OpenVINO fp32, OpenVINO bf16 (each on one pinned core,
    then two), then the reported bf16 rows; ``machine``: the run's ``machine`` header."""
    runs = sc.get("resnet50", {}).get("runs", {})
    layouts = resnet_layouts(runs)
    g = HEAVY_MODELS
    rows = raw_ort_rows("ResNet50 on ONNX Runtime: ≥ 0.97× raw ONNX Runtime", runs, RAW_LEAST, g)
    goal = "ResNet50 on OpenVINO fp32: ≥ 0.97× raw OpenVINO fp32, same threads"
    for where, section in layouts.items():
        own = (f"openvino_fp32 {RAW_THREADS[where]}",)
        rows.append(versus(goal, section, (OURS[where] + "-ov",), own, RAW_LEAST, where, group=g))
    lacking = _lacks_bf16(sc, machine)
    goal = "ResNet50 on OpenVINO bf16: ≥ 1.85× raw ONNX Runtime fp32 (AVX512_BF16 or AMX)"
    for where, section in layouts.items():
        raw = tuple(k for k in section if k.startswith("raw ")) or ("raw ONNX Runtime",)
        found = versus(goal, section, (OURS[where] + "-ov-bf16",), raw, BF16_LEAST, where, group=g)
        if lacking:
            found["met"] = None
            found["note"] = "; ".join(n for n in (found["note"], lacking) if n)
        rows.append(found)
    goal = "ResNet50 on OpenVINO bf16 against raw OpenVINO bf16, same threads (reported)"
    for where, section in layouts.items():
        own = (f"openvino_bf16 {RAW_THREADS[where]}",)
        found = versus(goal, section, (OURS[where] + "-ov-bf16",), own, 0.0, where, group=g)
        rows.append({**found, "target": "reported", "met": None})
    return rows


def _lacks_bf16(sc: dict[str, Any], machine: dict[str, Any]) -> str:
    """Why the bf16 rows cannot be judged on this run's CPU ("" when they can)."""
    flags = machine.get("cpu_flags")
    if flags is not None:
        if set(BF16_FLAGS) & set(flags):
            return ""
        return "this CPU has neither AVX512_BF16 nor AMX: bf16 runs as fp32, the fp32 rows stand"
    served = sc.get("openvino-accuracy", {}).get("rows", {}).get("OpenVINO bf16", {})
    compiled = served.get("served", "openvino_bf16")
    if compiled != "openvino_bf16":
        return f"this CPU compiled bf16 as {compiled} (no bf16 instructions): the fp32 rows stand"
    return ""
