"""bench.report.tables: summary cells, a point's notes, the systems, sweep and role tables."""

from __future__ import annotations

from typing import Any

from bench.report.tables import (
    cell,
    per_request_table,
    roles_table,
    stat_text,
    status,
    sweep_table,
    system_table,
)


def stat(median: float, low: float, high: float, n: int = 3) -> dict[str, float]:
    return {"median": median, "min": low, "max": high, "n": n}


def test_a_cell_shows_the_median_with_the_repeats_range_or_alone_for_one_repeat() -> None:
    assert cell({"rps": stat(1234.4, 1200.0, 1300.6)}, "rps") == "1234 (1200–1301)"
    assert cell({"rps": stat(1234.4, 1234.4, 1234.4, n=1)}, "rps") == "1234"
    assert cell({"p50_ms": stat(0.5, 0.25, 1.0)}, "p50_ms", "{:.2f}") == "0.50 (0.25–1.00)"
    assert cell({}, "rps") == "—"
    assert cell(None, "rps") == "—"


def test_status_names_what_is_wrong_with_a_point() -> None:
    assert status({"repeats": 3, "failed": 0}) == "ok"
    notes = {"errors": 4, "ok_fraction_min": 0.5, "client_saturated": True}
    assert status(notes) == "4 errors, gRPC OK ≈ 50%, client saturated"
    assert status({"ok_fraction_min": 0.995}) == "ok"
    failed = {"repeats": 2, "failed": 2, "error": "StartFailed:  no\n  port"}
    assert status(failed) == "failed: StartFailed: no port"
    assert status({"repeats": 2, "failed": 1, "error": "x"}) == "ok"


def test_the_systems_table_has_a_row_per_system_and_latency_only_when_asked() -> None:
    rows: dict[str, dict[str, Any]] = {
        "echo": {"rps": stat(20000.0, 19000.0, 21000.0), "p50_ms": stat(1.0, 0.9, 1.1)},
        "raw": {"rps": stat(55.25, 50.0, 60.0)},
    }
    lines = system_table(rows)
    assert lines[0].startswith("| system | req/s median (min–max) | p50 ms | p99 ms |")
    assert lines[2] == "| echo | 20000 (19000–21000) | 1.00 (0.90–1.10) | — | — | — | — | ok |"
    assert lines[3].startswith("| raw | 55.2 (50.0–60.0) |")  # under 100/s: one decimal
    assert "p50 ms" not in system_table(rows, latency=False)[0]


def test_the_sweep_table_has_a_column_per_concurrency() -> None:
    sweep = {
        "echo": {"1": {"rps": stat(900.0, 0, 0), "p99_ms": stat(1.25, 0, 0)}},
        "tensorgate": {"64": {"rps": stat(5000.0, 0, 0)}},
    }
    assert sweep_table(sweep) == [
        "| system | c=1 | c=64 |",
        "|---|---|---|",
        "| echo | 900 /s, p99 1.2 ms | — |",
        "| tensorgate | — | 5000 /s, p99 0.0 ms |",
    ]


def test_stat_text_shows_a_summary_or_a_dash() -> None:
    assert stat_text(stat(1.5, 1.25, 2.0), 2) == "1.50 (1.25–2.00)"
    assert stat_text({}, 1) == "—"


def test_the_report_shows_each_role_against_off() -> None:
    roles = {
        "off": {"gateway loop": 1000.0, "gateway threads": 50.0, "gRPC threads": 90.0},
        "ratio 1.0": {"gateway loop": 1100.0, "gateway threads": 80.0, "gRPC threads": 90.0},
    }
    lines = roles_table(roles)
    assert lines[-2] == "| off | 1000 | 50 | 90 | 0 |"
    assert lines[-1] == "| ratio 1.0 | 1100 (+100) | 80 (+30) | 90 (+0) | 0 |"
    assert roles_table({}) == []


def test_the_per_request_table_shows_runs_per_request_in_every_round() -> None:
    runs = [{"runs_per_request": 0.0}, {"error": "RuntimeError: x"}, {"runs_per_request": 0.994}]
    rows: dict[str, dict[str, Any]] = {
        "tensorgate": {"runs_per_request": stat(0.497, 0.0, 0.994, n=2), "runs": runs},
        "echo": {"rps": stat(9000.0, 9000.0, 9000.0)},  # no counters: no row
    }
    lines = per_request_table(rows)
    assert lines[0].startswith("| system | runs/request | runs/request by round |")
    assert lines[2:] == ["| tensorgate | 0.497 (0.000–0.994) | 0.000, —, 0.994 | — | — | — |"]
