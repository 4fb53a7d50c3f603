"""bench.scenarios.estimates: every scenario of both plans has a time; the full plan is longer."""

from __future__ import annotations

from bench.scenarios.estimates import estimates_s
from bench.scenarios.plan import FULL, QUICK


def test_every_scenario_of_both_plans_has_an_estimate_and_full_is_longer() -> None:
    quick = estimates_s(QUICK, list(QUICK.scenarios))
    full = estimates_s(FULL, list(FULL.scenarios))
    assert all(v > 0 for v in (*quick.values(), *full.values()))
    assert sum(full.values()) > sum(quick.values())
