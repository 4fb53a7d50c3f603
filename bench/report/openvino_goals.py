"""Issue 36's goals: tensorgate on OpenVINO against raw ONNX Runtime fp32 on ResNet50.

From the ``resnet50`` scenario's runs, on one pinned core (``1-core:`` keys, against the raw
1-thread process) and on two cores (against the best raw configuration): OpenVINO bf16 ≥ 1.8×,
OpenVINO fp32 ≥ 0.95×; and each precision against raw OpenVINO at that precision and the same
threads (``openvino_<precision> ...`` keys, when the run has them): ≥ 0.97×. A bf16 row's note
says what the CPU compiled when it is not bf16 (the ``openvino-accuracy`` section's
``served``): a CPU without bf16 instructions runs f32, and the goal cannot be met there.
"""

from __future__ import annotations

from typing import Any

from bench.report.goal_rows import OPENVINO
from bench.report.tiny_rows import ONE_CORE, versus


def openvino_rows(sc: dict[str, Any]) -> list[dict[str, Any]]:
    runs = sc.get("resnet50", {}).get("runs", {})
    served = sc.get("openvino-accuracy", {}).get("rows", {}).get("OpenVINO bf16", {})
    pinned = {k[len(ONE_CORE) :]: v for k, v in runs.items() if k.startswith(ONE_CORE)}
    unpinned = {k: v for k, v in runs.items() if not k.startswith(ONE_CORE)}
    rows = []
    for where, section, prefix in (
        ("1 pinned core", pinned, "tensorgate"),
        ("2 cores", unpinned, "tensorgate-2w"),
    ):
        raw = tuple(k for k in section if k.startswith("raw ")) or ("raw ONNX Runtime",)
        for suffix, minimum, precision in (("-ov-bf16", 1.8, "bf16"), ("-ov", 0.95, "fp32")):
            goal = f"ResNet50 OpenVINO {precision} vs raw ONNX Runtime fp32: ≥ {minimum}×"
            one = versus(goal, section, (prefix + suffix,), raw, minimum, where, group=OPENVINO)
            if precision == "bf16" and served.get("served", "openvino_bf16") != "openvino_bf16":
                compiled = f"this CPU compiled bf16 as {served['served']}"
                one["note"] = "; ".join(n for n in (one["note"], compiled) if n)
            rows.append(one)
            # The serving path against OpenVINO itself, same precision and threads.
            own = tuple(k for k in section if k.startswith(f"openvino_{precision} "))
            if own:
                goal = f"ResNet50 OpenVINO {precision} vs raw OpenVINO {precision}: ≥ 0.97×"
                rows.append(
                    versus(goal, section, (prefix + suffix,), own, 0.97, where, group=OPENVINO)
                )
    return rows
