"""bench.report.grpcio_report: the Markdown and the plot of ``python -m bench grpcio``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report.grpcio_report import (
    PLOT,
    figure,
    markdown,
    paired,
    ranking,
    rebuild,
    reference_version,
    versions_of,
    write,
)


def _stat(value: float, low: float | None = None, high: float | None = None) -> dict[str, Any]:
    return {
        "median": value,
        "min": value if low is None else low,
        "max": value if high is None else high,
        "n": 3,
    }


def _point(rps: float, cpu_us: float, quiet: int = 3) -> dict[str, Any]:
    return {
        "repeats": 3,
        "failed": 0,
        "rps": _stat(rps, rps * 0.9, rps * 1.1),
        "server_cpu_us_per_request": _stat(cpu_us),
        "server_cpu_cores": _stat(0.95),
        "p50_ms": _stat(30.0),
        "p99_ms": _stat(60.0),
        "client_cpu_cores": _stat(0.2),
        "foreign_server_cores": _stat(0.01),
        "ok_fraction_min": 1.0,
        "quiet": {"n": quiet, "rps": _stat(rps), "server_cpu_us_per_request": _stat(cpu_us)},
        "runs": [{"rps": rps, "loadavg_1m": 1.5, "foreign_server_cores": 0.01, "steal_cores": 0.0}],
    }


def _results() -> dict[str, Any]:
    return {
        "kind": "grpcio",
        "run": {
            "id": "2026-11-25-grpcio",
            "date": "2026-11-25T19:00:00Z",
            "plan": {
                "versions": ["1.85.1", "1.78.2", "1.100.0"],
                "systems": ["echo", "tensorgate", "tensorgate-batch"],
                "rounds": 3,
                "seconds": 8.0,
                "warmup_s": 1.0,
                "concurrency": 64,
            },
            "machine": {
                "cpus": 2,
                "cpu_model": "AMD EPYC",
                "python": "3.11.7",
                "versions": {"grpcio": "1.85.1", "protobuf": "7.36.2"},
                "h2load": "h2load nghttp2/1.52.0",
            },
            "server_cpus": [1],
            "client_cpus": [0],
            "driver": "h2load",
            "loadavg_before": [2.5, 2.0, 1.5],
            "loadavg_after": [3.0, 2.2, 1.6],
            "elapsed_s": 1500.0,
        },
        "versions": {
            v: {
                "installed": {"grpcio": v, "grpcio-tools": v, "protobuf": pb},
                "generated": {"grpc_generated": v, "protobuf_gencode": gen},
            }
            for v, pb, gen in (
                ("1.78.2", "6.33.6", "6.31.1"),
                ("1.85.1", "7.36.2", "7.35.1"),
                ("1.100.0", "7.40.0", "7.40.0"),
            )
        },
        "unavailable": {"1.99.0": "pip could not resolve"},
        "points": {
            "1.85.1": {
                "echo": _point(1900, 480),
                "tensorgate": _point(800, 1200),
                "tensorgate-batch": _point(700, 1300),
            },
            "1.78.2": {
                "echo": _point(2400, 400),
                "tensorgate": _point(900, 1100, quiet=1),
                "tensorgate-batch": _point(750, 1250),
            },
            "1.100.0": {
                "echo": _point(2000, 470),
                "tensorgate": {**_point(850, 1150), "failed": 1, "error": "RuntimeError: x"},
            },
        },
    }


def test_versions_are_ordered_as_numbers_and_ranked_by_throughput() -> None:
    results = _results()
    assert versions_of(results) == ["1.78.2", "1.85.1", "1.100.0"]
    assert ranking(results, "tensorgate") == [
        ("1.78.2", 900.0, 1100.0),
        ("1.100.0", 850.0, 1150.0),
        ("1.85.1", 800.0, 1200.0),
    ]
    assert ranking(results, "nothing") == []


def test_the_markdown_names_the_main_grpcio_every_version_and_the_noise() -> None:
    text = markdown(_results(), plot=True)
    assert "has grpcio 1.85.1, protobuf 7.36.2" in text
    assert "| 1.78.2 | 1.78.2 | 1.78.2 | 6.33.6 | 1.78.2 | 6.31.1 |" in text
    assert "| 1.99.0 | not available: pip could not resolve" in text
    assert "before the rounds 2.50, 2.00, 1.50; after 3.00, 2.20, 1.60" in text
    assert f"![grpcio]({PLOT})" in text
    assert "| tensorgate | 1.78.2 | 900 (810–990) | 1100 (1100–1100) |" in text
    assert "| tensorgate | 1.78.2 | 1 | 900 (900–900) | 1100 (1100–1100) |" in text  # quiet ones
    assert "| 1.85.1 | 800 | -11.1 % | 1200 | +9.1 % |" in text  # against 1.78.2
    assert "- tensorgate@1.100.0: RuntimeError: x" in text
    # Systems in the plan's order, each one's versions in numeric order.
    rows = [line for line in text.splitlines() if line.startswith("| echo | 1.")]
    assert [r.split(" | ")[1] for r in rows[:3]] == ["1.78.2", "1.85.1", "1.100.0"]
    assert "![grpcio]" not in markdown(_results(), plot=False)


def test_the_plot_has_one_line_per_system_in_both_panels() -> None:
    fig = figure(_results())
    rps_axes, cpu_axes = fig.axes
    for ax in (rps_axes, cpu_axes):
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1.78.2", "1.85.1", "1.100.0"]
        assert ax.get_xlabel() and ax.get_ylabel()
        legend = ax.get_legend()
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == [
            "echo",
            "tensorgate",
            "tensorgate-batch",
        ]


def test_write_and_rebuild(tmp_path: Path) -> None:
    write(_results(), tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"results.json", "README.md", PLOT}
    assert json.loads((tmp_path / "results.json").read_text())["kind"] == "grpcio"
    (tmp_path / "README.md").unlink()
    rebuild(tmp_path)
    assert (tmp_path / "README.md").read_text().startswith("# grpcio releases")


def test_versions_are_compared_round_by_round_with_the_main_environment_s() -> None:
    results = _results()
    assert reference_version(results) == "1.85.1"  # the main environment's grpcio
    results["points"]["1.78.2"]["echo"]["runs"] = [
        {"rps": 1200.0, "server_cpu_us_per_request": 400.0},
        {"rps": 900.0, "server_cpu_us_per_request": 500.0},
        {"error": "RuntimeError: x"},
    ]
    results["points"]["1.85.1"]["echo"]["runs"] = [
        {"rps": 1000.0, "server_cpu_us_per_request": 500.0},
        {"rps": 1000.0, "server_cpu_us_per_request": 400.0},
        {"rps": 1000.0, "server_cpu_us_per_request": 400.0},
    ]
    rps = paired(results, "echo", "1.78.2", "1.85.1", "rps")
    assert rps == {"median": 1.05, "min": 0.9, "max": 1.2, "n": 2, "above": 1}
    cpu = paired(results, "echo", "1.78.2", "1.85.1", "server_cpu_us_per_request")
    assert cpu is not None and (cpu["min"], cpu["max"], cpu["above"]) == (0.8, 1.25, 1)
    assert paired(results, "echo", "1.99.0", "1.85.1", "rps") is None
    text = markdown(results, plot=False)
    assert "### Round by round against 1.85.1" in text
    assert "| echo | 1.78.2 | 1.05 (0.90–1.20) | 1/2 | 1.02 (0.80–1.25) | 1/2 |" in text
    results["run"]["machine"]["versions"]["grpcio"] = "1.60.0"  # not measured: the newest
    assert reference_version(results) == "1.100.0"
