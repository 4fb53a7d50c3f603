"""What a protocol's gRPC handler table must be: one handler per method its proto declares, each
decoding that method's request type; the ``encoded`` methods answer wire bytes (no serializer)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from gateway.transport.surface import GrpcService


def check_handlers(service: GrpcService, descriptor: Any, encoded: Collection[str]) -> None:
    """``service``'s handlers against its proto's service ``descriptor``."""
    methods = descriptor.methods
    assert set(service.handlers) == {m.name for m in methods}
    for method in methods:
        handler = service.handlers[method.name]
        decoded = handler.request_deserializer(b"")
        assert decoded.DESCRIPTOR.full_name == method.input_type.full_name
        assert (handler.response_serializer is None) == (method.name in encoded), method.name
