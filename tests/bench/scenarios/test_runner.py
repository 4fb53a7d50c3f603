"""Starting a scenario's systems: one that fails beside the others gets one retry alone."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scenarios import runner
from bench.systems.procs import StartFailed


class _Stub:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def _bench() -> runner.Bench:
    bench = runner.Bench.__new__(runner.Bench)  # no models, no results directory: only start-up
    bench.ctx = None  # type: ignore[assignment]
    bench.unavailable = {}
    return bench


@pytest.mark.parametrize(("failures", "up"), [(1, ["a", "b"]), (2, ["a"])])
def test_a_failed_start_is_retried_once_alone(
    monkeypatch: pytest.MonkeyPatch, failures: int, up: list[str]
) -> None:
    attempts: dict[str, int] = {}

    def fake_start(ctx: Any, spec: Any, model: str, cpus: tuple[int, ...]) -> _Stub:
        attempts[spec] = attempts.get(spec, 0) + 1
        if spec == "b" and attempts[spec] <= failures:
            raise StartFailed("b did not become ready")
        return _Stub(spec)

    monkeypatch.setattr(runner, "start", fake_start)
    monkeypatch.setattr(runner, "CATALOG", {"a": "a", "b": "b"})
    bench = _bench()
    with bench.systems(["a", "b"], "mlp", (0,)) as running:
        assert sorted(running) == up
    assert attempts == {"a": 1, "b": 2}
    assert bench.unavailable == ({} if failures == 1 else {"b/mlp": "b did not become ready"})


def test_the_run_header_names_the_grpcio_and_protobuf_the_run_used() -> None:
    from importlib.metadata import version

    from bench.report.write import markdown

    machine = runner.machine_info()
    assert machine["versions"]["grpcio"] == version("grpcio")
    assert machine["versions"]["protobuf"] == version("protobuf")
    plan = {"name": "quick", "repeats": 2, "saturation_concurrency": 64}
    results = {"run": {"id": "x", "date": "d", "plan": plan, "machine": machine}, "scenarios": {}}
    header = markdown(results, [])
    assert f"grpcio {version('grpcio')}, protobuf {version('protobuf')}" in header
