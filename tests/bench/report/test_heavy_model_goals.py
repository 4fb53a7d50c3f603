"""ResNet50 at the runtimes' own speed: tensorgate on ONNX Runtime and OpenVINO against the raw
runtimes, the bf16 row judged only on a CPU with bf16 instructions, and the accuracy table, from a
run's own numbers."""

from __future__ import annotations

from typing import Any

from bench.measure.accuracy import table
from bench.report.goal_rows import HEAVY_MODELS
from bench.report.heavy_model_goals import heavy_model_rows
from tests.bench.report.summaries import point

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


BF16_CPU = {"cpu_flags": ["avx2", "avx512f", "avx512_bf16"]}
"""A machine header of a CPU with bf16 instructions."""


def scenarios() -> dict[str, Any]:
    runs = {
        "1-core: tensorgate": point(11.7),
        "1-core: raw 1p×1t b1": point(12.0),
        "1-core: openvino_fp32 1p×1t b1": point(12.5),
        "1-core: openvino_bf16 1p×1t b1": point(25.0),
        "1-core: tensorgate-ov": point(12.2),
        "1-core: tensorgate-ov-bf16": point(23.5),
        "tensorgate-2w": point(23.0),
        "raw 2p×1t b1": point(24.0),
        "raw 1p×2t b1": point(20.0),
        "openvino_fp32 2p×1t b1": point(24.0),
        "openvino_bf16 2p×1t b1": point(48.0),
        "tensorgate-2w-ov": point(22.0),
        "tensorgate-2w-ov-bf16": point(40.0),
    }
    return {"resnet50": {"runs": runs}, "openvino-accuracy": ACCURACY}


def test_rows_in_order_each_against_its_own_reference() -> None:
    rows = heavy_model_rows(scenarios(), BF16_CPU)
    assert all(r["group"] == HEAVY_MODELS for r in rows)
    assert [r["case"] for r in rows] == [
        "1 pinned core: tensorgate vs raw 1p×1t b1",
        "2 cores: tensorgate-2w vs raw 2p×1t b1",
        "1 pinned core: tensorgate-ov vs openvino_fp32 1p×1t b1",
        "2 cores: tensorgate-2w-ov vs openvino_fp32 2p×1t b1",
        "1 pinned core: tensorgate-ov-bf16 vs raw 1p×1t b1",
        "2 cores: tensorgate-2w-ov-bf16 vs raw 2p×1t b1",
        "1 pinned core: tensorgate-ov-bf16 vs openvino_bf16 1p×1t b1",
        "2 cores: tensorgate-2w-ov-bf16 vs openvino_bf16 2p×1t b1",
    ]
    ort1, ort2, fp32_1, fp32_2, bf16_1, bf16_2, own1, own2 = rows
    assert (ort1["value"], ort1["met"]) == ("0.97× (0.97–0.97)", True)  # 11.7 / 12.0
    assert (ort2["target"], ort2["met"]) == ("≥ 0.97×", False)  # 23 / 24: 0.96×
    assert (fp32_1["value"], fp32_1["met"]) == ("0.98× (0.98–0.98)", True)  # against OpenVINO
    assert fp32_2["met"] is False  # 22 / 24: 0.92×
    assert (bf16_1["target"], bf16_1["value"], bf16_1["met"]) == (
        "≥ 1.85×",
        "1.96× (1.96–1.96)",
        True,
    )
    assert bf16_2["met"] is False  # 40 / 24: 1.67×
    assert own1["value"] == "0.94× (0.94–0.94)" and own1["met"] is None
    assert own2["target"] == "reported" and own2["met"] is None


def test_bf16_rows_are_not_judged_on_a_cpu_without_bf16_instructions() -> None:
    rows = heavy_model_rows(scenarios(), {"cpu_flags": ["avx2", "avx512f"]})
    bf16 = [r for r in rows if "≥ 1.85×" in r["goal"]]
    assert [r["met"] for r in bf16] == [None, None]
    assert all("neither AVX512_BF16 nor AMX" in r["note"] for r in bf16)
    assert bf16[0]["value"] == "1.96× (1.96–1.96)"  # still shown
    fp32 = [r for r in rows if "OpenVINO fp32" in r["goal"]]
    assert [r["met"] for r in fp32] == [True, False]


def test_without_recorded_flags_what_openvino_compiled_decides() -> None:
    rows = heavy_model_rows(scenarios(), {})  # a run from before cpu_flags were recorded
    bf16 = [r for r in rows if "≥ 1.85×" in r["goal"]]
    assert all(r["met"] is None for r in bf16)
    assert "this CPU compiled bf16 as openvino_fp32" in bf16[0]["note"]
    sc = scenarios()
    sc["openvino-accuracy"] = {"rows": {"OpenVINO bf16": {"served": "openvino_bf16"}}}
    bf16 = [r for r in heavy_model_rows(sc, {}) if "≥ 1.85×" in r["goal"]]
    assert [r["met"] for r in bf16] == [True, False]


def test_rows_stay_listed_when_nothing_was_measured() -> None:
    rows = heavy_model_rows({}, {})
    assert [r["value"] for r in rows] == ["not measured"] * 8
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
