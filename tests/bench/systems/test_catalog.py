"""bench.systems.catalog: every compared system is configured, each belongs to one family."""

from __future__ import annotations

from bench.scenarios.plan import FULL, QUICK
from bench.systems.catalog import (
    CALL_SYSTEMS,
    CATALOG,
    GRPC_TENSORGATE,
    LIGHT_LOAD,
    RESNET_PINNED,
    RESNET_TWO_CORE,
    TINY,
    TWO_CORE,
    family,
    forced_to_workers,
    is_rest,
)


def test_every_compared_system_is_in_the_catalog() -> None:
    compared = {*TINY, *TWO_CORE, *RESNET_PINNED, *RESNET_TWO_CORE}
    compared |= {n for names in GRPC_TENSORGATE.values() for n in names}
    assert compared <= set(CATALOG)


def test_families_and_transports() -> None:
    assert {family(n) for n in CATALOG} == {
        "tensorgate",
        "echo",
        "fastapi",
        "mlserver",
        "triton",
        "kserve",
    }
    assert family("tensorgate-2w-batch") == "tensorgate"
    assert is_rest("tensorgate-rest") and is_rest("triton-http") and is_rest("fastapi-inline")
    assert not is_rest("tensorgate") and not is_rest("kserve-grpc") and not is_rest("echo")


def test_tiny_compares_tensorgate_rest_batching_and_v2_like_their_peers() -> None:
    names = ("tensorgate-rest-batch", "tensorgate-batch", "tensorgate-v2")
    rest, batch, v2 = (CATALOG[n] for n in names)
    assert {"tensorgate-rest-batch", "tensorgate-v2"} <= set(TINY)
    assert rest.params == {**batch.params, "rest": True}
    assert v2.params == {**CATALOG["tensorgate"].params, "v2": True}
    assert is_rest("tensorgate-rest-batch") and not is_rest("tensorgate-v2")


def test_the_light_model_rows_systems_are_measured_by_their_scenarios() -> None:
    tiny = {*TINY, *QUICK.peers} & {*TINY, *FULL.peers}
    assert {
        "echo",
        "tensorgate",
        "tensorgate-batch",
        "tensorgate-v2",
        "tensorgate-rest",
        "tensorgate-rest-batch",
        "tensorgate-workers-batch",
        "triton",
        "fastapi-inline",
    } <= tiny
    assert set(LIGHT_LOAD) <= tiny
    two = {"tensorgate-2w", "triton-2w", "fastapi-process-2w"}
    assert two | {"tensorgate-rest-2w-batch", "fastapi-inline-2w"} <= set(TWO_CORE)


def test_python_calls_are_counted_for_each_protocol_batching_off_and_on() -> None:
    for protocol in ("", "-rest", "-v2"):
        assert {f"tensorgate{protocol}", f"tensorgate{protocol}-batch"} <= set(CALL_SYSTEMS)
    assert {"tensorgate-workers", "tensorgate-workers-batch"} <= set(CALL_SYSTEMS)


def test_only_the_workers_systems_force_runs_to_the_workers() -> None:
    forced = {n for n in CATALOG if forced_to_workers(n)}
    assert forced == {"tensorgate-workers", "tensorgate-workers-batch"}
