"""bench.scenarios.common: the best system of a family, and why a configuration did not start."""

from __future__ import annotations

from typing import Any

from bench.scenarios.common import best_of, not_available
from bench.systems.procs import StartFailed


def rps(median: float) -> dict[str, Any]:
    return {"rps": {"median": median, "min": median, "max": median, "n": 1}}


def test_best_of_a_family_is_its_fastest_measured_configuration() -> None:
    section = {
        "triton": rps(900.0),
        "triton-http": rps(1100.0),
        "mlserver": rps(5000.0),
        "triton-2w": {"error": "did not start"},
    }
    assert best_of(section, "triton") == "triton-http"
    assert best_of(section, "triton", among=("triton", "triton-2w")) == "triton"
    assert best_of(section, "kserve") is None


def test_not_available_names_the_exit_code_and_the_log_s_last_line() -> None:
    exc = StartFailed("tensorgate did not become ready", "starting\nbad flag --x\n", 2)
    assert not_available(exc) == "tensorgate refused to start (exit 2): bad flag --x"
    bare = StartFailed("did not become ready")
    assert not_available(bare) == "tensorgate refused to start (exit None): did not become ready"
