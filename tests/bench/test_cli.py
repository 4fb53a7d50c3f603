"""bench.cli's ``run`` options: which plan a run follows."""

from __future__ import annotations

import pytest

from bench.cli import _parser, run_plan
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
