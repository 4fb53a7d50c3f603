"""bench.report.otlp_report: the Markdown and the plot of ``python -m bench otlp``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report.otlp_report import PLOT, REPORT, figure, markdown, ratio, sizes_of


def _stat(value: float) -> dict[str, Any]:
    return {"median": value, "min": value * 0.9, "max": value * 1.2, "n": 7, "runs": [value] * 7}


def _ways(scale: float) -> dict[str, Any]:
    return {
        "spans only": _stat(5.0),
        "library": _stat(60.0),
        "tensorgate": _stat(4.0 * scale),
        "tensorgate gRPC": _stat(5.0 * scale),
        "library export": _stat(70.0),
        "tensorgate export": _stat(10.0 * scale),
    }


def _results() -> dict[str, Any]:
    return {
        "kind": "otlp",
        "run": {
            "id": "2026-11-28-otlp",
            "date": "2026-11-28T09:00:00Z",
            "plan": {"requests": [1, 11, 85], "rounds": 7, "point_cpu_s": 0.3, "export": True},
            "machine": {"cpus": 2, "cpu_model": "AMD EPYC", "python": "3.11.7"},
            "libraries": {"opentelemetry-sdk": "1.45.2", "protobuf": "6.33.6"},
            "spans_per_request": 6,
            "same_request": {"bytes": True, "message": True, "spans": 510},
            "sink_spans": 12345,
            "loadavg_before": [1.0, 1.0, 1.0],
            "loadavg_after": [1.5, 1.1, 1.0],
            "elapsed_s": 90.0,
        },
        "points": {
            "510": _ways(1.0),
            "6": {**_ways(2.0), "library export": {**_stat(0.0), "n": 0, "errors": ["Boom"]}},
            "66": _ways(1.5),
        },
    }


def test_sizes_are_ordered_as_numbers_and_ratios_are_of_medians() -> None:
    results = _results()
    assert sizes_of(results) == ["6", "66", "510"]
    assert ratio(results, "510", "tensorgate", "library") == 4.0 / 60.0
    assert ratio(results, "6", "tensorgate export", "library export") is None
    assert ratio(results, "7", "tensorgate", "library") is None


def test_the_markdown_names_the_libraries_the_check_every_way_and_the_ratios() -> None:
    text = markdown(_results(), plot=True)
    assert "opentelemetry-sdk 1.45.2, protobuf 6.33.6" in text
    assert "same request (510 spans): bytes equal, parsed messages equal" in text
    assert "The sink received 12345 spans." in text
    assert f"![otlp]({PLOT})" in text
    assert "| 510 | 5.00 (4.50–6.00) | 60.00 (54.00–72.00) | 4.00 (3.60–4.80) |" in text
    assert "| 510 | 0.07× | 0.08× | 0.14× | 420 → 60 |" in text
    assert "| 6 | 0.13× | 0.17× | — | — |" in text
    assert "- 6 spans, library export: Boom" in text
    assert "![otlp]" not in markdown(_results(), plot=False)
    results = _results()
    results["run"]["same_request"]["bytes"] = False
    assert "bytes DIFFERENT" in markdown(results, plot=False)


def test_the_plot_has_the_encodings_and_the_exports_in_two_panels() -> None:
    encoding, export = figure(_results()).axes
    encoding_legend, export_legend = encoding.get_legend(), export.get_legend()
    assert encoding_legend is not None and export_legend is not None
    assert [t.get_text() for t in encoding_legend.get_texts()] == [
        "spans only",
        "library",
        "tensorgate",
        "tensorgate gRPC",
    ]
    assert [t.get_text() for t in export_legend.get_texts()] == [
        "library export",
        "tensorgate export",
    ]
    for ax in (encoding, export):
        assert [t.get_text() for t in ax.get_xticklabels()] == ["6", "66", "510"]
        assert ax.get_xlabel() and ax.get_ylabel()


def test_write_and_rebuild(tmp_path: Path) -> None:
    REPORT.write(_results(), tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"results.json", "README.md", PLOT}
    assert json.loads((tmp_path / "results.json").read_text())["kind"] == "otlp"
    (tmp_path / "README.md").unlink()
    REPORT.rebuild(tmp_path)
    assert (tmp_path / "README.md").read_text().startswith("# OTLP encoding")
