"""bench.measure.usage: a server tree's CPU split by role (which thread counts where)."""

from __future__ import annotations

from bench.measure.usage import CPU_ROLES, cpu_by_role


def test_threads_are_split_into_loop_threads_grpc_and_workers() -> None:
    before = {(10, 10, "python"): 1.0, (10, 11, "python"): 0.5, (10, 12, "event_engine"): 0.2}
    after = {
        (10, 10, "python"): 1.75,  # the root's main thread: the event loop
        (10, 11, "python"): 0.75,
        (10, 13, "python"): 0.125,  # started during the point: counts from zero
        (10, 12, "event_engine"): 0.5,
        (20, 20, "python"): 0.25,  # a worker process, every thread of it
        (20, 21, "onnxruntime"): 0.25,
    }
    assert cpu_by_role(before, after, 10) == {
        "gateway loop": 0.75,
        "gateway threads": 0.375,
        "gRPC threads": 0.5 - 0.2,
        "workers": 0.5,
    }
    assert tuple(cpu_by_role({}, {}, 10)) == CPU_ROLES
