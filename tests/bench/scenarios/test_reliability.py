"""The soak's verdict on memory and fds, as a pure function of samples."""

from __future__ import annotations

from bench.scenarios.reliability import flatness


def _samples(gateway: list[float], worker: list[float], fds: list[int]) -> list[dict[str, object]]:
    return [
        {"t": float(i), "gateway_mb": g, "workers_mb": [w], "fds": f}
        for i, (g, w, f) in enumerate(zip(gateway, worker, fds, strict=True))
    ]


def test_flat_series_pass_and_growth_or_fd_leaks_fail() -> None:
    steady = [100.0] * 20
    verdict = flatness(_samples(steady, [60.0] * 20, [30] * 20))
    assert verdict["flat"] is True
    assert verdict["gateway_mb"] == {"start": 100.0, "end": 100.0, "growth": 0.0}
    creeping = [100.0 + i for i in range(20)]  # +1 MB a sample: ~17 % over the run
    assert flatness(_samples(creeping, [60.0] * 20, [30] * 20))["flat"] is False
    leaking = list(range(30, 50))
    assert flatness(_samples(steady, [60.0] * 20, leaking))["flat"] is False
    assert flatness(_samples(steady[:5], [60.0] * 5, [30] * 5))["flat"] is None


def test_front_ends_are_series_of_their_own() -> None:
    steady = [100.0] * 20
    samples = _samples(steady, [60.0] * 20, [30] * 20)
    for i, s in enumerate(samples):
        s["front_ends_mb"] = [80.0, 80.0 + i]  # the second front end grows ~24 % over the run
    verdict = flatness(samples)
    assert verdict["front_end0_mb"]["growth"] == 0.0
    assert verdict["flat"] is False and verdict["front_end1_mb"]["growth"] > 0.05
    assert verdict["worker0_mb"]["growth"] == 0.0
