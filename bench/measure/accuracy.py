"""What each runtime and precision does to a model's outputs: OpenVINO fp32 and bf16 against ONNX
Runtime fp32, over a fixed set of inputs. Untimed.

Each input is :func:`bench.systems.models.sample_input` with seeds ``0 .. inputs-1`` (batch 1),
run through the model with one thread, as the workers run it: ONNX Runtime fp32 is the reference.
Per configuration: the precision OpenVINO actually compiled (a CPU without bf16 instructions runs
f32 when bf16 is asked), the largest absolute difference over every output element, the largest
relative difference (per input: the largest absolute difference over the largest magnitude of the
reference output; then the largest over the inputs) and the share of inputs whose top-1 class is
the reference's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bench.systems import raw_ort
from bench.systems.models import INPUT_NAMES, sample_input

INPUTS = 32
"""Inputs per model: enough for a top-1 agreement in steps of ~3 %, a few seconds per runtime on
ResNet50."""
CONFIGS = (("OpenVINO fp32", "fp32"), ("OpenVINO bf16", "bf16"))


def _reference(path: Path, inputs: list[np.ndarray[Any, Any]], name: str) -> list[Any]:
    reference = raw_ort.ort_session(path, 1)
    return [reference.run(None, {name: x})[0] for x in inputs]


def compare(path: Path, model: str, inputs: int = INPUTS) -> dict[str, Any]:
    """The accuracy rows of ``model`` (``mlp`` or ``resnet50``) at ``path``: ``{"inputs": n,
    "rows": {label: {...}}}``, or ``{"error": ...}`` when OpenVINO is not installed."""
    try:
        from workers.backends import openvino as openvino_backend
    except ImportError as exc:  # the backend imports OpenVINO lazily; this is for its deps
        return {"error": f"{type(exc).__name__}: {exc}"}
    name = INPUT_NAMES[model]
    xs = [sample_input(model, 1, seed) for seed in range(inputs)]
    want = _reference(path, xs, name)
    rows: dict[str, Any] = {}
    for label, precision in CONFIGS:
        try:
            served = openvino_backend.load(
                str(path), precision=precision, intra_op=1, max_output_bytes=1 << 30
            )
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        output = served.signature["outputs"][0]["name"]
        abs_err, rel_err, same = 0.0, 0.0, 0
        for x, ref in zip(xs, want, strict=True):
            got = served.run({name: x}, [output])[output]
            diff = float(np.abs(got.astype(np.float64) - ref).max())
            abs_err = max(abs_err, diff)
            rel_err = max(rel_err, diff / (float(np.abs(ref).max()) or 1.0))
            same += int(np.argmax(got) == np.argmax(ref))
        rows[label] = {
            "served": served.runtime,
            "max_abs": abs_err,
            "max_rel": rel_err,
            "top1_agreement": same / inputs,
        }
    return {"inputs": inputs, "reference": "ONNX Runtime fp32", "rows": rows}


def table(section: dict[str, Any]) -> list[str]:
    """The Markdown table of :func:`compare`'s result (one line when it failed)."""
    if "rows" not in section:
        return [f"Accuracy not measured: {section.get('error', 'no result')}."]
    lines = [
        f"Against {section['reference']}, {section['inputs']} fixed inputs (batch 1):",
        "",
        "| runtime | served as | max abs error | max rel error | top-1 agreement |",
        "|---|---|---|---|---|",
    ]
    for label, row in section["rows"].items():
        lines.append(
            f"| {label} | {row['served']} | {row['max_abs']:.2e} | {row['max_rel']:.2e} | "
            f"{row['top1_agreement']:.1%} |"
        )
    return lines
