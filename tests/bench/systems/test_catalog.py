"""bench.systems.catalog: every compared system is configured, each belongs to one family."""

from __future__ import annotations

from bench.systems.catalog import (
    CATALOG,
    GRPC_TENSORGATE,
    RESNET_PINNED,
    RESNET_TWO_CORE,
    TINY,
    TWO_CORE,
    family,
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
