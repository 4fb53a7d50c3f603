"""What a protocol hands the front door: the names reflection lists."""

from __future__ import annotations

from gateway.transport.surface import GrpcService, service_names


def test_reflection_lists_the_protocols_services_in_order_then_the_others() -> None:
    services = [GrpcService("a.First", "p", {}), GrpcService("b.Second", "q", {})]
    assert service_names(services, "grpc.health.v1.Health") == (
        "a.First",
        "b.Second",
        "grpc.health.v1.Health",
    )
    assert not services[0].bounded and services[0].model_of is None and not services[0].rows_of
