"""bench.cli's ``run`` options: which plan a run follows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import _parser, grpcio_plan, otlp_plan, rebuild_report, run_plan
from bench.scenarios.plan import FULL, QUICK


def test_tracing_rounds_replace_only_the_plan_s_side_by_side_rounds() -> None:
    plan = run_plan(_parser().parse_args(["run", "--only", "tracing", "--tracing-rounds", "100"]))
    assert plan.tracing_side_rounds == 100 and FULL.tracing_side_rounds == 30
    assert plan.name == FULL.name and plan.tracing_repeats == FULL.tracing_repeats
    quick = run_plan(_parser().parse_args(["run", "--quick", "--tracing-rounds", "3"]))
    assert quick.tracing_side_rounds == 3 and quick.point_s == QUICK.point_s
    assert run_plan(_parser().parse_args(["run"])) is FULL


@pytest.mark.parametrize("rounds", ["0", "-4", "many"])
def test_tracing_rounds_must_be_a_positive_count(
    rounds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(["run", "--tracing-rounds", rounds])
    assert exit_info.value.code == 2
    assert "--tracing-rounds" in capsys.readouterr().err


def test_grpcio_options_make_its_plan() -> None:
    args = _parser().parse_args(
        ["grpcio", "--versions", "1.75.1,1.85.1", "--rounds", "6", "--seconds", "8"]
    )
    plan = grpcio_plan(args)
    assert plan.versions == ("1.75.1", "1.85.1") and plan.rounds == 6 and plan.seconds == 8.0
    assert plan.systems == ("echo", "tensorgate", "tensorgate-batch")
    assert plan.concurrency == 64
    defaults = grpcio_plan(_parser().parse_args(["grpcio"]))
    assert {"1.75.1", "1.78.2", "1.83.2", "1.85.1"} <= set(defaults.versions)
    only = grpcio_plan(_parser().parse_args(["grpcio", "--systems", "tensorgate"]))
    assert only.systems == ("tensorgate",)


@pytest.mark.parametrize(
    "argv", [["--versions", "1.85"], ["--systems", "triton"], ["--versions", ","]]
)
def test_grpcio_refuses_unknown_versions_and_systems(argv: list[str]) -> None:
    with pytest.raises(ValueError):
        grpcio_plan(_parser().parse_args(["grpcio", *argv]))


def test_report_rebuilds_a_grpcio_directory_with_its_own_renderer(tmp_path: Path) -> None:
    from tests.bench.report.test_grpcio_report import _results

    (tmp_path / "results.json").write_text(json.dumps(_results()))
    rebuild_report(tmp_path)
    assert (tmp_path / "README.md").read_text().startswith("# grpcio releases")


def test_otlp_options_make_its_plan() -> None:
    plan = otlp_plan(
        _parser().parse_args(["otlp", "--requests", "1,85", "--rounds", "9", "--no-export"])
    )
    assert plan.requests == (1, 85) and plan.rounds == 9 and not plan.export
    defaults = otlp_plan(_parser().parse_args(["otlp"]))
    assert defaults.requests == (1, 11, 85) and defaults.export and defaults.point_cpu_s == 0.3
    with pytest.raises(ValueError):
        otlp_plan(_parser().parse_args(["otlp", "--requests", "0"]))


def test_report_rebuilds_an_otlp_directory_with_its_own_renderer(tmp_path: Path) -> None:
    from tests.bench.report.test_otlp_report import _results

    (tmp_path / "results.json").write_text(json.dumps(_results()))
    rebuild_report(tmp_path)
    assert (tmp_path / "README.md").read_text().startswith("# OTLP encoding")
