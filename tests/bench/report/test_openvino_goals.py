"""Issue 36's rows: tensorgate on OpenVINO against raw ONNX Runtime fp32 on ResNet50, and the
accuracy table, from a run's own numbers."""

from __future__ import annotations

from typing import Any

from bench.measure.accuracy import table
from bench.report.goal_rows import OPENVINO
from bench.report.openvino_goals import openvino_rows
from tests.bench.report.test_goals import point

ACCURACY = {
    "inputs": 32,
    "reference": "ONNX Runtime fp32",
    "rows": {
        "OpenVINO fp32": {
            "served": "openvino_fp32",
            "max_abs": 2.57e-7,
            "max_rel": 5.53e-6,
            "top1_agreement": 1.0,
        },
        "OpenVINO bf16": {
            "served": "openvino_fp32",
            "max_abs": 2.57e-7,
            "max_rel": 5.53e-6,
            "top1_agreement": 1.0,
        },
    },
}


def scenarios() -> dict[str, Any]:
    runs = {
        "1-core: raw 1p×1t b1": point(12.0),
        "1-core: tensorgate-ov": point(11.9),
        "1-core: tensorgate-ov-bf16": point(23.5),
        "raw 2p×1t b1": point(24.0),
        "raw 1p×2t b1": point(20.0),
        "tensorgate-2w-ov": point(22.0),
        "tensorgate-2w-ov-bf16": point(40.0),
    }
    return {"resnet50": {"runs": runs}, "openvino-accuracy": ACCURACY}


def test_bf16_and_fp32_against_the_best_raw_configuration() -> None:
    rows = openvino_rows(scenarios())
    assert [r["group"] for r in rows] == [OPENVINO] * 4
    by_case = {r["case"]: r for r in rows}
    one = by_case["1 pinned core: tensorgate-ov-bf16 vs raw 1p×1t b1"]
    assert (one["value"], one["met"]) == ("1.96× (1.96–1.96)", True)
    assert by_case["1 pinned core: tensorgate-ov vs raw 1p×1t b1"]["met"] is True  # 0.99×
    two = by_case["2 cores: tensorgate-2w-ov-bf16 vs raw 2p×1t b1"]
    assert (two["value"], two["met"]) == ("1.67× (1.67–1.67)", False)
    assert by_case["2 cores: tensorgate-2w-ov vs raw 2p×1t b1"]["met"] is False  # 0.92×
    assert "this CPU compiled bf16 as openvino_fp32" in one["note"]
    assert "compiled" not in by_case["2 cores: tensorgate-2w-ov vs raw 2p×1t b1"]["note"]


def test_each_precision_against_raw_openvino_at_the_same_threads() -> None:
    """The raw OpenVINO rows (their own keys, never taken for raw ONNX Runtime)."""
    sc = scenarios()
    sc["resnet50"]["runs"] |= {
        "1-core: openvino_fp32 1p×1t b1": point(12.0),
        "1-core: openvino_bf16 1p×1t b1": point(25.0),
        "openvino_bf16 2p×1t b1": point(48.0),
    }
    rows = openvino_rows(sc)
    by_case = {r["case"]: r for r in rows}
    assert len(rows) == 7  # the four against ONNX Runtime, three against OpenVINO itself
    assert by_case["1 pinned core: tensorgate-ov-bf16 vs raw 1p×1t b1"]["met"] is True
    own = by_case["1 pinned core: tensorgate-ov vs openvino_fp32 1p×1t b1"]
    assert (own["value"], own["met"]) == ("0.99× (0.99–0.99)", True)
    bf16 = by_case["1 pinned core: tensorgate-ov-bf16 vs openvino_bf16 1p×1t b1"]
    assert (bf16["value"], bf16["met"]) == ("0.94× (0.94–0.94)", False)
    assert by_case["2 cores: tensorgate-2w-ov-bf16 vs openvino_bf16 2p×1t b1"]["met"] is False


def test_rows_stay_listed_when_nothing_was_measured() -> None:
    rows = openvino_rows({})
    assert [r["value"] for r in rows] == ["not measured"] * 4
    assert all(r["met"] is None for r in rows)


def test_accuracy_table() -> None:
    assert table(ACCURACY)[2:] == [
        "| runtime | served as | max abs error | max rel error | top-1 agreement |",
        "|---|---|---|---|---|",
        "| OpenVINO fp32 | openvino_fp32 | 2.57e-07 | 5.53e-06 | 100.0% |",
        "| OpenVINO bf16 | openvino_fp32 | 2.57e-07 | 5.53e-06 | 100.0% |",
    ]
    assert table({"error": "ModuleNotFoundError: openvino"}) == [
        "Accuracy not measured: ModuleNotFoundError: openvino."
    ]
