"""bench.scenarios.throughput: the full plan's sweep measures what the light-load rows compare."""

from __future__ import annotations

from bench.scenarios.throughput import sweep_systems
from bench.systems.catalog import LIGHT_LOAD
from tests.bench.report.summaries import point


def test_the_sweep_takes_the_light_load_systems_then_each_peer_familys_best() -> None:
    saturation = {
        name: point(1000)
        for name in (*LIGHT_LOAD, "triton", "kserve-grpc", "kserve-rest", "fastapi-thread")
    }
    saturation["kserve-rest"] = point(2000)
    saturation["fastapi-thread"] = point(900)  # FastAPI's best is inline, swept already
    assert sweep_systems(saturation) == [*LIGHT_LOAD, "triton", "kserve-rest"]


def test_the_sweep_leaves_out_what_did_not_run() -> None:
    saturation = {"echo": point(9000), "tensorgate": point(3000), "fastapi-thread": point(900)}
    assert sweep_systems(saturation) == ["echo", "tensorgate", "fastapi-thread"]
