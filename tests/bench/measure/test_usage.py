"""The side-by-side's CPU split by role: which thread counts where, and how the report shows it."""

from __future__ import annotations

from bench.measure.usage import CPU_ROLES, cpu_by_role
from bench.report.tables import roles_table


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


def test_the_report_shows_each_role_against_off() -> None:
    roles = {
        "off": {"gateway loop": 1000.0, "gateway threads": 50.0, "gRPC threads": 90.0},
        "ratio 1.0": {"gateway loop": 1100.0, "gateway threads": 80.0, "gRPC threads": 90.0},
    }
    lines = roles_table(roles)
    assert lines[-2] == "| off | 1000 | 50 | 90 | 0 |"
    assert lines[-1] == "| ratio 1.0 | 1100 (+100) | 80 (+30) | 90 (+0) | 0 |"
    assert roles_table({}) == []
